// The simulator's get_rows engine: the design has no core program, its DMAs move each selected row from
// src through a memory tile into y (aie/get_rows/dataflow.json). Kernels mode moves the same bytes
// directly; stream mode builds the run's stream from the ids in device memory (runtime/gather-sequence.h,
// as the XRT device does at submission) and runs it through the DMA interpreter. An id outside src fails
// the run before anything is written (the backend then computes the submission on the host).
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool get_rows_has_kernel(const KernelKey & key);
ModelShape get_rows_model_shape(const Invocation & inv);
Status sim_run_get_rows(const std::vector<Invocation> & invs, ThreadPool & pool);

// SimExec::stream: every stream built from the ids as they are now and every operand checked first
// (`*refused` when one is not the design's: nothing ran), then each run on the get_rows design as
// `contexts` keeps it loaded.
Status sim_run_get_rows_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused);

}  // namespace xdna
