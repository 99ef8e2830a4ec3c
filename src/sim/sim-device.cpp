#include "sim/sim-device.h"

#include "sim/sim-kinds.h"
#include "runtime/options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace xdna {

namespace {

// Page-aligned host memory, as XRT's host_only buffer objects are. Large buffers (the packed
// weights) are aligned to 2 MiB and offered to the kernel as transparent huge pages: the simulator
// streams every weight byte per token, and with 4 KiB pages a TLB miss every 4 KiB slowed that
// stream (measured: decode matmuls streaming from DRAM, 9 -> 11 GB/s).
class SimBuffer final : public DeviceBuffer {
public:
    static constexpr size_t kAlign = 4096;
    static constexpr size_t kHugeAlign = size_t(2) << 20;
    static constexpr size_t kHugeFrom = size_t(16) << 20;  // rounding up wastes < 1/8 of these

    explicit SimBuffer(size_t bytes) : size_(bytes) {
        const size_t align = bytes >= kHugeFrom ? kHugeAlign : kAlign;
        const size_t rounded = (bytes + align - 1) / align * align;
        data_ = std::aligned_alloc(align, rounded == 0 ? align : rounded);
#ifdef MADV_HUGEPAGE
        if (data_ != nullptr && align == kHugeAlign) {
            madvise(data_, rounded, MADV_HUGEPAGE);  // a hint: without it (or if refused) 4 KiB pages
        }
#endif
    }
    ~SimBuffer() override { std::free(data_); }

    bool   valid() const { return data_ != nullptr; }
    void * host_ptr() override { return data_; }
    size_t size() const override { return size_; }
    void   sync_to_device(size_t, size_t) override {}    // one coherent memory
    void   sync_from_device(size_t, size_t) override {}

private:
    void * data_ = nullptr;
    size_t size_ = 0;
};

NpuPreset preset_or_default() {
    NpuPreset p;
    std::string error;
    if (!preset_from_env(p, error)) {
        std::fprintf(stderr, "xdna: timing model: %s (ignored)\n", error.c_str());
    }
    return p;
}

SimFaults faults_or_none() {
    const OptionValue<SimFaults> f = sim_faults_option();
    report_option_error(f.error);
    return f.value;
}

// What a run that failed part-way may leave in its outputs: poison every written operand, so a caller
// that used them anyway (instead of recomputing) sees NaN instead of plausible numbers (all-ones bytes
// are a NaN in fp32, fp16 and bf16 alike).
void poison_outputs(const Batch & batch) {
    // Scatters first: they read their ids to know which rows they write.
    for (const Invocation & i : batch.invocations) {
        const SimKindEngine * e = sim_kind_engine(i.kind());
        if (e != nullptr && e->poison != nullptr) e->poison(i);
    }
    for (const Invocation & i : batch.invocations) {
        const SimKindEngine * e = sim_kind_engine(i.kind());
        if (e != nullptr && e->poison != nullptr) continue;
        for (const Operand & o : i.operands()) {
            if (!o.written() || o.slice.buffer == nullptr) {
                continue;
            }
            auto * base = static_cast<unsigned char *>(o.slice.host());
            for (int64_t r = 0; r < o.rows; ++r) {
                std::memset(base + r * o.row_stride, 0xff, o.row_bytes);
            }
        }
    }
}

}  // namespace

SimDevice::SimDevice(int n_threads) : SimDevice(n_threads, preset_or_default()) {}

SimDevice::SimDevice(int n_threads, const NpuPreset & preset)
    : pool_(n_threads), model_(preset), faults_(faults_or_none()) {
    info_.name = "XDNA0";
    const OptionValue<std::string> exec = sim_exec_option();
    report_option_error(exec.error);
    parse_sim_exec(exec.value.c_str(), exec_);
    set_exec(exec_);
    info_.columns = 8;
    info_.rows = 4;
    info_.simulated = true;
    const OptionValue<std::vector<int>> tiles = sim_tiles_option();
    report_option_error(tiles.error);
    token_tiles_ = tiles.value;
}

SimDevice::~SimDevice() {
    if (faults_.active()) {
        std::fprintf(stderr, "xdna: simulator: GGML_XDNA_SIM_FAULTS injected %llu faults in %llu submissions "
                             "(%llu submission errors, %llu timeouts)\n",
                     static_cast<unsigned long long>(faults_.injected()),
                     static_cast<unsigned long long>(faults_.submissions()),
                     static_cast<unsigned long long>(faults_.errors()), static_cast<unsigned long long>(faults_.timeouts()));
    }
}

