// The simulated XDNA2 device: host memory stands in for device memory, and each invocation is executed
// by its kind's engine (sim/sim-kinds.h): the kernel code, a bit-identical twin, or the instruction stream. Counts MACs and bytes per invocation, and reports the
// NPU time the timing model predicts for each (from the shapes only, not from the host's wall time).
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/fault-injector.h"
#include "sim/sim-matmul.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <memory>

namespace xdna {

class SimDevice final : public Device {
public:
    // The timing model uses the preset GGML_XDNA_PRESET / GGML_XDNA_MODEL_* select (npu-presets.h).
    explicit SimDevice(int n_threads);
    SimDevice(int n_threads, const NpuPreset & preset);
    ~SimDevice() override;

    const DeviceInfo & info() const override { return info_; }
    std::unique_ptr<DeviceBuffer> allocate(size_t bytes, BufferRole role) override;
    using Device::has_kernel;
    bool has_kernel(const KernelKey & key) const override;
    Status run(const Batch & batch, std::chrono::milliseconds timeout) override;
    const std::vector<InvocationStats> & last_stats() const override { return stats_; }
    BatchStats last_batch_stats() const override { return batch_stats_; }
    bool set_skip_kernels(bool skip) override {
        skip_kernels_ = skip;
        return true;
    }
    bool set_fail_runs(bool fail) override {
        fail_runs_ = fail;
        return true;
    }

    const TimingModel & timing_model() const { return model_; }
    const FaultInjector & faults() const { return faults_; }

    // What executes the tiles (GGML_XDNA_SIM_EXEC picks it at construction).
    void    set_exec(SimExec exec);
    SimExec exec() const { return exec_; }

private:
    DeviceInfo                   info_;
    ThreadPool                   pool_;
    TimingModel                  model_;
    std::vector<InvocationStats> stats_;
    BatchStats                   batch_stats_;
    std::vector<ModelShape>      shapes_;    // per-run scratch, kept to avoid allocating per submission
    ModelledBatch                modelled_;
    const MatmulContract *       last_contract_ = nullptr;  // contract switches across submissions
    std::vector<int>             token_tiles_;  // GGML_XDNA_SIM_TILES: widths offered (empty: all)
    bool                         skip_kernels_ = false;
    SimExec                      exec_ = SimExec::twin;
    bool                         fail_runs_ = false;
    FaultInjector                faults_;  // GGML_XDNA_SIM_FAULTS
    StreamContexts               loaded_designs_;  // stream mode: the xclbins as loaded, kept across submissions
};

}  // namespace xdna
