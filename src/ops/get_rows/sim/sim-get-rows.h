// The simulator's get_rows engine: the design has no core program, its DMAs move each selected row from
// src through a memory tile into y, one BD task per row with the row's address from its id (a runtime
// word). The engine moves the same bytes; ids are read from device memory at run time, and an id outside
// src fails the run before anything is written (the backend then computes the submission on the host).
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool get_rows_has_kernel(const KernelKey & key);
ModelShape get_rows_model_shape(const Invocation & inv);
Status sim_run_get_rows(const std::vector<Invocation> & invs, ThreadPool & pool);

}  // namespace xdna
