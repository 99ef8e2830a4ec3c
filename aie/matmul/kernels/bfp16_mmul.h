// The block matrix multiply every bfp16 prefill core program ends with (mm_kquant_bfp16.cc,
// mm_kquant_low_bfp16.cc, mm_legacy_bfp16.cc, mm_float_bfp16.cc): for 8 weight rows whose dequantized bfp16 B^T operands
// lie in `wd` (KBlocks of them, K blocks in order), c[t][col0 + r] += the block products of the
// activation tile's KBlocks K blocks, for the 32 tokens of the tile. C (8 tokens x 8 rows of each of the
// 4 token groups) enters 4 fp32 accumulators; per K block one B^T pop and 4 A pops (BlockActTileFormat:
// tokens 8g..8g+7 of a K block are 72 contiguous bytes) feed 4 mmul macs; C is stored back. Each
// output is c + D_kb added in K order, one rounding per block (docs/kernels.md, "The product").
// Included by each program (a core has no shared library); internal linkage in each.
#pragma once

#include <aie_api/aie.hpp>
#include <stdint.h>

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
constexpr int kTokGroups = 32 / kBfp16TokGroup;  // token tile 32: 4 A operands per K block
using Blocks = aie::block_vector<bfp16ebs8, 64>;
using BMul = aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8, accfloat>;
using FAcc = aie::accum<accfloat, 64>;

template <int KBlocks>
BFP16_NOINLINE void bfp16_multiply_rows8(const uint8_t * __restrict wd, const uint8_t * __restrict a, float * __restrict c, int col0) {
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
        for (int g = 0; g < kTokGroups; ++g) m[g].mac(as.pop(), aie::op_transpose(bt));
    }
    for (int g = 0; g < kTokGroups; ++g) {
        const aie::vector<float, 64> v = m[g].to_vector<float>();
        float * cg = c + g * kBfp16TokGroup * kTileM + col0;
        for (int t = 0; t < kBfp16TokGroup; ++t) aie::store_v(cg + t * kTileM, v.extract<8>(t));
    }
}

// The tile's non-finite tokens (BlockActTileFormat's flag bytes, one per token after the blocks of the
// TK-value activation tile `a`): their 64 outputs in the C tile set to NaN, at the end of every call.
// A bfp16 block cannot carry a NaN or an infinity (exponent field 255 is an ordinary exponent), so the
// flag stands in for it; once NaN, the output stays NaN through the later K tiles' block adds, as an
// IEEE sum would. One aligned load and a compare per call; the stores only for a flagged token.
template <int TK> BFP16_NOINLINE void nan_flagged_tokens(const uint8_t * __restrict a, float * __restrict c) {
    constexpr xdna_aie::BlockActTileFormat f{32, TK};
    static_assert(f.flags_offset() % 64 == 0, "the flags are one aligned load");
    const uint32_t flagged = aie::neq(aie::load_v<32>(a + f.flags_offset()), uint8_t(0)).to_uint32();
    if (flagged == 0) return;
    const aie::vector<float, 16> nan = aie::broadcast<float, 16>(__builtin_nanf(""));
    for (int t = 0; t < 32; ++t) {
        if (((flagged >> t) & 1u) == 0) continue;
        for (int m = 0; m < kTileM; m += 16) aie::store_v(c + t * kTileM + m, nan);
    }
}

}  // namespace bfp16_mmul

}  // namespace
