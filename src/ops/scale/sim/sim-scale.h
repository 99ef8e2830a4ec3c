// The simulator's scale engine: each row chunk by chunk through aligned core buffers, as the scale
// design's cores take it (aie/scale), the core kernel code of aie/scale/kernels called on them. No twin.
// In stream mode, the host-built instruction stream (runtime/rows-sequence.h) through the DMA
// interpreter, the cores running the design's core program on the kernel code.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool scale_has_kernel(const KernelKey & key);
ModelShape scale_model_shape(const Invocation & inv);
Status sim_run_scales(const std::vector<Invocation> & invs, ThreadPool & pool);

// The scale design's core program at `tile` (aie/scale/dataflow.json core_program): per chunk, acquire x
// and y, one kernel call on them with n = tile, s and b the RTP words' fp32 bits and with_bias = b != 0,
// release them. `kernel` replaces the kernel code (tests break it on purpose); nullptr: scale_f32.
using ScaleKernel = void (*)(const float * x, float * y, int32_t n, float s, float b, int32_t with_bias);
CoreRoleFactory scale_core_roles(const DesignDescription & d, int tile, ScaleKernel kernel = nullptr);

// SimExec::stream: every stream built and every operand checked first (`*refused` when one is not the
// design's), then each run on the scale design as `contexts` keeps it loaded.
Status sim_run_scales_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused);

}  // namespace xdna
