// Q2_K and Q3_K weights x int8 activations (contracts mm_q2_K_a8, mm_q3_K_a8): one AIE2P core program,
// c_tile += W_tile x A_tile for one K tile of 256 (one GGUF super-block per weight row). Tile layouts:
// aie/include/xdna_aie/matmul_tiles.h; numerics: docs/kernels.md ("Numerics (exact)").
//
// What runs where, per row group g (16 weight rows) and token group (4 tokens), per sub-block j (16 K):
//   * codes -> int4 B operand in registers (vector ops, no scratch). The q2 plane holds 4 codes per byte
//     (rows 4q..4q+3 of one K); masking 0x33 keeps the codes of rows 4q and 4q+2 as the two nibbles of
//     a byte, (>> 2) & 0x33 those of rows 4q+1 and 4q+3, so zipping the two 4-byte runs of each K gives
//     a 16 K x 16 column operand whose columns are the rows in the order pi = 0,2,..,14,1,3,..,15.
//     Sub-block scales, d and dmin are loaded in the same order and the C update undoes it (3 shuffles
//     per 64 outputs instead of a byte-granular spread per operand).
//     Q2_K: the nibble is the code 0..3, unsigned: int8 x uint4 mmul.
//     Q3_K: the nibble is the signed value (low | h << 2) - 4 = low - 4 * (1 - h), i.e. low with bits 2
//     and 3 set when the hmask bit is 0; the hmask bits reach nibble bits 2 and 3 by a 4 -> 8 unpack and
//     shifts: int8 x int4 mmul.
//   * dot_j = A (4 tokens x 16 K) x B (16 K x 16 rows): one int8 x int4 4x16x16 mmul into acc32.
//     |dot_j| <= 16 * 3 * 128 = 6144 (Q2_K) and 16 * 4 * 128 = 8192 (Q3_K) for any int8 codes (the
//     contract's are -127..127): exact in int16, so the srs to int16 (shift 0) is exact.
//   * sumi += sc_j * dot_j: int16 x int16 elementwise MAC into a 64-lane acc32 (sc_j replicated over the
//     4 tokens). Q2_K sc in 0..15: |sumi| <= 16 * 15 * 6144 = 1474560; Q3_K sc - 32 in -32..31:
//     |sumi| <= 16 * 32 * 8192 = 4194304. Both <= 2^24, so float(sumi) is exact.
//   * Q2_K mins, once per (row group, token group): summ = sum_j m_j * bsum_j with bsum_j the exact
//     int16 sum of 16 activation codes (sums plane, |bsum| <= 2032). bsum = 128 * hi + lo with
//     lo = bsum & 127 (0..127) and hi = bsum >> 7 (-16..15) are int8 A operands ([token][j], a transpose
//     of the plane), the mins m_j (0..15) the uint4 B operand ([j][row]): two int8 x uint4 mmuls give
//     summ = 128 * (hi x M) + (lo x M). |hi x M| <= 16*16*15 = 3840, |lo x M| <= 30480,
//     |summ| <= 487680: exact in int32 and in fp32.
//   * fp32 epilogue per (token, row), in the contract's order, IEEE single with round to nearest even:
//       p = fp32(d) * s_a; x = p * float(sumi);
//       Q3_K: c = c + x.
//       Q2_K: q = fp32(dmin) * s_a; y = q * float(summ); c = c + (x - y).
//     fp16 -> fp32 is exact (integer ops, subnormal fp16 via one exact fp32 subtraction). AIE2P has no
//     fp32 multiplier and aie_api's fp32 multiply is a bf16 emulation that is not correctly rounded, so
//     every fp32 product here is mul_rne(): the 24-bit significands multiplied exactly in 64-bit
//     accumulator lanes (two uint32 x uint16 MACs), rounded to 24 bits by srs in conv_even mode, the
//     exponent added in integer lanes. Adds and subtracts are the core's fp32 adds. Deviation from IEEE,
//     only where subnormals appear: a subnormal fp32 factor is taken as zero and a product below 2^-126
//     once rounded to 24 significant bits is flushed to a signed zero. NaN results of a product are
//     the quiet NaN 0x7FC00000 (IEEE leaves the payload open).
//
// Loop order: row group g outermost (its scales, mins, d, dmin decoded once into registers and a
// 256-byte stack array), then blocks of NT token groups (NT = 1 at TN = 4, 4 at TN = 32), then the 16
// sub-blocks: each B operand is expanded once per block and feeds NT mmuls. Accumulators: NT sumi
// (64 x 32 bit = one 2048-bit register each) + 1 dot = 5 of the 8 (2 more for the Q2_K mins mmuls in
// the epilogue, when the sumi of the finished token groups are free).
//
// Data memory at TN = 32 (the larger tile) vs 64 KB:
//   weight tile, double-buffered      Q3_K 2 x 7040 = 14080   (Q2_K 2 x 5376 = 10752)
//   activation tile, double-buffered  2 x (8192 codes + 128 scales + 1024 sums) = 18688
//   C tile                            32 x 64 x 4 = 8192
//   stack                             sub-block scales 256 + spills of mul_rne / epilogue ~1024,
//                                     call frames ~256: ~1.5 KB
//   total                             ~42.5 KB (Q3_K) of 64 KB; a second C buffer (to drain C while the
//                                     next output tile accumulates) would bring it to ~50.5 KB.
//
// Cost per call (host aie_api counters, aie_api 2026.1; tests/kernels/test_kquant_low.cpp prints
// them): the fp32 epilogue dominates. mul_rne is 49 instructions per 16 lanes (40 in the move slot;
// 7 srs in the store slot: an aie_api shift is an ups and an srs), against 25 for aie_api's emulated
// fp32 multiply (10 of them in the vector slot, which the mmul needs); one call per 16 outputs and
// product, 4 products per output for Q2_K, 2 for Q3_K, once per super-block:
//   Q2_K TN=4:  72 mmul (64 + 8 for the mins), 372 vector, 3855 move, 244 load, 776 store
//   Q2_K TN=32: 576 mmul, 2920 vector, 25047 move (20480 of them in mul_rne), 1016 load, 5376 store
//   Q3_K TN=4:  64 mmul, 252 vector, 3319 move, 292 load, 828 store
//   Q3_K TN=32: 512 mmul, 1988 vector, 15027 move (10240 in mul_rne), 1072 load, 3900 store
// The code expansion is 9 instructions per B operand for Q2_K and 29 for Q3_K (aie_api 2025.1: 8 and
// 38; its 8-bit shifts take 32 lanes per ups / srs pair, 2026.1's 64 plus a scoped_mode).
//
// Program memory vs 16 KB (estimate; the core compiler's output has not been measured): per
// (type, NT) body the sub-block loop is ~9 (Q2_K) or ~29 (Q3_K) expansion instructions + 4 for the
// scale vector + 5 per token group (load, mmul, 2 srs, mac), i.e. ~30-50 instructions, ~15-25 VLIW
// bundles; the epilogue ~60 instructions around its mul_rne calls; the row-group decode ~40. At up to
// 16 bytes per bundle that is ~1-1.5 KB per body with software pipelining; 4 bodies (2 types x 2 token
// tiles) + mul_rne (~25 bundles) + half_to_float: ~5-7 KB, leaving room for zero.cc and the rest of
// the design's core code in the 16 KB.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/matmul_tiles.h"

