// Host overhead per offloaded matmul: the matmuls of one llama layer at batch 1 with kernel execution
// switched off (a switch only this benchmark uses), so what is timed is the glue, the planner, the
// activation quantization and the submission path. Compared: one submission per ggml split (QKV, O,
// gate/up, down: what the backend does) against one submission per matmul (the design without batching).
#pragma once

#include "model-dims.h"

#include <cstdio>
#include <string>

namespace xdna_bench {

// Prints a markdown table; returns false with `error` if the backend cannot be loaded.
bool run_overhead(FILE * out, const ModelDims & dims, const std::string & xdna_lib, int iterations, std::string & error);

}  // namespace xdna_bench
