// Where the NPU writes matmul outputs: a device-owned staging buffer, never ggml's memory.
//
// Why staging rather than failing the graph: after a timeout the commands of the batch may still be
// queued or running, and nothing can stop them from writing. If their output operands pointed into
// ggml's compute buffer, a late completion would overwrite tensors that later ops and graphs reuse.
// With staging, the NPU only ever writes here; the host copies each output into place only after its
// batch finished without error. After a timeout the staging buffer is retired (kept alive, never
// reused), so a late write lands in memory nobody reads, and the backend can compute the batch on the
// CPU and go on instead of failing the graph. The cost is one host copy of the outputs (m x n floats
// per invocation, small next to the weights a matmul reads).
#pragma once

#include "runtime/device.h"
#include "xrt/xrt-buffer.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace xdna {

class OutputStaging {
public:
    // Alignment of each output's region in the staging buffer (a page, as XRT sub-buffers prefer).
    static constexpr size_t kAlign = 4096;

    static size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

    // A staging buffer of at least `bytes`, grown with `allocate` when needed; nullptr if that fails.
    XrtBuffer * reserve(size_t bytes, const std::function<std::unique_ptr<DeviceBuffer>(size_t)> & allocate);

    // The NPU may still write the current buffer: keep it alive and never hand it out again.
    void retire();

    // Copy one finished output from the staging buffer at `staged` into place: `n` rows of `m` floats,
    // `row_stride` floats apart, as the invocation's out slice describes it.
    static void copy_out(const BufferSlice & staged, const BufferSlice & out, int64_t m, int64_t n, int64_t row_stride);

    size_t retired_buffers() const { return retired_.size(); }

private:
    std::unique_ptr<DeviceBuffer>              current_;
    std::vector<std::unique_ptr<DeviceBuffer>> retired_;
};

}  // namespace xdna
