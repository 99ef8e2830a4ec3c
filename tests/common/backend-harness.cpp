#include "backend-harness.h"

#include "bfp16-reference.h"

#include "test-random.h"

#include "ggml-cpu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace xdna_test {

ggml_backend_dev_t xdna_device() {
    ggml_backend_reg_t reg = ggml_backend_xdna_reg();
    if (ggml_backend_reg_dev_count(reg) == 0) {
        throw std::runtime_error("no XDNA device registered (is GGML_XDNA_DEVICE=sim set?)");
    }
    return ggml_backend_reg_dev_get(reg, 0);
}

ggml_backend_t xdna_backend() {
    static ggml_backend_t b = ggml_backend_dev_init(xdna_device(), nullptr);
    return b;
}

ggml_backend_t cpu_backend() {
    static ggml_backend_t b = [] {
        ggml_backend_t cpu = ggml_backend_cpu_init();
        ggml_backend_cpu_set_n_threads(cpu, 2);
        return cpu;
    }();
    return b;
}

MatmulResult run_matmul(ggml_backend_t backend, const MatmulCase & c, const std::vector<uint8_t> & w,
                        const std::vector<float> & x, bool weights_usage, bool chunked_upload) {
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend);
    const size_t ctx_size = ggml_tensor_overhead() * 8 + ggml_graph_overhead();
    ggml_init_params params = {ctx_size, nullptr, /*no_alloc=*/true};

    // Weights: their own context and buffer, as the model loader does.
    ggml_context * wctx = ggml_init(params);
    ggml_tensor * W = ggml_new_tensor_4d(wctx, c.wtype, c.k, c.m, c.w_ne2, c.w_ne3);
    ggml_set_name(W, "weight");
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, buft);
    if (weights_usage) {
        ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    }
    EXPECT_EQ(w.size(), ggml_nbytes(W));
    if (chunked_upload) {
        std::uniform_int_distribution<size_t> len(1, std::max<size_t>(1, w.size() / 7));
        for (size_t pos = 0; pos < w.size();) {
            const size_t n = std::min(w.size() - pos, len(rng()));
            ggml_backend_tensor_set(W, w.data() + pos, pos, n);
            pos += n;
        }
    } else {
        ggml_backend_tensor_set(W, w.data(), 0, w.size());
    }

    // Activations (F32, or F16/BF16 as a leaf of that type) and output: a compute graph.
    ggml_context * gctx = ggml_init(params);
    ggml_tensor * X = ggml_new_tensor_4d(gctx, c.xtype, c.k, c.n, c.w_ne2 * c.bcast2, c.w_ne3 * c.bcast3);
    ggml_set_name(X, "x");
    ggml_set_input(X);
    ggml_tensor * out = ggml_mul_mat(gctx, W, X);
    ggml_set_output(out);
    ggml_cgraph * graph = ggml_new_graph(gctx);
    ggml_build_forward_expand(graph, out);

    MatmulResult r;
    ggml_gallocr_t galloc = ggml_gallocr_new(buft);
    EXPECT_TRUE(ggml_gallocr_alloc_graph(galloc, graph));
    std::vector<uint8_t> xbytes(ggml_nbytes(X));
    if (c.xtype == GGML_TYPE_F32) {
        std::memcpy(xbytes.data(), x.data(), xbytes.size());
    } else {
        ggml_get_type_traits(c.xtype)->from_float_ref(x.data(), xbytes.data(), static_cast<int64_t>(x.size()));
    }
    ggml_backend_tensor_set(X, xbytes.data(), 0, xbytes.size());
    EXPECT_EQ(GGML_STATUS_SUCCESS, ggml_backend_graph_compute(backend, graph));
    r.out.resize(ggml_nelements(out));
    ggml_backend_tensor_get(out, r.out.data(), 0, ggml_nbytes(out));
    ggml_gallocr_free(galloc);
    r.readback.resize(w.size());
    ggml_backend_tensor_get(W, r.readback.data(), 0, r.readback.size());

    ggml_free(gctx);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    return r;
}

