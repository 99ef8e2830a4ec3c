// The simulator's rope engine: each head row through aligned core buffers with its token's row of the
// angle table, as the rope design's core takes them (aie/rope), the core kernel code of
// aie/rope/kernels called on them. No twin. The positions are read from device memory at run time, as
// the design's runtime words are; a position outside the table's range fails the run (the backend then
// computes the submission on the host).
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool rope_has_kernel(const KernelKey & key);
ModelShape rope_model_shape(const Invocation & inv);
Status sim_run_ropes(const std::vector<Invocation> & invs, ThreadPool & pool);

// SimExec::stream: each invocation's stream (runtime/rope-sequence.h) through the DMA interpreter, the
// cores running the design's core program, its angle rows written by the host at submission (the cs
// operand); `*refused` set when a stream or an angle row cannot be made (nothing ran).
Status sim_run_ropes_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused);

}  // namespace xdna
