// Runs one MUL_MAT on a backend the way llama.cpp does: the weight in the backend's default buffer
// type with WEIGHTS usage (so it takes the load-time conversion path), activations and output in
// compute buffers allocated by ggml's graph allocator. The contract reference it is checked against
// is contract-reference.h.
#pragma once

#include "contract-reference.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-xdna.h"
#include "ggml.h"

#include <cstdint>
#include <vector>

namespace xdna_test {

ggml_backend_dev_t xdna_device();        // the XDNA device (simulator in tests)
ggml_backend_t     xdna_backend();       // shared XDNA backend
ggml_backend_t     cpu_backend();        // shared CPU backend, the reference

struct MatmulResult {
    std::vector<float>   out;       // [slice][n][m]
    std::vector<uint8_t> readback;  // weight bytes read back with get_tensor after the run
};

// Run out = W x X on `backend`. `weights_usage` marks the weight buffer as WEIGHTS (load-time
// conversion); `chunked_upload` uploads the weight in random pieces instead of in one call.
MatmulResult run_matmul(ggml_backend_t backend, const MatmulCase & c, const std::vector<uint8_t> & w,
                        const std::vector<float> & x, bool weights_usage = true, bool chunked_upload = false);

// Run out = MUL_MAT_ID(W, X, ids) on `backend` (the same placement as run_matmul). `ids` is
// [token][n_used]; the output is [token][slot][m]. Returns the graph status in `status`.
MatmulResult run_mul_mat_id(ggml_backend_t backend, const MatmulIdCase & c, const std::vector<uint8_t> & w,
                            const std::vector<float> & x, const std::vector<int32_t> & ids, bool weights_usage,
                            ggml_status * status = nullptr);

// The contract's value of every output as float64, for NMSE comparisons (against the CPU backend):
// the exact fp32 result for quantized contracts, the float64 sum for float ones. Equality with the
// contract is checked with contract_mismatch (contract-reference.h).
std::vector<double> contract_reference(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x);

// NMSE bound between the CPU backend and the contract for weight type `t` at a batch of `n_tokens`
// (the bfp16 prefill contracts are looser; why: backend-harness.cpp).
double cpu_nmse_bound(ggml_type t, int64_t n_tokens = 1);

}  // namespace xdna_test
