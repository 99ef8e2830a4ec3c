#include "overhead.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-xdna.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <vector>

namespace xdna_bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Layer {
    ggml_context * wctx = nullptr;
    ggml_backend_buffer_t wbuf = nullptr;
    std::vector<ggml_tensor *> weights;     // per matmul
    std::vector<LayerMatmul> matmuls;

    ~Layer() {
        if (wbuf) ggml_backend_buffer_free(wbuf);
        if (wctx) ggml_free(wctx);
    }
};

// A graph of some of the layer's matmuls, each reading its own F32 input at batch 1.
struct Graph {
    ggml_context * ctx = nullptr;
    ggml_cgraph * graph = nullptr;
    ggml_gallocr_t galloc = nullptr;
    std::vector<ggml_tensor *> inputs;

    Graph(const Layer & layer, const std::vector<size_t> & which, ggml_backend_buffer_type_t buft) {
        ggml_init_params p{ggml_tensor_overhead() * 32 + ggml_graph_overhead(), nullptr, true};
        ctx = ggml_init(p);
        graph = ggml_new_graph(ctx);
        ggml_tensor * shared = nullptr;  // matmuls of one split read the same activations
        for (size_t i : which) {
            const LayerMatmul & m = layer.matmuls[i];
            if (shared == nullptr || shared->ne[0] != m.k) {
                shared = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, m.k, 1);
                ggml_set_input(shared);
                inputs.push_back(shared);
            }
            ggml_tensor * out = ggml_mul_mat(ctx, layer.weights[i], shared);
            ggml_set_output(out);
            ggml_build_forward_expand(graph, out);
        }
        galloc = ggml_gallocr_new(buft);
        ggml_gallocr_alloc_graph(galloc, graph);
        std::mt19937 rng(7);
        std::normal_distribution<float> nd;
        for (ggml_tensor * in : inputs) {
            std::vector<float> x(ggml_nelements(in));
            for (auto & v : x) v = nd(rng);
            ggml_backend_tensor_set(in, x.data(), 0, ggml_nbytes(in));
        }
    }
    ~Graph() {
        ggml_gallocr_free(galloc);
        ggml_free(ctx);
    }
};

double us_per_matmul(ggml_backend_t backend, std::vector<std::unique_ptr<Graph>> & graphs, size_t n_matmuls, int iterations) {
    for (auto & g : graphs) ggml_backend_graph_compute(backend, g->graph);  // plans built here
    std::vector<double> runs;
    for (int r = 0; r < 5; ++r) {
        const auto t0 = Clock::now();
        for (int it = 0; it < iterations; ++it) {
            for (auto & g : graphs) ggml_backend_graph_compute(backend, g->graph);
        }
        runs.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iterations / n_matmuls);
    }
    std::sort(runs.begin(), runs.end());
    return runs[runs.size() / 2];
}

}  // namespace

bool run_overhead(FILE * out, const ModelDims & dims, const std::string & xdna_lib, int iterations, std::string & error) {
    ggml_backend_reg_t reg = ggml_backend_load(xdna_lib.c_str());
    if (reg == nullptr || ggml_backend_reg_dev_count(reg) == 0) {
        error = "no XDNA device from " + xdna_lib + " (is GGML_XDNA_DEVICE=sim set?)";
        return false;
    }
    ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
    auto skip = reinterpret_cast<ggml_backend_xdna_set_skip_kernels_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_xdna_set_skip_kernels"));
    auto plans_built = reinterpret_cast<ggml_backend_xdna_plans_built_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_xdna_plans_built"));
    if (skip == nullptr || plans_built == nullptr) {
        error = "the XDNA backend lacks its benchmark extensions";
        return false;
    }
    ggml_backend_t backend = ggml_backend_dev_init(dev, nullptr);
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(dev);

    // Weights through the load path: WEIGHTS usage, then set_tensor packs them. Q4_K as in Q4_K_M; the
    // bytes are arbitrary because the kernels do not run.
    Layer layer;
    layer.matmuls = layer_matmuls(dims);
    ggml_init_params p{ggml_tensor_overhead() * 16, nullptr, true};
    layer.wctx = ggml_init(p);
    for (const auto & m : layer.matmuls) {
        layer.weights.push_back(ggml_new_tensor_2d(layer.wctx, GGML_TYPE_Q4_K, m.k, m.m));
    }
    layer.wbuf = ggml_backend_alloc_ctx_tensors_from_buft(layer.wctx, buft);
    ggml_backend_buffer_set_usage(layer.wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    for (ggml_tensor * w : layer.weights) {
        std::vector<uint8_t> zeros(ggml_nbytes(w), 0);
        ggml_backend_tensor_set(w, zeros.data(), 0, zeros.size());
    }

    std::vector<std::unique_ptr<Graph>> per_split, per_matmul;
    for (int split = 0; split < 4; ++split) {
        std::vector<size_t> which;
        for (size_t i = 0; i < layer.matmuls.size(); ++i) {
            if (layer.matmuls[i].split == split) which.push_back(i);
        }
        per_split.push_back(std::make_unique<Graph>(layer, which, buft));
    }
    for (size_t i = 0; i < layer.matmuls.size(); ++i) {
        per_matmul.push_back(std::make_unique<Graph>(layer, std::vector<size_t>{i}, buft));
    }
    const size_t n = layer.matmuls.size();

    skip(dev, true);
    const uint64_t plans0 = plans_built(backend);
    const double batched = us_per_matmul(backend, per_split, n, iterations);
    const uint64_t plans1 = plans_built(backend);
    const double unbatched = us_per_matmul(backend, per_matmul, n, iterations);
    skip(dev, false);
    const double batched_with_kernels = us_per_matmul(backend, per_split, n, std::max(1, iterations / 20));

    std::fprintf(out, "Host overhead per offloaded matmul, %s layer (%zu Q4_K matmuls, batch 1), MEASURED on this host\n\n",
                 dims.name.c_str(), n);
    std::fprintf(out, "| submission scheme | submissions per layer | us per matmul, kernels skipped | us per matmul, simulator executing |\n");
    std::fprintf(out, "|---|---|---|---|\n");
    std::fprintf(out, "| one per ggml split (this backend) | 4 | %.2f | %.1f |\n", batched, batched_with_kernels);
    std::fprintf(out, "| one per matmul (no batching) | %zu | %.2f | - |\n", n, unbatched);
    std::fprintf(out, "\nsubmission plans built while running the 4 split graphs %d times each: %llu (one per split, then reused)\n",
                 iterations * 5 + 1, static_cast<unsigned long long>(plans1 - plans0));
    ggml_backend_free(backend);
    return true;
}

}  // namespace xdna_bench
