// The simulator's row_scale engine: each row chunk by chunk through aligned core buffers, as the
// row_scale design's cores take it (aie/row_scale), the core kernel code of aie/row_scale/kernels
// called on them with the row's value. No twin. In stream mode, the host-built instruction stream
// (runtime/rows-sequence.h) through the DMA interpreter, the cores running the design's core program on
// the kernel code.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool row_scale_has_kernel(const KernelKey & key);
ModelShape row_scale_model_shape(const Invocation & inv);
Status sim_run_row_scales(const std::vector<Invocation> & invs, ThreadPool & pool);

// The row_scale design's core program at `tile` (aie/row_scale/dataflow.json core_program): per row,
// acquire w; per chunk of the row's segment, acquire x and y, one kernel call on them with n = tile and
// the row's value, release them; release w. `kernel` replaces the kernel code (tests break it on
// purpose); nullptr: row_scale_f32.
using RowScaleKernel = void (*)(const float * x, float * y, int32_t n, float w);
CoreRoleFactory row_scale_core_roles(const DesignDescription & d, int tile, RowScaleKernel kernel = nullptr);

// SimExec::stream: every stream built and every operand checked first (`*refused` when one is not the
// design's), then each run on the row_scale design as `contexts` keeps it loaded.
Status sim_run_row_scales_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused);

}  // namespace xdna
