// The simulator's add engine: each row chunk by chunk through aligned core buffers, as the add design's
// core takes it (aie/add), the core kernel code of aie/add/kernels called on them. No twin. In stream
// mode, the host-built instruction stream (runtime/rows-sequence.h) through the DMA interpreter,
// the cores running the design's core program (add_core_role).
#pragma once

#include "runtime/device.h"
#include "runtime/rows-sequence.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-stream.h"
#include "runtime/thread-pool.h"
#include "sim/timing-model.h"

#include <memory>
#include <vector>

namespace xdna {

bool add_has_kernel(const KernelKey & key);
ModelShape add_model_shape(const Invocation & inv);
Status sim_run_adds(const std::vector<Invocation> & invs, ThreadPool & pool);

// The add design's core program (aie/add/dataflow.json, core_program) at tile `tile`, on the kernels
// `add` and `mul` (the contract word's 0 and 1; the aie/add/kernels ones unless a test passes others):
// per chunk, acquire a, b and y, call the kernel on a, chunk `row` of the b object and y, release them.
using AddKernel = void (*)(const float * a, const float * b, float * y, int32_t n);
CoreRoleFactory add_core_roles(const DesignDescription & d, int tile, AddKernel add = nullptr, AddKernel mul = nullptr);

// SimExec::stream: every invocation's stream built and checked first (a shape the design cannot take
// refuses the submission before anything runs, `*refused` set), then each run on the add design as
// `contexts` keeps it loaded.
Status sim_run_adds_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused);

}  // namespace xdna
