// The simulator's rms_norm engine: runs each row as the rms_norm design's core does (aie/rms_norm):
// the row's chunks copied into aligned core buffers as the DMA delivers them, the core kernel code of
// aie/rms_norm/kernels (compiled for the host against the simulator's aie_api) called on them, the
// scaled chunks copied back out. No twin: the kernel code is fast enough for llama.cpp's row counts.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

// Whether the simulator has the key's program (the rms_norm design's two variants).
bool rms_norm_has_kernel(const KernelKey & key);

// The timing model's shape: the busiest core's kernel calls (their op counts measured from the kernel
// code once per process) and the bytes the design moves (aie/rms_norm/README.md).
ModelShape rms_norm_model_shape(const Invocation & inv);

// Execute rms_norm invocations (every row of every invocation as one parallel job). An error when a
// kernel returned with other rounding or saturation modes than it found.
Status sim_run_rms_norms(const std::vector<Invocation> & invs, ThreadPool & pool);

}  // namespace xdna
