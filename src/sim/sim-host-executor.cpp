#include "sim/sim-host-executor.h"

#include "sim/sim-kinds.h"

namespace xdna {

namespace {

class SimHostExecutor final : public HostExecutor {
public:
    explicit SimHostExecutor(ThreadPool & pool) : pool_(pool) {}
    // Each kind's engine with its twins (the kernel code where a kind has none): the contracts' own
    // arithmetic, bit for bit.
    Status run(const Batch & batch) override {
        return sim_run_stages(batch, pool_, SimExec::twin, nullptr, {}, nullptr);
    }

private:
    ThreadPool & pool_;
};

}  // namespace

std::unique_ptr<HostExecutor> make_sim_host_executor(ThreadPool & pool) {
    return std::make_unique<SimHostExecutor>(pool);
}

}  // namespace xdna
