// F16, BF16 and F32 weights x activations of the same type (contracts mm_f16_f16, mm_bf16_bf16,
// mm_f32_f32): one AIE2P core program, c_tile += W_tile x A_tile for one K tile (TK = 128 for F16 and
// BF16, 64 for F32). Tiles (aie/include/xdna_aie/matmul_tiles.h): weights 64 rows x TK in the 4x8x8
// B-operand order (8 K x 8 rows per operand), activations TN x TK in the A-operand order (4 tokens x
// 8 K per operand), C fp32 [TN][64].
//
// Products and accumulation:
//   BF16: aie::mmul<4, 8, 8, bfloat16, bfloat16> (accfloat). aie_api emulates it on AIE2P with eight
//     32-lane bf16 elementwise MACs per call, k = 0..7 in order: every bf16 x bf16 product is exact in
//     fp32 and each MAC adds one product to the fp32 accumulator with one rounding (nearest even).
//   F16: an fp16 value x (11 significant bits, subnormals included) is split in registers into two bf16
//     values: hi = fp32(x) truncated to its upper 16 bits (the 8 leading significant bits), lo = fp32(x)
//     - hi (the remaining <= 3 significant bits; exactly representable in bf16 since bf16 has fp32's
//     exponent range, so fp16 subnormals, 2^-24 .. 2^-14, are no special case). x = hi + lo exactly,
//     the subtraction is exact (Sterbenz). Then x * y = hi*hi' + hi*lo' + lo*hi' + lo*lo' with four exact
//     bf16 products, done as four bf16 mmul passes per operand pair, in this order: hi x hi', hi x lo',
//     lo x hi', lo x lo'. Every partial sum of the four products of ONE pair is exact (all are
//     multiples of 2^-20 of the leading bit and span <= 22 bits), so a single product reaches C exactly.
//     Non-finite values: inf splits into hi = inf, lo = inf - inf = NaN, so an F16 inf or NaN operand
//     makes its outputs NaN (the CPU gives +-inf for inf x finite).
//   F32: elementwise on 32 lanes, not aie::mmul<4, 8, 4, float> (aie_api's only float shape on AIE2P,
//     eight 16-lane `safe` fp32 emulations of 22 vector instructions per 128 MACs: aie_api
//     detail/aie2p/emulated_mmul_intrinsics.hpp). Per k, lanes [t][n] of a (token group, 8-row group)
//     block: C += A[t][k] * B[k][n] with the 32-lane `fast` fp32 intrinsic (13 vector instructions per
//     32 MACs) and an accumulator add. The intrinsic is Peano's emulation (llvm-aie
//     clang/lib/Headers/aie2p_vmult.h): three bf16 parts per operand, split in the current rounding
//     mode (floor here), all nine partial products added in a chain of MACs: aie::mul's `safe` value
//     unless a partial product underflows. So products are not always correctly rounded: relative
//     error below 1.3 * 2^-24 (eight roundings of partial sums, all but the last below 2^-4.6 of the
//     product).
//   Accumulation order, every type: the accumulator of a (token group, 8-row group) block starts from
//   the C tile's values, then the K values are added one at a time in increasing k (F16: for each
//   8-K step, the four passes in the order above, each k = 0..7), each add rounded to fp32. So
//   c_new = (((c + p_0) + p_1) + ... + p_{TK-1}) per element (F16: four partial products per k).
//
// Loop order: 8-row groups in blocks of RB, token groups in blocks of TGB, K steps of 8 innermost with
// RB x TGB accumulators (TN = 4: RB = 8, TGB = 1; TN = 32: RB = 2, TGB = 8, F32 TGB = 4). A weight
// operand is loaded (F16: split) once per block and used by TGB token groups.
// Accumulator registers: 8 x 32 lanes (TN = 4) or 16 x 32 lanes (TN = 32) = 4 or 8 of the 8 2048-bit
// registers; F32 8 x 32 lanes (4 registers) either way, leaving room for the fp32 emulation's
// residuals and partial sums (three 32-lane accumulators per multiply).
//
// Data memory at TN = 32 vs 64 KB:
//   weight tile, double-buffered      2 x 16384 = 32768  (F16/BF16: 64 x 128 x 2; F32: 64 x 64 x 4)
//   activation tile, double-buffered  2 x 8192 = 16384   (32 x 128 x 2; F32 32 x 64 x 4)
//   C tile                            8192
//   stack                             F16 split operands spilled at RB = 8: up to 16 x 128 B = 2 KB at
//                                     TN = 4 (the tiles are smaller there); ~0.5 KB at TN = 32
//   total                             ~57.5 KB of 64 KB. No room for a second C buffer at TN = 32.
//
// Cost per call (host aie_api counters; tests/kernels/test_float.cpp prints them). aie_api's bf16
// mmul emulation is 8 elementwise MACs + 33 shuffles per 4x8x8; F16 needs 4 of them per operand pair:
//   BF16 TN=4:  128 mmul,  1024 vector,   4256 move     TN=32: 1024 mmul,   8192 vector,  34048 move
//   F16  TN=4:  512 mmul,  5184 vector,  30528 move     TN=32: 4096 mmul,  35840 vector, 173824 move
//   F32  TN=4:  no mmul, 7168 vector,  4128 move,  3104 store (the fp32 emulation's bf16 parts)
//        TN=32: no mmul, 57344 vector, 45312 move, 24832 store (14 vector instructions per 32 MACs;
//        the 4x8x4 float mmul would take 180224)
// The F16 split is ~20 instructions per 16 values (~15% of the F16 total at TN = 32: the activation
// operands are split again for each of the 4 row blocks).
//
// Program memory vs 16 KB (estimate, not measured): 6 bodies (3 types x 2 token tiles), each a loop
// nest around 1 (BF16) or 4 (F16) mmul call sites whose emulations expand to ~41 instructions each,
// or (F32) one 32-lane fp32 multiply and add of ~30 instructions inside a loop over k; kept as loops
// over the RB x TGB blocks (fully unrolled, the 16 blocks of TN = 32 would not fit), that is ~20-70
// bundles, ~0.3-1 KB per body, plus the F16 split (~25 bundles, shared): ~4-5 KB in all. If the
// compiler's unrolling makes it larger, RB and TGB can become runtime loop counts (one body per type).
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/matmul_tiles.h"