MatmulResult run_mul_mat_id(ggml_backend_t backend, const MatmulIdCase & c, const std::vector<uint8_t> & w,
                            const std::vector<float> & x, const std::vector<int32_t> & ids, bool weights_usage,
                            ggml_status * status) {
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend);
    ggml_init_params params = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, /*no_alloc=*/true};
    ggml_context * wctx = ggml_init(params);
    ggml_tensor * W = ggml_new_tensor_3d(wctx, c.wtype, c.k, c.m, c.n_expert);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, buft);
    if (weights_usage) {
        ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    }
    ggml_backend_tensor_set(W, w.data(), 0, w.size());

    ggml_context * gctx = ggml_init(params);
    ggml_tensor * X = ggml_new_tensor_3d(gctx, GGML_TYPE_F32, c.k, c.x_rows(), c.n_tokens);
    ggml_set_input(X);
    ggml_tensor * I = ggml_new_tensor_2d(gctx, GGML_TYPE_I32, c.n_used, c.n_tokens);
    ggml_set_input(I);
    ggml_tensor * out = ggml_mul_mat_id(gctx, W, X, I);
    ggml_set_output(out);
    ggml_cgraph * graph = ggml_new_graph(gctx);
    ggml_build_forward_expand(graph, out);

    MatmulResult r;
    ggml_gallocr_t galloc = ggml_gallocr_new(buft);
    EXPECT_TRUE(ggml_gallocr_alloc_graph(galloc, graph));
    ggml_backend_tensor_set(X, x.data(), 0, ggml_nbytes(X));
    ggml_backend_tensor_set(I, ids.data(), 0, ggml_nbytes(I));
    const ggml_status st = ggml_backend_graph_compute(backend, graph);
    if (status != nullptr) {
        *status = st;
    } else {
        EXPECT_EQ(GGML_STATUS_SUCCESS, st);
    }
    r.out.resize(ggml_nelements(out));
    ggml_backend_tensor_get(out, r.out.data(), 0, ggml_nbytes(out));
    r.readback.resize(w.size());
    ggml_backend_tensor_get(W, r.readback.data(), 0, r.readback.size());
    ggml_gallocr_free(galloc);
    ggml_free(gctx);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    return r;
}

std::vector<double> contract_reference(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x) {
    if (reference_takes_prefill(c.wtype, c.n)) {
        const std::vector<float> v = contract_reference_bfp16(c, w, x);
        return std::vector<double>(v.begin(), v.end());
    }
    if (reference_is_quantized(c.wtype)) {
        const std::vector<float> exact = contract_reference_exact(c, w, x);
        return std::vector<double>(exact.begin(), exact.end());
    }
    return contract_reference_float(c, w, x).value;
}

// The CPU backend quantizes activations its own way, so it differs from the contract by more than
// rounding where its format differs from the contract's int8 codes with fp32 scales. Measured over
// 240 random cases per type of the backend tests' shapes (k up to 4096, n up to 37; max NMSE):
//   K-quants: ggml-cpu's Q8_K has the same 256-value blocks and, up to sign, the same codes
//     (round(127 / amax * x)); only its scale (1 / iscale) and fp32 rounding differ: 3.8e-13. F16,
//     BF16, F32: exact or nearly exact products either way: 9.9e-14. Bound 1e-10.
//   Q4_0, Q5_0, Q8_0: ggml-cpu's Q8_0 stores each 32-block's scale in fp16 (relative rounding up to
//     2^-11, expected NMSE about 2^-22 / 3 = 8e-8): 1.4e-7. Bound 1.5e-6.
//   Q4_1, Q5_1: ggml-cpu's Q8_1 also stores each block's code sum as fp16(d * sum), which the weight
//     min multiplies (relative error up to 2^-11 of that term): 3.0e-6. Bound 3e-5.
// A lost K tile or a mis-scaled block gives NMSE near 1e-2 or more.
// With the bfp16 prefill contracts (GGML_XDNA_PREFILL=bfp16, batches over 4 tokens) both operands keep
// 8-bit mantissas per block of 8: the contract's NMSE against an fp64 product is about 9e-5 on
// Gaussian data (tests/unit/test_bfp16_reference.cpp measures it) and up to a few 1e-4 where one
// large value sets a block's exponent; the CPU's Q8_K activations add about 5e-5. Bound 2e-3, still
// below what a lost K tile or a mis-scaled sub-block gives.
double cpu_nmse_bound(ggml_type t, int64_t n_tokens) {
    if (reference_takes_prefill(t, n_tokens)) {
        return 2e-3;
    }
    switch (t) {
        case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_1: return 3e-5;
        case GGML_TYPE_Q4_0: case GGML_TYPE_Q5_0: case GGML_TYPE_Q8_0: return 1.5e-6;
        default: return 1e-10;
    }
}

}  // namespace xdna_test
