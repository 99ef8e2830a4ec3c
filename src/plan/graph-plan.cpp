#include "plan/graph-plan.h"

#include "plan/batch-plan.h"

#include "ggml-backend.h"

namespace xdna {

void graph_signature(const ggml_cgraph * graph, std::vector<uint64_t> & sig) {
    sig.clear();
    auto add_tensor = [&](const ggml_tensor * t) {
        sig.push_back(reinterpret_cast<uintptr_t>(t->data));
        sig.push_back(reinterpret_cast<uintptr_t>(t->buffer));
        // The buffer's kind and use too: a freed buffer's address may come back as another kind's.
        sig.push_back(t->buffer != nullptr ? reinterpret_cast<uintptr_t>(ggml_backend_buffer_get_type(t->buffer)) : 0);
        sig.push_back(t->buffer != nullptr ? static_cast<uint64_t>(ggml_backend_buffer_get_usage(t->buffer)) : 0);
        sig.push_back(static_cast<uint64_t>(t->type));
        for (int i = 0; i < GGML_MAX_DIMS; ++i) {
            sig.push_back(static_cast<uint64_t>(t->ne[i]));
            sig.push_back(static_cast<uint64_t>(t->nb[i]));
        }
    };
    const int n = ggml_graph_n_nodes(const_cast<ggml_cgraph *>(graph));
    sig.push_back(static_cast<uint64_t>(n));
    for (int i = 0; i < n; ++i) {
        const ggml_tensor * node = ggml_graph_node(const_cast<ggml_cgraph *>(graph), i);
        sig.push_back(static_cast<uint64_t>(node->op));
        sig.push_back(static_cast<uint64_t>(static_cast<uint32_t>(node->flags)));
        add_tensor(node);
        for (int32_t p : node->op_params) {
            sig.push_back(static_cast<uint32_t>(p));
        }
        for (int s = 0; s < GGML_MAX_SRC; ++s) {
            if (node->src[s] != nullptr) {
                sig.push_back(static_cast<uint64_t>(s) + 1);
                add_tensor(node->src[s]);
            }
        }
    }
}

const GraphPlan * GraphPlanCache::find(const std::vector<uint64_t> & signature) const {
    const uint64_t h = signature_hash(signature);
    for (const Entry & e : entries_) {
        if (e.hash == h && e.signature == signature) {
            return &e.plan;
        }
    }
    return nullptr;
}

void GraphPlanCache::insert(const std::vector<uint64_t> & signature, GraphPlan plan) {
    if (capacity_ == 0) {
        return;
    }
    if (entries_.size() >= capacity_) {
        entries_.erase(entries_.begin());
    }
    entries_.push_back({signature_hash(signature), signature, std::move(plan)});
    ++built_;
}

}  // namespace xdna
