// Legacy-quant matmul core program: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 weights (32-value blocks, fp16 d and,
// for *_1, fp16 m per block) against int8 activations with one fp32 scale per 32 values (tile ABI:
// aie/include/xdna_aie/matmul_tiles.h). One K tile (256) of one 64-row weight tile per call, for a
// token tile of TN = 4 (decode) or 32 (prefill); the result is ADDED into the fp32 C tile.
//
// ---- Arithmetic -------------------------------------------------------------------------------
// Every product of codes is an int8 x int4 4x16x16 mmul (aie::mmul<4, 16, 16, int8, int4>): A = 4
// tokens x 16 K of activation codes, B = 16 K x 16 rows of weight parts, C = 4 x 16 int32 lanes. A
// 32-value block is two mmul K steps. Weight codes become int4 parts in registers, never in memory:
//   Q4_0  isum = sum (code - 8) a   = dot(q4)                    q4 = the stored plane (code - 8)
//   Q4_1  isum = sum code a         = dot(q4) + 8 S              S = the block's activation sum
//   Q5_0  isum = sum (code - 16) a  = dot(q4) + 8 dot(2h - 1)    h = the h1 bit, 2h - 1 in {-1, 1}
//   Q5_1  isum = sum code a         = dot(q4) + 8 dot(2h + 1)    2h + 1 in {1, 3}
//   Q8_0  isum = sum code a         = 16 dot(hi) + dot(lo) + 8 S hi = code >> 4 in -8..7,
//                                                                 lo = (code & 15) - 8 in -8..7
// (code = 16 h + q4 + 8 for Q5, code = 16 hi + lo + 8 for Q8_0.) S is read from the activation tile's
// sums plane (two int16 sums of 16 codes), added as an int16: |S| <= 32 * 127 = 4064.
// The half-dot of the high parts (dot(2h -+ 1), dot(hi)) leaves the accumulator exactly (srs to int32,
// shift 0), is multiplied by 8 or 16 with aie::upshift (an ups into 64-bit lanes and an srs back to
// int32: exact, |16 dot(hi)| < 2^20, in every saturation mode) and comes back as the initial value of
// the low-part chain: an accumulator cannot be scaled in place. The shift cannot be left to the
// accumulator's constructor: aie_api turns an int32 vector into a 32-bit accumulator by a register
// cast and ignores its shift argument (detail/aie2p/accum.hpp; its REQUIRES(shift == 0) compiles to
// nothing under Peano). So each (4 tokens, 16 rows, block) uses ONE accumulator,
// and one int32 dot per (token, row, block) leaves it for the epilogue.
// Exactness (all in 32-bit lanes, nothing narrower is ever formed from a sum): |dot(q4)| <= 32*8*128,
// |dot(2h+1)| <= 32*3*128, |dot(hi)| <= 32*8*128 = 32768 (kept in int32: one past int16 with a -128
// code), |isum| <= 32*128*128 = 524288 < 2^24, so float(isum) is exact.
//
// fp32 epilogue per (token t, row r, block), in this order (the contract's numerics):
//   p = fp32(d) * s_a;                                  q = fp32(m) * s_a  (*_1 only)
//   Q*_0: c = c + p * float(isum)                       *_1: c = c + (p * float(isum) + q * float(S))
// fp32(d) is an exact bit conversion (fp16_to_fp32 below: subnormals, infinities and NaN payloads
// included; NaNs come out quiet). AIE2P has no fp32 multiplier: the products are Peano's emulation from
// bf16 partial products (llvm-aie clang/lib/Headers/aie2p_vmult.h; the simulator's aie_api reproduces
// it), operands split in the current rounding mode (floor: the kernel never changes it) and all nine
// partial products added, so a product is within about an ulp of the IEEE one but not always equal to
// it. The epilogues call the 32-lane `fast` intrinsic (13 vector-slot instructions per 32 lanes, the
// products of aie::mul's `safe`, 21, in a chain of MACs: the same value unless a partial product
// underflows). Adds are fp32 adds. Each C element sees its blocks in K order.
//
// ---- Loop order and the 8 accumulator registers -----------------------------------------------
//   for row group rg (4 x 16 rows)                     weight planes are rg-major: one linear pass
//     for block b (8 x 32 K)
//       build the B operands of (rg, b) in registers: lo[2], hi[2] (Q5: 2h -+ 1; Q8_0: hi and lo),
//       and fp32(d), fp32(m) of the 16 rows                              -> reused by every token group
//       for token groups g, g + 1 (TN / 4 groups, two at a time)
//         two dots back to back: A(g, 2b), A(g, 2b + 1) (64 B each), hi chain -> srs/ups -> lo chain
//         then the two groups' epilogues (out of line, shared by the types)
// Accumulators: a dot uses ONE (its hi chain re-enters the same register as the lo chain's initial
// value). TN = 32 runs two dots at once, two independent mmul chains hiding each other's latency (2
// registers); the epilogue's emulated fp32 multiplies keep their residuals and partial-product sums
// in 32-lane accfloat (half a register each, 2 to 3 live per multiply): the other 6 registers. More
// dots in flight would buy nothing: the epilogue, not the mmul, sets the pace (host counters per
// (g, rg, b): 2 or 4 mmuls against about 66 vector-slot operations for Q*_0, 120 for *_1, most of it
// the 4 or 8 emulated 32-lane multiplies).
// TN = 4 (one token group): one dot, then its epilogue. Decode has no weight reuse: 9 to 17 KB of
// weights per tile against 2100 (Q4_0) to 4000 (Q5_1) vector-slot operations; at about 2 GB/s of DRAM
// bandwidth per core (60 GB/s over 32 cores) the weight DMA takes longer than the epilogue.
// C is read-modified-written per (g, rg, b) (4 x 64 B loads and stores), on slots the epilogue leaves
// free.
//
// ---- Data memory at TN = 32 (64 KB per core) --------------------------------------------------
//   W tile, double-buffered, largest type Q8_0: 2 x 17408 B            34816
//   A tile, double-buffered: codes 8192 + scales 1024 + sums 1024 = 10240;  x2  20480
//   C tile fp32 32 x 64 (single: drained by DMA at the end of a K run)  8192
//   scratch (codes are expanded in registers)                              0
//   stack: the two dots handed to the epilogue (2 x 256), spilled B operands
//          (Q8_0: 4 x 128) and fp32 d, m (128), call frames                1536
//   total                                                               65024  of 65536 (512 free)
// Q4_0 / Q4_1 / Q5_0 / Q5_1 tiles are 9216 / 10240 / 11264 / 12288 B: 13 to 18 KB more headroom.
//
// ---- Program memory (16 KB) ---------------------------------------------------------------------
// TN is a run-time trip count, not a template parameter: the ten entry points share five bodies. The
// code that is large is the emulated fp32 multiply (about 24 instructions each, assuming the compiler
// expands it inline), so everything that multiplies floats exists once, out of line: the two
// epilogues (token loop rolled) and fp16_to_fp32. Static operation counts (host counters per call,
// divided by trip counts), packed about 2 per VLIW bundle of at most 16 B, pipelined loops emitted
// twice: epilogue_scale about 80 operations per token pair (0.6 to 1.2 KB), epilogue_scale_min about
// 150 (1.1 to 2.2 KB), fp16_to_fp32 about 15 (0.2 KB); the type bodies 40 (Q4_0) to 100 (Q8_0) operations in
// the (rg, b) and g loops (0.6 to 1.7 KB each, 5.8 KB together); zeroing and startup code about 1 KB.
// Total about 8 to 10.5 KB of 16 KB. Not checked with the core compiler yet.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/matmul_tiles.h"

