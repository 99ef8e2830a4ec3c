// Planning ROPE for the NPU (aie/rope): F32 head rows, NORM or NEOX mode, freq factors or none, positions
// int32 (one per token); the rotated dims a multiple of 32 and the copied rest of 16 (xdna_aie::rope_row_fits).
// The other modes (multi-section, vision), ROPE_BACK, F16 rows and an offset of the rotated dims stay on
// the host-op path, with the reason.
#pragma once

#include "ops/rope/rope-invocation.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

bool rope_supported(const ggml_tensor * rope, const TensorResolver & resolve, std::string & why);

// One invocation per i3 slice (every token and head of it), appended to `out`.
bool plan_rope(const ggml_tensor * rope, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why);

}  // namespace xdna