namespace {

namespace abi = xdna_aie;

constexpr int kTileK = 256;
constexpr int kSubBlocks = 16;  // sub-blocks of 16 values per super-block (= K steps of the mmul)
constexpr int kRowGroups = abi::kTileM / abi::kRowGroup;

using v16f = aie::vector<float, 16>;
using v64f = aie::vector<float, 64>;
using v16u32 = aie::vector<uint32, 16>;
using v16i32 = aie::vector<int32, 16>;

// ---------------------------------------------------------------------------------------------
// fp32 helpers

// Rows of a row group in the operand column order pi (even rows, then odd rows).
template <typename T> aie::vector<T, 16> rows_to_pi(const aie::vector<T, 16> & v) {
    return aie::concat(aie::filter_even(v, 1), aie::filter_odd(v, 1));
}

// fp16 bit patterns -> fp32, exactly (inf and NaN included; NaN payloads kept).
v16f half_to_float(const aie::vector<uint16, 16> & h16) {
    const v16u32 h = aie::unpack(h16);
    const v16u32 t = aie::upshift(aie::bit_and(0x7FFFu, h), 13);
    const v16u32 e = aie::bit_and(0x7C00u, h);
    const v16u32 normal = aie::add(t, 112u << 23);   // exponent rebias 15 -> 127
    const v16u32 special = aie::add(t, 224u << 23);  // exponent 31 -> 255
    // Subnormal (and zero): m * 2^-24 = (2^-14 + m * 2^-24) - 2^-14, both terms exact.
    const v16f sub_f = aie::sub(aie::vector_cast<float>(aie::add(t, 113u << 23)), 0x1p-14f);
    v16u32 bits = aie::select(normal, special, aie::eq(e, 0x7C00u));
    bits = aie::select(bits, aie::vector_cast<uint32>(sub_f), aie::eq(e, 0u));
    bits = aie::bit_or(bits, aie::upshift(aie::bit_and(0x8000u, h), 16));
    return aie::vector_cast<float>(bits);
}

// v >> s, logically: one ups into 64-bit lanes and one srs back, which truncates in floor, the mode the
// kernel computes in. (aie::logical_downshift is the same ups and srs, but aie_api 2026.1 wraps it in
// a scoped_mode that saves, sets and restores the rounding mode: three more instructions for each of
// mul_rne's three shifts, in the epilogue that sets the kernel's pace.)
v16u32 shr(const v16u32 & v, int s) { return aie::accum<acc64, 16>(v).template to_vector<uint32>(s); }

// x * y rounded to nearest even (IEEE single; subnormal factors read as zero, a product that is below
// 2^-126 once rounded to 24 significant bits becomes a signed zero, NaN results are 0x7FC00000).
// Overflow rounds to infinity as in IEEE. Called in floor: the two srs that round the significand run
// in conv_even, switched on around them only, since every shift here must truncate (an srs rounds per
// the current mode, and so do aie_api 2025.1's downshift and logical_downshift).
// Not inlined: the epilogue's calls share one copy in program memory.
__attribute__((noinline)) v16f mul_rne(const v16f & x, const v16f & y) {
    const v16u32 bx = aie::vector_cast<uint32>(x), by = aie::vector_cast<uint32>(y);
    const v16u32 ax = aie::bit_and(0x7FFFFFFFu, bx), ay = aie::bit_and(0x7FFFFFFFu, by);
    const v16u32 ex = shr(ax, 23), ey = shr(ay, 23);
    const v16u32 mx = aie::bit_or(0x800000u, aie::bit_and(0x7FFFFFu, bx));
    const v16u32 my = aie::bit_or(0x800000u, aie::bit_and(0x7FFFFFu, by));
    // mx * my (2^46 .. 2^48) exactly: my = 256 * my_hi + my_lo, (mx << 8) < 2^32, my_hi < 2^16.
    const aie::vector<uint16, 16> my_hi = aie::filter_even(aie::vector_cast<uint16>(shr(my, 8)), 1);
    const aie::vector<uint16, 16> my_lo = aie::filter_even(aie::vector_cast<uint16>(aie::bit_and(255u, my)), 1);
    aie::accum<acc64, 16> prod = aie::mul<acc64>(aie::upshift(mx, 8), my_hi);
    prod = aie::mac(prod, mx, my_lo);
    // The significand rounded to 24 bits: shift 23 if the product is below 2^47 (after rounding),
    // else 24 (one more exponent step).
    const aie::rounding_mode found = aie::swap_rounding(aie::rounding_mode::conv_even);
    const v16i32 r23 = prod.to_vector<int32>(23);
    const v16i32 r24 = prod.to_vector<int32>(24);
    aie::set_rounding(found);
    const aie::mask<16> big = aie::ge(r23, int32(1) << 24);
    const v16i32 m = aie::select(r23, aie::add(r24, int32(1) << 23), big);
    // Biased result exponent minus one (the significand's leading bit adds the one back).
    const v16i32 e2 = aie::sub(aie::add(aie::vector_cast<int32>(ex), aie::vector_cast<int32>(ey)), 128);
    const v16i32 e = aie::select(e2, aie::add(e2, 1), big);
    const v16u32 sign = aie::bit_and(0x80000000u, aie::bit_xor(bx, by));
    // (e2 << 23) + m is the magnitude's bit pattern (a carry out of the significand moves into the
    // exponent); below 2^23 (exponent field <= 0, no wrap-around for finite factors) is underflow.
    const v16i32 mag = aie::add(aie::upshift(e2, 23), m);
    v16u32 r = aie::bit_or(sign, aie::vector_cast<uint32>(mag));
    const v16u32 emin = aie::min(ex, ey), emax = aie::max(ex, ey);
    const aie::mask<16> zero_factor = aie::eq(emin, 0u);
    const aie::mask<16> special = aie::eq(emax, 255u);
    r = aie::select(r, sign, zero_factor | aie::lt(mag, int32(1) << 23));
    r = aie::select(r, aie::bit_or(0x7F800000u, sign), special | aie::ge(e, 254));
    const aie::mask<16> nan = special & (zero_factor | aie::gt(aie::max(ax, ay), 0x7F800000u));
    r = aie::select(r, 0x7FC00000u, nan);
    return aie::vector_cast<float>(r);
}

v64f mul_rne(const v64f & x, const v64f & y) {
    v64f r;
    for (int i = 0; i < 4; ++i) r.insert(i, mul_rne(x.extract<16>(i), y.extract<16>(i)));
    return r;
}

// ---------------------------------------------------------------------------------------------
// Code expansion: one B operand (16 K x 16 rows in pi order) of sub-block j of a row group.

// The q2 plane's 64 bytes of the operand -> two nibbles per byte, 8 bytes per K.
aie::vector<uint8, 128> q2_operand_bytes(const uint8_t * q2) {
    const aie::vector<uint8, 64> v = aie::load_v<64>(q2);
    aie::vector<uint8, 64> e = aie::bit_and((uint8)0x33, v);                           // rows 4q, 4q+2
    aie::vector<uint8, 64> o = aie::bit_and((uint8)0x33, aie::logical_downshift(v, 2));  // rows 4q+1, 4q+3
    const auto z = aie::interleave_zip(aie::vector_cast<uint32>(e), aie::vector_cast<uint32>(o), 1);
    return aie::vector_cast<uint8>(aie::concat(z.first, z.second));
}

aie::vector<uint4, 256> q2k_operand(const uint8_t * q2) { return aie::vector_cast<uint4>(q2_operand_bytes(q2)); }

// Q3_K: the low codes as above, and nibble bits 2 and 3 set where the hmask bit is 0.
aie::vector<int4, 256> q3k_operand(const uint8_t * q2, const uint8_t * h1) {
    const aie::vector<uint8, 64> v = aie::load_v<64>(q2);
    aie::vector<uint8, 64> e = aie::bit_and((uint8)0x33, v);
    aie::vector<uint8, 64> o = aie::bit_and((uint8)0x33, aie::logical_downshift(v, 2));
    // The h1 plane's 32 bytes as 64 nibbles: byte 4k + q of the unpack holds the bits of rows 4q..4q+3.
    const aie::vector<uint8, 64> y = aie::unpack(aie::vector_cast<uint4>(aie::load_v<32>(h1)));
    // Bits 0..3 of y to bits 0, 1, 4, 5: rows 4q, 4q+2 at bits 0, 4 (E), rows 4q+1, 4q+3 at bits 1, 5 (O).
    const aie::vector<uint8, 64> s = aie::bit_and((uint8)0x33, aie::bit_or(y, aie::upshift(y, 2)));
    const aie::vector<uint8, 64> eh = aie::bit_and((uint8)0x11, s);
    const aie::vector<uint8, 64> oh = aie::bit_and((uint8)0x22, s);
    // h * 12 at the nibble, inverted: (1 - h) * 12.
    e = aie::bit_or(e, aie::bit_xor((uint8)0xCC, aie::bit_or(aie::upshift(eh, 2), aie::upshift(eh, 3))));
    o = aie::bit_or(o, aie::bit_xor((uint8)0xCC, aie::bit_or(aie::upshift(oh, 1), aie::upshift(oh, 2))));
    const auto z = aie::interleave_zip(aie::vector_cast<uint32>(e), aie::vector_cast<uint32>(o), 1);
    return aie::vector_cast<int4>(aie::vector_cast<uint8>(aie::concat(z.first, z.second)));
}

// 64 scale bytes ([unit][row] of 4 units) with the rows of each unit in pi order.
aie::vector<uint8, 64> units_to_pi(const aie::vector<uint8, 64> & v) {
    const auto z = aie::interleave_zip(aie::filter_even(v, 1), aie::filter_odd(v, 1), 8);
    return aie::concat(z.first, z.second);
}

// ---------------------------------------------------------------------------------------------
// The tile

template <bool Q3> struct Planes {
    static constexpr const abi::WeightTileFormat & f = Q3 ? abi::fmt::q3_K : abi::fmt::q2_K;
    static constexpr int q2 = f.plane_offset(0);
    static constexpr int h1 = Q3 ? f.plane_offset(1) : 0;
    static constexpr int scales = f.plane_offset(Q3 ? 2 : 1);
    static constexpr int scale_units = f.planes[Q3 ? 2 : 1].units;  // 12 or 16 bytes per row
    static constexpr int d = f.plane_offset(Q3 ? 3 : 2);
    static constexpr int dmin = Q3 ? 0 : f.plane_offset(3);
};

// A row group's decoded fields.
struct GroupFields {
    v16f d, dmin;                   // pi order
    aie::vector<uint4, 256> mins;   // Q2_K: m_j of [j][row in pi order]
};

// Sub-block scales of row group g as int8 [j][row in pi order] into sc (256 bytes): Q2_K scales[j] & 15,
// Q3_K the 6-bit value of ggml's dequantize_row_q3_K minus 32. Returns the other fields.
template <bool Q3> GroupFields decode_group(const uint8_t * __restrict w, int g, int8_t * __restrict sc) {
    using P = Planes<Q3>;
    const uint8_t * s = w + P::scales + g * P::scale_units * abi::kRowGroup;
    GroupFields gf;
    if constexpr (Q3) {
        // Unit u = GGUF scale byte u of each row. Sub-block j: low 4 bits from byte j % 8 (low nibble for
        // j < 8, high nibble for j >= 8), bits 4..5 from byte 8 + j % 4, bit pair j / 4.
        const aie::vector<uint8, 128> a = aie::concat(units_to_pi(aie::load_v<64>(s)), units_to_pi(aie::load_v<64>(s + 64)));
        const aie::vector<uint8, 64> h = units_to_pi(aie::load_v<64>(s + 128));
        const aie::vector<uint8, 128> hb0 =
            aie::concat(aie::bit_and((uint8)3, h), aie::bit_and((uint8)3, aie::logical_downshift(h, 2)));
        const aie::vector<uint8, 128> hb1 =
            aie::concat(aie::bit_and((uint8)3, aie::logical_downshift(h, 4)), aie::logical_downshift(h, 6));
        const aie::vector<uint8, 128> s0 = aie::bit_or(aie::bit_and((uint8)15, a), aie::upshift(hb0, 4));
        const aie::vector<uint8, 128> s1 = aie::bit_or(aie::logical_downshift(a, 4), aie::upshift(hb1, 4));
        aie::store_v(sc, aie::sub(aie::vector_cast<int8>(s0), (int8)32));
        aie::store_v(sc + 128, aie::sub(aie::vector_cast<int8>(s1), (int8)32));
    } else {
        aie::vector<uint8, 256> b;
        for (int i = 0; i < 4; ++i) b.insert(i, units_to_pi(aie::load_v<64>(s + 64 * i)));
        const aie::vector<uint8, 256> lo = aie::bit_and((uint8)15, b);
        aie::store_v(sc, aie::vector_cast<int8>(lo.extract<128>(0)));
        aie::store_v(sc + 128, aie::vector_cast<int8>(lo.extract<128>(1)));
        gf.mins = aie::pack(aie::logical_downshift(b, 4));
        gf.dmin = half_to_float(rows_to_pi(aie::load_v<16>(reinterpret_cast<const uint16 *>(w + P::dmin) + 16 * g)));
    }
    gf.d = half_to_float(rows_to_pi(aie::load_v<16>(reinterpret_cast<const uint16 *>(w + P::d) + 16 * g)));
    return gf;
}

// c[t][g*16 + r] += z[t][pi(r)] for the 4 tokens of token group tg.
void add_to_c(float * __restrict c, int tg, int g, const v64f & z) {
    const auto nat = aie::interleave_zip(aie::filter_even(z, 8), aie::filter_odd(z, 8), 1);
    const v64f zz = aie::concat(nat.first, nat.second);
    for (int t = 0; t < abi::kTokGroup; ++t) {
        float * p = c + (tg * abi::kTokGroup + t) * abi::kTileM + g * abi::kRowGroup;
        aie::store_v(p, aie::add(aie::load_v<16>(p), zz.extract<16>(t)));
    }
}

template <bool Q3, int NT>
void low_tile(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c, int tn) {
    using P = Planes<Q3>;
    const abi::ActTileFormat af{tn, kTileK, kTileK};
    const int8_t * codes = reinterpret_cast<const int8_t *>(a + af.codes_offset());
    const float * scales = reinterpret_cast<const float *>(a + af.scales_offset());
    const int16_t * sums = reinterpret_cast<const int16_t *>(a + af.sums_offset());
    const int n_tg = tn / abi::kTokGroup;
    // Shifts truncate in floor (the mode the core resets to); mul_rne switches to conv_even
    // for its two srs. The mode found is restored at the end.
    const aie::rounding_mode saved = aie::swap_rounding(aie::rounding_mode::floor);

    alignas(64) int8_t sc[kSubBlocks * abi::kRowGroup];
    for (int g = 0; g < kRowGroups; ++g) {
        const GroupFields gf = decode_group<Q3>(w, g, sc);
        const v64f d64 = gf.d.template grow_replicate<64>();
        for (int tg0 = 0; tg0 < n_tg; tg0 += NT) {
            aie::accum<acc32, 64> sumi[NT];
            for (int u = 0; u < NT; ++u) sumi[u] = aie::zeros<acc32, 64>();
            AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(16)
            for (int j = 0; j < kSubBlocks; ++j) {
                const int op = g * kSubBlocks + j;  // operand index in the row group's K run
                const aie::vector<int16, 64> scv = aie::unpack(aie::load_v<16>(sc + 16 * j)).template grow_replicate<64>();
                if constexpr (Q3) {
                    const aie::vector<int4, 256> b = q3k_operand(w + P::q2 + 64 * op, w + P::h1 + 32 * op);
                    for (int u = 0; u < NT; ++u) {
                        aie::mmul<4, 16, 16, int8, int4> mm;
                        mm.mul(aie::load_v<64>(codes + ((tg0 + u) * kSubBlocks + j) * 64), b);
                        sumi[u] = aie::mac(sumi[u], mm.template to_vector<int16>(), scv);
                    }
                } else {
                    const aie::vector<uint4, 256> b = q2k_operand(w + P::q2 + 64 * op);
                    for (int u = 0; u < NT; ++u) {
                        aie::mmul<4, 16, 16, int8, uint4> mm;
                        mm.mul(aie::load_v<64>(codes + ((tg0 + u) * kSubBlocks + j) * 64), b);
                        sumi[u] = aie::mac(sumi[u], mm.template to_vector<int16>(), scv);
                    }
                }
            }
            for (int u = 0; u < NT; ++u) {
                const int tg = tg0 + u;
                // s_a of the 4 tokens, each over its 16 lanes.
                const aie::vector<float, 4> s4 = aie::load_v<4>(scales + abi::kTokGroup * tg);
                v64f sa;
                for (int t = 0; t < abi::kTokGroup; ++t) sa.insert(t, aie::broadcast<float, 16>(s4[t]));
                const v64f x = mul_rne(mul_rne(d64, sa), aie::to_float(sumi[u]));
                if constexpr (Q3) {
                    add_to_c(c, tg, g, x);
                } else {
                    // bsum [j][t] -> [t][j], split into int8 hi (x128) and lo parts.
                    const aie::vector<int16, 64> bs = aie::transpose(aie::load_v<64>(sums + 64 * tg), kSubBlocks, abi::kTokGroup);
                    const aie::vector<int8, 64> lo = aie::pack(aie::bit_and((int16)127, bs));
                    const aie::vector<int8, 64> hi = aie::pack(aie::downshift(bs, 7));
                    aie::mmul<4, 16, 16, int8, uint4> mh, ml;
                    mh.mul(hi, gf.mins);
                    ml.mul(lo, gf.mins);
                    const aie::vector<int32, 64> summ =
                        aie::add(aie::upshift(mh.template to_vector<int32>(), 7), ml.template to_vector<int32>());
                    const v64f y = mul_rne(mul_rne(gf.dmin.template grow_replicate<64>(), sa), aie::to_float(summ));
                    add_to_c(c, tg, g, aie::sub(x, y));
                }
            }
        }
    }
    aie::set_rounding(saved);
}

}  // namespace

extern "C" {
void mm_q2_K_a8_n4(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    low_tile<false, 1>(w, a, c, 4);
}
void mm_q2_K_a8_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    low_tile<false, 4>(w, a, c, 32);
}
void mm_q3_K_a8_n4(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    low_tile<true, 1>(w, a, c, 4);
}
void mm_q3_K_a8_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    low_tile<true, 4>(w, a, c, 32);
}
}
