// The simulator's hadamard engine: each row through aligned core buffers, as the hadamard design's cores
// take it (aie/hadamard: one row per chunk), the core kernel code of aie/hadamard/kernels called on it.
// No twin. In stream mode, the host-built instruction stream (runtime/rows-sequence.h) through the DMA
// interpreter, the cores running the design's core program on the kernel code.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool hadamard_has_kernel(const KernelKey & key);
ModelShape hadamard_model_shape(const Invocation & inv);
Status sim_run_hadamards(const std::vector<Invocation> & invs, ThreadPool & pool);

// The hadamard design's core program at `tile` (aie/hadamard/dataflow.json core_program): per chunk,
// acquire x and y, one kernel call on them with rows = 1, n = tile and scale the RTP word's fp32 bits,
// release them. `kernel` replaces the kernel code (tests break it on purpose); nullptr: fwht_f32.
using HadamardKernel = void (*)(const float * x, float * y, int32_t rows, int32_t n, float scale);
CoreRoleFactory hadamard_core_roles(const DesignDescription & d, int tile, HadamardKernel kernel = nullptr);

// SimExec::stream: every stream built and every operand checked first (`*refused` when one is not the
// design's), then each run on the hadamard design as `contexts` keeps it loaded.
Status sim_run_hadamards_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused);

}  // namespace xdna
