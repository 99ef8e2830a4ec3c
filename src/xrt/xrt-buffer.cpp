#include "xrt/xrt-buffer.h"

#include "runtime/runtime-log.h"
#include "xrt/xrt-errors.h"

#include <algorithm>

namespace xdna {

namespace {

// XRT rejects zero-sized BOs; ggml may ask for an empty buffer.
constexpr size_t kMinBoBytes = 4096;

}  // namespace

XrtBuffer::XrtBuffer(const xrt::device & device, size_t bytes, xrt::memory_group group)
    : bo_(device, std::max(bytes, kMinBoBytes), xrt::bo::flags::host_only, group), size_(bytes) {
    host_ = bo_.map();
}

void XrtBuffer::sync(xclBOSyncDirection dir, size_t offset, size_t size) {
    if (size == 0) {
        return;
    }
    try {
        bo_.sync(dir, size, offset);
    } catch (const std::exception & e) {
        // Logged once per buffer: the next run on it fails with its own message.
        if (!sync_failed_) {
            runtime_log(LogLevel::error, describe_exception(XrtStep::submit, "a buffer sync", e));
        }
        sync_failed_ = true;
    }
}

void XrtBuffer::sync_to_device(size_t offset, size_t size) {
    sync(XCL_BO_SYNC_BO_TO_DEVICE, offset, size);
}

void XrtBuffer::sync_from_device(size_t offset, size_t size) {
    sync(XCL_BO_SYNC_BO_FROM_DEVICE, offset, size);
}

}  // namespace xdna
