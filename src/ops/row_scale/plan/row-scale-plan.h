// Planning the MUL of F32 rows by one value per row for the NPU (aie/row_scale): x of the output's
// shape, b of one value per row (or one for all rows of a slice), rows of a length the design's chunks
// divide; everything else stays on the host-op path, with the reason.
#pragma once

#include "ops/row_scale/row-scale-invocation.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

// Whether `mul` multiplies rows by one value per row (b's rows are one value long, a's are longer):
// the row_scale design's op rather than the add design's MUL.
bool mul_by_row_values(const ggml_tensor * mul);

bool row_scale_supported(const ggml_tensor * mul, const TensorResolver & resolve, std::string & why);
// One invocation per slice of rows that do not follow each other, appended to `out`.
bool plan_row_scale(const ggml_tensor * mul, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why);

}  // namespace xdna
