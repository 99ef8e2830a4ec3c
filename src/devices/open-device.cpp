#include "devices/open-device.h"

#include "runtime/npu-discovery.h"
#include "sim/sim-device.h"
#include "sim/sim-host-executor.h"
#include "sim/sim-matmul.h"
#include "xrt/xrt-entry.h"

namespace xdna {

namespace {

// The NPU through XRT, or why not: discovery first, so the reason is precise with or without XRT.
std::unique_ptr<Device> open_npu(std::string & why) {
    const NpuInfo npu = discover_npu();
    if (!xrt_support_built()) {
        const std::string no_xrt = xrt_missing_reason();
        why = npu.present ? describe_npu(npu) + " is present, but " + no_xrt : npu.reason + "; also, " + no_xrt;
        return nullptr;
    }
    if (!npu.present) {
        why = npu.reason;
        return nullptr;
    }
    if (npu.generation == NpuGeneration::unknown) {
        why = describe_npu(npu) + " is not an NPU generation this backend has kernels for (npu1, npu2)";
        return nullptr;
    }
    return open_xrt_device(npu, why);
}

}  // namespace

std::unique_ptr<Device> open_device(DeviceKind kind, std::string & why) {
    switch (kind) {
        case DeviceKind::sim: {
            return std::make_unique<SimDevice>(ThreadPool::default_threads());
        }
        case DeviceKind::xrt:
            return open_npu(why);
    }
    why = "unknown device kind";
    return nullptr;
}

std::unique_ptr<HostExecutor> open_host_executor(ThreadPool & pool) {
    return make_sim_host_executor(pool);
}

XrtSupport xrt_support() {
    XrtSupport s;
    s.built = xrt_support_built();
    s.missing_reason = xrt_missing_reason();
    s.runtime_version = xrt_runtime_version();
    return s;
}

}  // namespace xdna