namespace {

namespace abi = xdna_aie;

enum class Type { q4_0, q4_1, q5_0, q5_1, q8_0 };

template <Type T> constexpr const abi::WeightTileFormat & format() {
    return T == Type::q4_0 ? abi::fmt::q4_0
         : T == Type::q4_1 ? abi::fmt::q4_1
         : T == Type::q5_0 ? abi::fmt::q5_0
         : T == Type::q5_1 ? abi::fmt::q5_1
                           : abi::fmt::q8_0;
}
template <Type T> constexpr bool kHasMin = T == Type::q4_1 || T == Type::q5_1;
template <Type T> constexpr bool kHasH1 = T == Type::q5_0 || T == Type::q5_1;
template <Type T> constexpr bool kUsesSum = T == Type::q4_1 || T == Type::q8_0;  // + 8 S in isum
// Planes (matmul_tiles.h): codes, [h1], d, [m].
template <Type T> constexpr int kDPlane = kHasH1<T> ? 2 : 1;

constexpr int kTileK = 256;
constexpr int kBlockK = 32;                                  // values per block (and per act scale)
constexpr int kBlocks = kTileK / kBlockK;                    // 8
constexpr int kSteps = kTileK / abi::kKStep;                 // 16 mmul K steps per tile row
constexpr int kRowGroups = abi::kTileM / abi::kRowGroup;     // 4
constexpr int kTokens = abi::kTokGroup;                      // 4 tokens per A operand

using MMUL = aie::mmul<4, 16, 16, int8, int4>;
using AVec = aie::vector<int8, MMUL::size_A>;   // 4 tokens x 16 K
using BVec = aie::vector<int4, MMUL::size_B>;   // 16 K x 16 rows
using IVec = aie::vector<int32, MMUL::size_C>;  // 4 tokens x 16 rows
using FVec = aie::vector<float, abi::kRowGroup>;
constexpr int kBBytes = MMUL::size_B / 2;       // one int4 B operand: 128 B

// The B operands and row scales of one (row group, block): two K steps each.
struct BlockWeights {
    BVec lo[2];
    BVec hi[2];
    FVec d, m;
};

// 32 bytes of a plane as eight 32-bit words (masks are built from scalar words).
inline void load_words(const uint8_t * p, uint32_t * w) { __builtin_memcpy(w, p, 32); }

// fp16 bit patterns -> fp32, exact for every pattern. The fp32 word is built as two 16-bit halves
// (no 16 -> 32-bit lane widening needed): high = sign | rebiased exponent | top 7 mantissa bits, low =
// the last 3 mantissa bits << 13. Normal: exponent + 112; inf/NaN: + 224 (payload kept; the final
// subtraction quiets a signalling NaN, as any fp32 operation would); zero: 0.
// Subnormal m * 2^-24: built as 2^-14 * (1 + m/1024) and 2^-14 subtracted (exact, Sterbenz).
__attribute__((noinline)) FVec fp16_to_fp32(const aie::vector<uint16, 16> & h) {
    const aie::vector<uint16, 16> mag = aie::bit_and((uint16)0x7fff, h);
    const aie::vector<uint16, 16> sign = aie::bit_and((uint16)0x8000, h);
    const aie::mask<16> zero = aie::eq(mag, (uint16)0);
    const aie::mask<16> sub = aie::lt(mag, (uint16)0x0400);
    const aie::mask<16> inf_nan = aie::ge(mag, (uint16)0x7c00);
    aie::vector<uint16, 16> bias = aie::broadcast<uint16, 16>((uint16)0x3800);
    bias = aie::select(bias, aie::broadcast<uint16, 16>((uint16)0x7000), inf_nan);
    bias = aie::select(bias, aie::broadcast<uint16, 16>((uint16)0x3880), sub);
    bias = aie::select(bias, aie::zeros<uint16, 16>(), zero);
    const aie::vector<uint16, 16> hi = aie::bit_or(aie::add(aie::downshift(mag, 3), bias), sign);
    const aie::vector<uint16, 16> lo = aie::upshift(aie::bit_and((uint16)7, h), 13);
    // The subnormal correction, signed like the value: sign | 0x3880 in the high half (2^-14).
    const aie::vector<uint16, 16> corr =
        aie::select(aie::zeros<uint16, 16>(), aie::bit_or((uint16)0x3880, sign), sub & ~zero);
    const auto v = aie::interleave_zip(lo, hi, 1);
    const auto k = aie::interleave_zip(aie::zeros<uint16, 16>(), corr, 1);
    const FVec value = aie::vector_cast<float>(aie::concat(v.first, v.second));
    const FVec minus = aie::vector_cast<float>(aie::concat(k.first, k.second));
    return aie::sub(value, minus);  // x - (+0) = x for every other lane, -0 and NaN payloads included
}

// A B operand straight from the q4 plane: its nibbles already are the signed int4 code - 8.
inline BVec q4_operand(const uint8_t * p) { return aie::vector_cast<int4>(aie::load_v<kBBytes>(reinterpret_cast<const int8 *>(p))); }

// A B operand from 256 h1 bits: `when0` where the bit is 0, `when1` where it is 1 (2h -+ 1).
inline BVec h1_operand(const uint8_t * p, const aie::vector<int8, 256> & when0, const aie::vector<int8, 256> & when1) {
    uint32_t w[8];
    load_words(p, w);
    const aie::mask<256> bits = aie::mask<256>::from_uint32(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]);
    return aie::pack(aie::select(when0, when1, bits));
}

