// The simulator's add engine: each row chunk by chunk through aligned core buffers, as the add design's
// core takes it (aie/add), the core kernel code of aie/add/kernels called on them. No twin.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool add_has_kernel(const KernelKey & key);
ModelShape add_model_shape(const Invocation & inv);
Status sim_run_adds(const std::vector<Invocation> & invs, ThreadPool & pool);

}  // namespace xdna
