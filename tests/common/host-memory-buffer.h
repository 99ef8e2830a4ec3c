// Host memory standing in for a device buffer, for tests that plan, lay out or check operands without a
// device: the planner and the argument layout read a buffer's size and host pointer, nothing else.
#pragma once

#include "runtime/device-buffer.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace xdna_test {

// Zeroed bytes the buffer owns: `bytes` of them, or `at_least` when that is more (a plan's scratch of 0
// bytes still has an address).
class OwnedHostBuffer : public xdna::DeviceBuffer {
public:
    explicit OwnedHostBuffer(size_t bytes, size_t at_least = 0) : m_(std::max(bytes, at_least), 0) {}
    void * host_ptr() override { return m_.data(); }
    size_t size() const override { return m_.size(); }
    void   sync_to_device(size_t, size_t) override {}
    void   sync_from_device(size_t, size_t) override {}

private:
    std::vector<uint8_t> m_;
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
