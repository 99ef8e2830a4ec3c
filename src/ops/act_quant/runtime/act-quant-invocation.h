// The act_quant kind (activation quantization on the NPU, for a matmul that reads an earlier NPU
// stage's output) as its planner builds it and its engines read it.
#pragma once

#include "contracts/activation-layout.h"
#include "runtime/invocation.h"

namespace xdna {

// The name of the act_quant design (aie/act_quant, its data movement in aie/act_quant/dataflow.json: the
// quant movement, runtime/quant-sequence.h).
inline constexpr const char * kActQuantDesign = "act_quant";

// Bytes of the block of zeros the design reads the padding rows of a last token tile from
// (aie/act_quant/dataflow.json zeros_bytes; checked against it by the tests).
inline constexpr size_t kActQuantZeroBytes = 32768;

struct ActQuantInvocation {
    BufferSlice    x, tiles;
    BufferSlice    zeros;  // kActQuantZeroBytes of zeros in device memory (null: the kernels mode only)
    ActQuantParams p;
};

// Whether the NPU quantizes into this layout: a format, token tile and K tile the core program has an
// entry for (a8 at K tile 256, token tiles 4 and 32; bfp16 at token tile 32, K tiles 256, 128, 64, and at
// token tile 64 K tile 128 (one K half of the Q4_K/Q5_K tile: the matmul takes A in halves); F16,
// BF16 at K tile 128 and F32 at 64, token tiles 4 and 32), K of whole tiles (no padding to clear: the
// kernel writes whole tiles).
bool act_quant_takes(const ActivationLayout & L);

// The kernel for a layout act_quant_takes (variant "act_quant_a8_b<block>_n<tile_n>",
// "act_quant_bfp16[_k<tile_k>]_n<32|64>", "act_quant_<f16|bf16|f32>_n<tile_n>").
KernelKey act_quant_key(const ActivationLayout & L);

// Its operands: x read as n rows of k floats x_row_stride floats apart, the tiles written whole, and the
// zeros when given (what the design's stream reads the padding rows from).
Invocation to_invocation(const ActQuantInvocation & a);
ActQuantInvocation act_quant_of(const Invocation & inv);

// The invocation that quantizes rows [0, L.n) of x (x_row_stride floats apart) into `tiles`.
ActQuantInvocation act_quant_invocation(const ActivationLayout & L, BufferSlice x, int64_t x_row_stride, BufferSlice tiles,
                                        BufferSlice zeros = {});

}  // namespace xdna
