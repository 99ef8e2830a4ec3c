// The shape sweep: every weight matmul shape of the chosen models, times weight types and batch sizes,
// MODELLED by the timing model and (up to a size limit) MEASURED on the simulator and the CPU backend.
#pragma once

#include "model-dims.h"

#include <cstdint>
#include <string>
#include <vector>

namespace xdna_bench {

struct SweepOptions {
    std::vector<ModelDims>   models;
    std::vector<int64_t>     batches = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
    std::vector<ggml_type>   types = {GGML_TYPE_Q4_K, GGML_TYPE_Q6_K, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_F16};
    std::vector<std::string> matmuls = {"q", "k", "o", "gate", "down", "output"};  // v = k, up = gate
    std::string              preset = "krackan";
    std::string              csv_path;           // "" = stdout
    std::string              xdna_lib;
    double                   max_measure_gmac = 4;  // measure only shapes up to this many G MAC
    int                      reps = 3;
    bool                     measure = true;
};

// Runs the sweep and writes the CSV. Returns 0 on success.
int run_sweep(const SweepOptions & o);

}  // namespace xdna_bench