// The two int4 parts of 256 Q8_0 codes: hi = code >> 4 (arithmetic), lo = (code & 15) - 8.
inline void q8_operands(const uint8_t * p, BVec & lo, BVec & hi) {
    const aie::vector<int8, 256> code = aie::load_v<256>(reinterpret_cast<const int8 *>(p));
    hi = aie::pack(aie::downshift(code, 4));
    lo = aie::pack(aie::sub(aie::bit_and((int8)15, code), (int8)8));
}

template <Type T>
inline BlockWeights block_weights(const uint8_t * w, int rg, int b) {
    constexpr abi::WeightTileFormat f = format<T>();
    BlockWeights bw;
    const int step = rg * kSteps + 2 * b;  // B operand index of the block's first K step
    if constexpr (T == Type::q8_0) {
        const uint8_t * q8 = w + f.plane_offset(0);
        q8_operands(q8 + step * MMUL::size_B, bw.lo[0], bw.hi[0]);
        q8_operands(q8 + (step + 1) * MMUL::size_B, bw.lo[1], bw.hi[1]);
    } else {
        const uint8_t * q4 = w + f.plane_offset(0);
        bw.lo[0] = q4_operand(q4 + step * kBBytes);
        bw.lo[1] = q4_operand(q4 + (step + 1) * kBBytes);
        if constexpr (kHasH1<T>) {
            // Q5_0: 2h - 1 (code - 16 = 8 (2h - 1) + q4); Q5_1: 2h + 1 (code = 8 (2h + 1) + q4).
            constexpr int8 off = T == Type::q5_0 ? -1 : 1;
            const aie::vector<int8, 256> when0 = aie::broadcast<int8, 256>(off);
            const aie::vector<int8, 256> when1 = aie::broadcast<int8, 256>((int8)(off + 2));
            const uint8_t * h1 = w + f.plane_offset(1);
            constexpr int kH1Bytes = MMUL::size_B / 8;
            bw.hi[0] = h1_operand(h1 + step * kH1Bytes, when0, when1);
            bw.hi[1] = h1_operand(h1 + (step + 1) * kH1Bytes, when0, when1);
        }
    }
    // fp16 fields: [rg][block][row % 16], 16 rows = 32 contiguous bytes.
    const int field = (rg * kBlocks + b) * abi::kRowGroup;
    bw.d = fp16_to_fp32(aie::load_v<16>(reinterpret_cast<const uint16 *>(w + f.plane_offset(kDPlane<T>)) + field));
    if constexpr (kHasMin<T>) {
        bw.m = fp16_to_fp32(aie::load_v<16>(reinterpret_cast<const uint16 *>(w + f.plane_offset(kDPlane<T> + 1)) + field));
    }
    return bw;
}

