#include "sim/sim-host-executor.h"

#include "sim/sim-matmul.h"

namespace xdna {

namespace {

class SimHostExecutor final : public HostExecutor {
public:
    explicit SimHostExecutor(ThreadPool & pool) : pool_(pool) {}
    Status run(const Batch & batch) override { return sim_run_matmuls(batch.invocations, pool_, SimExec::twin); }

private:
    ThreadPool & pool_;
};

}  // namespace

std::unique_ptr<HostExecutor> make_sim_host_executor(ThreadPool & pool) {
    return std::make_unique<SimHostExecutor>(pool);
}

}  // namespace xdna
