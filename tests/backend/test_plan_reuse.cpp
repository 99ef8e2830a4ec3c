// One submission per split, planned once per graph shape: Q, K and V share one activation operand,
// and a second identical graph builds no new plan (and still computes the right numbers).
#include "backend-harness.h"
#include "plan/batch-plan.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace xdna_test;

namespace {

struct QkvGraph {
    ggml_context * wctx = nullptr, * gctx = nullptr;
    ggml_backend_buffer_t wbuf = nullptr;
    ggml_gallocr_t galloc = nullptr;
    ggml_tensor * x = nullptr, * q = nullptr, * k = nullptr, * v = nullptr;
    ggml_tensor * wq = nullptr, * wk = nullptr, * wv = nullptr;
    ggml_cgraph * graph = nullptr;

    QkvGraph(ggml_backend_t backend, int64_t n_embd, int64_t n_kv, int64_t n_tokens) {
        ggml_init_params p = {ggml_tensor_overhead() * 16 + ggml_graph_overhead(), nullptr, true};
        wctx = ggml_init(p);
        wq = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, n_embd, n_embd);
        wk = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, n_embd, n_kv);
        wv = ggml_new_tensor_2d(wctx, GGML_TYPE_Q6_K, n_embd, n_kv);
        wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, ggml_backend_get_default_buffer_type(backend));
        ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        for (ggml_tensor * w : {wq, wk, wv}) {
            const auto bytes = random_weights(w->type, w->ne[0], w->ne[1]);
            ggml_backend_tensor_set(w, bytes.data(), 0, bytes.size());
        }
        gctx = ggml_init(p);
        x = ggml_new_tensor_2d(gctx, GGML_TYPE_F32, n_embd, n_tokens);
        ggml_set_input(x);
        q = ggml_mul_mat(gctx, wq, x);
        k = ggml_mul_mat(gctx, wk, x);
        v = ggml_mul_mat(gctx, wv, x);
        graph = ggml_new_graph(gctx);
        for (ggml_tensor * t : {q, k, v}) {
            ggml_set_output(t);
            ggml_build_forward_expand(graph, t);
        }
        galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
        EXPECT_TRUE(ggml_gallocr_alloc_graph(galloc, graph));
    }
    ~QkvGraph() {
        ggml_gallocr_free(galloc);
        ggml_backend_buffer_free(wbuf);
        ggml_free(gctx);
        ggml_free(wctx);
    }
};

ggml_backend_xdna_plans_built_t plans_built_fn() {
    auto fn = reinterpret_cast<ggml_backend_xdna_plans_built_t>(
        ggml_backend_reg_get_proc_address(ggml_backend_xdna_reg(), "ggml_backend_xdna_plans_built"));
    EXPECT_NE(fn, nullptr);
    return fn;
}

TEST(PlanReuse, SecondIdenticalGraphBuildsNoPlanAndStaysCorrect) {
    ggml_backend_t backend = ggml_backend_dev_init(xdna_device(), nullptr);
    auto plans_built = plans_built_fn();
    QkvGraph g(backend, 512, 128, 3);
    EXPECT_EQ(plans_built(backend), 0u);

    std::vector<float> q_first;
    for (int step = 0; step < 3; ++step) {
        const std::vector<float> x = random_floats(static_cast<size_t>(ggml_nelements(g.x)));  // new data each token
        ggml_backend_tensor_set(g.x, x.data(), 0, ggml_nbytes(g.x));
        ASSERT_EQ(GGML_STATUS_SUCCESS, ggml_backend_graph_compute(backend, g.graph));
        EXPECT_EQ(plans_built(backend), 1u) << "step " << step;

        // The reused plan computes this step's data, not the first step's.
        std::vector<float> q(ggml_nelements(g.q));
        ggml_backend_tensor_get(g.q, q.data(), 0, ggml_nbytes(g.q));
        const auto w = [&] {
            std::vector<uint8_t> b(ggml_nbytes(g.wq));
            ggml_backend_tensor_get(g.wq, b.data(), 0, b.size());
            return b;
        }();
        const MatmulCase c{GGML_TYPE_Q4_K, 512, 512, 3};
        EXPECT_EQ(contract_mismatch(c, w, x, q), "");
        if (step == 0) {
            q_first = q;
        } else {
            EXPECT_NE(q, q_first);
        }
    }
    ggml_backend_free(backend);
}

