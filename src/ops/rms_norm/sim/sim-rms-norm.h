// The simulator's rms_norm engine: runs each row as the rms_norm design's core does (aie/rms_norm):
// the row's chunks copied into aligned core buffers as the DMA delivers them, the core kernel code of
// aie/rms_norm/kernels (compiled for the host against the simulator's aie_api) called on them, the
// scaled chunks copied back out. No twin: the kernel code is fast enough for llama.cpp's row counts. In
// stream mode, the host-built instruction stream (runtime/norm-sequence.h) through the DMA interpreter,
// the core running the design's core program (rms_norm_core_roles).
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <cstdint>
#include <vector>

namespace xdna {

// Whether the simulator has the key's program (the rms_norm design's variants: with and without the
// weight, and with the weight and the a8 quantization of its one row, kernels and twin modes only).
bool rms_norm_has_kernel(const KernelKey & key);
// Whether stream mode has it: not the quantizing programs, whose data movement (a tiles output beside
// y) is not described yet.
bool rms_norm_has_stream(const KernelKey & key);

// The timing model's shape: the busiest core's kernel calls (their op counts measured from the kernel
// code once per process) and the bytes the design moves (aie/rms_norm/README.md).
ModelShape rms_norm_model_shape(const Invocation & inv);

// Execute rms_norm invocations (every row of every invocation as one parallel job). An error when a
// kernel returned with other rounding or saturation modes than it found. A quantizing program then
// makes the row's activation tiles as the core would: per 256 values of y, the tile's 4 tokens' values
// in core memory (y's, then three rows of zeros) and one call of aie/act_quant's program on them.
Status sim_run_rms_norms(const std::vector<Invocation> & invs, ThreadPool & pool);

// The design's core program (aie/rms_norm/dataflow.json, core_program) at tile `tile`: per row, pass 1
// acquires each x chunk and sums its squares, the scale call, pass 2 acquires each x chunk (the weight's
// too with the weight) and a y chunk and scales. `kernels` replaces the aie/rms_norm/kernels entry
// points (a test breaking one on purpose); nullptr members keep them.
struct RmsNormKernels {
    void (*sumsq)(const float * x, float * partial, int32_t n) = nullptr;
    void (*scale)(float * partial, float * scale, float inv_cols, float eps) = nullptr;
    void (*apply_mul)(const float * x, const float * w, const float * scale, float * y, int32_t n) = nullptr;
    void (*apply)(const float * x, const float * scale, float * y, int32_t n) = nullptr;
};
CoreRoleFactory rms_norm_core_roles(const DesignDescription & d, int tile, RmsNormKernels kernels = {});

// SimExec::stream: every invocation's stream built and checked first (a shape the design cannot take
// refuses the submission before anything runs, `*refused` set), then each run on the design as
// `contexts` keeps it loaded (sim/rows-stream.h).
Status sim_run_rms_norms_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused);

}  // namespace xdna
