// The XRT entry points of a build with XRT.
#include "xrt/xrt-entry.h"

#include "runtime/installed-kernels.h"
#include "xrt/xrt-context-registry.h"
#include "xrt/xrt-device.h"
#include "xrt/xrt-headers.h"

namespace xdna {

bool xrt_support_built() {
    return true;
}

std::string xrt_missing_reason() {
    return {};
}

std::string xrt_runtime_version() {
    // The library's own version, which may be newer than the headers this was built with.
    try {
        return std::to_string(xrt::version::major()) + "." + std::to_string(xrt::version::minor()) + "." +
               std::to_string(xrt::version::patch());
    } catch (const std::exception &) {
        return "unknown";
    }
}

std::unique_ptr<Device> open_xrt_device(const NpuInfo & npu, std::string & why) {
    std::string err;
    auto        device = acquire_xrt_device(npu.pci_address, err);
    if (!device) {
        // XRT enumerates NPUs by index as well; with one NPU per machine index 0 is the same device.
        std::string err0;
        device = acquire_xrt_device("", err0);
        if (!device) {
            why = err;
            return nullptr;
        }
    }
    Manifest manifest;
    if (!load_installed_kernels(locate_kernel_manifest(), npu.generation, manifest, why)) {
        return nullptr;
    }
    return std::make_unique<XrtDevice>(npu, std::move(device), std::move(manifest));
}

}  // namespace xdna
