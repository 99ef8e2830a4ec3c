// group_npu_nodes and group_nodes_by_kind (plan/submission-order.h) on graphs shaped like a llama.cpp
// attention block: the NPU matmuls that do not depend on the host ops between them come together, the
// NPU nodes of one kind come together, and the order keeps every edge and every write into a
// pre-allocated tensor (the KV cache) before the nodes that read that memory.
#include "plan/submission-order.h"

#include "ggml.h"
#include "ggml-impl.h"

#include <gtest/gtest.h>

#include <algorithm>
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

bool every_node(const ggml_tensor *) {
    return true;
}

int op_kind(const ggml_tensor * t) {
    return static_cast<int>(t->op);
}

bool is_view(const ggml_tensor * t) {
    return t->op == GGML_OP_VIEW || t->op == GGML_OP_RESHAPE || t->op == GGML_OP_PERMUTE || t->op == GGML_OP_TRANSPOSE;
}

// Changes of kind between consecutive nodes that compute (views skipped): a stand-in for the changes of
// program the NPU makes when every node runs there.
int kind_changes(const std::vector<ggml_tensor *> & order) {
    int changes = 0;
    const ggml_tensor * last = nullptr;
    for (const ggml_tensor * n : order) {
        if (is_view(n)) continue;
        changes += last != nullptr && last->op != n->op ? 1 : 0;
        last = n;
    }
    return changes;
}

// Positions of `want` among the computing nodes of `order` (views skipped), in order.
std::vector<int> compute_positions(const std::vector<ggml_tensor *> & order, const std::vector<const ggml_tensor *> & want) {
    std::vector<int> out;
    int p = 0;
    for (const ggml_tensor * n : order) {
        if (is_view(n)) continue;
        for (const ggml_tensor * w : want) {
            if (n == w) out.push_back(p);
        }
        ++p;
    }
    return out;
}

bool consecutive(const std::vector<int> & positions) {
    for (size_t i = 1; i < positions.size(); ++i) {
        if (positions[i] != positions[i - 1] + 1) return false;
    }
    return !positions.empty();
}

// llama.cpp's attention block with an F16 cache, every node on the NPU: the norm with its weight, Q and
// rope(Q), K and rope(K), V, the cache writes, then attention reading the cache (a stand-in op reading
// views of the caches: no edge from the writes). By kind, the projections come together, then the ROPEs.
TEST(SubmissionOrder, ProjectionsAndRopesOfAnAttentionBlockComeTogetherByKind) {
    Graph g;
    static char k_memory[16 * 4 * 8 * sizeof(float)], v_memory[16 * 4 * 8 * sizeof(float)];
    const int64_t hd = 16, heads = 4, tokens = 4;
    ggml_tensor * x = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, hd * heads, tokens);
    ggml_tensor * w_norm = ggml_new_tensor_1d(g.ctx, GGML_TYPE_F32, hd * heads);
    ggml_tensor * pos = ggml_new_tensor_1d(g.ctx, GGML_TYPE_I32, tokens);
    ggml_tensor * rows = ggml_new_tensor_1d(g.ctx, GGML_TYPE_I64, tokens);
    ggml_tensor * k_cache = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, hd * heads, 8);
    ggml_tensor * v_cache = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, hd * heads, 8);
    k_cache->data = k_memory;
    v_cache->data = v_memory;
    ggml_tensor * norm = ggml_rms_norm(g.ctx, x, 1e-5f);
    ggml_tensor * normed = ggml_mul(g.ctx, norm, w_norm);
    auto projection = [&](const char * name) {
        ggml_tensor * w = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, hd * heads, hd * heads);
        ggml_tensor * p = ggml_mul_mat(g.ctx, w, normed);
        ggml_set_name(p, name);
        return p;
    };
    auto rope = [&](ggml_tensor * p) {
        return ggml_rope_ext(g.ctx, ggml_reshape_3d(g.ctx, p, hd, heads, tokens), pos, nullptr, hd, 0, 0, 10000.0f, 1.0f, 0.0f,
                             1.0f, 0.0f, 0.0f);
    };
    ggml_tensor * q = projection("q");
    ggml_tensor * q_rope = rope(q);
    ggml_tensor * k = projection("k");
    ggml_tensor * k_rope = rope(k);
    ggml_tensor * v = projection("v");
    ggml_tensor * k_write = ggml_set_rows(g.ctx, k_cache, ggml_reshape_2d(g.ctx, k_rope, hd * heads, tokens), rows);
    ggml_tensor * v_write = ggml_set_rows(g.ctx, v_cache, v, rows);
    ggml_tensor * attention = ggml_add(g.ctx, ggml_view_2d(g.ctx, k_cache, hd * heads, 8, k_cache->nb[1], 0),
                                       ggml_view_2d(g.ctx, v_cache, hd * heads, 8, v_cache->nb[1], 0));
    ggml_tensor * out = ggml_add(g.ctx, ggml_sum_rows(g.ctx, attention), ggml_sum_rows(g.ctx, ggml_reshape_2d(g.ctx, q_rope, hd * heads, tokens)));
    g.gf = ggml_new_graph(g.ctx);
    for (ggml_tensor * t : {q_rope, k_rope, v, k_write, v_write, out}) {
        ggml_build_forward_expand(g.gf, t);
    }

    const std::vector<ggml_tensor *> before = g.nodes();
    EXPECT_FALSE(consecutive(compute_positions(before, {q, k, v})));
    const int moved = group_nodes_by_kind(&g.gf->nodes[0], ggml_graph_n_nodes(g.gf), every_node, op_kind);
    const std::vector<ggml_tensor *> after = g.nodes();
    expect_valid(before, after);
    EXPECT_GT(moved, 0);
    EXPECT_TRUE(consecutive(compute_positions(after, {q, k, v})));
    EXPECT_TRUE(consecutive(compute_positions(after, {q_rope, k_rope})));
    EXPECT_TRUE(consecutive(compute_positions(after, {norm, normed}))) << "the fused norm pair split";
    EXPECT_LT(kind_changes(after), kind_changes(before));
    // Each run's inputs stay allocated to its end: what rope(Q) reads until rope(K), the normed
    // activations until the last projection.
    std::map<const ggml_tensor *, std::vector<const ggml_tensor *>> kept;
    EXPECT_GT(keep_run_inputs(&g.gf->nodes[0], ggml_graph_n_nodes(g.gf), every_node, op_kind,
                              [&](ggml_tensor * t, ggml_tensor * until) { kept[until].push_back(t); }),
              0);
    const std::vector<int> mm = compute_positions(after, {q, k, v});
    const ggml_tensor * last_mm = after[0];
    for (const ggml_tensor * t : after) {
        if (!is_view(t) && compute_positions(after, {t}) == std::vector<int>{mm.back()}) last_mm = t;
    }
    const auto has = [&](const ggml_tensor * until, const ggml_tensor * t) {
        const auto it = kept.find(until);
        return it != kept.end() && std::find(it->second.begin(), it->second.end(), t) != it->second.end();
    };
    EXPECT_TRUE(has(k_rope, q_rope->src[0])) << "rope(K) may get the memory rope(Q) reads";
    EXPECT_TRUE(has(last_mm, normed)) << "the last projection may get the memory the first reads";
    // The cache writes are never moved; attention still reads the cache after both.
    EXPECT_EQ(compute_positions(after, {k_write, v_write, attention}).size(), 3u);
    const std::vector<int> p = compute_positions(after, {k_write, v_write, attention});
    EXPECT_LT(p[0], p[2]);
    EXPECT_LT(p[1], p[2]);
}

