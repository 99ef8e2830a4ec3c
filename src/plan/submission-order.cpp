#include "plan/submission-order.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace xdna {

namespace {

// The tensor whose memory `t` is: the end of its view chain.
const ggml_tensor * memory_root(const ggml_tensor * t) {
    while (t->view_src != nullptr) {
        t = t->view_src;
    }
    return t;
}

// A node that computes nothing: a view of another tensor's memory, or no op (ggml_op_is_empty's list).
bool computes_nothing(const ggml_tensor * n) {
    switch (n->op) {
        case GGML_OP_NONE:
        case GGML_OP_VIEW:
        case GGML_OP_RESHAPE:
        case GGML_OP_PERMUTE:
        case GGML_OP_TRANSPOSE:
            return true;
        default:
            return false;
    }
}

// Whether computing `n` writes memory that belongs to another tensor: a non-view op whose result is a
// view (SET_ROWS, CPY into a view, in-place ops), or a node whose memory was allocated before the graph.
bool writes_foreign_memory(const ggml_tensor * n) {
    return !computes_nothing(n) && (n->view_src != nullptr || n->data != nullptr);
}

}  // namespace

int group_npu_nodes(ggml_tensor ** nodes, int n_nodes, const std::function<bool(const ggml_tensor *)> & on_npu) {
    std::vector<ggml_tensor *> order;
    order.reserve(static_cast<size_t>(n_nodes));
    std::unordered_map<const ggml_tensor *, int> position;     // node -> index in `order`
    std::unordered_map<const ggml_tensor *, int> last_write;   // memory root -> index of its last foreign write
    int last_npu = -1;
    int moved = 0;
    for (int i = 0; i < n_nodes; ++i) {
        ggml_tensor * node = nodes[i];
        int at = static_cast<int>(order.size());
        if (last_npu >= 0 && on_npu(node) && !writes_foreign_memory(node)) {
            int after = -1;  // the last index `node` must follow
            for (const ggml_tensor * s : node->src) {
                if (s == nullptr) {
                    continue;
                }
                for (const ggml_tensor * t = s; t != nullptr; t = t->view_src) {
                    if (auto it = position.find(t); it != position.end()) {
                        after = std::max(after, it->second);
                    }
                }
                if (auto it = last_write.find(memory_root(s)); it != last_write.end()) {
                    after = std::max(after, it->second);
                }
            }
            if (after <= last_npu && last_npu + 1 < at) {
                at = last_npu + 1;
                ++moved;
            }
        }
        order.insert(order.begin() + at, node);
        for (int j = at; j < static_cast<int>(order.size()); ++j) {
            position[order[j]] = j;
        }
        for (auto & [root, index] : last_write) {
            index += index >= at ? 1 : 0;
        }
        if (writes_foreign_memory(node)) {
            last_write[memory_root(node)] = position[node];
        }
        if (on_npu(node)) {
            last_npu = std::max(last_npu, at);
        }
    }
    std::copy(order.begin(), order.end(), nodes);
    return moved;
}

namespace {

// Whether `n` reads `t`'s result, directly or through a chain of views.
bool reads(const ggml_tensor * n, const ggml_tensor * t) {
    for (const ggml_tensor * s : n->src) {
        for (; s != nullptr; s = s->view_src) {
            if (s == t) return true;
        }
    }
    return false;
}

// Whether `x` writes memory `n` reads: a foreign write (SET_ROWS, in-place) into a root n reads from.
bool writes_what_it_reads(const ggml_tensor * x, const ggml_tensor * n) {
    if (!writes_foreign_memory(x)) return false;
    const ggml_tensor * root = memory_root(x);
    for (const ggml_tensor * s : n->src) {
        if (s != nullptr && memory_root(s) == root) return true;
    }
    return false;
}

// An RMS_NORM and the MUL by its weight right after it: the pair the backend fuses (ggml_can_fuse over
// {RMS_NORM, MUL}, glue/xdna-backend.cpp), kept adjacent and counted as the norm's op.
bool fused_norm_mul(const ggml_tensor * norm, const ggml_tensor * mul) {
    return norm->op == GGML_OP_RMS_NORM && mul->op == GGML_OP_MUL && reads(mul, norm);
}

}  // namespace

