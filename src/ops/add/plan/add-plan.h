// Planning ADD and MUL for the NPU (aie/add, two programs): F32 rows of a multiple of 32 values, b of the
// same shape or one row for all; everything else stays on the host-op path, with the reason. (A MUL by
// the weight right after an RMS_NORM is planned with the norm, ops/rms_norm.)
#pragma once

#include "ops/add/add-invocation.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

bool add_supported(const ggml_tensor * add, const TensorResolver & resolve, std::string & why);

// One invocation per (i2, i3) slice of the rows, appended to `out`.
bool plan_add(const ggml_tensor * add, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why);

}  // namespace xdna
