// The simulator's HostExecutor: the contracts' functional twins (sim-matmul.h) on a host thread pool.
#pragma once

#include "runtime/host-executor.h"
#include "runtime/thread-pool.h"

#include <memory>

namespace xdna {

std::unique_ptr<HostExecutor> make_sim_host_executor(ThreadPool & pool);

}  // namespace xdna