namespace {

namespace abi = xdna_aie;

enum class Kind { f16, bf16, f32 };

constexpr int kRows8 = abi::kTileM / 8;  // 8-row groups (B operand columns)

template <Kind K> constexpr int tile_k() { return K == Kind::f32 ? abi::fmt::f32.tile_k : abi::fmt::f16.tile_k; }

using v16u32 = aie::vector<uint32, 16>;

// fp16 bit patterns -> fp32 bit patterns, exactly (subnormals via one exact subtraction; inf/NaN kept).
v16u32 half_bits_to_float_bits(const aie::vector<uint16, 16> & h16) {
    const v16u32 h = aie::unpack(h16);
    const v16u32 t = aie::upshift(aie::bit_and(0x7FFFu, h), 13);
    const v16u32 e = aie::bit_and(0x7C00u, h);
    const v16u32 normal = aie::add(t, 112u << 23);
    const v16u32 special = aie::add(t, 224u << 23);
    const aie::vector<float, 16> sub_f = aie::sub(aie::vector_cast<float>(aie::add(t, 113u << 23)), 0x1p-14f);
    v16u32 bits = aie::select(normal, special, aie::eq(e, 0x7C00u));
    bits = aie::select(bits, aie::vector_cast<uint32>(sub_f), aie::eq(e, 0u));
    return aie::bit_or(bits, aie::upshift(aie::bit_and(0x8000u, h), 16));
}

// N fp16 values -> bf16 hi and lo with hi + lo == value exactly (see the top comment).
template <unsigned N> struct Split {
    aie::vector<bfloat16, N> hi, lo;
};

template <unsigned N> Split<N> split_f16(const aie::vector<uint16, N> & h) {
    Split<N> s;
    for (unsigned i = 0; i < N / 16; ++i) {
        const v16u32 x = half_bits_to_float_bits(h.template extract<16>(i));
        const v16u32 hi = aie::bit_and(0xFFFF0000u, x);
        const v16u32 lo = aie::vector_cast<uint32>(aie::sub(aie::vector_cast<float>(x), aie::vector_cast<float>(hi)));
        // The upper halves of the fp32 patterns are the bf16 patterns (the lower halves are zero).
        s.hi.insert(i, aie::vector_cast<bfloat16>(aie::filter_odd(aie::vector_cast<uint16>(hi), 1)));
        s.lo.insert(i, aie::vector_cast<bfloat16>(aie::filter_odd(aie::vector_cast<uint16>(lo), 1)));
    }
    return s;
}

// C block (token group tg, 8-row group rg): 4 rows of 8 floats <-> 32 lanes [t][n].
aie::vector<float, 32> load_c(const float * __restrict c, int tg, int rg) {
    aie::vector<float, 32> v;
    for (int t = 0; t < abi::kTokGroup; ++t) v.insert(t, aie::load_v<8>(c + (tg * abi::kTokGroup + t) * abi::kTileM + 8 * rg));
    return v;
}
void store_c(float * __restrict c, int tg, int rg, const aie::vector<float, 32> & v) {
    for (int t = 0; t < abi::kTokGroup; ++t) aie::store_v(c + (tg * abi::kTokGroup + t) * abi::kTileM + 8 * rg, v.extract<8>(t));
}

// ---- BF16 and F16 ----

template <Kind K, int RB, int TGB>
void half_tile(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c, int tn) {
    using MM = aie::mmul<4, 8, 8, bfloat16, bfloat16>;
    constexpr int TK = tile_k<K>();
    constexpr int KS = TK / 8;  // K steps
    const uint16_t * wv = reinterpret_cast<const uint16_t *>(w);
    const uint16_t * av = reinterpret_cast<const uint16_t *>(a);
    const int n_tg = tn / abi::kTokGroup;
    for (int rg0 = 0; rg0 < kRows8; rg0 += RB) {
        for (int tg0 = 0; tg0 < n_tg; tg0 += TGB) {
            MM acc[TGB][RB];
            for (int u = 0; u < TGB; ++u)
                for (int r = 0; r < RB; ++r) acc[u][r] = MM(load_c(c, tg0 + u, rg0 + r));
            AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(8)
            for (int ks = 0; ks < KS; ++ks) {
                if constexpr (K == Kind::bf16) {
                    aie::vector<bfloat16, 64> b[RB];
                    for (int r = 0; r < RB; ++r)
                        b[r] = aie::vector_cast<bfloat16>(aie::load_v<64>(wv + ((rg0 + r) * KS + ks) * 64));
                    for (int u = 0; u < TGB; ++u) {
                        const aie::vector<bfloat16, 32> x =
                            aie::vector_cast<bfloat16>(aie::load_v<32>(av + ((tg0 + u) * KS + ks) * 32));
                        for (int r = 0; r < RB; ++r) acc[u][r].mac(x, b[r]);
                    }
                } else {
                    Split<64> b[RB];
                    for (int r = 0; r < RB; ++r) b[r] = split_f16(aie::load_v<64>(wv + ((rg0 + r) * KS + ks) * 64));
                    for (int u = 0; u < TGB; ++u) {
                        const Split<32> x = split_f16(aie::load_v<32>(av + ((tg0 + u) * KS + ks) * 32));
                        for (int r = 0; r < RB; ++r) {
                            acc[u][r].mac(x.hi, b[r].hi);
                            acc[u][r].mac(x.hi, b[r].lo);
                            acc[u][r].mac(x.lo, b[r].hi);
                            acc[u][r].mac(x.lo, b[r].lo);
                        }
                    }
                }
            }
            for (int u = 0; u < TGB; ++u)
                for (int r = 0; r < RB; ++r) store_c(c, tg0 + u, rg0 + r, acc[u][r].template to_vector<float>());
        }
    }
}

// ---- F32 ----
//
// Elementwise on 32 lanes [t][n] (the C block of a token group and an 8-row group), per k of an 8-K
// step: C += a_k * b_k with a_k[t][n] = A[t][k] (each token's value over its 8 lanes) and b_k[t][n] =
// B[k][n] (row k of the weight operand, for every token). The product is the 32-lane `fast` fp32
// intrinsic (13 vector-slot instructions for 32 MACs: aie::mmul<4, 8, 4, float> would take 176 for
// 128, eight 16-lane `safe` emulations), then one accumulator add: k in order, c + p per k, the sum
// the mmul forms, with the same products unless a partial product underflows fp32.

template <int RB, int TGB> void f32_tile(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c, int tn) {
    using V32 = aie::vector<float, 32>;
    using Acc = aie::accum<accfloat, 32>;
    constexpr int TK = tile_k<Kind::f32>();
    constexpr int KS = TK / 8;
    const float * wv = reinterpret_cast<const float *>(w);
    const float * av = reinterpret_cast<const float *>(a);
    const int n_tg = tn / abi::kTokGroup;
    for (int rg0 = 0; rg0 < kRows8; rg0 += RB) {
        for (int tg0 = 0; tg0 < n_tg; tg0 += TGB) {
            Acc acc[TGB][RB];
            for (int u = 0; u < TGB; ++u)
                for (int r = 0; r < RB; ++r) acc[u][r] = Acc(load_c(c, tg0 + u, rg0 + r));
            AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(8)
            for (int ks = 0; ks < KS; ++ks) {
                aie::vector<float, 64> b[RB];  // [k][n]
                for (int r = 0; r < RB; ++r) b[r] = aie::load_v<64>(wv + ((rg0 + r) * KS + ks) * 64);
                for (int u = 0; u < TGB; ++u) {
                    const V32 x = aie::load_v<32>(av + ((tg0 + u) * KS + ks) * 32);  // [t][k]
                    for (int k = 0; k < 8; ++k) {
                        const V32 ak = aie::concat(aie::broadcast<float, 8>(x[k]), aie::broadcast<float, 8>(x[8 + k]),
                                                   aie::broadcast<float, 8>(x[16 + k]), aie::broadcast<float, 8>(x[24 + k]));
                        for (int r = 0; r < RB; ++r) {
                            const V32 bk = b[r].template extract<8>(k).template grow_replicate<32>();
                            acc[u][r] = aie::add(acc[u][r], aie::accum<accfloat, 32>(mul_elem_32_accuracy_fast(ak, bk)));
                        }
                    }
                }
            }
            for (int u = 0; u < TGB; ++u)
                for (int r = 0; r < RB; ++r) store_c(c, tg0 + u, rg0 + r, acc[u][r].template to_vector<float>());
        }
    }
}

}  // namespace

extern "C" {
void mm_bf16_n4(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    half_tile<Kind::bf16, 8, 1>(w, a, c, 4);
}
void mm_bf16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    half_tile<Kind::bf16, 2, 8>(w, a, c, 32);
}
void mm_f16_n4(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    half_tile<Kind::f16, 8, 1>(w, a, c, 4);
}
void mm_f16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    half_tile<Kind::f16, 2, 8>(w, a, c, 32);
}
void mm_f32_n4(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    f32_tile<8, 1>(w, a, c, 4);
}
void mm_f32_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    f32_tile<2, 4>(w, a, c, 32);
}
}
