#include "backend-harness.h"

#include "matmul-contract.h"
#include "test-random.h"

#define GGML_COMMON_DECL_CPP
#include "ggml-common.h"
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

namespace {

// The contract quantizes activations with ggml-cpu's row quantizer for the format (it rounds ties to
// even, where ggml's scalar reference quantizers round them away from zero); the decoding below is
// the test's own.
void cpu_quantize(ggml_type type, const float * x, void * y, int64_t k) {
    ggml_get_type_traits_cpu(type)->from_float(x, y, k);
}

// Activation values exactly as the contract's activation format represents them.
std::vector<double> quantized_activation_row(ggml_type act, const float * x, int64_t k) {
    std::vector<double> v(k);
    switch (act) {
        case GGML_TYPE_F32:
            for (int64_t i = 0; i < k; ++i) v[i] = x[i];
            break;
        case GGML_TYPE_F16:
            for (int64_t i = 0; i < k; ++i) v[i] = ggml_fp16_to_fp32(ggml_fp32_to_fp16(x[i]));
            break;
        case GGML_TYPE_BF16:
            for (int64_t i = 0; i < k; ++i) v[i] = ggml_bf16_to_fp32(ggml_fp32_to_bf16(x[i]));
            break;
        case GGML_TYPE_Q8_0: {
            std::vector<block_q8_0> b(k / QK8_0);
            cpu_quantize(GGML_TYPE_Q8_0, x, b.data(), k);
            for (int64_t i = 0; i < k; ++i) v[i] = double(ggml_fp16_to_fp32(b[i / QK8_0].d)) * b[i / QK8_0].qs[i % QK8_0];
            break;
        }
        case GGML_TYPE_Q8_1: {
            std::vector<block_q8_1> b(k / QK8_1);
            cpu_quantize(GGML_TYPE_Q8_1, x, b.data(), k);
            for (int64_t i = 0; i < k; ++i) {
                ggml_fp16_t d;  // the block scale is the first half of the (d, s) pair
                std::memcpy(&d, &b[i / QK8_1], sizeof d);
                v[i] = double(ggml_fp16_to_fp32(d)) * b[i / QK8_1].qs[i % QK8_1];
            }
            break;
        }
        case GGML_TYPE_Q8_K: {
            std::vector<block_q8_K> b(k / QK_K);
            cpu_quantize(GGML_TYPE_Q8_K, x, b.data(), k);
            for (int64_t i = 0; i < k; ++i) v[i] = double(b[i / QK_K].d) * b[i / QK_K].qs[i % QK_K];
            break;
        }
        default:
            throw std::runtime_error("no reference for activation format");
    }
    return v;
}

}  // namespace

std::vector<double> contract_reference(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x) {
    const xdna::MatmulContract * contract = xdna::matmul_contract_for(c.wtype);
    if (contract == nullptr) {
        throw std::runtime_error("no contract");
    }
    const size_t row_bytes = ggml_row_size(c.wtype, c.k);
    const int64_t ne2 = c.w_ne2 * c.bcast2, ne3 = c.w_ne3 * c.bcast3;
    std::vector<double> out(static_cast<size_t>(c.m * c.n * ne2 * ne3));
    std::vector<float> wrow(c.k);
    std::vector<std::vector<double>> wdeq(c.m);
    for (int64_t i3 = 0; i3 < ne3; ++i3) {
        for (int64_t i2 = 0; i2 < ne2; ++i2) {
            const int64_t mat = i2 / c.bcast2 + (i3 / c.bcast3) * c.w_ne2;
            for (int64_t r = 0; r < c.m; ++r) {
                const uint8_t * src = w.data() + (mat * c.m + r) * row_bytes;
                if (c.wtype == GGML_TYPE_F32) {
                    std::memcpy(wrow.data(), src, row_bytes);  // ggml has no to_float for F32
                } else {
                    ggml_get_type_traits(c.wtype)->to_float(src, wrow.data(), c.k);
                }
                wdeq[r].assign(wrow.begin(), wrow.end());
            }
            const int64_t slice = i2 + i3 * ne2;
            for (int64_t t = 0; t < c.n; ++t) {
                // The contract converts src1 through the activation type of the case (F16/BF16 src1
                // arrive already rounded) and then into the contract's activation format.
                std::vector<float> xr(x.begin() + (slice * c.n + t) * c.k, x.begin() + (slice * c.n + t + 1) * c.k);
                if (c.xtype != GGML_TYPE_F32) {
                    const std::vector<double> rounded = quantized_activation_row(c.xtype, xr.data(), c.k);
                    for (int64_t i = 0; i < c.k; ++i) xr[i] = static_cast<float>(rounded[i]);
                }
                const std::vector<double> a = quantized_activation_row(contract->act_type, xr.data(), c.k);
                // Q8_1 carries each block's sum as s = fp16(d * sum(q)); contracts with a weight min
                // (Q4_1, Q5_1) multiply the min by that stored s, not by the exact sum.
                std::vector<double> s_err;
                if (contract->act_type == GGML_TYPE_Q8_1) {
                    std::vector<block_q8_1> b(c.k / QK8_1);
                    cpu_quantize(GGML_TYPE_Q8_1, xr.data(), b.data(), c.k);
                    for (const auto & blk : b) {
                        ggml_fp16_t hs[2];  // (d, s)
                        std::memcpy(hs, &blk, sizeof hs);
                        double exact = 0.0;
                        for (int i = 0; i < QK8_1; ++i) exact += blk.qs[i];
                        s_err.push_back(double(ggml_fp16_to_fp32(hs[1])) - double(ggml_fp16_to_fp32(hs[0])) * exact);
                    }
                }
                for (int64_t r = 0; r < c.m; ++r) {
                    double s = 0.0;
                    for (int64_t i = 0; i < c.k; ++i) s += wdeq[r][i] * a[i];
                    for (size_t blk = 0; blk < s_err.size(); ++blk) {
                        ggml_fp16_t dm[2];  // weight block (d, m)
                        std::memcpy(dm, w.data() + (mat * c.m + r) * row_bytes + blk * ggml_type_size(c.wtype), sizeof dm);
                        s += double(ggml_fp16_to_fp32(dm[1])) * s_err[blk];
                    }
                    out[(slice * c.n + t) * c.m + r] = s;
                }
            }
        }
    }
    return out;
}

}  // namespace xdna_test
