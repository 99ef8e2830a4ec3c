// Planning GLU for the NPU (aie/glu): SwiGLU in its split form (gate and up as two F32 tensors of the
// output's shape, rows of a multiple of 32 values); other GLU ops and forms stay on the host-op path.
#pragma once

#include "ops/glu/glu-invocation.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

bool glu_supported(const ggml_tensor * glu, const TensorResolver & resolve, std::string & why);

// One invocation per (i2, i3) slice of the rows, appended to `out`.
bool plan_glu(const ggml_tensor * glu, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why);

}  // namespace xdna
