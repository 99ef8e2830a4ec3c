// Host memory standing in for a device buffer, for tests that plan, lay out or check operands without a
// device: the planner and the argument layout read a buffer's size and host pointer, nothing else.
#pragma once

#include "runtime/device-buffer.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace xdna_test {

// Zeroed bytes the buffer owns: `bytes` of them, or `at_least` when that is more (a plan's scratch of 0
// bytes still has an address). Page-aligned as device buffers are (the kernels' vector loads check it),
// with a zeroed page of slack behind it (a DMA window may read past the last tile).
class OwnedHostBuffer : public xdna::DeviceBuffer {
public:
    explicit OwnedHostBuffer(size_t bytes, size_t at_least = 0) : size_(std::max(bytes, at_least)) {
        const size_t whole = (size_ + 4095) / 4096 * 4096 + 4096;
        data_ = static_cast<uint8_t *>(std::aligned_alloc(4096, whole));
        std::memset(data_, 0, whole);
    }
    ~OwnedHostBuffer() override { std::free(data_); }
    OwnedHostBuffer(const OwnedHostBuffer &) = delete;
    OwnedHostBuffer & operator=(const OwnedHostBuffer &) = delete;
    void * host_ptr() override { return data_; }
    size_t size() const override { return size_; }
    void   sync_to_device(size_t, size_t) override {}
    void   sync_from_device(size_t, size_t) override {}

private:
    size_t    size_;
    uint8_t * data_ = nullptr;
};

// Memory the test already holds (a ggml context's, a vector's), `bytes` of it at `data`.
class BorrowedHostBuffer final : public xdna::DeviceBuffer {
public:
    BorrowedHostBuffer(void * data, size_t bytes) : p_(data), n_(bytes) {}
    void * host_ptr() override { return p_; }
    size_t size() const override { return n_; }
    void   sync_to_device(size_t, size_t) override {}
    void   sync_from_device(size_t, size_t) override {}

private:
    void * p_;
    size_t n_;
};

}  // namespace xdna_test
