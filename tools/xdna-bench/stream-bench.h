// xdna-bench stream: what the host-built instruction streams cost for a model's weight matmuls.
#pragma once

#include "model-dims.h"

#include <cstdio>

namespace xdna_bench {

// Per distinct (matmul shape, weight type, token tile) of the model under `ftype`: the stream's words,
// BDs and build time (median of `reps` builds, measured on this host); then the xclbins (family x token
// tile) the model needs. False if a shape is refused (the reason is printed).
bool run_stream_bench(std::FILE * out, const ModelDims & d, const std::string & ftype, int reps);

}  // namespace xdna_bench
