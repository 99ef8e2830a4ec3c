// Device-visible memory that the host also maps, and a position in it.
#pragma once

#include <cstddef>

namespace xdna {

// What a buffer holds; XRT places weights and data differently (both host_only BOs today).
enum class BufferRole { weights, data };

class DeviceBuffer {
public:
    virtual ~DeviceBuffer() = default;
    virtual void * host_ptr() = 0;
    virtual size_t size() const = 0;
    // Make host writes in [offset, offset+size) visible to the device / device writes visible to the host.
    virtual void sync_to_device(size_t offset, size_t size) = 0;
    virtual void sync_from_device(size_t offset, size_t size) = 0;
};

struct BufferSlice {
    DeviceBuffer * buffer = nullptr;
    size_t         offset = 0;
    void *         host() const { return static_cast<char *>(buffer->host_ptr()) + offset; }
};

}  // namespace xdna
