// The block matrix multiply every bfp16 prefill core program ends with (mm_kquant_bfp16.cc,
// mm_kquant_low_bfp16.cc, mm_legacy_bfp16.cc, mm_float_bfp16.cc): for 8 weight rows whose dequantized bfp16 B^T operands
// lie in `wd` (KBlocks of them, K blocks in order), c[t][col0 + r] += the block products of the
// activation tile's KBlocks K blocks, for 4 token groups of 8 tokens. C (8 tokens x 8 rows of each of the
// 4 token groups) enters 4 fp32 accumulators; per K block one B^T pop and 4 A pops (BlockActTileFormat:
// tokens 8g..8g+7 of a K block are 72 contiguous bytes) feed 4 mmul macs; C is stored back. Each
// output is c + D_kb added in K order, one rounding per block (docs/kernels.md, "The product").
// Four token groups at a time, whatever the token tile: four 64-lane fp32 accumulators are half of
// AIE2P's eight 2048-bit accumulator registers, the rest is the callers' (a TN = 64 tile, 8 token
// groups, runs this twice: all eight live would leave the compiler no accumulator to spare).
// Included by each program (a core has no shared library); internal linkage in each.
#pragma once

#include <aie_api/aie.hpp>
#include <stdint.h>

#include <type_traits>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/matmul_tiles.h"

#if defined(__GNUC__) || defined(__clang__)
#define BFP16_NOINLINE __attribute__((noinline))
#else
#define BFP16_NOINLINE
#endif

namespace {

namespace bfp16_mmul {
using namespace xdna_aie;
constexpr int kTokGroups = 32 / kBfp16TokGroup;  // token groups per pass: 4 A operands per K block
using Blocks = aie::block_vector<bfp16ebs8, 64>;
using BMul = aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8, accfloat>;
using FAcc = aie::accum<accfloat, 64>;

// TileGroups: token groups per K block in the activation tile (4 at TN 32, 8 at TN 64). `a` is the first
// of the pass's 4 groups in K block 0 and `c` its first token's C row: a pass reads groups g0..g0+3 of
// every K block (A block offset (kb * TileGroups + g0 + g) * 8 blocks) by popping 4 and skipping the
// other TileGroups - 4 with the fourth pop (fifo_ld_pop_1d_byte; the skip restarts the load FIFO's
// fill count). At TileGroups 4 the pops are consecutive and the loop is the TN = 32 one unchanged.
template <int KBlocks, int TileGroups = kTokGroups>
BFP16_NOINLINE void bfp16_multiply_rows8(const uint8_t * __restrict wd, const uint8_t * __restrict a, float * __restrict c, int col0) {
    static_assert(TileGroups >= kTokGroups && TileGroups % kTokGroups == 0, "whole passes of 4 token groups");
    FAcc acc[kTokGroups];
    for (int g = 0; g < kTokGroups; ++g) {
        const float * cg = c + g * kBfp16TokGroup * kTileM + col0;
        acc[g] = FAcc(aie::concat(aie::load_v<8>(cg), aie::load_v<8>(cg + kTileM), aie::load_v<8>(cg + 2 * kTileM),
                                  aie::load_v<8>(cg + 3 * kTileM), aie::load_v<8>(cg + 4 * kTileM), aie::load_v<8>(cg + 5 * kTileM),
                                  aie::load_v<8>(cg + 6 * kTileM), aie::load_v<8>(cg + 7 * kTileM)));
    }
    BMul m[kTokGroups] = {BMul(acc[0]), BMul(acc[1]), BMul(acc[2]), BMul(acc[3])};
    aie::block_vector_input_buffer_stream<bfp16ebs8, 64> bs(reinterpret_cast<const bfp16ebs8 *>(wd));
    aie::block_vector_input_buffer_stream<bfp16ebs8, 64> as(reinterpret_cast<const bfp16ebs8 *>(a));
    // 8: the fewest K blocks a caller passes (F32's 64-K tile); the others pass 16 or 32.
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(8)
    for (int kb = 0; kb < KBlocks; ++kb) {
        const Blocks bt = bs.pop();
        if constexpr (TileGroups == kTokGroups) {
            for (int g = 0; g < kTokGroups; ++g) m[g].mac(as.pop(), aie::op_transpose(bt));
        } else {
            for (int g = 0; g < kTokGroups - 1; ++g) m[g].mac(as.pop(), aie::op_transpose(bt));
            m[kTokGroups - 1].mac(as.pop_seek(TileGroups - kTokGroups), aie::op_transpose(bt));
        }
    }
    for (int g = 0; g < kTokGroups; ++g) {
        const aie::vector<float, 64> v = m[g].to_vector<float>();
        float * cg = c + g * kBfp16TokGroup * kTileM + col0;
        for (int t = 0; t < kBfp16TokGroup; ++t) aie::store_v(cg + t * kTileM, v.extract<8>(t));
    }
}

// The tile's non-finite tokens (BlockActTileFormat's flag bytes, one per token after the blocks of the
// TN-token, TK-value activation tile `a`): their 64 outputs in the C tile set to NaN, at the end of every
// call. A bfp16 block cannot carry a NaN or an infinity (exponent field 255 is an ordinary exponent), so
// the flag stands in for it; once NaN, the output stays NaN through the later K tiles' (and K halves')
// block adds, as an IEEE sum would. One aligned load and a compare per call (32 or 64 lanes); the stores
// only for a flagged token.
template <int TK, int TN = 32> BFP16_NOINLINE void nan_flagged_tokens(const uint8_t * __restrict a, float * __restrict c) {
    static_assert(TN == 32 || TN == 64, "one compare of 32 or 64 flag bytes");
    constexpr xdna_aie::BlockActTileFormat f{TN, TK};
    static_assert(f.flags_offset() % 64 == 0, "the flags are one aligned load");
    // TN 32 keeps its 32-bit word (no 64-bit scalar shifts where 32 flags fit).
    std::conditional_t<TN == 32, uint32_t, uint64_t> flagged;
    if constexpr (TN == 32) flagged = aie::neq(aie::load_v<32>(a + f.flags_offset()), uint8_t(0)).to_uint32();
    else flagged = aie::neq(aie::load_v<64>(a + f.flags_offset()), uint8_t(0)).to_uint64();
    if (flagged == 0) return;
    const aie::vector<float, 16> nan = aie::broadcast<float, 16>(__builtin_nanf(""));
    for (int t = 0; t < TN; ++t) {
        if (((flagged >> t) & 1u) == 0) continue;
        for (int m = 0; m < kTileM; m += 16) aie::store_v(c + t * kTileM + m, nan);
    }
}

}  // namespace bfp16_mmul

}  // namespace
