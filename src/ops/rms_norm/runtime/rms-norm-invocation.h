// The rms_norm kind (RMS_NORM, alone or fused with the MUL by its weight) as its planner builds it and
// its engines read it.
#pragma once

#include "contracts/activation-layout.h"
#include "runtime/design-description.h"
#include "runtime/invocation.h"
#include "xdna_aie/rms_norm_tiles.h"

namespace xdna {

// The name of the rms_norm design (aie/rms_norm, its data movement in aie/rms_norm/dataflow.json: the
// "norm" movement, runtime/norm-sequence.h).
inline constexpr const char * kRmsNormDesign = "rms_norm";

// The program variants of the design: with and without the norm weight.
inline constexpr const char * kRmsNormVariant = "rms_norm_f32";
inline constexpr const char * kRmsNormMulVariant = "rms_norm_mul_f32";
// With the weight and the a8 quantization of y for the matmuls that read it (RmsNormParams::quant_block):
// one decoded row into tiles of 4 tokens, 32 or 256 values per scale.
inline constexpr const char * kRmsNormMulQuantB32Variant = "rms_norm_mul_quant_a8_b32_n4";
inline constexpr const char * kRmsNormMulQuantB256Variant = "rms_norm_mul_quant_a8_b256_n4";
inline constexpr int kRmsNormQuantTileN = 4;
inline constexpr int kRmsNormQuantTileK = 256;

// The kernels' chunk loops promise the compiler kRmsNormMinCall / 32 trips of 32 lanes
// (aie/rms_norm/kernels/rms_norm.cc): a call on fewer values would be undefined on the core, so the
// design makes none. A row is chunks of xdna_aie::kRmsNormChunk values and a shorter last one
// (xdna_aie/rms_norm_tiles.h); the design takes a row (a multiple of 32 values) when its last chunk
// holds at least kRmsNormMinCall values. The promise is 1 trip: a head-dim-32 model's q and k norms
// (rows of 32) and rows of 1024 k + 32 run on the NPU; with 2 they ran on the host path, and the MoE
// demo's decode KLD against the CPU rose from 0.0073 to 0.0110 (over its 0.01 bound).
inline constexpr int64_t kRmsNormMinCall = 32;
constexpr bool rms_norm_calls_keep_promise(int64_t cols) {
    return cols > 0 && xdna_aie::rms_norm_chunk_len(cols, xdna_aie::rms_norm_chunks(cols) - 1) >= kRmsNormMinCall;
}

struct RmsNormInvocation {
    BufferSlice x, weight, y;    // weight: one row of cols floats, or one per row; null buffer without it
    BufferSlice tiles;           // p.quant_block: y's activation tiles, cols / 256 of them; else null
    RmsNormParams p;
};

// The design's description (runtime/design-registry.h), and the chunk size of the xclbin that runs
// rows of `cols` values: the largest tile of its family that divides the row, 0 when none does.
const DesignRead & rms_norm_design();
int rms_norm_tile(int64_t cols);

// The key of an invocation on rows of `cols` values: its program, and the xclbin's chunk size.
// quant_block 32 or 256: the program that also quantizes y (with the weight only).
KernelKey rms_norm_key(bool with_weight, int64_t cols, int quant_block = 0);
// The act_quant program the quantizing variant `key` runs after pass 2 ("act_quant_a8_b<block>_n4_row":
// one token's 256 values into a tile of 4 tokens, the others zeros), nullptr for the others.
const char * rms_norm_quant_program(const KernelKey & key);

// `r` made to quantize y into `tiles` as a8 tiles of 4 tokens, `block` values per scale: one row with
// the weight, cols a multiple of 256. False (r unchanged) when it is not such a norm.
bool rms_norm_fuse_quant(RmsNormInvocation & r, int block, BufferSlice tiles);
// The same for the activation layout `L` a matmul reads: when L is a quantizing program's tiles (a8 at
// token tile 4 and K tile 256, one token, K unpadded) of r's whole row. The planner's test and the e2e
// model's are this one.
bool rms_norm_fuse_quant(RmsNormInvocation & r, const ActivationLayout & L, BufferSlice tiles);

// Its operands: x read as rows of cols floats x_row_stride floats apart, the weight once (or per row), y
// written as rows y_row_stride floats apart (and the tiles written whole when it quantizes).
Invocation to_invocation(const RmsNormInvocation & r);

// The typed view of an rms_norm-kind invocation. Aborts on another kind.
RmsNormInvocation rms_norm_of(const Invocation & inv);

}  // namespace xdna
