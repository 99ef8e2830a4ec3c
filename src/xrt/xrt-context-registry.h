// Process-wide sharing of XRT devices and hardware contexts.
//
// A hardware context reserves NPU columns and is scarce (16 per device on Strix Halo, fewer on other
// parts), and every process competes for them. Every XrtDevice in the process (one per ggml device,
// shared by all its backends and llama contexts) therefore shares one xrt::device per NPU and one
// hw_context per xclbin. Entries live as long as someone holds them.
#pragma once

#include "xrt/xrt-headers.h"

#include <memory>
#include <string>

namespace xdna {

// An xclbin registered on a device, with the hardware context that runs its kernels.
struct SharedContext {
    xrt::device     device;
    xrt::xclbin     xclbin;
    xrt::hw_context context;
    std::string     xclbin_path;  // the file it was loaded from (the first one, when several are identical)
};

// The xrt::device for a PCI address ("0000:c5:00.1"); an empty address opens device index 0.
// nullptr with `err` (one line) when XRT cannot open it.
std::shared_ptr<xrt::device> acquire_xrt_device(const std::string & pci_address, std::string & err);

// The context for `xclbin` (already loaded from `path`) on `device`, created on first use. Contexts are
// keyed by the device's address and the xclbin's UUID, so two files with the same xclbin share one.
// nullptr with `err` (one line) when the xclbin cannot be registered or no context can be created, e.g.
// because other processes hold the NPU's contexts.
std::shared_ptr<SharedContext> acquire_context(const std::string & pci_address, const xrt::device & device,
                                               const xrt::xclbin & xclbin, const std::string & path,
                                               std::string & err);

}  // namespace xdna
