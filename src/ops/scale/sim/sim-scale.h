// The simulator's scale engine: each row chunk by chunk through aligned core buffers, the core kernel
// code of aie/scale/kernels called on them. No twin.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool scale_has_kernel(const KernelKey & key);
ModelShape scale_model_shape(const Invocation & inv);
Status sim_run_scales(const std::vector<Invocation> & invs, ThreadPool & pool);

}  // namespace xdna