int group_nodes_by_kind(ggml_tensor ** nodes, int n_nodes, const std::function<bool(const ggml_tensor *)> & on_npu,
                        const std::function<int(const ggml_tensor *)> & kind_of) {
    std::vector<ggml_tensor *> order(nodes, nodes + n_nodes);
    int moved = 0;
    auto fused_pair = [&](int i) { return i + 1 < n_nodes && fused_norm_mul(order[static_cast<size_t>(i)], order[static_cast<size_t>(i) + 1]); };
    // Moves order[from] (with the MUL of a fused pair) to just after order[after] (after < from) when
    // nothing in between is what they read. Returns how many nodes moved (0, 1 or 2).
    auto move_after = [&](int from, int after) {
        if (after + 1 >= from) return 0;  // already there
        const int count = fused_pair(from) ? 2 : 1;
        for (int c = 0; c < count; ++c) {
            const ggml_tensor * node = order[static_cast<size_t>(from + c)];
            for (int j = after + 1; j < from; ++j) {
                const ggml_tensor * x = order[static_cast<size_t>(j)];
                if (reads(node, x) || writes_what_it_reads(x, node)) return 0;
            }
        }
        std::rotate(order.begin() + after + 1, order.begin() + from, order.begin() + from + count);
        ++moved;
        return count;
    };
    // Each node is looked at once, in the order of the graph: a move only shifts the nodes before
    // order[i] (looked at already), so the next node to look at is the one after what moved.
    for (int i = 0; i < n_nodes; ++i) {
        ggml_tensor * node = order[static_cast<size_t>(i)];
        int up = 0;
        if (computes_nothing(node)) {
            // A view moves up to what it views, so that the nodes reading through it can move too.
            for (int j = i - 1; j >= 0; --j) {
                if (reads(node, order[static_cast<size_t>(j)])) {
                    up = move_after(i, fused_pair(j) ? j + 1 : j);
                    break;
                }
            }
            i += up > 1 ? up - 1 : 0;
            continue;
        }
        const int kind = on_npu(node) && !writes_foreign_memory(node) ? kind_of(node) : -1;
        if (kind < 0) continue;
        for (int j = i - 1; j >= 0; --j) {
            const ggml_tensor * m = order[static_cast<size_t>(j)];
            if (reads(node, m)) break;  // it cannot move past its input
            if (on_npu(m) && kind_of(m) == kind) {
                // Not between an RMS_NORM and the MUL of its weight.
                up = move_after(i, fused_pair(j) ? j + 1 : j);
                break;
            }
        }
        i += up > 1 ? up - 1 : 0;
    }
    std::copy(order.begin(), order.end(), nodes);
    return moved;
}

int keep_run_inputs(ggml_tensor ** nodes, int n_nodes, const std::function<bool(const ggml_tensor *)> & on_npu,
                    const std::function<int(const ggml_tensor *)> & kind_of,
                    const std::function<void(ggml_tensor * tensor, ggml_tensor * until)> & keep) {
    const std::unordered_set<const ggml_tensor *> in_graph(nodes, nodes + n_nodes);
    int kept = 0;
    int first = -1;  // the run's first node
    int kind = -1;
    int last = -1;   // its last so far
    auto close_run = [&] {
        for (int i = first; i >= 0 && i < last; ++i) {
            const ggml_tensor * n = nodes[i];
            if (computes_nothing(n)) continue;  // a fused MUL's inputs are kept like any
            for (ggml_tensor * s : n->src) {
                if (s != nullptr && in_graph.count(s) != 0) {
                    keep(s, nodes[last]);
                    ++kept;
                }
            }
        }
        first = last = kind = -1;
    };
    for (int i = 0; i < n_nodes; ++i) {
        const ggml_tensor * n = nodes[i];
        if (computes_nothing(n)) continue;
        // The MUL of a fused RMS_NORM pair is part of the norm's op: a run of norms runs through it, and
        // ends after it (the pair writes the MUL's output).
        if (i > 0 && fused_norm_mul(nodes[i - 1], n)) {
            last = first >= 0 && last == i - 1 ? i : last;
            continue;
        }
        const int k = on_npu(n) ? kind_of(n) : -1;
        if (k < 0 || k != kind) {
            close_run();
        }
        if (k >= 0) {
            if (first < 0) first = i, kind = k;
            last = i;
        }
    }
    close_run();
    return kept;
}

}  // namespace xdna
