#include "xrt/output-staging.h"

#include <cstring>

namespace xdna {

XrtBuffer * OutputStaging::reserve(size_t bytes, const std::function<std::unique_ptr<DeviceBuffer>(size_t)> & allocate) {
    if (!current_ || current_->size() < bytes) {
        std::unique_ptr<DeviceBuffer> grown = allocate(aligned(bytes == 0 ? 1 : bytes));
        if (!grown || XrtBuffer::from(grown.get()) == nullptr) {
            return nullptr;
        }
        current_ = std::move(grown);
    }
    return XrtBuffer::from(current_.get());
}

void OutputStaging::retire() {
    if (current_) {
        retired_.push_back(std::move(current_));
    }
}

void OutputStaging::copy_out(const BufferSlice & staged, const BufferSlice & out, int64_t m, int64_t n, int64_t row_stride) {
    const char * from = static_cast<const char *>(staged.host());
    char *       to = static_cast<char *>(out.host());
    const size_t row_bytes = static_cast<size_t>(m) * sizeof(float);
    const size_t stride_bytes = static_cast<size_t>(row_stride) * sizeof(float);
    // Row by row: between rows of a strided output lie bytes of other tensors, which stay untouched.
    for (int64_t t = 0; t < n; ++t) {
        std::memcpy(to + t * stride_bytes, from + t * stride_bytes, row_bytes);
    }
}

}  // namespace xdna
