// The simulated XDNA2 device: host memory stands in for device memory, and every kernel contract is
// executed by its functional twin on the CPU. Counts MACs and bytes per invocation.
#pragma once

#include "device.h"
#include "thread-pool.h"

#include <memory>

namespace xdna {

class SimDevice final : public Device {
public:
    explicit SimDevice(int n_threads);

    const DeviceInfo & info() const override { return info_; }
    std::unique_ptr<DeviceBuffer> allocate(size_t bytes, BufferRole role) override;
    bool has_kernel(const MatmulContract & contract, const TileShape & tile) const override;
    Status run(const Batch & batch, std::chrono::milliseconds timeout) override;
    const std::vector<InvocationStats> & last_stats() const override { return stats_; }

private:
    DeviceInfo                   info_;
    ThreadPool                   pool_;
    std::vector<InvocationStats> stats_;
};

}  // namespace xdna
