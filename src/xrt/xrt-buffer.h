// Device memory on the NPU: one host_only buffer object, mapped once.
//
// host_only BOs live in host DRAM that the NPU reaches by DMA, so the weights the glue writes through
// host_ptr() at load are the very bytes the kernels read: no staging copy, no second copy of the model.
#pragma once

#include "runtime/device.h"
#include "xrt/xrt-headers.h"

#include <atomic>

namespace xdna {

class XrtBuffer final : public DeviceBuffer {
public:
    // Throws what xrt::bo throws (e.g. std::system_error with ENOMEM).
    XrtBuffer(const xrt::device & device, size_t bytes, xrt::memory_group group);

    void * host_ptr() override { return host_; }
    size_t size() const override { return size_; }
    void   sync_to_device(size_t offset, size_t size) override;
    void   sync_from_device(size_t offset, size_t size) override;

    xrt::bo & bo() { return bo_; }

    // Whether a sync of this buffer failed since it was made. The interface's sync calls cannot return an
    // error, so the device refuses to run on a buffer whose data may not have reached the NPU.
    bool sync_failed() const { return sync_failed_; }

    // The XrtBuffer behind a DeviceBuffer of this device, or nullptr for any other buffer.
    static XrtBuffer * from(DeviceBuffer * b) { return dynamic_cast<XrtBuffer *>(b); }

private:
    xrt::bo bo_;
    void *  host_ = nullptr;
    size_t  size_ = 0;
    std::atomic<bool> sync_failed_{false};

    void sync(xclBOSyncDirection dir, size_t offset, size_t size);
};

}  // namespace xdna