TEST(PlanReuse, FreedBuffersInvalidatePlans) {
    // A plan points into device buffers; once one is freed, a graph of the same shapes (very likely at
    // the same addresses) must be planned afresh, and compute from its own tensors.
    ggml_backend_t backend = ggml_backend_dev_init(xdna_device(), nullptr);
    auto plans_built = plans_built_fn();
    for (int round = 1; round <= 3; ++round) {
        QkvGraph g(backend, 256, 64, 2);
        const std::vector<float> x = random_floats(static_cast<size_t>(ggml_nelements(g.x)));
        ggml_backend_tensor_set(g.x, x.data(), 0, ggml_nbytes(g.x));
        ASSERT_EQ(GGML_STATUS_SUCCESS, ggml_backend_graph_compute(backend, g.graph));
        EXPECT_EQ(plans_built(backend), static_cast<uint64_t>(round));
        std::vector<float> v(ggml_nelements(g.v));
        ggml_backend_tensor_get(g.v, v.data(), 0, ggml_nbytes(g.v));
        std::vector<uint8_t> w(ggml_nbytes(g.wv));
        ggml_backend_tensor_get(g.wv, w.data(), 0, w.size());
        EXPECT_EQ(contract_mismatch({GGML_TYPE_Q6_K, 256, 64, 2}, w, x, v), "");
    }
    ggml_backend_free(backend);
}

TEST(PlanReuse, FreeingAnotherBackendsBufferKeepsThisBackendsPlans) {
    // Two backends (two contexts) on one device: freeing the buffers one of them computes with drops
    // only that backend's plans; the other keeps its plan and still computes its own data correctly.
    auto plans_cached = reinterpret_cast<ggml_backend_xdna_plans_cached_t>(
        ggml_backend_reg_get_proc_address(ggml_backend_xdna_reg(), "ggml_backend_xdna_plans_cached"));
    ASSERT_NE(plans_cached, nullptr);
    auto plans_built = plans_built_fn();
    ggml_backend_t a = ggml_backend_dev_init(xdna_device(), nullptr);
    ggml_backend_t b = ggml_backend_dev_init(xdna_device(), nullptr);
    QkvGraph ga(a, 256, 64, 2);
    auto run = [](ggml_backend_t backend, QkvGraph & g) {
        const std::vector<float> x = random_floats(static_cast<size_t>(ggml_nelements(g.x)));
        ggml_backend_tensor_set(g.x, x.data(), 0, ggml_nbytes(g.x));
        ASSERT_EQ(GGML_STATUS_SUCCESS, ggml_backend_graph_compute(backend, g.graph));
        std::vector<float> v(ggml_nelements(g.v));
        ggml_backend_tensor_get(g.v, v.data(), 0, ggml_nbytes(g.v));
        std::vector<uint8_t> w(ggml_nbytes(g.wv));
        ggml_backend_tensor_get(g.wv, w.data(), 0, w.size());
        EXPECT_EQ(contract_mismatch({GGML_TYPE_Q6_K, 256, 64, g.x->ne[1]}, w, x, v), "");
    };
    run(a, ga);
    {
        QkvGraph gb(b, 256, 64, 3);
        run(b, gb);
        EXPECT_EQ(plans_cached(b), 1u);
    }  // b's buffers are freed here
    run(a, ga);
    EXPECT_EQ(plans_cached(a), 1u) << "a plan of backend a was dropped for a buffer it never used";
    EXPECT_EQ(plans_built(a), 1u);
    QkvGraph gb2(b, 256, 64, 3);
    run(b, gb2);  // b's old plan pointed into freed buffers: it was dropped, and b planned afresh
    EXPECT_EQ(plans_built(b), 2u);
    EXPECT_EQ(plans_cached(b), 1u);
    ggml_backend_free(b);
    ggml_backend_free(a);
}

TEST(PlanReuse, QkvShareOneActivationOperandInOneSubmission) {
    ggml_backend_t backend = ggml_backend_dev_init(xdna_device(), nullptr);
    QkvGraph g(backend, 256, 64, 5);
    xdna::TensorResolver resolver{
        [](const ggml_tensor * t) { return xdna::BufferSlice{nullptr, reinterpret_cast<size_t>(t->data)}; },
        // The weights were packed at load; the activations are not (the planner refuses packed activations).
        [&g](const ggml_tensor * t) { return t == g.wq || t == g.wk || t == g.wv; }};
    xdna::BatchPlan plan;
    std::string why;
    ASSERT_TRUE(xdna::layout_batch({g.q, g.k, g.v}, resolver, plan, why)) << why;
    ASSERT_EQ(plan.ops.size(), 3u);
    EXPECT_TRUE(plan.ops[0].quantizes);
    EXPECT_FALSE(plan.ops[1].quantizes);
    EXPECT_FALSE(plan.ops[2].quantizes);
    EXPECT_EQ(plan.ops[1].act_offset, plan.ops[0].act_offset);
    EXPECT_EQ(plan.ops[2].act_offset, plan.ops[0].act_offset);
    // 5 tokens -> one 32-token activation tile of K = 256 (padded), quantized once for all three.
    EXPECT_EQ(plan.scratch_bytes, xdna::activation_tile_bytes(*plan.ops[0].plan.contract, 32));
    ggml_backend_free(backend);
}


