// Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 weights x bfp16 activations on the native bfp16 matrix unit (prefill
// contracts v3: mm_q4_0_bfp16 ... mm_q8_0_bfp16, tile 64 x 32 x 256). One core program for the five
// types, as mm_legacy.cc, and the pattern of mm_kquant_bfp16.cc.
//
// The numerics are defined in docs/kernels.md, "Prefill contracts v3", "Legacy weights"; this file
// computes exactly that. Per call the weight tile (the GGUF's own bits, the legacy planes of
// aie/include/xdna_aie/matmul_tiles.h) is dequantized ONCE into bfp16ebs8 blocks and each block then
// serves all 32 tokens of the activation tile through aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8>. There
// is no per-output fp32 epilogue: the block products go straight into fp32 accumulators.
//
// ---- Dequantization, per row group of 16 rows and K half (4 blocks of 32 = 16 K blocks of 8) -------
// 1. Fields: the fp16 d (and m for Q4_1/Q5_1) of the 4 blocks x 16 rows, 64 contiguous halves of the
//    field plane, widened exactly to fp32 (fp16_to_float below: upshifts and an exact int -> float
//    conversion only, so it is exact in every rounding mode and the kernel runs it in conv_even).
//    d = d_hi + d_lo, m = m_hi + m_lo as bf16 parts, 64 lanes [block][row]: hi = bf16(d) (conv_even),
//    lo = bf16(d - hi), both exact (a half has 11 significant bits).
// 2. Per (block, row half), in [row][k] lanes (each row's value repeated over its 8 K):
//    Q4_0/Q5_0/Q4_1/Q5_1: o = (d_hi nb + d_lo nb) [+ m_hi * 1 + m_lo * 1] (bf16 MACs into an fp32
//    accumulator; nb = -136 for Q4_0, -144 for Q5_0, -128 for Q4_1/Q5_1); Q8_0 has no o.
// 3. Per 16-K step: the codes in the plane's [k][row] order (Q4: b ^ 8, the q4 nibble as the plane
//    stores it; Q5: OR 16 where the h1 bit is set; Q8_0: the int8 byte), two 8 x 16 transposes give the
//    [row][k] order of four 8x8 B^T operands. Q4/Q5: each byte, zero-extended and XOR 0x4308, IS the
//    bf16 value x = 128 + b (bfp16_dequant.h); Q8_0: x = the int8 code widened to int16 and converted
//    (exact: |q| <= 128). Then, 64 lanes per instruction, acc = o + x * d_hi (Q8_0: acc = x * d_hi),
//    acc += x * d_lo, and acc -> bfp16ebs8 (to_v64bfp16ebs8, conv_even) into the scratch stream of its
//    row half.
// 4. Per row half: C (8 tokens x 8 rows of each of the 4 token groups) into 4 fp32 accumulators, then
//    for each of the K half's 16 K blocks one B^T pop and 4 A pops with 4 mmul macs; C stored back.
//    C carries the sum across K halves and K tiles (zero.cc clears it): each output is c + D_kb added
//    in K order (storing and reloading an fp32 accumulator is exact).
//
// ---- Why these choices -------------------------------------------------------------------------
// - hi/lo parts of d (and m): a single bf16 d would round every value of the block by the same
//   relative error (up to 2^-9, correlated over the block's 32 values). With two parts w is the exact
//   d * (q - z) for Q4_0/Q5_0/Q8_0 (the docs' exactness argument) and nearly always for Q4_1/Q5_1.
// - 128 + b for the 4- and 5-bit codes: a bit-or builds the bf16, the 128 (and the code's offset 8 or
//   16) goes into o. Q8_0's codes need 8 bits plus a sign: they are exact bf16 values as they are.
// - K halves: the Q8_0 weight tile (17408 B) double-buffered leaves no room for a whole dequantized row
//   group (4608 B, as mm_kquant_bfp16.cc keeps); half of it (2304 B) fits. The price is one more C
//   load/store per row half and K half (64 vector loads and stores per row half, against 80 pops and 64
//   mmuls).
// - Rounding mode: nothing here shifts right (the downshifts of aie_api 2025.1 round per crRnd: there
//   are none), so one switch to conv_even at entry (a control-register write) and back to the caller's
//   mode on return.
//
// ---- Data memory budget (64 KB per core), TN = 32 ---------------------------------------------
//   W tile, double-buffered, largest type Q8_0   2 x 17408 = 34816 B
//   A tile (bfp16 blocks + flags), double-buffered  2 x 9280 = 18560 B
//   C tile fp32 32 x 64, single buffer                         8192 B
//   stack: dequantized K half of a row group (2 halves x 16 blocks x 72 B)  2304 B
//   stack: call frames, spills (the d/m parts are 4 vector registers; estimate)  1024 B (stack 3328 B)
//   total (+ 16 B of RTP words)                               64912 B = 63.4 KB of 64 KB (624 B free)
// Q4_0 / Q4_1 / Q5_0 / Q5_1 tiles are 9216 / 10240 / 11264 / 12288 B: 10 to 16 KB more headroom.
//
// ---- Program memory estimate (16 KB) -----------------------------------------------------------
// At about 12 bytes per VLIW bundle (not a compiler figure): per type the dequantization body (one K
// step: about 6 move, 10 vector, 4 store bundles' worth, unrolled over 4 operands: ~1 KB), the field
// widening and o set-up (~0.4 KB) and the mmul loop (4 macs + 5 pops per K block, modulo-scheduled:
// ~0.5 KB): ~2 KB per type, 10 KB for five; entry points and the shared mmul loop, if the compiler
// keeps one copy: about 10.5 KB of 16 KB.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/matmul_tiles.h"

