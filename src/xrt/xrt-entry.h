// Entry points into the XRT device. src/xrt implements them when the build has XRT (>= 2.18);
// devices/xrt-unavailable.cpp otherwise, so the device factory (devices/open-device.cpp) needs no #ifdef.
#pragma once

#include "runtime/device.h"
#include "runtime/npu-discovery.h"

#include <memory>
#include <string>

namespace xdna {

bool xrt_support_built();

// Why this build has no XRT device, in one sentence; empty when it has one.
std::string xrt_missing_reason();

// Version of the XRT library in use ("2.19.0"), or empty without XRT support.
std::string xrt_runtime_version();

// Open the NPU that discovery found through XRT, with the installed kernels for its generation.
// nullptr with `why` set to the first failure: XRT cannot open the device, no manifest, manifest
// invalid, no kernels for this generation.
std::unique_ptr<Device> open_xrt_device(const NpuInfo & npu, std::string & why);

}  // namespace xdna
