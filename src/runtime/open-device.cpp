#include "device.h"

#include "cpu-traits.h"
#include "npu-discovery.h"
#include "sim-device.h"
#include "sim-matmul.h"
#include "thread-pool.h"
#include "xrt-entry.h"

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
    // Every device needs ggml-cpu's row quantizers for the activations; the simulator also uses its dots.
    if (!bind_cpu_traits(why)) {
        return nullptr;
    }
    switch (kind) {
        case DeviceKind::sim: {
            std::string broken;
            if (!sim_matmul_self_check(broken)) {
                why = "the simulator's kernel " + broken + " does not match this ggml build";
                return nullptr;
            }
            return std::make_unique<SimDevice>(ThreadPool::default_threads());
        }
        case DeviceKind::xrt:
            return open_npu(why);
    }
    why = "unknown device kind";
    return nullptr;
}

}  // namespace xdna
