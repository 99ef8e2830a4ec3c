#include "measure.h"

#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"

#include "ggml-alloc.h"
#include "ggml-cpu.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

namespace xdna_bench {

namespace {

using Clock = std::chrono::steady_clock;

struct CtxDeleter {
    void operator()(ggml_context * c) const { ggml_free(c); }
};
struct BufDeleter {
    void operator()(ggml_backend_buffer_t b) const { ggml_backend_buffer_free(b); }
};
using CtxPtr = std::unique_ptr<ggml_context, CtxDeleter>;
using BufPtr = std::unique_ptr<ggml_backend_buffer, BufDeleter>;

CtxPtr new_ctx(size_t n_tensors) {
    ggml_init_params p{ggml_tensor_overhead() * n_tensors + ggml_graph_overhead(), nullptr, /*no_alloc =*/true};
    return CtxPtr(ggml_init(p));
}

// splitmix64: fast, seedable, identical on every run.
struct Rng {
    uint64_t s;
    float next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        return static_cast<float>(z >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f;  // [-1, 1)
    }
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

double time_compute(ggml_backend_t b, ggml_cgraph * g, int reps) {
    ggml_backend_graph_compute(b, g);  // warm-up
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = Clock::now();
        ggml_backend_graph_compute(b, g);
        t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    return median(t);
}

}  // namespace

struct Backends::Weights {
    ggml_type type;
    int64_t   m, k;
    CtxPtr    ctx[2];       // [0] XDNA, [1] CPU
    ggml_tensor * w[2];
    BufPtr    buf[2];
};

Backends::Backends() = default;

Backends::~Backends() {
    weights_.reset();  // buffers before their backends
    if (xdna_) {
        ggml_backend_free(xdna_);
    }
    if (cpu_) {
        ggml_backend_free(cpu_);
    }
}

bool Backends::open(const std::string & xdna_lib, std::string & error) {
    ggml_backend_reg_t reg = ggml_backend_load(xdna_lib.c_str());
    if (reg == nullptr || ggml_backend_reg_dev_count(reg) == 0) {
        error = "no XDNA device from " + xdna_lib + " (is GGML_XDNA_DEVICE=sim set?)";
        return false;
    }
    ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
    xdna_ = ggml_backend_dev_init(dev, nullptr);
    xdna_buft_ = ggml_backend_dev_buffer_type(dev);
    threads_ = xdna::ThreadPool::default_threads();
    cpu_ = ggml_backend_cpu_init();
    if (xdna_ == nullptr || cpu_ == nullptr) {
        error = "cannot start the XDNA or CPU backend";
        return false;
    }
    ggml_backend_cpu_set_n_threads(cpu_, threads_);
    pool_ = std::make_unique<xdna::ThreadPool>(threads_);
    return true;
}

bool Backends::load_weights(ggml_type type, int64_t m, int64_t k, uint64_t seed, std::string & error) {
    weights_.reset();
    auto W = std::make_unique<Weights>();
    W->type = type;
    W->m = m;
    W->k = k;
    // One copy per backend, the XDNA one through the load path: WEIGHTS usage before set_tensor.
    for (int b = 0; b < 2; ++b) {
        W->ctx[b] = new_ctx(1);
        W->w[b] = ggml_new_tensor_2d(W->ctx[b].get(), type, k, m);
        ggml_set_name(W->w[b], "weight");
    }
    W->buf[0].reset(ggml_backend_alloc_ctx_tensors_from_buft(W->ctx[0].get(), xdna_buft_));
    W->buf[1].reset(ggml_backend_alloc_ctx_tensors(W->ctx[1].get(), cpu_));
    if (!W->buf[0] || !W->buf[1]) {
        error = "weight allocation failed";
        return false;
    }
    for (int b = 0; b < 2; ++b) {
        ggml_backend_buffer_set_usage(W->buf[b].get(), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    }

    // Random rows, quantized in chunks in parallel, written with set_tensor in row order.
    const size_t row_bytes = ggml_row_size(type, k);
    const int64_t chunk_rows = std::max<int64_t>(1, std::min<int64_t>(m, (1 << 22) / k));
    std::vector<float> src(static_cast<size_t>(chunk_rows * k));
    std::vector<char> q(row_bytes * chunk_rows);
    for (int64_t r0 = 0; r0 < m; r0 += chunk_rows) {
        const int64_t rows = std::min(chunk_rows, m - r0);
        pool_->parallel_for(rows, [&](int64_t r, int) {
            Rng rng{seed * 1000003 + static_cast<uint64_t>(r0 + r)};
            for (int64_t i = 0; i < k; ++i) {
                src[r * k + i] = rng.next();
            }
            ggml_quantize_chunk(type, src.data() + r * k, q.data() + r * row_bytes, 0, 1, k, nullptr);
        });
        for (int b = 0; b < 2; ++b) {
            ggml_backend_tensor_set(W->w[b], q.data(), r0 * row_bytes, rows * row_bytes);
        }
    }
    weights_ = std::move(W);
    return true;
}

bool Backends::measure(int64_t n, int reps, uint64_t seed, Measurement & out, std::string & error) {
    if (!weights_) {
        error = "no weights loaded";
        return false;
    }
    const ggml_type type = weights_->type;
    const int64_t m = weights_->m, k = weights_->k;
    ggml_tensor * const * w = weights_->w;

    // Activations and outputs in each backend's own buffer; one MUL_MAT per graph.
    std::vector<float> xdata(static_cast<size_t>(k * n));
    Rng rng{~seed};
    for (auto & v : xdata) {
        v = rng.next();
    }
    CtxPtr actx[2] = {new_ctx(4), new_ctx(4)};
    ggml_tensor * x[2];
    ggml_tensor * y[2];
    ggml_cgraph * g[2];
    BufPtr abuf[2];
    ggml_backend_t be[2] = {xdna_, cpu_};
    for (int b = 0; b < 2; ++b) {
        x[b] = ggml_new_tensor_2d(actx[b].get(), GGML_TYPE_F32, k, n);
        y[b] = ggml_mul_mat(actx[b].get(), w[b], x[b]);
        g[b] = ggml_new_graph(actx[b].get());
        ggml_build_forward_expand(g[b], y[b]);
        abuf[b].reset(ggml_backend_alloc_ctx_tensors(actx[b].get(), be[b]));
        if (!abuf[b]) {
            error = "activation allocation failed";
            return false;
        }
        ggml_backend_tensor_set(x[b], xdata.data(), 0, xdata.size() * sizeof(float));
    }

    out.xdna_us = time_compute(xdna_, g[0], reps);
    out.cpu_us = time_compute(cpu_, g[1], reps);

    // Agreement of the two results (a cheap guard that the measured path computed the right thing).
    std::vector<float> ya(static_cast<size_t>(m * n)), yc(ya.size());
    ggml_backend_tensor_get(y[0], ya.data(), 0, ya.size() * sizeof(float));
    ggml_backend_tensor_get(y[1], yc.data(), 0, yc.size() * sizeof(float));
    double num = 0, den = 0;
    for (size_t i = 0; i < ya.size(); ++i) {
        num += (double(ya[i]) - yc[i]) * (double(ya[i]) - yc[i]);
        den += double(yc[i]) * yc[i];
    }
    out.nmse = den > 0 ? num / den : 0;

    // Host-side preparation the glue does before each submission: quantize the activations into the
    // contract's layout, in chunks of rows over the same number of threads (x[1] is host memory).
    const xdna::MatmulContract * c = xdna::matmul_contract_for(type);
    const int64_t kp = (k + c->tile_k - 1) / c->tile_k * c->tile_k;
    const xdna::ActivationLayout al = xdna::make_activation_layout(*c, k, kp, n);
    std::vector<char> act(al.total_bytes);
    std::vector<float> scratch(static_cast<size_t>(kp) * threads_);
    constexpr int64_t kRowsPerJob = 8;
    std::vector<double> t;
    for (int i = 0; i < std::max(1, reps); ++i) {
        const auto t0 = Clock::now();
        pool_->parallel_for((al.n_pad + kRowsPerJob - 1) / kRowsPerJob, [&](int64_t j, int thread) {
            const int64_t r0 = j * kRowsPerJob;
            xdna::quantize_activation_rows(x[1], 0, 0, al, r0, std::min(al.n_pad, r0 + kRowsPerJob), act.data(),
                                           scratch.data() + static_cast<size_t>(thread) * kp);
        });
        t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    out.host_prep_us = median(t);
    return true;
}

}  // namespace xdna_bench
