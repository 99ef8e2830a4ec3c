// Q4_K, Q5_K and Q6_K weights x bfp16 activations on the native bfp16 matrix unit (prefill contracts
// v3: mm_q4_K_bfp16 / mm_q5_K_bfp16 / mm_q6_K_bfp16, tile 64 x 32 x 256; Q4_K and Q5_K also at token
// tile 64, tile 64 x 64 x 256 with A in two K halves: mm_q4_K_bfp16_n64 / mm_q5_K_bfp16_n64 below). One
// core program for the three types, as mm_kquant.cc: a Q4_K_M layer alternates Q4_K and Q6_K.
//
// The numerics are defined in docs/kernels.md, "Prefill contracts v3"; this file computes exactly that.
// Per call the weight tile (the GGUF's own bits, aie/include/xdna_aie/matmul_tiles.h planes) is
// dequantized ONCE into bfp16ebs8 blocks and each block then serves all 32 tokens of the activation
// tile through aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8> (512 MACs per instruction; aie_api
// detail/aie2p/mmul_bfp16_bfp16.hpp, the form mlir-aie's aie_kernels/aie2p/mm_bfp.cc uses). There is
// no per-output fp32 epilogue: the block products go straight into fp32 accumulators.
//
// ---- Dequantization, per row group of 16 rows --------------------------------------------------
// 1. Fields (floor mode, kquant_fields.h): sub-block scales sc_j, mins m_j, fp32 d, dmin.
// 2. Per (sub-block, row), 64 lanes [j][r] at a time (conv_even from here): d = d_hi + d_lo and
//    dmin = dm_hi + dm_lo as bf16 parts (exact), s = d_hi * sc + d_lo * sc (two bf16 products into
//    fp32: exact), s_hi = bf16(s), s_lo = bf16(s - s_hi); m as bf16 (exact).
//    Per sub-block, in [row][k] lanes (each row's value repeated over its 8 K; both row halves' 16
//    values expanded by one tree of zips, bfp16_dequant.h), per row half:
//    o = ((s_hi nb + s_lo nb) - dm_hi m) - dm_lo m, four bf16 MACs into an fp32 accumulator.
// 3. Per 16-K step: the codes as bytes b ^ 8 (the q4 nibble as the plane stores it, XOR 8; Q5_K:
//    OR 16 where the h1 bit is set; Q6_K: OR the q2 plane's 2 bits << 4), in the plane's [k][row]
//    order; two 8 x 16 transposes give the [row][k] order of four 8x8 B^T operands (a bfp16 block is
//    8 K of one row). Each byte, zero-extended to 16 bits and XOR 0x4308, IS the bf16 value 128 + b
//    (exponent 2^7, mantissa b; the XOR undoes the plane's XOR 8 at no extra cost): x with no
//    conversion instruction. Then, 64 lanes per instruction,
//    acc = o + x * s_hi, acc += x * s_lo (bf16 MACs into fp32, o read from its accumulator register),
//    and acc -> bfp16ebs8 (to_v64bfp16ebs8, conv_even): the weight block, into a scratch
//    stream of its row half (8 rows), K blocks in order.
// 4. Per row half: C (8 tokens x 8 rows of each of the 4 token groups) into 4 fp32 accumulators, then
//    for each of the 32 K blocks one B^T pop from the scratch and 4 A pops (tokens 8g..8g+7 of that K
//    block, 72 contiguous bytes each: BlockActTileFormat) with 4 mmul macs; C stored back. The C tile
//    carries the sum across K tiles (zero.cc clears it), so each output is c + D_kb added in K order.
//
// ---- Token tile 64 (Q4_K, Q5_K): A in K halves ----------------------------------------------------
// A 64-token A object of the whole K tile does not fit twice beside W and C (budget below), so A comes
// as two objects per W tile, BlockActTileFormat{64, 128}: K [0, 128) and [128, 256) of the tile, and the
// core program calls the n64 entry point once per half (k_half 0, then 1) on the same W buffer. A call
// runs steps 1 and 2 on the row group (step 2 only for the half's 4 sub-blocks: half h holds sub-blocks
// 4h..4h+3, 4 K blocks each), step 3 on those sub-blocks only (16 K blocks per row half), and step 4 per
// row half as two passes of 4 token groups (0-3, then 4-7), each re-reading the 16 B^T blocks: 8 live
// fp32 accumulators of 64 lanes would take all 8 of AIE2P's 2048-bit accumulator registers.
// Numerics unchanged: every value is dequantized by the same operations, and each output is still
// c + D_kb in K order with one rounding per block; the first half's sum passes through the C tile (an
// exact fp32 store and load) before the second half adds on, so the outputs are the TN = 32 kernel's
// bits on the same tokens. A token flagged in either half ends NaN, as with the whole tile's flag.
//
// ---- Why these choices -------------------------------------------------------------------------
// - hi/lo scales: one bf16 scale per sub-block would round d * sc to 8 bits, the same relative error
//   for all 32 values of the sub-block (correlated: it does not average out over K). With two parts
//   the scale keeps 16 of its 17-19 bits; the cost is one bf16 MAC per 64 values.
// - 128 + b instead of a signed code: a bit-or builds the bf16 (no int -> float conversion), the 128
//   goes into o (nb = -128; Q6_K -160 for the code's -32).
// - B^T reused over 4 token groups: the dequantized block is loaded once per 4 mmuls (at TN 64 twice
//   per 8 mmuls: the loads are cheap beside the vector slot, which sees the same mmuls either way).
// - Rounding mode: the field decoding needs floor (aie_api 2025.1's downshift rounds per crRnd),
//   the conversions need conv_even (floor is about 41x worse in NMSE, amd/IRON gemm README); the
//   kernel switches twice per row group (a control-register write each) and returns in the mode it
//   was called in.
//
// ---- Data memory budget (64 KB per core), TN = 32 ---------------------------------------------
//   W tile, double-buffered, largest type Q6_K   2 x 13440 = 26880 B
//   A tile (bfp16 blocks + flags), double-buffered  2 x 9280 = 18560 B
//   C tile fp32 32 x 64, single buffer                         8192 B
//   stack: dequantized row group (2 halves x 32 blocks x 72 B) 4608 B
//   stack: row scales (896 B) + row parameters (s_hi, s_lo, m, dmin parts: 1344 B)  2240 B
//   stack: call frames, spills (estimate)                      1024 B   (stack in all 7872 B)
//   total (+ 16 B of RTP words)                               61520 B = 60.1 KB of 64 KB
//   Token tile 64 with A objects of the whole K tile would need 2 x 18560 B of A and 16384 B of C: 80 KB.
//
// ---- Data memory budget, TN = 64 (Q4_K, Q5_K; A in K halves) -----------------------------------
//   W tile, double-buffered, Q4_K / Q5_K           2 x 9216 = 18432 B / 2 x 11264 = 22528 B
//   A half tile BlockActTileFormat{64, 128}, double-buffered  2 x 9280 = 18560 B
//   C tile fp32 64 x 64, single buffer                        16384 B
//   stack: dequantized half row group (2 halves x 16 blocks x 72 B)  2304 B
//   stack: row scales (896 B) + row parameters (1344 B)          2240 B
//   stack: call frames, spills (estimate)                        1024 B   (stack in all 5568 B)
//   total (+ 16 B of RTP words)                   Q4_K 58960 B = 57.6 KB, Q5_K 63056 B = 61.6 KB of 64 KB
//   Q6_K (2 x 13440 B of W: 67408 B) stays at TN = 32. One program holds both token tiles' code, but an
//   xclbin's buffers are laid out for the token tile its contracts list: the TN = 32 budget above, or
//   this one with W sized to the Q4_K / Q5_K tile.
//
// ---- Program memory estimate (16 KB) -----------------------------------------------------------
// At about 12 bytes per VLIW bundle (not a compiler figure): per type the dequantization body (one K
// step: about 8 move, 12 vector, 4 store bundles' worth, unrolled over 4 operands: ~1 KB), the
// parameter set-up (~0.4 KB) and the mmul loop (4 macs + 5 pops per K block, modulo-scheduled:
// ~0.5 KB): ~2 KB per type, 6 KB for three; shared field decoding from kquant_fields.h (~1 KB) and
// entry points: about 7.5 KB. TN 64 shares the dequantization and parameter bodies (their sub-block
// range is an argument) and adds one mmul loop form (16 K blocks, the skipping pop: ~0.5 KB), the
// 64-flag NaN step (~0.1 KB) and two entry points with their row-group loops and inlined field widening
// (~0.4 KB each): about 9 KB of 16 KB.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/matmul_tiles.h"