// The block's integer dot for 4 tokens x 16 rows (lane t * 16 + r), as the table at the top says.
// `s16`: the 4 tokens' block sums, each repeated over 16 lanes (Q4_1, Q8_0 only).
template <Type T>
inline IVec block_dot(const BlockWeights & bw, const AVec & a0, const AVec & a1, const aie::vector<int16, 64> & s16) {
    if constexpr (T == Type::q4_0) {
        MMUL m;
        m.mul(a0, bw.lo[0]);
        m.mac(a1, bw.lo[1]);
        return m.template to_vector<int32>();
    } else if constexpr (T == Type::q4_1) {
        MMUL m(s16, 3);  // 8 S
        m.mac(a0, bw.lo[0]);
        m.mac(a1, bw.lo[1]);
        return m.template to_vector<int32>();
    } else if constexpr (kHasH1<T>) {
        MMUL h;
        h.mul(a0, bw.hi[0]);
        h.mac(a1, bw.hi[1]);
        MMUL m(aie::upshift(h.template to_vector<int32>(), 3));  // 8 dot(2h -+ 1)
        m.mac(a0, bw.lo[0]);
        m.mac(a1, bw.lo[1]);
        return m.template to_vector<int32>();
    } else {  // Q8_0
        MMUL h;
        h.mul(a0, bw.hi[0]);
        h.mac(a1, bw.hi[1]);
        MMUL m(aie::upshift(h.template to_vector<int32>(), 4));  // 16 dot(hi)
        m.mac(a0, bw.lo[0]);
        m.mac(a1, bw.lo[1]);
        return aie::mac(m.to_accum(), s16, (int16)8).template to_vector<int32>();  // + 8 S
    }
}