// An RMS_NORM that could join an earlier RMS_NORM goes after that norm's MUL (the backend fuses each norm
// with the MUL of its weight only when the two are adjacent), and the run of the two pairs keeps the first
// norm's input allocated until the second pair's MUL, which writes the pair's output.
TEST(SubmissionOrder, ANormNeverSplitsAnotherNormFromItsWeight) {
    Graph g;
    ggml_tensor * x = ggml_scale(g.ctx, ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, 32, 2), 2.0f);
    ggml_tensor * y = ggml_scale(g.ctx, ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, 32, 2), 3.0f);
    ggml_tensor * w1 = ggml_new_tensor_1d(g.ctx, GGML_TYPE_F32, 32);
    ggml_tensor * w2 = ggml_new_tensor_1d(g.ctx, GGML_TYPE_F32, 32);
    ggml_tensor * n1 = ggml_rms_norm(g.ctx, x, 1e-5f);
    ggml_tensor * m1 = ggml_mul(g.ctx, n1, w1);
    ggml_tensor * s1 = ggml_silu(g.ctx, m1);
    ggml_tensor * n2 = ggml_rms_norm(g.ctx, y, 1e-5f);
    ggml_tensor * m2 = ggml_mul(g.ctx, n2, w2);
    g.gf = ggml_new_graph(g.ctx);
    ggml_build_forward_expand(g.gf, s1);
    ggml_build_forward_expand(g.gf, m2);
    const std::vector<ggml_tensor *> before = g.nodes();
    EXPECT_GT(group_nodes_by_kind(&g.gf->nodes[0], ggml_graph_n_nodes(g.gf), every_node, op_kind), 0);
    const std::vector<ggml_tensor *> after = g.nodes();
    expect_valid(before, after);
    EXPECT_EQ(after, (std::vector<ggml_tensor *>{x, y, n1, m1, n2, m2, s1}));
    std::map<const ggml_tensor *, std::vector<const ggml_tensor *>> kept;
    keep_run_inputs(&g.gf->nodes[0], ggml_graph_n_nodes(g.gf), every_node, op_kind,
                    [&](ggml_tensor * t, ggml_tensor * until) { kept[until].push_back(t); });
    EXPECT_NE(std::find(kept[m2].begin(), kept[m2].end(), x), kept[m2].end()) << "the second pair may get the first's input";
}

}  // namespace
}  // namespace xdna
