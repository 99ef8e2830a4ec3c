// The simulator's glu engine: each row chunk by chunk through aligned core buffers, as the glu design's
// core takes it (aie/glu), the core kernel code of aie/glu/kernels called on them, or with SimExec::twin
// its bit-identical twin (sim/twins/swiglu-twin.h).
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/sim-matmul.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool glu_has_kernel(const KernelKey & key);
ModelShape glu_model_shape(const Invocation & inv);
Status sim_run_glus(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec = SimExec::kernels);

}  // namespace xdna
