// The simulator's glu engine: each row chunk by chunk through aligned core buffers, as the glu design's
// core takes it (aie/glu), the core kernel code of aie/glu/kernels called on them, or with SimExec::twin
// its bit-identical twin (sim/twins/swiglu-twin.h). In stream mode, the host-built instruction stream
// (runtime/rows-sequence.h) through the DMA interpreter, the cores running the design's core program on
// the kernel code.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "runtime/rows-sequence.h"
#include "sim/sim-matmul.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <memory>
#include <vector>

namespace xdna {

bool glu_has_kernel(const KernelKey & key);
ModelShape glu_model_shape(const Invocation & inv);
Status sim_run_glus(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec = SimExec::kernels);

// SimExec::stream: every stream built and every operand checked first (`*refused` when one is not the
// design's), then each run on the glu design as `contexts` keeps it loaded.
Status sim_run_glus_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused);

}  // namespace xdna
