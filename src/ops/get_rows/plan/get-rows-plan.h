// Planning GET_ROWS for the NPU (aie/get_rows): F32 rows gathered by I32 ids into F32 rows, a multiple
// of 4 bytes each (the shim BDs move 32-bit words). Other types (the quantized embedding rows, F16)
// stay on the host-op path, with the reason.
#pragma once

#include "ops/get_rows/get-rows-invocation.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

bool get_rows_supported(const ggml_tensor * get_rows, const TensorResolver & resolve, std::string & why);

// One invocation per (i11, i12) slice of the ids, appended to `out`.
bool plan_get_rows(const ggml_tensor * get_rows, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why);

}  // namespace xdna
