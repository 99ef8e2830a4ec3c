// Planning SET_ROWS for the NPU (aie/set_rows): F32 rows into the rows of an F16 tensor (the KV cache)
// chosen by I64 or I32 ids, rows of a multiple of 32 values. The transposed V cache of the non-flash
// path (one value per row), other cache types and quantized rows stay on the host-op path, with the reason.
// CPY from F32 rows to F16 rows of the same shape is the same program with row r written to row r.
#pragma once

#include "ops/set_rows/set-rows-invocation.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

bool set_rows_supported(const ggml_tensor * set_rows, const TensorResolver & resolve, std::string & why);

// One invocation per (i02, i03) slice of the rows, appended to `out`.
bool plan_set_rows(const ggml_tensor * set_rows, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why);

}  // namespace xdna
