// The order in which a device that owns layers computes a graph: NPU nodes that do not depend on the host
// ops between them are moved together, so they share one submission.
//
// llama.cpp builds a layer depth-first from its outputs, so the Q, K and V projections come out as
// Q, rope(Q), K, rope(K), set_rows(K), V, ...: a host op between every two matmuls, and three
// submissions where one would do (likewise the FFN's gate and up). ggml lets a backend reorder the
// nodes of its split before the split is allocated (the graph_optimize hook; Vulkan and Metal reorder
// for concurrency there), so moving a node earlier is safe for memory: the allocator sees the new order.
// What must hold is only what the graph does not say by edges:
//   - an NPU node that writes only its own memory moves to just after the last NPU node before it, and only if none of its sources is
//     computed in between;
//   - nor is any memory it reads written in between by a node that writes into another tensor's memory
//     (SET_ROWS and CPY into the KV cache, in-place ops): such writes are ordered by the graph's node
//     order alone, not by an edge.
#pragma once

#include "ggml.h"

#include <functional>

namespace xdna {

// Reorders a graph's nodes [nodes, nodes + n_nodes) in place as described above; `on_npu` says which
// nodes the NPU computes. Returns how many nodes moved.
int group_npu_nodes(ggml_tensor ** nodes, int n_nodes, const std::function<bool(const ggml_tensor *)> & on_npu);

}  // namespace xdna
