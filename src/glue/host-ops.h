// Ops of a graph that the XDNA device does not run but that reached its backend all the same.
//
// ggml's scheduler never sends those: it asks supports_op first. ggml's RPC server does. In the pinned
// llama.cpp release the RPC client answers supports_op with true for every op (ggml-rpc.cpp,
// ggml_backend_rpc_device_supports_op: "TODO: call the remote backend and cache the results",
// llama.cpp commit 80fb11ac73e6), so the client's scheduler gives the remote device whole layers (norms,
// rope, attention, ...), and the server runs each of those graphs with graph_compute on the device it
// exposes, aborting if that fails. HostOps computes such nodes with ggml's CPU backend, found through
// ggml's backend registry when first needed (nothing links ggml-cpu), on the tensors where they are.
//
// A device that owns layers (GGML_XDNA_DEVICE_TYPE=gpu) gets the same from llama.cpp itself: supports_op
// claims every op supports() accepts, so a whole forward pass, the KV cache ops included, reaches one
// graph_compute, and the NPU's matmuls and the host's ops take turns on the same device memory.
//
// That is only possible because every tensor such a node reads is in ggml's layout: only matrices in a
// WEIGHTS buffer are packed into NPU tiles (norm weights, biases and the KV cache are not), and the RPC
// server never marks a buffer as holding weights. A node reading a packed weight is refused by
// supports() (the scheduler then computes it on the CPU from an unpacked copy) and, should one arrive
// all the same, refused with an error by run(), never computed on tile bytes.
#pragma once

#include "ggml-backend.h"

#include <string>

namespace xdna {

class HostOps {
public:
    HostOps() = default;

    // Whether the host-op path can compute `op` where its tensors are: ggml's CPU backend (from the
    // registry) supports it, and no tensor it touches is a packed weight or in another device's memory.
    // `why` says why not.
    static bool supports(const ggml_tensor * op, std::string & why);
    ~HostOps();
    HostOps(const HostOps &) = delete;
    HostOps & operator=(const HostOps &) = delete;

    // Compute nodes [i0, i1) of `graph` on the host. Device writes are made visible to the host
    // before, host writes to the device after. On failure, logs why (once per reason) and returns
    // GGML_STATUS_FAILED.
    ggml_status run(ggml_cgraph * graph, int i0, int i1);

    // Nodes computed so far (the profiler reports them beside the device's matmuls).
    uint64_t nodes_run() const { return nodes_run_; }

private:
    bool          ensure_backend();
    ggml_backend_t cpu_ = nullptr;
    bool          init_failed_ = false;
    uint64_t      nodes_run_ = 0;
};

}  // namespace xdna
