// group_npu_nodes (plan/submission-order.h) on graphs shaped like a llama.cpp attention block: the NPU
// matmuls that do not depend on the host ops between them come together, and the order keeps every edge
// and every write into a pre-allocated tensor (the KV cache) before the nodes that read that memory.
#include "plan/submission-order.h"

#include "ggml.h"
#include "ggml-impl.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace xdna {
namespace {

struct Graph {
    ggml_context * ctx = nullptr;
    ggml_cgraph *  gf = nullptr;
    Graph() {
        ggml_init_params p = {64 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
        ctx = ggml_init(p);
    }
    ~Graph() { ggml_free(ctx); }
    std::vector<ggml_tensor *> nodes() const {
        std::vector<ggml_tensor *> v;
        for (int i = 0; i < ggml_graph_n_nodes(gf); ++i) {
            v.push_back(ggml_graph_node(gf, i));
        }
        return v;
    }
};

bool is_matmul(const ggml_tensor * t) {
    return t->op == GGML_OP_MUL_MAT;
}

const ggml_tensor * root_of(const ggml_tensor * t) {
    while (t->view_src != nullptr) {
        t = t->view_src;
    }
    return t;
}

// Runs of consecutive matmuls in `order`: the submissions a backend would make.
int npu_runs(const std::vector<ggml_tensor *> & order) {
    int runs = 0;
    bool in_run = false;
    for (const ggml_tensor * n : order) {
        if (is_matmul(n) && !in_run) {
            ++runs;
        }
        in_run = is_matmul(n);
    }
    return runs;
}

// The order keeps every edge, and every node that reads (a view of) memory some node writes through a
// view (set_rows) stays on the side of that writer it was on before.
void expect_valid(const std::vector<ggml_tensor *> & before, const std::vector<ggml_tensor *> & after) {
    ASSERT_EQ(before.size(), after.size());
    std::map<const ggml_tensor *, size_t> pos_before, pos_after;
    for (size_t i = 0; i < before.size(); ++i) {
        pos_before[before[i]] = i;
        pos_after[after[i]] = i;
    }
    ASSERT_EQ(pos_after.size(), after.size()) << "a node is duplicated or lost";
    for (const ggml_tensor * n : after) {
        for (const ggml_tensor * s : n->src) {
            for (; s != nullptr; s = s->view_src) {
                if (pos_after.count(s)) {
                    EXPECT_LT(pos_after[s], pos_after[n]) << n->name << " before its source " << s->name;
                }
            }
        }
    }
    for (const ggml_tensor * w : before) {
        if (w->op != GGML_OP_SET_ROWS) {
            continue;
        }
        for (const ggml_tensor * r : before) {
            bool reads = false;
            for (const ggml_tensor * s : r->src) {
                reads = reads || (s != nullptr && r != w && root_of(s) == root_of(w));
            }
            if (reads) {
                EXPECT_EQ(pos_before[r] < pos_before[w], pos_after[r] < pos_after[w])
                    << r->name << " moved across the write " << w->name;
            }
        }
    }
}

// K, a host op on K, K written into the cache, then attention reading the cache, V and Q (with a host op).
TEST(SubmissionOrder, IndependentProjectionsShareOneRunAndTheCacheWriteStaysFirst) {
    Graph g;
    static char cache_memory[64 * 16 * sizeof(float)];
    ggml_tensor * x = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, 64, 4);
    ggml_tensor * wq = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, 64, 64);
    ggml_tensor * wk = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, 64, 64);
    ggml_tensor * wv = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, 64, 64);
    ggml_tensor * cache = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, 64, 16);
    cache->data = cache_memory;  // allocated before the graph, as llama.cpp's KV cache is
    ggml_tensor * rows = ggml_new_tensor_1d(g.ctx, GGML_TYPE_I64, 4);
    ggml_set_name(x, "x");
    ggml_tensor * n = ggml_rms_norm(g.ctx, x, 1e-5f);
    ggml_set_name(n, "norm");
    ggml_tensor * q = ggml_mul_mat(g.ctx, wq, n);
    ggml_set_name(q, "q");
    ggml_tensor * qs = ggml_scale(g.ctx, q, 0.5f);
    ggml_set_name(qs, "q_scaled");
    ggml_tensor * k = ggml_mul_mat(g.ctx, wk, n);
    ggml_set_name(k, "k");
    ggml_tensor * ks = ggml_scale(g.ctx, k, 0.5f);
    ggml_set_name(ks, "k_scaled");
    ggml_tensor * kw = ggml_set_rows(g.ctx, cache, ks, rows);
    ggml_set_name(kw, "k_write");
    ggml_tensor * v = ggml_mul_mat(g.ctx, wv, n);
    ggml_set_name(v, "v");
    // Reads the cache through a view of the leaf, not through the set_rows node: no edge orders them. The
    // view node comes first in the graph, so only the write itself can hold kq back.
    ggml_tensor * cache_view = ggml_view_2d(g.ctx, cache, 64, 16, cache->nb[1], 0);
    ggml_tensor * kq = ggml_mul_mat(g.ctx, cache_view, n);
    ggml_set_name(kq, "kq");
    ggml_tensor * out = ggml_add(g.ctx, ggml_add(g.ctx, ggml_sum_rows(g.ctx, kq), ggml_sum_rows(g.ctx, v)),
                                 ggml_sum_rows(g.ctx, qs));
    g.gf = ggml_new_graph(g.ctx);
    ggml_build_forward_expand(g.gf, cache_view);
    ggml_build_forward_expand(g.gf, kw);
    ggml_build_forward_expand(g.gf, out);

    const std::vector<ggml_tensor *> before = g.nodes();
    const int runs_before = npu_runs(before);
    const int moved = group_npu_nodes(before.empty() ? nullptr : &g.gf->nodes[0], ggml_graph_n_nodes(g.gf), is_matmul);
    const std::vector<ggml_tensor *> after = g.nodes();
    expect_valid(before, after);
    EXPECT_GT(moved, 0);
    // Built depth-first: k | kq | v | q. kq reads the cache k_write writes, so it stays after it; v and q
    // join kq: k | kq v q.
    EXPECT_EQ(runs_before, 4);
    EXPECT_EQ(npu_runs(after), 2);
}

// A matmul whose input is a host op's output never moves before that op.
TEST(SubmissionOrder, AChainOfDependentMatmulsStaysInOrder) {
    Graph g;
    ggml_tensor * x = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, 32, 2);
    ggml_tensor * cur = x;
    for (int i = 0; i < 4; ++i) {
        ggml_tensor * w = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, 32, 32);
        cur = ggml_silu(g.ctx, ggml_mul_mat(g.ctx, w, cur));
    }
    g.gf = ggml_new_graph(g.ctx);
    ggml_build_forward_expand(g.gf, cur);
    const std::vector<ggml_tensor *> before = g.nodes();
    EXPECT_EQ(group_npu_nodes(&g.gf->nodes[0], ggml_graph_n_nodes(g.gf), is_matmul), 0);
    EXPECT_EQ(g.nodes(), before);
}

}  // namespace
}  // namespace xdna
