// The simulator's act_quant engine: each activation tile as the act_quant design's core makes it
// (aie/act_quant): four tokens' 256 values at a time copied into an aligned core buffer (rows past the
// valid ones as zeros), the core kernel code of aie/act_quant/kernels called on them, the finished tile
// copied out; with SimExec::twin their bit-identical twins (sim/twins/act-quant-twin.h).
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/sim-matmul.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool act_quant_has_kernel(const KernelKey & key);
ModelShape act_quant_model_shape(const Invocation & inv);
Status sim_run_act_quants(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec = SimExec::kernels);

}  // namespace xdna
