#include "plan/submission-order.h"

#include <algorithm>
#include <unordered_map>
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

// Whether computing `n` writes memory that belongs to another tensor: a non-view op whose result is a
// view (SET_ROWS, CPY into a view, in-place ops), or a node whose memory was allocated before the graph.
bool writes_foreign_memory(const ggml_tensor * n) {
    switch (n->op) {
        case GGML_OP_NONE:
        case GGML_OP_VIEW:
        case GGML_OP_RESHAPE:
        case GGML_OP_PERMUTE:
        case GGML_OP_TRANSPOSE:
            return false;
        default:
            return n->view_src != nullptr || n->data != nullptr;
    }
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

}  // namespace xdna
