// The simulator's rope engine: each head row through aligned core buffers with its token's row of the
// angle table, as the rope design's core takes them (aie/rope), the core kernel code of
// aie/rope/kernels called on them. No twin. The positions are read from device memory at run time, as
// the design's runtime words are; a position outside the table's range fails the run (the backend then
// computes the submission on the host).
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool rope_has_kernel(const KernelKey & key);
ModelShape rope_model_shape(const Invocation & inv);
Status sim_run_ropes(const std::vector<Invocation> & invs, ThreadPool & pool);

}  // namespace xdna
