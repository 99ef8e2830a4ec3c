// The simulator's hadamard engine: rows dealt to the cores in chunks of up to 16, each chunk through
// aligned core buffers, the core kernel code of aie/hadamard/kernels called on them. No twin.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool hadamard_has_kernel(const KernelKey & key);
ModelShape hadamard_model_shape(const Invocation & inv);
Status sim_run_hadamards(const std::vector<Invocation> & invs, ThreadPool & pool);

}  // namespace xdna
