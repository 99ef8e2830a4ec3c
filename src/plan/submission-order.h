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

// Then the NPU nodes of one kind move together, so that the batch planner can run them in one stage and
// the NPU changes program (an xclbin switch) less often. llama.cpp's attention builds Q, rope(Q), V, K,
// rope(K) (with a quantized cache: Q, rope(Q), rot(Q), V, rot(V), K, rope(K), rot(K)), and ggml's
// allocator reuses memory in that order: the memory of Q's projection, freed once rope(Q) has read it,
// becomes another projection's, which then cannot run beside Q's. Reordered before allocation, the projections, the ROPEs
// and the rotations each come together. An NPU node that writes only its own memory moves to just after
// the last node of its kind (`kind_of`; -1: never moved), under the rules above, past nothing it reads
// (nor the views it reads through: a view node moves to just after what it views), and not between an
// RMS_NORM and the MUL the backend fuses with it. Returns how many nodes moved.
int group_nodes_by_kind(ggml_tensor ** nodes, int n_nodes, const std::function<bool(const ggml_tensor *)> & on_npu,
                        const std::function<int(const ggml_tensor *)> & kind_of);

// Then, for each run of consecutive NPU nodes of one kind (views between them skipped), what the run's
// nodes read stays allocated until the run's last node: `keep(tensor, until)` for each input that is a
// node of the graph (the scheduler's add_alloc_dep). Otherwise ggml's allocator hands a later node of the
// run memory an earlier one reads (rope(K)'s output in the memory of Q's projection, freed once rope(Q)
// has read it), and the planner must run the two in different stages, with a change of program between
// them and the next kind's nodes. Returns how many (tensor, until) pairs it kept.
int keep_run_inputs(ggml_tensor ** nodes, int n_nodes, const std::function<bool(const ggml_tensor *)> & on_npu,
                    const std::function<int(const ggml_tensor *)> & kind_of,
                    const std::function<void(ggml_tensor * tensor, ggml_tensor * until)> & keep);

}  // namespace xdna
