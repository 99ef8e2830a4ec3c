// The XRT entry points (xrt/xrt-entry.h) of a build without XRT: the device factory links this instead
// of the XRT device (src/xrt), which is built only when CMake finds XRT >= 2.18.
#include "xrt/xrt-entry.h"

namespace xdna {

bool xrt_support_built() {
    return false;
}

std::string xrt_missing_reason() {
#ifdef XDNA_XRT_REJECTED_VERSION
    // CMake found an XRT, but one too old for the NPU.
    return "this build has no XRT support (XRT " XDNA_XRT_REJECTED_VERSION
           " was found at build time; the NPU needs XRT 2.18 or newer)";
#else
    return "this build has no XRT support (XRT >= 2.18 was not found at build time)";
#endif
}

std::string xrt_runtime_version() {
    return {};
}

std::unique_ptr<Device> open_xrt_device(const NpuInfo &, std::string & why) {
    why = xrt_missing_reason();
    return nullptr;
}

}  // namespace xdna
