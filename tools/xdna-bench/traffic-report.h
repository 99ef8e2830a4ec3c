// The DRAM traffic the design moves per matmul shape, as the timing model charges it (MODELLED).
//
// For every weight matmul of a model (the layers' projections, a MoE's router and expert slices, the
// output head), both token tiles, decode (one token; one row per expert) and a prefill ubatch (the rows a
// uniform routing gives each expert): the bytes of the instruction stream the runtime builds for the
// shape (sim/design-traffic.h), W re-reads and over-fetch, and the bytes the timing model charges. A
// markdown table, then one machine-readable `traffic` line per row for tests/timing/check-traffic.sh,
// which compares them with `aie/matmul/design.py --print-plan --format json`.
#pragma once

#include "model-dims.h"

#include <cstdio>
#include <string>
#include <vector>

namespace xdna_bench {

bool print_traffic(FILE * out, const std::vector<ModelDims> & models, const std::string & ftype, const std::string & preset,
                   int64_t pp_tokens);

}  // namespace xdna_bench
