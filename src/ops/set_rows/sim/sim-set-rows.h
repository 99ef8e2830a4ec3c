// The simulator's set_rows engine: each row chunk by chunk through aligned core buffers, the core
// kernel code of aie/set_rows/kernels converting it, and the converted row written at its id's row (the
// design's output DMA, its offset a runtime word). Ids are read from device memory at run time; an id
// outside the destination's rows fails the run before any row is written (never past the cache).
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool set_rows_has_kernel(const KernelKey & key);
ModelShape set_rows_model_shape(const Invocation & inv);
Status sim_run_set_rows(const std::vector<Invocation> & invs, ThreadPool & pool);
// A failed run's leftovers: all-ones bytes in the rows its ids name (valid ones), the only rows its DMA writes.
void set_rows_poison(const Invocation & inv);

// SimExec::stream: each invocation's stream (runtime/scatter-sequence.h, built from its ids when it runs)
// through the DMA interpreter, the cores running the design's core program; `*refused` set when a stream
// cannot be built (nothing ran).
Status sim_run_set_rows_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused);

}  // namespace xdna
