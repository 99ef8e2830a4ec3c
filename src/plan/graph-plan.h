// Whole-graph plans: how a graph splits into host runs and NPU submissions, kept per graph and reused
// for every token whose graph has the same nodes, shapes, strides, types and addresses.
//
// llama.cpp pads the KV length to 256, so a decode graph repeats for 256 tokens at a time; what changes
// per token are tensor contents (positions, KV write rows, the mask's valid length, output ids), which
// no signature word reads: they are the run's data, never part of the key. A freed buffer drops every
// graph plan (its address may come back as another tensor's).
#pragma once

#include "ggml.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xdna {

// One step of a graph: nodes [i0, i1) on the host (the host-op path), or the NPU submission of
// `nodes` (indices into the graph's nodes, in submission order).
struct GraphStep {
    bool             host = false;
    int              i0 = 0, i1 = 0;
    std::vector<int> nodes;
};

struct GraphPlan {
    std::vector<GraphStep> steps;
};

// What identifies a graph plan: per node, its op, flags, op parameters, and the address, type, shape
// and strides of it and of every source by slot. Written into `sig` (reused between calls).
void graph_signature(const ggml_cgraph * graph, std::vector<uint64_t> & sig);

// Graph plans by signature; a few graphs alternate (prompt, decode, each KV length bucket), so a
// small cache holds them all; past its size the oldest is dropped.
class GraphPlanCache {
public:
    explicit GraphPlanCache(size_t capacity = 16) : capacity_(capacity) {}
    const GraphPlan * find(const std::vector<uint64_t> & signature) const;
    void              insert(const std::vector<uint64_t> & signature, GraphPlan plan);
    void              clear() { entries_.clear(); }
    uint64_t          built() const { return built_; }
    size_t            size() const { return entries_.size(); }

private:
    struct Entry {
        uint64_t              hash;
        std::vector<uint64_t> signature;
        GraphPlan             plan;
    };
    std::vector<Entry> entries_;  // oldest first
    size_t             capacity_;
    uint64_t           built_ = 0;
};

}  // namespace xdna