// A graph with host runs between its submissions (a matmul, then RMS_NORM and ROPE on the host-op path,
// then a matmul of their result) is planned once as a whole and reused token after token; the rotation
// positions, a per-token value, are the run's data, not part of the plan: each step computes with its
// own positions (the same positions give the same bits again, other positions other values), and the
// second matmul is the contract's on whatever the host ops produced.
TEST(PlanReuse, GraphPlanReusedWithPerTokenPositions) {
    if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) == nullptr) {
        ggml_backend_register(ggml_backend_cpu_reg());
    }
    ggml_backend_t backend = ggml_backend_dev_init(xdna_device(), nullptr);
    auto plans_built = plans_built_fn();
    auto graph_plans_built = reinterpret_cast<ggml_backend_xdna_graph_plans_built_t>(
        ggml_backend_reg_get_proc_address(ggml_backend_xdna_reg(), "ggml_backend_xdna_graph_plans_built"));
    ASSERT_NE(graph_plans_built, nullptr);

    constexpr int64_t n_embd = 256, head = 64, n_tokens = 2;
    ggml_init_params p = {ggml_tensor_overhead() * 32 + ggml_graph_overhead(), nullptr, true};
    ggml_context * wctx = ggml_init(p);
    ggml_tensor * wa = ggml_new_tensor_2d(wctx, GGML_TYPE_Q4_K, n_embd, n_embd);
    ggml_tensor * wb = ggml_new_tensor_2d(wctx, GGML_TYPE_Q8_0, n_embd, n_embd);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, ggml_backend_get_default_buffer_type(backend));
    ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    for (ggml_tensor * w : {wa, wb}) {
        const auto bytes = random_weights(w->type, w->ne[0], w->ne[1]);
        ggml_backend_tensor_set(w, bytes.data(), 0, bytes.size());
    }
    ggml_context * gctx = ggml_init(p);
    ggml_tensor * x = ggml_new_tensor_2d(gctx, GGML_TYPE_F32, n_embd, n_tokens);
    ggml_tensor * pos = ggml_new_tensor_1d(gctx, GGML_TYPE_I32, n_tokens);
    ggml_set_input(x);
    ggml_set_input(pos);
    ggml_tensor * a = ggml_mul_mat(gctx, wa, x);
    ggml_tensor * r = ggml_rope(gctx, ggml_reshape_3d(gctx, ggml_rms_norm(gctx, a, 1e-5f), head, n_embd / head, n_tokens),
                                pos, head, GGML_ROPE_TYPE_NEOX);
    ggml_tensor * r2 = ggml_cont(gctx, ggml_reshape_2d(gctx, r, n_embd, n_tokens));
    ggml_tensor * b = ggml_mul_mat(gctx, wb, r2);
    ggml_cgraph * graph = ggml_new_graph(gctx);
    for (ggml_tensor * t : {r2, b}) {
        ggml_set_output(t);
        ggml_build_forward_expand(graph, t);
    }
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    ASSERT_TRUE(ggml_gallocr_alloc_graph(galloc, graph));

    const std::vector<float> xs = random_floats(static_cast<size_t>(ggml_nelements(x)));
    std::vector<uint8_t> wb_bytes(ggml_nbytes(wb));
    ggml_backend_tensor_get(wb, wb_bytes.data(), 0, wb_bytes.size());
    auto run = [&](std::vector<int32_t> positions) {
        ggml_backend_tensor_set(x, xs.data(), 0, ggml_nbytes(x));  // inputs are set every step, as llama.cpp does
        ggml_backend_tensor_set(pos, positions.data(), 0, ggml_nbytes(pos));
        EXPECT_EQ(GGML_STATUS_SUCCESS, ggml_backend_graph_compute(backend, graph));
        std::vector<float> rv(ggml_nelements(r2)), bv(ggml_nelements(b));
        ggml_backend_tensor_get(r2, rv.data(), 0, ggml_nbytes(r2));
        ggml_backend_tensor_get(b, bv.data(), 0, ggml_nbytes(b));
        EXPECT_EQ(contract_mismatch({GGML_TYPE_Q8_0, n_embd, n_embd, n_tokens}, wb_bytes, rv, bv), "");
        return rv;
    };
    const std::vector<float> first = run({7, 8});
    EXPECT_EQ(graph_plans_built(backend), 1u);
    const uint64_t submission_plans = plans_built(backend);
    EXPECT_EQ(submission_plans, 2u);  // the two matmuls, cut by the host ops between them
    const std::vector<float> other = run({300, 301});
    const std::vector<float> again = run({7, 8});
    EXPECT_NE(other, first);  // the positions of that step, not the first step's
    EXPECT_EQ(again, first);
    EXPECT_EQ(graph_plans_built(backend), 1u);
    EXPECT_EQ(plans_built(backend), submission_plans);

    ggml_gallocr_free(galloc);
    ggml_backend_buffer_free(wbuf);
    ggml_free(gctx);
    ggml_free(wctx);
    ggml_backend_free(backend);
}

}  // namespace
