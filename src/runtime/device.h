// Device-neutral NPU runtime interface.
//
// The ggml glue and the planner talk only to this interface; the simulator (src/sim) and the XRT
// device implement it, and the device factory (src/devices) opens them. The unit of work is a batch
// of kernel invocations submitted at once and waited on once (on XRT: one xrt::runlist), because each
// host/NPU round trip costs ~100 us.
#pragma once

#include "runtime/device-buffer.h"
#include "runtime/invocation.h"
#include "runtime/matmul-invocation.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xdna {

struct DeviceInfo {
    std::string name;         // short, e.g. "XDNA0"
    std::string description;  // e.g. "XDNA2 simulator, 8x4 tiles"
    int         columns = 0;  // AIE array columns
    int         rows = 0;     // compute rows per column
    bool        simulated = false;
};

// A batch of invocations submitted at once and waited on once, in ordered stages. The invocations of one
// stage are independent: none reads what another writes, so a device may run them in any order or at
// once. A stage may read what earlier stages wrote: a device starts a stage only when every invocation
// of the stages before it is complete (on an NPU: an NPU -> NPU dependency inside one submission, with
// no round trip to the host). Without stage marks the whole batch is one stage.
struct Batch {
    std::vector<Invocation> invocations;
    // End (exclusive) of each stage but the last, ascending; the last stage ends at invocations.size().
    std::vector<uint32_t>   stage_ends;

    bool empty() const { return invocations.empty(); }
    // Close the current stage: invocations added from now on may read what it writes.
    void end_stage() {
        const auto n = static_cast<uint32_t>(invocations.size());
        if (n > 0 && (stage_ends.empty() || stage_ends.back() < n)) {
            stage_ends.push_back(n);
        }
    }
    size_t stages() const {
        const size_t marks = stage_ends.size();
        return marks > 0 && stage_ends.back() >= invocations.size() ? marks : marks + 1;
    }
    // Invocations [first, last) of stage s.
    size_t stage_begin(size_t s) const { return s == 0 ? 0 : stage_ends[s - 1]; }
    size_t stage_end(size_t s) const { return s < stage_ends.size() ? stage_ends[s] : invocations.size(); }
    // Stage marks inside the batch, ascending: what a device checks before it runs the batch.
    bool stages_valid() const {
        for (size_t i = 0; i < stage_ends.size(); ++i) {
            if (stage_ends[i] == 0 || stage_ends[i] > invocations.size() || (i > 0 && stage_ends[i] <= stage_ends[i - 1])) {
                return false;
            }
        }
        return true;
    }
};

// Per-invocation accounting that every device reports (the sim counts, XRT measures).
struct InvocationStats {
    uint64_t macs = 0;
    uint64_t bytes_read = 0;
    uint64_t bytes_written = 0;
    // Timing model (src/sim/timing-model.h): predicted NPU time, never measured. 0 from devices that
    // have no model. total = max(compute, dram) + dispatch, where dispatch is this invocation's share
    // (its argument setup); the submission's cost is in BatchStats.
    double modelled_compute_us = 0;
    double modelled_dram_us = 0;
    double modelled_dispatch_us = 0;
    double modelled_us = 0;
    double modelled_roofline_us = 0;  // max(useful MACs at peak, bytes once at full bandwidth)
};

// Accounting for the last run as a whole.
struct BatchStats {
    double modelled_submit_us = 0;  // modelled cost of the one submission
    double modelled_us = 0;         // modelled: submission + every invocation back to back + the switches
    // Modelled: changes of program between consecutive invocations (another xclbin, or another matmul
    // contract or layout: each a switch on an NPU), counted from the program the device ran last, and their
    // cost (in modelled_us).
    uint64_t modelled_switches = 0;
    double   modelled_switch_us = 0;
};

struct Status {
    bool        ok = true;
    std::string message;
    static Status success() { return {}; }
    static Status error(std::string msg) { return {false, std::move(msg)}; }
};

class Device {
public:
    virtual ~Device() = default;
    virtual const DeviceInfo & info() const = 0;

    // Allocate device-visible, host-mapped memory. Returns nullptr when out of memory.
    virtual std::unique_ptr<DeviceBuffer> allocate(size_t bytes, BufferRole role) = 0;

    // Whether this device has the kernel the key names (its design, variant and tile shape).
    virtual bool has_kernel(const KernelKey & key) const = 0;
    // The same, built in the design layout `layout` (a design of several layouts, aie/flash_attn: each
    // xclbin moves the objects of one). A device that builds the stream of any layout it is asked for
    // (the simulator) has a kernel in every layout.
    virtual bool has_kernel_in_layout(const KernelKey & key, const std::string & layout) const {
        (void) layout;
        return has_kernel(key);
    }
    // The same for the matmul kernel of a contract at a tile shape.
    bool has_kernel(const MatmulContract & contract, const TileShape & tile) const {
        return has_kernel(matmul_key(contract, tile));
    }

    // Run every invocation of the batch; returns when all are done, the timeout passed, or one failed.
    // The host must have synced the inputs; outputs are synced back before return.
    virtual Status run(const Batch & batch, std::chrono::milliseconds timeout) = 0;

    // Statistics of the invocations of the last run, in submission order.
    virtual const std::vector<InvocationStats> & last_stats() const = 0;

    // Statistics of the last run as a whole (all zero from a device without a timing model).
    virtual BatchStats last_batch_stats() const { return {}; }

    // Benchmark only (xdna-bench measures host overhead with it): skip kernel execution, so outputs are
    // left unwritten. Returns false on devices that cannot skip.
    virtual bool set_skip_kernels(bool) { return false; }

    // Tests only: make every run fail as a device error would, to exercise the callers' fallback.
    virtual bool set_fail_runs(bool) { return false; }
};

}  // namespace xdna
