// Runs one MUL_MAT on a backend the way llama.cpp does: the weight in the backend's default buffer
// type with WEIGHTS usage (so it takes the load-time conversion path), activations and output in
// compute buffers allocated by ggml's graph allocator. Also the independent float64 reference of
// the kernel contract.
#pragma once

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-xdna.h"
#include "ggml.h"

#include <cstdint>
#include <vector>

namespace xdna_test {

struct MatmulCase {
    ggml_type wtype;
    int64_t   k, m, n;
    int64_t   w_ne2 = 1, w_ne3 = 1;    // weight matrices
    int64_t   bcast2 = 1, bcast3 = 1;  // activation slices per weight matrix
    ggml_type xtype = GGML_TYPE_F32;
};

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

// float64 evaluation of the contract: weights dequantized with ggml's to_float, activations quantized
// with ggml's reference quantizer for the contract's activation format and decoded here.
std::vector<double> contract_reference(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x);

// Number of activation floats a case needs.
inline size_t activation_count(const MatmulCase & c) {
    return static_cast<size_t>(c.k * c.n * c.w_ne2 * c.bcast2 * c.w_ne3 * c.bcast3);
}

}  // namespace xdna_test
