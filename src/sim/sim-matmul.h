// Functional twin of the NPU matmul kernels: executes a MatmulInvocation tile by tile, exactly as the
// contract defines (docs/kernels.md), on the host CPU.
#pragma once

#include "device.h"
#include "thread-pool.h"

namespace xdna {

// Verify that ggml's CPU block-dot for every contract uses the contract's activation format;
// returns false (with the contract name in `why`) if a ggml change broke that assumption.
bool sim_matmul_self_check(std::string & why);

void sim_run_matmul(const MatmulInvocation & inv, ThreadPool & pool);

// Run several invocations as one parallel job over all their tiles (one "submission").
void sim_run_matmuls(const std::vector<MatmulInvocation> & invs, ThreadPool & pool);

}  // namespace xdna
