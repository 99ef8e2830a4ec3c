// Markdown reports of the timing model, pasted into docs/performance-model.md by
// bench/update_performance_doc.py. Every number in them is labelled MODELLED or published.
#pragma once

#include "model-dims.h"

#include <cstdio>
#include <string>
#include <vector>

namespace xdna_bench {

// The model's parameters per preset, with basis and source.
void print_presets(FILE * out);

// Fitted and held-out published points: published vs modelled, error, stated bound.
void print_calibration(FILE * out);
// The kernel families' design budgets and the limits they break (src/sim/feasibility.h), with one
// machine-readable `budget` line per row for tests/timing/check-budgets.sh.
void print_feasibility(FILE * out);

// Modelled end-to-end tokens/s of a model's weight matmuls, with breakdown and scenarios.
void print_e2e(FILE * out, const ModelDims & d, const std::string & ftype, const std::string & preset,
               int64_t pp_tokens);

// One row per model (header when `header`): modelled prefill and decode t/s on every preset.
void print_e2e_summary(FILE * out, const ModelDims & d, const std::string & ftype, int64_t pp_tokens, bool header);

// The models among `models` that FastFlowLM published Krackan results for: published vs modelled.
void print_fastflowlm_comparison(FILE * out, const std::vector<ModelDims> & models, const std::string & ftype,
                                 int64_t pp_tokens);

}  // namespace xdna_bench