#include "bfp16_dequant.h"
#include "bfp16_mmul.h"

#if defined(__GNUC__) || defined(__clang__)
#define LB_NOINLINE __attribute__((noinline))
#else
#define LB_NOINLINE
#endif

namespace {

using namespace xdna_aie;

enum class LT { q4_0, q4_1, q5_0, q5_1, q8_0 };

constexpr int TN = 32;
constexpr int kTK = 256;
constexpr int kKSteps = kTK / kKStep;            // 16 K steps of 16 per tile row
constexpr int kRowGroups = kTileM / kRowGroup;   // 4
constexpr int kTokGroups = TN / kBfp16TokGroup;  // 4 A operands per K block
constexpr int kKBlocks = kTK / kBfp16Block;      // 32 K blocks per tile
constexpr int kBlocksPerRow = kTK / 32;          // 8 legacy blocks per tile row
constexpr int kHalfBlocks = kBlocksPerRow / 2;   // 4 legacy blocks per K half
constexpr int kHalfKBlocks = kKBlocks / 2;       // 16 K blocks of 8 per K half
constexpr int kHalf = 8;                         // rows per B^T operand (a row half of a row group)

using Blocks = aie::block_vector<bfp16ebs8, 64>;
using BMul = aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8, accfloat>;
using FAcc = aie::accum<accfloat, 64>;
using BF64 = aie::vector<bfloat16, 64>;
using bfp16_dequant::HalvesOverK;
using bfp16_dequant::rows_over_k;

// Per type: the tile format, its planes (codes, [h1], d, [m]) and the code offset folded into o.
template <LT T> struct Lq;
template <> struct Lq<LT::q4_0> {
    static constexpr WeightTileFormat f = fmt::q4_0;
    static constexpr int pHi = -1, pD = 1, pM = -1;
    static constexpr float nb = -136.0f;  // code - 8 = x - 136
};
template <> struct Lq<LT::q4_1> {
    static constexpr WeightTileFormat f = fmt::q4_1;
    static constexpr int pHi = -1, pD = 1, pM = 2;
    static constexpr float nb = -128.0f;  // code = x - 128
};
template <> struct Lq<LT::q5_0> {
    static constexpr WeightTileFormat f = fmt::q5_0;
    static constexpr int pHi = 1, pD = 2, pM = -1;
    static constexpr float nb = -144.0f;  // code - 16 = x - 144
};
template <> struct Lq<LT::q5_1> {
    static constexpr WeightTileFormat f = fmt::q5_1;
    static constexpr int pHi = 1, pD = 2, pM = 3;
    static constexpr float nb = -128.0f;
};
template <> struct Lq<LT::q8_0> {
    static constexpr WeightTileFormat f = fmt::q8_0;
    static constexpr int pHi = -1, pD = 1, pM = -1;
    static constexpr float nb = 0.0f;  // unused: x is the signed code itself
};

// Sixteen fp16 bit patterns -> fp32, exactly, with integer ops that never shift right: normals rebias
// the exponent (+112), inf/NaN keep an all-ones exponent (+224), subnormals (m * 2^-24) convert as
// fixed point (an exact int -> float conversion). The 16 -> 32-bit widening goes through an
// accumulator (ups zero-extending, srs back with shift 0: no bits dropped).
inline aie::vector<float, 16> fp16_to_float(const uint8_t * p) {
    aie::accum<acc32, 16> wide;
    wide.from_vector(aie::load_v<16>(reinterpret_cast<const uint16_t *>(p)));
    const aie::vector<uint32_t, 16> u = aie::vector_cast<uint32_t>(wide.to_vector<int32_t>());
    const aie::vector<uint32_t, 16> mag = aie::bit_and(uint32_t(0x7fff), u);
    const aie::vector<uint32_t, 16> sign = aie::upshift(aie::bit_and(uint32_t(0x8000), u), 16);
    const aie::vector<uint32_t, 16> normal = aie::add(aie::upshift(mag, 13), uint32_t(0x38000000));
    const aie::vector<uint32_t, 16> special = aie::add(normal, uint32_t(0x38000000));
    const aie::vector<uint32_t, 16> sub = aie::vector_cast<uint32_t>(aie::to_float(mag, 24));
    aie::vector<uint32_t, 16> bits = aie::select(normal, special, aie::ge(mag, uint32_t(0x7c00)));
    bits = aie::select(bits, sub, aie::lt(mag, uint32_t(0x0400)));
    return aie::vector_cast<float>(aie::bit_or(bits, sign));
}

// The fp16 field of plane `p` for the K half's 4 blocks x 16 rows (64 contiguous halves) as exact bf16
// parts, lanes [block][row] (step 1 of the header, conv_even).
template <LT T> inline void field_parts(const uint8_t * __restrict w, int p, int rg, int kh, BF64 & hi, BF64 & lo) {
    constexpr const WeightTileFormat & f = Lq<T>::f;
    const uint8_t * q = w + f.plane_offset(p) + field_offset(f, f.planes[p], rg * kRowGroup, kh * kHalfBlocks, 0);
    const FAcc acc(aie::concat(fp16_to_float(q), fp16_to_float(q + 32), fp16_to_float(q + 64), fp16_to_float(q + 96)));
    hi = acc.to_vector<bfloat16>();
    lo = aie::msc(acc, hi, aie::broadcast<bfloat16, 64>(bfloat16(1.0f))).to_vector<bfloat16>();
}

// The codes of one 16-K step of a row group, [k][row] (the plane order), 256 bytes: Q4/Q5 the unsigned
// code b as b ^ 8 (the plane stores the low 4 bits XOR 8; codes_as_bf16's one XOR undoes it, and Q5's
// fifth bit goes in with an OR, disjoint from the low 4), Q8_0 the int8 code's byte.
template <LT T> inline aie::vector<uint8_t, 256> step_codes(const uint8_t * __restrict w, int step) {
    using L = Lq<T>;
    if constexpr (T == LT::q8_0) {
        return aie::load_v<256>(w + L::f.plane_offset(0) + step * 256);
    } else {
        const aie::vector<uint8_t, 256> lo = aie::unpack(aie::vector_cast<uint4>(aie::load_v<128>(w + L::f.plane_offset(0) + step * 128)));
        if constexpr (L::pHi < 0) {
            return lo;
        } else {
            // h1 plane: bit e of the step's 256 bits is element e's fifth bit (select masks, lane = bit).
            const uint32_t * wd = reinterpret_cast<const uint32_t *>(w + L::f.plane_offset(L::pHi) + step * 32);
            const aie::vector<uint8_t, 64> zero = aie::zeros<uint8_t, 64>();
            const aie::vector<uint8_t, 64> sixteen = aie::broadcast<uint8_t, 64>(16);
            const aie::vector<uint8_t, 256> h =
                aie::concat(aie::select(zero, sixteen, aie::mask<64>::from_uint32(wd[0], wd[1])),
                            aie::select(zero, sixteen, aie::mask<64>::from_uint32(wd[2], wd[3])),
                            aie::select(zero, sixteen, aie::mask<64>::from_uint32(wd[4], wd[5])),
                            aie::select(zero, sixteen, aie::mask<64>::from_uint32(wd[6], wd[7])));
            return aie::bit_or(lo, h);
        }
    }
}

// 64 codes [row][k] as exact bf16 values: Q4/Q5 128 + b from b ^ 8 by one XOR, Q8_0 the signed code.
template <LT T> inline BF64 codes_as_bf16(const aie::vector<uint8_t, 64> & b) {
    if constexpr (T == LT::q8_0) {
        return aie::to_float<bfloat16>(aie::unpack(aie::vector_cast<int8_t>(b)));
    } else {
        return bfp16_dequant::codes_xor8_as_bf16(b);
    }
}

// Steps 1-3 of the header: K half `kh` of row group `rg`, 16 K blocks x 2 row halves into `out`
// ([half][kb] blocks).
template <LT T> LB_NOINLINE void dequantize_k_half(const uint8_t * __restrict w, int rg, int kh, uint8_t * __restrict out) {
    using L = Lq<T>;
    aie::block_vector_output_buffer_stream<bfp16ebs8, 64> half_out[2] = {
        aie::block_vector_output_buffer_stream<bfp16ebs8, 64>(reinterpret_cast<bfp16ebs8 *>(out)),
        aie::block_vector_output_buffer_stream<bfp16ebs8, 64>(reinterpret_cast<bfp16ebs8 *>(out + kHalfKBlocks * Blocks::memory_bytes()))};
    BF64 d_hi, d_lo, m_hi, m_lo;
    field_parts<T>(w, L::pD, rg, kh, d_hi, d_lo);
    if constexpr (L::pM >= 0) field_parts<T>(w, L::pM, rg, kh, m_hi, m_lo);
    const BF64 nb = aie::broadcast<bfloat16, 64>(bfloat16(L::nb));
    const BF64 one = aie::broadcast<bfloat16, 64>(bfloat16(1.0f));
    // The block loop is the one to software-pipeline: everything inside it is unrolled.
    AIE_PREPARE_FOR_PIPELINING
    for (int jb = 0; jb < kHalfBlocks; ++jb) {
        // The block's operands in [row][k] lanes, and o from them by bf16 MACs (read from its
        // accumulator register by every MAC below).
        const HalvesOverK<bfloat16> s_hi = rows_over_k(d_hi.extract<16>(jb));
        const HalvesOverK<bfloat16> s_lo = rows_over_k(d_lo.extract<16>(jb));
        HalvesOverK<bfloat16> mh, ml;
        if constexpr (L::pM >= 0) {
            mh = rows_over_k(m_hi.extract<16>(jb));
            ml = rows_over_k(m_lo.extract<16>(jb));
        }
        FAcc o[2];
        for (int h = 0; h < 2; ++h) {
            if constexpr (T != LT::q8_0) {
                o[h] = aie::mul(s_hi.h[h], nb);
                o[h] = aie::mac(o[h], s_lo.h[h], nb);
                if constexpr (L::pM >= 0) {
                    o[h] = aie::mac(o[h], mh.h[h], one);
                    o[h] = aie::mac(o[h], ml.h[h], one);
                }
            }
        }
        for (int s = 0; s < 2; ++s) {  // the block's two 16-K steps
            const int step = rg * kKSteps + 2 * (kh * kHalfBlocks + jb) + s;
            const aie::vector<uint8_t, 256> b = step_codes<T>(w, step);
            for (int k8 = 0; k8 < 2; ++k8) {
                // [k8][half][r8] -> [half][r8][k8]: an 8 x 16 transpose.
                const aie::vector<uint8_t, 128> t = aie::transpose(b.extract<128>(k8), 8, 16);
                for (int h = 0; h < 2; ++h) {
                    const BF64 x = codes_as_bf16<T>(t.extract<64>(h));
                    FAcc acc;
                    if constexpr (T == LT::q8_0) acc = aie::mul(x, s_hi.h[h]);
                    else acc = aie::mac(o[h], x, s_hi.h[h]);
                    acc = aie::mac(acc, x, s_lo.h[h]);
                    half_out[h].push(acc.to_vector<bfp16ebs8>());
                }
            }
        }
    }
}

// Step 4 of the header for one row half and K half: c[t][col0 + r] += sum over the half's 16 K blocks

template <LT T> void mm_legacy_bfp16(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    alignas(64) uint8_t deq[2 * kHalfKBlocks * 72];  // one K half of a row group, both row halves (stack: budget above)
    constexpr int kActHalfBytes = kHalfKBlocks * kTokGroups * Blocks::memory_bytes();  // 16 K blocks x 32 tokens
    const aie::rounding_mode entry = aie::get_rounding();  // restored on return (the caller's mode)
    aie::set_rounding(aie::rounding_mode::conv_even);
    for (int rg = 0; rg < kRowGroups; ++rg) {
        for (int kh = 0; kh < 2; ++kh) {
            dequantize_k_half<T>(w, rg, kh, deq);
            // The block mmul reads no mode: the products are exact and each add rounds to nearest even.
            for (int h = 0; h < 2; ++h)
                bfp16_mmul::bfp16_multiply_rows8<kHalfKBlocks>(deq + h * kHalfKBlocks * Blocks::memory_bytes(), a + kh * kActHalfBytes, c, rg * kRowGroup + h * kHalf);
        }
    }
    bfp16_mmul::nan_flagged_tokens<kTK>(a, c);
    aie::set_rounding(entry);
}

}  // namespace

extern "C" {
void mm_q4_0_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_legacy_bfp16<LT::q4_0>(w, a, c); }
void mm_q4_1_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_legacy_bfp16<LT::q4_1>(w, a, c); }
void mm_q5_0_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_legacy_bfp16<LT::q5_0>(w, a, c); }
void mm_q5_1_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_legacy_bfp16<LT::q5_1>(w, a, c); }
void mm_q8_0_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_legacy_bfp16<LT::q8_0>(w, a, c); }
}
