// The kinds of kernel an invocation can run (runtime/invocation.h).
#pragma once

#include <cstdint>

namespace xdna {

// What a kernel invocation runs. Each kind has its own parameter block and its own engines
// (sim/sim-kinds.h for the simulator); the Batch, the submission path and the statistics are the
// same for all. MUL_MAT and MUL_MAT_ID are both `matmul`; RMS_NORM (with the MUL by its weight) is
// `rms_norm` (src/ops/rms_norm); `act_quant` quantizes a matmul's activations on the NPU (src/ops/act_quant).
// ADD of fp32 rows is `add` (src/ops/add).
// SwiGLU is `glu` (src/ops/glu), ROPE `rope` (src/ops/rope), GET_ROWS of fp32 rows `get_rows` (src/ops/get_rows),
// SET_ROWS of fp32 rows into an F16 cache `set_rows` (src/ops/set_rows), SCALE `scale` (src/ops/scale),
// FLASH_ATTN_EXT with an F16 or Q8_0 KV cache `flash_attn` (src/ops/flash_attn), the Walsh-Hadamard
// rotation of a quantized cache (a MUL_MAT with GGML_HINT_SRC0_IS_HADAMARD) `hadamard` (src/ops/hadamard),
// the MUL of fp32 rows by one value per row (MoE's expert outputs by their weights) `row_scale` (src/ops/row_scale).
enum class KernelKind : uint8_t { matmul, rms_norm, act_quant, add, glu, rope, get_rows, set_rows, scale, flash_attn, hadamard, row_scale };  // adding one: its parameter block in KindParams too
const char * kernel_kind_name(KernelKind kind);

}  // namespace xdna