void SimDevice::set_exec(SimExec exec) {
    exec_ = exec;
    // The description says what runs, so a user and a log can tell.
    info_.description =
        exec == SimExec::kernels  ? "XDNA2 simulator, 8x4 tiles, executing the kernel code"
        : exec == SimExec::stream ? "XDNA2 simulator, 8x4 tiles, executing the instruction streams (DMA interpreter) and the kernel code"
                                  : "XDNA2 simulator, 8x4 tiles, executing bit-identical twins of the kernel code";
}

std::unique_ptr<DeviceBuffer> SimDevice::allocate(size_t bytes, BufferRole) {
    auto buf = std::make_unique<SimBuffer>(bytes);
    if (!buf->valid()) {
        return nullptr;
    }
    return buf;
}

bool SimDevice::has_kernel(const KernelKey & key) const {
    // The simulator has every kernel its kinds' engines implement, at every tile shape they allow, unless
    // GGML_XDNA_SIM_TILES narrows the token widths (to behave like an NPU with fewer kernels installed).
    const SimKindEngine * e = sim_kind_engine(key.kind);
    return e != nullptr && e->has_kernel(key) && (exec_ != SimExec::stream || e->has_stream == nullptr || e->has_stream(key)) &&
           (token_tiles_.empty() || std::find(token_tiles_.begin(), token_tiles_.end(), key.tile.n) != token_tiles_.end());
}

Status SimDevice::run(const Batch & batch, std::chrono::milliseconds) {
    if (fail_runs_) {
        return Status::error("injected device fault (test switch)");
    }
    if (!batch.stages_valid()) {
        return Status::error("the batch's stage marks are not ascending within it");
    }
    if (!batch.empty()) {
        switch (faults_.draw()) {
            case InjectedFault::none:
                break;
            case InjectedFault::submission_error:
                poison_outputs(batch);
                return Status::error("injected submission error (GGML_XDNA_SIM_FAULTS)");
            case InjectedFault::timeout:
                // Nothing ran; the simulator runs synchronously, so nothing can complete late either.
                return Status::error("injected timeout (GGML_XDNA_SIM_FAULTS)");
        }
    }
    stats_.clear();
    batch_stats_ = {};
    shapes_.clear();
    for (const Invocation & i : batch.invocations) {
        const SimKindEngine * e = sim_kind_engine(i.kind());
        if (e == nullptr) {
            return Status::error(std::string("no simulated kernel of kind ") + kernel_kind_name(i.kind()));
        }
        if (!has_kernel(i.key)) {
            return Status::error(std::string("no simulated kernel ") + (i.kernel_name() ? i.kernel_name() : "?") +
                                 " at this tile shape");
        }
        stats_.push_back({i.macs(), i.bytes_read(), i.bytes_written()});
        shapes_.push_back(e->model_shape(i));
    }
    model_.batch(shapes_, modelled_, &last_contract_);
    const ModelledBatch & modelled = modelled_;
    for (size_t i = 0; i < stats_.size(); ++i) {
        const ModelledTime & t = modelled.invocations[i];
        stats_[i].modelled_compute_us = t.compute_us;
        stats_[i].modelled_dram_us = t.dram_us;
        stats_[i].modelled_dispatch_us = t.dispatch_us;
        stats_[i].modelled_us = t.total_us;
        stats_[i].modelled_roofline_us = t.roofline_us;
    }
    batch_stats_.modelled_submit_us = modelled.submit_us;
    batch_stats_.modelled_us = modelled.total_us;
    batch_stats_.modelled_switches = modelled.contract_switches;
    batch_stats_.modelled_switch_us = modelled.switch_us;
    if (!skip_kernels_) {
        bool refused = false;  // refused before anything ran: the outputs are as they were
        Status st;
        std::vector<const char *> layouts;
        if (exec_ == SimExec::stream) {
            // Each invocation in the layout (xclbin) the timing model found fastest for its shape.
            for (const ModelledTime & t : modelled.invocations) {
                layouts.push_back(t.layout);
            }
        }
        st = sim_run_stages(batch, pool_, exec_, &loaded_designs_, layouts, &refused);
        if (!st.ok && !refused) {
            poison_outputs(batch);  // what a failed run leaves is not the NPU's result
        }
        return st;
    }
    return Status::success();
}

}  // namespace xdna
