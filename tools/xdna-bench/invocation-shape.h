// The kernel invocation the backend makes for a 2-D MUL_MAT, without operands: the same contract, tile
// and padded sizes the planner gives the glue (xdna::invocation_geometry), for the timing model.
#pragma once

#include "runtime/device.h"

namespace xdna_bench {

// Invocation for weights of `type` with M rows of K values times N tokens. `ok` is false when the type
// has no contract or K is not a whole number of its blocks.
xdna::MatmulInvocation invocation_shape(ggml_type type, int64_t m, int64_t k, int64_t n, bool & ok);

}  // namespace xdna_bench
