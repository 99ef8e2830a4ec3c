#include "device.h"

#include "sim-device.h"
#include "sim-matmul.h"
#include "thread-pool.h"

namespace xdna {

std::unique_ptr<Device> open_device(DeviceKind kind, std::string & why) {
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
            why = "this build has no XRT support (XRT >= 2.18 was not found at build time)";
            return nullptr;
    }
    why = "unknown device kind";
    return nullptr;
}

}  // namespace xdna
