// A ggml context whose memory is one device buffer, for planner tests: every tensor of the context is a
// slice of it at its offset, as the backend's resolver would hand it to a planner.
#pragma once

#include "host-memory-buffer.h"
#include "runtime/device-buffer.h"

#include "ggml.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xdna_test {

class ContextBuffer final : public xdna::DeviceBuffer {
public:
    explicit ContextBuffer(ggml_context * ctx) : ctx_(ctx) {}
    void * host_ptr() override { return ggml_get_mem_buffer(ctx_); }
    size_t size() const override { return ggml_get_mem_size(ctx_); }
    void   sync_to_device(size_t, size_t) override {}
    void   sync_from_device(size_t, size_t) override {}

    // The slice of tensor t (a tensor of the context, or a view of one).
    xdna::BufferSlice slice_of(const ggml_tensor * t) {
        return {this, static_cast<size_t>(static_cast<const char *>(t->data) - static_cast<const char *>(ggml_get_mem_buffer(ctx_)))};
    }

private:
    ggml_context * ctx_;
};

// Zeroed host memory of at least `bytes` (64 at least) standing in for a plan's scratch buffer.
class ScratchBuffer final : public OwnedHostBuffer {
public:
    explicit ScratchBuffer(size_t bytes) : OwnedHostBuffer(bytes, 64) {}
};

// A context of 64 MB with its tensors allocated.
struct Context {
    ggml_context * ctx;
    Context() {
        ggml_init_params p = {64 << 20, nullptr, false};
        ctx = ggml_init(p);
    }
    ~Context() { ggml_free(ctx); }
    Context(const Context &) = delete;
    Context & operator=(const Context &) = delete;
};

}  // namespace xdna_test
