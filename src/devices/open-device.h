// The device factory: the one place that knows every Device implementation (the simulator in src/sim,
// the XRT NPU in src/xrt). The ggml glue and the tools open devices here and see only the runtime
// interface (runtime/device.h); nothing below this layer includes sim/ or xrt/ headers.
#pragma once

#include "runtime/device.h"
#include "runtime/host-executor.h"
#include "runtime/thread-pool.h"

#include <memory>
#include <string>

namespace xdna {

enum class DeviceKind { sim, xrt };

// Open a device of the given kind; nullptr with `why` set when none is available.
std::unique_ptr<Device> open_device(DeviceKind kind, std::string & why);

// What a backend computes a batch with when its device's run failed: the contracts executed on the
// host, on `pool` (which must outlive the executor).
std::unique_ptr<HostExecutor> open_host_executor(ThreadPool & pool);

// Whether this build has the XRT device, for reports (xdna-info).
struct XrtSupport {
    bool        built = false;
    std::string missing_reason;   // why not, in one sentence; empty when built
    std::string runtime_version;  // version of the XRT library in use ("2.19.0"); empty when not built
};
XrtSupport xrt_support();

}  // namespace xdna
