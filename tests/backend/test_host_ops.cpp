// A whole layer-like graph given to the XDNA backend, as ggml's RPC server gives it one: norms, adds and
// scales among the matmuls, every tensor in XDNA buffers, weights in a buffer without WEIGHTS usage (the
// RPC server never sets it). With GGML_XDNA_HOST_OPS=cpu (default) the graph computes: the matmuls on
// the device, bit-exact with the contract on the inputs the host ops produced, and every other node
// against an independent reference. With GGML_XDNA_HOST_OPS=off the graph fails cleanly.
#include "backend-harness.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

using namespace xdna_test;

namespace {

constexpr int64_t kEmbd = 256, kHidden = 128, kTokens = 3;
constexpr float   kEps = 1e-5f;

// The host ops run on ggml's CPU backend, which they find through ggml's registry (as in llama.cpp
// tools and ggml-rpc-server, where ggml_backend_load_all put it there).
void register_cpu_backend() {
    if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) == nullptr) {
        ggml_backend_register(ggml_backend_cpu_reg());
    }
}

std::vector<float> read(const ggml_tensor * t) {
    std::vector<float> v(ggml_nelements(t));
    ggml_backend_tensor_get(t, v.data(), 0, ggml_nbytes(t));
    return v;
}

std::vector<uint8_t> read_bytes(const ggml_tensor * t) {
    std::vector<uint8_t> v(ggml_nbytes(t));
    ggml_backend_tensor_get(t, v.data(), 0, v.size());
    return v;
}

struct LayerGraph {
    ggml_context * wctx = nullptr, * gctx = nullptr;
    ggml_backend_buffer_t wbuf = nullptr;
    ggml_gallocr_t galloc = nullptr;
    ggml_tensor * g = nullptr, * bias = nullptr, * w1 = nullptr, * w2 = nullptr;
    ggml_tensor * x = nullptr, * h = nullptr, * y = nullptr, * z = nullptr, * o = nullptr, * s = nullptr;
    ggml_cgraph * graph = nullptr;

    explicit LayerGraph(ggml_backend_t backend) {
        ggml_init_params p = {ggml_tensor_overhead() * 32 + ggml_graph_overhead(), nullptr, true};
        ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend);
        wctx = ggml_init(p);
        g    = ggml_new_tensor_1d(wctx, GGML_TYPE_F32, kEmbd);
        bias = ggml_new_tensor_1d(wctx, GGML_TYPE_F32, kEmbd);
        w1   = ggml_new_tensor_2d(wctx, GGML_TYPE_Q8_0, kEmbd, kEmbd);
        w2   = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, kEmbd, kHidden);
        wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, buft);  // usage ANY, as on an RPC server
        for (ggml_tensor * w : {g, bias}) {
            const std::vector<float> v = random_floats(kEmbd);
            ggml_backend_tensor_set(w, v.data(), 0, ggml_nbytes(w));
        }
        for (ggml_tensor * w : {w1, w2}) {
            const auto bytes = random_weights(w->type, w->ne[0], w->ne[1]);
            ggml_backend_tensor_set(w, bytes.data(), 0, bytes.size());
        }
        gctx = ggml_init(p);
        x = ggml_new_tensor_2d(gctx, GGML_TYPE_F32, kEmbd, kTokens);
        ggml_set_input(x);
        h = ggml_mul(gctx, ggml_rms_norm(gctx, x, kEps), g);  // host
        y = ggml_mul_mat(gctx, w1, h);                        // device
        z = ggml_add(gctx, y, bias);                          // host
        o = ggml_mul_mat(gctx, w2, z);                        // device
        s = ggml_scale(gctx, o, 0.5f);                        // host
        for (ggml_tensor * t : {h, y, z, o, s}) {
            ggml_set_output(t);  // kept for reading back, not overwritten by later nodes
        }
        graph = ggml_new_graph(gctx);
        ggml_build_forward_expand(graph, s);
        galloc = ggml_gallocr_new(buft);
        EXPECT_TRUE(ggml_gallocr_alloc_graph(galloc, graph));
    }
    ~LayerGraph() {
        ggml_gallocr_free(galloc);
        ggml_backend_buffer_free(wbuf);
        ggml_free(gctx);
        ggml_free(wctx);
    }
};