// c[t][16 rows] += the block's terms for the 4 tokens of a group, in the contract's fp32 order. Shared
// by the types (one copy with, one without the min term) and not inlined: with the core's fp32
// multiply emulated in about 24 instructions each, this is most of the program's code and most of
// its run time, so it exists once, its token-pair loop kept rolled (the call costs a few cycles against a
// few hundred).
#if defined(__clang__)
#define XDNA_ROLLED _Pragma("clang loop unroll(disable)")
#else
#define XDNA_ROLLED
#endif

// Two tokens per step: 32 lanes [t][r] per fp32 multiply, the width the core's emulation works at (a
// 16-lane multiply costs as much as a 32-lane one). The products are the 32-lane `fast` intrinsic: the
// nine bf16 partial products of aie::mul's default (`safe`) in a chain of MACs, 13 vector instructions
// instead of 21, the same value unless a partial product underflows fp32 (host aie_api
// fp32-emulation.hpp; llvm-aie clang/lib/Headers/aie2p_vmult.h).
using F32x32 = aie::vector<float, 32>;

inline F32x32 pair_of(float x0, float x1) { return aie::concat(aie::broadcast<float, 16>(x0), aie::broadcast<float, 16>(x1)); }

// c[t][16 rows] of tokens 2 tp, 2 tp + 1 (kTileM apart) plus v.
inline void add_to_c(float * __restrict c0, const F32x32 & v) {
    const F32x32 sum = aie::add(aie::concat(aie::load_v<16>(c0), aie::load_v<16>(c0 + abi::kTileM)), v);
    aie::store_v(c0, sum.extract<16>(0));
    aie::store_v(c0 + abi::kTileM, sum.extract<16>(1));
}

// x * y on 32 lanes with the 32-lane fast intrinsic. Its result is the core's native v32accfloat, which
// aie_api's functions do not take: it enters an accum explicitly, as on the core.
inline aie::vector<float, 32> fast32(const aie::vector<float, 32> & x, const aie::vector<float, 32> & y) {
    return aie::accum<accfloat, 32>(mul_elem_32_accuracy_fast(x, y)).template to_vector<float>();
}

__attribute__((noinline)) void epilogue_scale(float * __restrict c, const IVec & isum, const FVec & d, const float * __restrict sa) {
    const F32x32 d2 = aie::concat(d, d);
    XDNA_ROLLED
    for (int tp = 0; tp < kTokens / 2; ++tp) {
        const F32x32 fi = aie::to_float<float>(isum.template extract<32>(tp));
        const F32x32 p = fast32(d2, pair_of(sa[2 * tp], sa[2 * tp + 1]));
        const F32x32 v = fast32(p, fi);
        add_to_c(c + 2 * tp * abi::kTileM, v);
    }
}

__attribute__((noinline)) void epilogue_scale_min(float * __restrict c, const IVec & isum, const FVec & d, const FVec & m,
                                                  const float * __restrict sa, const float * __restrict fsum) {
    const F32x32 d2 = aie::concat(d, d), m2 = aie::concat(m, m);
    XDNA_ROLLED
    for (int tp = 0; tp < kTokens / 2; ++tp) {
        const F32x32 fi = aie::to_float<float>(isum.template extract<32>(tp));
        const F32x32 s = pair_of(sa[2 * tp], sa[2 * tp + 1]);
        const F32x32 p = fast32(d2, s);
        const F32x32 q = fast32(m2, s);
        const F32x32 v = aie::add(fast32(p, fi),
                                  fast32(q, pair_of(fsum[2 * tp], fsum[2 * tp + 1])));
        add_to_c(c + 2 * tp * abi::kTileM, v);
    }
}

