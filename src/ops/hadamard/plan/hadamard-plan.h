// Planning the Walsh-Hadamard rotation for the NPU (aie/hadamard): a MUL_MAT whose src0 llama.cpp marks
// as the orthonormal Hadamard matrix (GGML_HINT_SRC0_IS_HADAMARD, op_params[1]; ggml's CPU backend
// trusts the hint the same way and never reads src0), F32 rows of n = 64, 128 or 256 values.
#pragma once

#include "ops/hadamard/hadamard-invocation.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

// The node is a MUL_MAT with the Hadamard hint (whatever its shapes).
bool hadamard_hinted(const ggml_tensor * node);
// ... and of a shape the design takes (no resolver: op_kind asks before anything is allocated).
bool hadamard_shape_supported(const ggml_tensor * node, std::string & why);
bool hadamard_supported(const ggml_tensor * node, const TensorResolver & resolve, std::string & why);

// One invocation per (i2, i3) slice of the rows, appended to `out`.
bool plan_hadamard(const ggml_tensor * node, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why);

}  // namespace xdna