struct EnvGuard {
    explicit EnvGuard(const char * value) { ::setenv("GGML_XDNA_HOST_OPS", value, 1); }
    ~EnvGuard() { ::unsetenv("GGML_XDNA_HOST_OPS"); }
};

TEST(HostOps, WholeLayerGraphComputesWithMatmulsOnTheDevice) {
    SCOPED_TRACE(testing::Message() << "seed=" << test_seed());
    register_cpu_backend();
    ggml_backend_t backend = ggml_backend_dev_init(xdna_device(), nullptr);
    {
        LayerGraph L(backend);
        const std::vector<float> x = random_floats(kEmbd * kTokens);
        ggml_backend_tensor_set(L.x, x.data(), 0, ggml_nbytes(L.x));
        ASSERT_EQ(GGML_STATUS_SUCCESS, ggml_backend_graph_compute(backend, L.graph));

        // h = rms_norm(x) * g, against float64. ggml sums the squares in double and rounds the mean, the
        // mean + eps, the square root, its reciprocal, x * scale and the product with g to float: six
        // roundings of at most u = 2^-24 relative each, so |h - ref| <= 6u |ref| (+ the double sum's
        // error, far below). Bound: 8u.
        const std::vector<float> g = read(L.g), h = read(L.h);
        for (int64_t t = 0; t < kTokens; ++t) {
            double ss = 0;
            for (int64_t i = 0; i < kEmbd; ++i) {
                ss += double(x[t * kEmbd + i]) * x[t * kEmbd + i];
            }
            const double scale = 1.0 / std::sqrt(ss / kEmbd + kEps);
            for (int64_t i = 0; i < kEmbd; ++i) {
                const double ref = x[t * kEmbd + i] * scale * g[i];
                ASSERT_LE(std::fabs(h[t * kEmbd + i] - ref), 8.0 * std::ldexp(1.0, -24) * std::fabs(ref) + 1e-30)
                    << "h[" << t << "][" << i << "]";
            }
        }
        // y = W1 h on the device: bit-exact with the contract, on the h the host produced.
        const std::vector<float> y = read(L.y);
        EXPECT_EQ(contract_mismatch({GGML_TYPE_Q8_0, kEmbd, kEmbd, kTokens}, read_bytes(L.w1), h, y), "");
        // z = y + bias: one float addition, exact to compute the same way here.
        const std::vector<float> bias = read(L.bias), z = read(L.z);
        for (int64_t t = 0; t < kTokens; ++t) {
            for (int64_t i = 0; i < kEmbd; ++i) {
                ASSERT_EQ(z[t * kEmbd + i], y[t * kEmbd + i] + bias[i]) << "z[" << t << "][" << i << "]";
            }
        }
        // o = W2 z on the device; s = o / 2 on the host (a power of two: exact).
        const std::vector<float> o = read(L.o), s = read(L.s);
        EXPECT_EQ(contract_mismatch({GGML_TYPE_Q4_K, kEmbd, kHidden, kTokens}, read_bytes(L.w2), z, o), "");
        for (size_t i = 0; i < o.size(); ++i) {
            ASSERT_EQ(s[i], o[i] * 0.5f) << "s[" << i << "]";
        }
    }
    ggml_backend_free(backend);
}

TEST(HostOps, OffMeansTheGraphFailsCleanly) {
    register_cpu_backend();
    EnvGuard off("off");  // read when a backend is created
    ggml_backend_t backend = ggml_backend_dev_init(xdna_device(), nullptr);
    {
        LayerGraph L(backend);
        const std::vector<float> x = random_floats(kEmbd * kTokens);
        ggml_backend_tensor_set(L.x, x.data(), 0, ggml_nbytes(L.x));
        EXPECT_EQ(GGML_STATUS_FAILED, ggml_backend_graph_compute(backend, L.graph));
    }
    ggml_backend_free(backend);
}

}  // namespace