// The block's dot for token group g: its two A operands, and the block sums S_t of its tokens (sums
// plane [g][k16][t]: two int16 sums of 16 codes, added as int16) where the type needs them.
template <Type T>
inline IVec group_dot(const BlockWeights & bw, const int8 * __restrict codes, const int16 * __restrict sums, int g, int b,
                      float * fsum) {
    const int8 * ap = codes + (g * kSteps + 2 * b) * MMUL::size_A;
    const AVec a0 = aie::load_v<MMUL::size_A>(ap);
    const AVec a1 = aie::load_v<MMUL::size_A>(ap + MMUL::size_A);
    aie::vector<int16, 64> s16;
    if constexpr (kUsesSum<T> || kHasMin<T>) {
        const int16 * sp = sums + (g * kSteps + 2 * b) * kTokens;
        int16 s[kTokens];
        for (int t = 0; t < kTokens; ++t) s[t] = (int16)(sp[t] + sp[kTokens + t]);
        if constexpr (kUsesSum<T>) {
            s16 = aie::concat(aie::broadcast<int16, 16>(s[0]), aie::broadcast<int16, 16>(s[1]), aie::broadcast<int16, 16>(s[2]),
                              aie::broadcast<int16, 16>(s[3]));
        }
        if constexpr (kHasMin<T>) {
            for (int t = 0; t < kTokens; ++t) fsum[t] = aie::to_float(s[t]);
        }
    }
    return block_dot<T>(bw, a0, a1, s16);
}

template <Type T>
inline void group_epilogue(float * __restrict c, const IVec & isum, const BlockWeights & bw, const float * __restrict scales,
                           int g, int rg, int b, const float * fsum) {
    float * cg = c + (g * kTokens) * abi::kTileM + rg * abi::kRowGroup;
    const float * sa = scales + (g * kBlocks + b) * kTokens;
    if constexpr (kHasMin<T>) {
        epilogue_scale_min(cg, isum, bw.d, bw.m, sa, fsum);
    } else {
        epilogue_scale(cg, isum, bw.d, sa);
    }
}

template <Type T>
__attribute__((noinline)) void legacy_tile(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c,
                                           const int tn) {
    const abi::ActTileFormat af{tn, kTileK, kBlockK};
    const int8 * codes = reinterpret_cast<const int8 *>(a + af.codes_offset());
    const float * scales = reinterpret_cast<const float *>(a + af.scales_offset());
    const int16 * sums = reinterpret_cast<const int16 *>(a + af.sums_offset());
    const int groups = tn / kTokens;

    for (int rg = 0; rg < kRowGroups; ++rg) {
        for (int b = 0; b < kBlocks; ++b) {
            const BlockWeights bw = block_weights<T>(w, rg, b);
            if (groups == 1) {
                float fsum[kTokens];
                const IVec isum = group_dot<T>(bw, codes, sums, 0, b, fsum);
                group_epilogue<T>(c, isum, bw, scales, 0, rg, b, fsum);
                continue;
            }
            // Two token groups' dots back to back: two independent mmul chains (two accumulators)
            // hide each other's latency; then their epilogues. Not marked for software pipelining:
            // the body calls the out-of-line epilogues, which a modulo schedule cannot overlap with the
            // next iteration's dots.
            AIE_LOOP_MIN_ITERATION_COUNT(4)
            for (int g = 0; g < groups; g += 2) {
                float fsum0[kTokens], fsum1[kTokens];
                const IVec isum0 = group_dot<T>(bw, codes, sums, g, b, fsum0);
                const IVec isum1 = group_dot<T>(bw, codes, sums, g + 1, b, fsum1);
                group_epilogue<T>(c, isum0, bw, scales, g, rg, b, fsum0);
                group_epilogue<T>(c, isum1, bw, scales, g + 1, rg, b, fsum1);
            }
        }
    }
}

}  // namespace

extern "C" {
void mm_q4_0_a8_n4(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { legacy_tile<Type::q4_0>(w, a, c, 4); }
void mm_q4_0_a8_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { legacy_tile<Type::q4_0>(w, a, c, 32); }
void mm_q4_1_a8_n4(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { legacy_tile<Type::q4_1>(w, a, c, 4); }
void mm_q4_1_a8_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { legacy_tile<Type::q4_1>(w, a, c, 32); }
void mm_q5_0_a8_n4(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { legacy_tile<Type::q5_0>(w, a, c, 4); }
void mm_q5_0_a8_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { legacy_tile<Type::q5_0>(w, a, c, 32); }
void mm_q5_1_a8_n4(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { legacy_tile<Type::q5_1>(w, a, c, 4); }
void mm_q5_1_a8_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { legacy_tile<Type::q5_1>(w, a, c, 32); }
void mm_q8_0_a8_n4(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { legacy_tile<Type::q8_0>(w, a, c, 4); }
void mm_q8_0_a8_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { legacy_tile<Type::q8_0>(w, a, c, 32); }
}