#include "bfp16_dequant.h"
#include "bfp16_mmul.h"

#include "kquant_fields.h"

namespace {

constexpr int TN = 32;
constexpr int kTokGroups = TN / kBfp16TokGroup;  // 4 A operands per K block
constexpr int kTN64 = 64;                        // the Q4_K / Q5_K token tile with A in K halves
constexpr int kKBlocks = kTK / kBfp16Block;      // 32 K blocks per tile
constexpr int kHalf = 8;                         // rows per B^T operand (a row half of a row group)

using Blocks = aie::block_vector<bfp16ebs8, 64>;
using BMul = aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8, accfloat>;
using FAcc = aie::accum<accfloat, 64>;
using BF64 = aie::vector<bfloat16, 64>;
using bfp16_dequant::HalvesOverK;
using bfp16_dequant::rows_over_k;

// Per type: sub-block size in K blocks and the code offset folded into o.
template <KQ T> struct Bq;
template <> struct Bq<KQ::q4_K> { static constexpr int kBlocksPerSub = 4; static constexpr float nb = -128.0f; };
template <> struct Bq<KQ::q5_K> { static constexpr int kBlocksPerSub = 4; static constexpr float nb = -128.0f; };
template <> struct Bq<KQ::q6_K> { static constexpr int kBlocksPerSub = 2; static constexpr float nb = -160.0f; };

// The dequantization parameters of a row group: per [sub-block][row] the scale parts and the min, per
// row dmin's parts.
struct alignas(64) RowParams {
    bfloat16 s_hi[16][16];
    bfloat16 s_lo[16][16];
    bfloat16 m[8][16];
    bfloat16 dm_hi[16], dm_lo[16];
};

// d (or dmin) for 4 sub-blocks x 16 rows as exact bf16 parts.
inline void split_bf16(const float * d16, BF64 & hi, BF64 & lo) {
    const aie::vector<float, 16> d = aie::load_v<16>(d16);
    const FAcc acc(aie::concat(d, d, d, d));
    hi = acc.to_vector<bfloat16>();
    lo = aie::msc(acc, hi, aie::broadcast<bfloat16, 64>(bfloat16(1.0f))).to_vector<bfloat16>();
}

// Step 2 of the header for one row group (conv_even), sub-blocks [j_begin, j_end) (a multiple of 4 each:
// the whole tile at TN 32, the call's K half at TN 64).
template <KQ T> KQ_NOINLINE void row_params(const RowScales & rs, RowParams & rp, int j_begin, int j_end) {
    using K = Kq<T>;
    BF64 d_hi, d_lo;
    split_bf16(rs.d, d_hi, d_lo);
    if constexpr (K::kMin) {
        BF64 dm_hi, dm_lo;
        split_bf16(rs.dmin, dm_hi, dm_lo);
        aie::store_v(rp.dm_hi, dm_hi.extract<16>(0));
        aie::store_v(rp.dm_lo, dm_lo.extract<16>(0));
    }
    const BF64 one = aie::broadcast<bfloat16, 64>(bfloat16(1.0f));
    for (int j4 = j_begin; j4 < j_end; j4 += 4) {  // 4 sub-blocks x 16 rows = 64 lanes
        const BF64 sc = aie::to_float<bfloat16>(aie::load_v<64>(&rs.sc[j4][0]));
        FAcc s = aie::mul(d_hi, sc);
        s = aie::mac(s, d_lo, sc);
        const BF64 s_hi = s.to_vector<bfloat16>();
        const BF64 s_lo = aie::msc(s, s_hi, one).to_vector<bfloat16>();
        aie::store_v(&rp.s_hi[j4][0], s_hi);
        aie::store_v(&rp.s_lo[j4][0], s_lo);
        if constexpr (K::kMin) aie::store_v(&rp.m[j4][0], aie::to_float<bfloat16>(aie::load_v<64>(&rs.m[j4][0])));
    }
}

// The plane stores the low 4 bits XOR 8 (the integer contracts read them as signed int4); that XOR is
// undone by codes_xor8_as_bf16's one XOR, and the high bits go in with an OR (they are disjoint from the
// low 4): the returned byte is b ^ 8.
template <KQ T> inline aie::vector<uint8_t, 256> step_codes(const uint8_t * __restrict w, int blk) {
    using K = Kq<T>;
    const aie::vector<uint8_t, 256> lo = aie::unpack(aie::vector_cast<uint4>(aie::load_v<128>(w + K::f.plane_offset(0) + blk * 128)));
    if constexpr (T == KQ::q4_K) {
        return lo;
    } else if constexpr (T == KQ::q5_K) {
        // h1 plane: bit e of the step's 256 bits is element e's fifth bit (select masks, lane = bit).
        const uint32_t * wd = reinterpret_cast<const uint32_t *>(w + K::f.plane_offset(K::pHi) + blk * 32);
        const aie::vector<uint8_t, 64> zero = aie::zeros<uint8_t, 64>();
        const aie::vector<uint8_t, 64> sixteen = aie::broadcast<uint8_t, 64>(16);
        const aie::vector<uint8_t, 256> h =
            aie::concat(aie::select(zero, sixteen, aie::mask<64>::from_uint32(wd[0], wd[1])),
                        aie::select(zero, sixteen, aie::mask<64>::from_uint32(wd[2], wd[3])),
                        aie::select(zero, sixteen, aie::mask<64>::from_uint32(wd[4], wd[5])),
                        aie::select(zero, sixteen, aie::mask<64>::from_uint32(wd[6], wd[7])));
        return aie::bit_or(lo, h);
    } else {
        // q2 plane: 2 bits per element; unpacked as uint4 each byte holds elements 2i (bits 0-1) and
        // 2i + 1 (bits 2-3). (bits << 4) without a right shift: upshifts never round.
        const aie::vector<uint8_t, 128> y = aie::unpack(aie::vector_cast<uint4>(aie::load_v<64>(w + K::f.plane_offset(K::pHi) + blk * 64)));
        const aie::vector<uint8_t, 128> ev = aie::upshift(aie::bit_and(uint8_t(3), y), 4);
        const aie::vector<uint8_t, 128> od = aie::upshift(aie::bit_and(uint8_t(12), y), 2);
        return aie::bit_or(lo, aie::concat(aie::interleave_zip(ev, od, 1)));
    }
}

// Step 3 of the header: the row group's sub-blocks [j_begin, j_end) x 2 row halves into `out` ([half][kb]
// blocks, `half_blocks` K blocks per row half: the sub-blocks' K blocks). One body for both token tiles
// (TN 32: the whole tile; TN 64: the call's K half), so the program holds one copy per type.
template <KQ T>
KQ_NOINLINE void dequantize_row_group(const uint8_t * __restrict w, int rg, const RowParams & rp, uint8_t * __restrict out, int j_begin,
                                      int j_end, int half_blocks) {
    using B = Bq<T>;
    aie::block_vector_output_buffer_stream<bfp16ebs8, 64> half_out[2] = {
        aie::block_vector_output_buffer_stream<bfp16ebs8, 64>(reinterpret_cast<bfp16ebs8 *>(out)),
        aie::block_vector_output_buffer_stream<bfp16ebs8, 64>(reinterpret_cast<bfp16ebs8 *>(out + half_blocks * Blocks::memory_bytes()))};
    using K = Kq<T>;
    constexpr int kStepsPerSub = B::kBlocksPerSub / 2;  // two K blocks per 16-K step
    const BF64 nb = aie::broadcast<bfloat16, 64>(bfloat16(B::nb));
    HalvesOverK<bfloat16> dm_hi, dm_lo;
    if constexpr (K::kMin) {
        dm_hi = rows_over_k(aie::load_v<16>(rp.dm_hi));
        dm_lo = rows_over_k(aie::load_v<16>(rp.dm_lo));
    }
    // The sub-block loop is the one to software-pipeline: the step loop inside it (1 or 2 iterations)
    // and everything below are unrolled.
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(4)
    for (int j = j_begin; j < j_end; ++j) {
        // The sub-block's operands, once for its 2 or 4 K blocks, in [row][k] lanes: the scale parts
        // repeated over each row's 8 K, and o formed from them by bf16 MACs (the vector slot has room;
        // repeating fp32 values would take twice the shuffles). Every MAC below reads o from its
        // accumulator register (a MAC's accumulator input is not overwritten).
        const HalvesOverK<bfloat16> s_hi = rows_over_k(aie::load_v<16>(&rp.s_hi[j][0]));
        const HalvesOverK<bfloat16> s_lo = rows_over_k(aie::load_v<16>(&rp.s_lo[j][0]));
        HalvesOverK<bfloat16> m;
        if constexpr (K::kMin) m = rows_over_k(aie::load_v<16>(&rp.m[j][0]));
        FAcc o[2];
        for (int h = 0; h < 2; ++h) {
            o[h] = aie::mul(s_hi.h[h], nb);
            o[h] = aie::mac(o[h], s_lo.h[h], nb);
            if constexpr (K::kMin) {
                o[h] = aie::msc(o[h], dm_hi.h[h], m.h[h]);
                o[h] = aie::msc(o[h], dm_lo.h[h], m.h[h]);
            }
        }
        for (int s = 0; s < kStepsPerSub; ++s) {
            const int ks = j * kStepsPerSub + s;
            const aie::vector<uint8_t, 256> b = step_codes<T>(w, rg * kKSteps + ks);
            for (int kh = 0; kh < 2; ++kh) {
                // [k8][half][r8] -> [half][r8][k8]: an 8 x 16 transpose.
                const aie::vector<uint8_t, 128> t = aie::transpose(b.extract<128>(kh), 8, 16);
                for (int h = 0; h < 2; ++h) {
                    const BF64 x = bfp16_dequant::codes_xor8_as_bf16(t.extract<64>(h));
                    FAcc acc = aie::mac(o[h], x, s_hi.h[h]);
                    acc = aie::mac(acc, x, s_lo.h[h]);
                    half_out[h].push(acc.to_vector<bfp16ebs8>());
                }
            }
        }
    }
}


// Token tile 32: one call per W tile, A of the whole K tile (BlockActTileFormat{32, 256}).
template <KQ T> void mm_kquant_bfp16(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    alignas(64) uint8_t deq[2 * kKBlocks * 72];  // one row group, both halves (on the stack: budget above)
    RowScales rs;
    RowParams rp;
    const aie::rounding_mode entry = aie::get_rounding();  // restored on return (the caller's mode)
    for (int rg = 0; rg < kRowGroups; ++rg) {
        aie::set_rounding(aie::rounding_mode::floor);
        decode_row_group<T>(w, rg, rs);
        aie::set_rounding(aie::rounding_mode::conv_even);
        row_params<T>(rs, rp, 0, Kq<T>::kSubBlocks);
        dequantize_row_group<T>(w, rg, rp, deq, 0, kKBlocks / Bq<T>::kBlocksPerSub, kKBlocks);
        // The block mmul reads no mode: the products are exact and each add rounds to nearest even.
        for (int h = 0; h < 2; ++h) bfp16_mmul::bfp16_multiply_rows8<kKBlocks>(deq + h * kKBlocks * Blocks::memory_bytes(), a, c, rg * kRowGroup + h * kHalf);
    }
    bfp16_mmul::nan_flagged_tokens<kTK>(a, c);
    aie::set_rounding(entry);
}

// Token tile 64 (Q4_K, Q5_K): A in K halves (BlockActTileFormat{64, 128}), one call per half, the same
// W tile; `k_half` 0 covers K [0, 128) of the tile, 1 [128, 256), in that order. Per row group only
// the half's 4 sub-blocks (16 K blocks) are dequantized; per row half the 8 token groups run as two
// passes of 4 (bfp16_mmul.h). Each output is still c + D_kb in K order, one rounding per block (the
// first half's sum goes through C, an exact fp32 store and load): the TN = 32 kernel's bits.
template <KQ T> void mm_kquant_bfp16_n64(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c, int k_half) {
    static_assert(T != KQ::q6_K, "Q6_K's double-buffered W tile does not fit beside TN 64 (header budget)");
    constexpr int kHalfKBlocks = kKBlocks / 2;                           // 16 K blocks per call
    constexpr int kHalfSubs = kHalfKBlocks / Bq<T>::kBlocksPerSub;       // 4 sub-blocks per call
    constexpr int kGroups64 = kTN64 / kBfp16TokGroup;                    // 8 token groups
    constexpr int kPassGroups = bfp16_mmul::kTokGroups;                  // 4 per pass
    alignas(64) uint8_t deq[2 * kHalfKBlocks * 72];  // one row group's half, both row halves (budget above)
    RowScales rs;
    RowParams rp;
    const int j0 = k_half * kHalfSubs;
    const aie::rounding_mode entry = aie::get_rounding();  // restored on return (the caller's mode)
    for (int rg = 0; rg < kRowGroups; ++rg) {
        aie::set_rounding(aie::rounding_mode::floor);
        decode_row_group<T>(w, rg, rs);
        aie::set_rounding(aie::rounding_mode::conv_even);
        row_params<T>(rs, rp, j0, j0 + kHalfSubs);
        dequantize_row_group<T>(w, rg, rp, deq, j0, j0 + kHalfSubs, kHalfKBlocks);
        for (int h = 0; h < 2; ++h) {
            const uint8_t * bt = deq + h * kHalfKBlocks * Blocks::memory_bytes();
            for (int p = 0; p < kGroups64 / kPassGroups; ++p)  // token groups 0-3, then 4-7: the same B^T blocks
                bfp16_mmul::bfp16_multiply_rows8<kHalfKBlocks, kGroups64>(bt, a + p * kPassGroups * Blocks::memory_bytes(),
                                                                          c + p * kPassGroups * kBfp16TokGroup * kTileM,
                                                                          rg * kRowGroup + h * kHalf);
        }
    }
    bfp16_mmul::nan_flagged_tokens<kTK / 2, kTN64>(a, c);
    aie::set_rounding(entry);
}

}  // namespace

extern "C" {
void mm_q4_K_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_kquant_bfp16<KQ::q4_K>(w, a, c); }
void mm_q5_K_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_kquant_bfp16<KQ::q5_K>(w, a, c); }
void mm_q6_K_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_kquant_bfp16<KQ::q6_K>(w, a, c); }
// Token tile 64, A in K halves: called twice per W tile, k_half 0 then 1 (a: that half's A object).
void mm_q4_K_bfp16_n64(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c, int32_t k_half) {
    mm_kquant_bfp16_n64<KQ::q4_K>(w, a, c, k_half);
}
void mm_q5_K_bfp16_n64(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c, int32_t k_half) {
    mm_kquant_bfp16_n64<KQ::q5_K>(w, a, c, k_half);
}
}
