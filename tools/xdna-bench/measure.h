// Measured runs of one MUL_MAT on the XDNA backend (simulator) and on ggml's CPU backend.
//
// The weight goes through the load-time path llama.cpp's loader uses: allocated in the XDNA buffer
// type, the buffer marked GGML_BACKEND_BUFFER_USAGE_WEIGHTS, then filled with set_tensor (which packs
// it into the kernels' layout). Wall times are MEASURED on this host; on the simulator they say how
// fast the functional twin runs on the CPU, not how fast an NPU would be.
#pragma once

#include "ggml-backend.h"
#include "runtime/thread-pool.h"

#include <memory>
#include <string>

namespace xdna_bench {

struct Measurement {
    double xdna_us = 0;       // MEASURED wall time of graph_compute on the XDNA backend (median)
    double cpu_us = 0;        // MEASURED wall time of graph_compute on the CPU backend (median)
    double host_prep_us = 0;  // MEASURED host-side activation quantization the glue does per submission
    double nmse = 0;          // sum((xdna - cpu)^2) / sum(cpu^2)
};

class Backends {
public:
    Backends();
    ~Backends();
    // Load the XDNA backend from `xdna_lib` (GGML_XDNA_DEVICE must select a device) and start the CPU
    // backend with the same thread count as the simulator.
    bool open(const std::string & xdna_lib, std::string & error);
    int threads() const { return threads_; }

    // Random weights W[type, M x K] from `seed`, one copy per backend; replaces the previous ones.
    bool load_weights(ggml_type type, int64_t m, int64_t k, uint64_t seed, std::string & error);

    // Measure dst = MUL_MAT(W, X[F32, K x N]) on both backends: `reps` timed runs each, after one warm-up.
    bool measure(int64_t n, int reps, uint64_t seed, Measurement & out, std::string & error);

private:
    struct Weights;

    ggml_backend_t xdna_ = nullptr;
    ggml_backend_t cpu_ = nullptr;
    ggml_backend_buffer_type_t xdna_buft_ = nullptr;
    int threads_ = 1;
    std::unique_ptr<xdna::ThreadPool> pool_;
    std::unique_ptr<Weights> weights_;
};

}  // namespace xdna_bench
