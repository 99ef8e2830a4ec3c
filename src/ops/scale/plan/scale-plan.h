// Planning SCALE for the NPU (aie/scale): F32 rows of any length (a row's last chunk is padded to 32
// values in the core's buffer, and only its values go back), x of the output's shape; everything else
// stays on the host-op path, with the reason.
#pragma once

#include "ops/scale/scale-invocation.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

bool scale_supported(const ggml_tensor * scale, const TensorResolver & resolve, std::string & why);

// One invocation per (i2, i3) slice of the rows, appended to `out`.
bool plan_scale(const ggml_tensor * scale, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why);

}  // namespace xdna
