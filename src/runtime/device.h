// Device-neutral NPU runtime interface.
//
// The ggml glue and the planner talk only to this interface; the simulator (src/sim) and the XRT
// device implement it, and the device factory (src/devices) opens them. The unit of work is a batch
// of kernel invocations submitted at once and waited on once (on XRT: one xrt::runlist), because each
// host/NPU round trip costs ~100 us.
#pragma once

#include "contracts/matmul-contract.h"

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

// What a buffer holds; XRT places weights and data differently (both host_only BOs today).
enum class BufferRole { weights, data };

// Device-visible memory that the host also maps.
class DeviceBuffer {
public:
    virtual ~DeviceBuffer() = default;
    virtual void * host_ptr() = 0;
    virtual size_t size() const = 0;
    // Make host writes in [offset, offset+size) visible to the device / device writes visible to the host.
    virtual void sync_to_device(size_t offset, size_t size) = 0;
    virtual void sync_from_device(size_t offset, size_t size) = 0;
};

struct BufferSlice {
    DeviceBuffer * buffer = nullptr;
    size_t         offset = 0;
    void *         host() const { return static_cast<char *>(buffer->host_ptr()) + offset; }
};

// One matmul contract call: out[n][m] = sum_k W[m][k] * A[n][k] for a whole (padded) matrix.
// W is in the packed weight layout (weight-layout.h), A in the activation layout (activation-layout.h:
// [n_tile][k_tile][tile]),
// out is fp32 with a row stride of `out_row_stride` floats; only the valid m < M, n < N are written.
struct MatmulInvocation {
    const MatmulContract * contract = nullptr;
    TileShape   tile{};
    BufferSlice weights;
    BufferSlice activations;
    BufferSlice out;
    int64_t     m = 0, n = 0;           // valid output rows (weights) and columns (tokens)
    int64_t     m_tiles = 0, n_tiles = 0, k_tiles = 0;
    size_t      weight_tile_bytes = 0;  // bytes of one packed W tile
    size_t      act_tile_bytes = 0;     // bytes of one activation tile (TN tokens x TK)
    int64_t     out_row_stride = 0;     // floats between consecutive tokens in out
    int32_t     expert = -1;            // MUL_MAT_ID: the expert of a weight stack whose slice `weights`
                                        // is (for accounting only); -1 for a plain matmul

    uint64_t macs() const { return static_cast<uint64_t>(m_tiles * tile.m) * (n_tiles * tile.n) * (k_tiles * tile.k); }
    uint64_t weight_bytes() const { return weight_tile_bytes * m_tiles * k_tiles; }
    uint64_t activation_bytes() const { return act_tile_bytes * n_tiles * k_tiles; }
    uint64_t out_bytes() const { return static_cast<uint64_t>(m) * n * sizeof(float); }
};

// What a kernel invocation runs. Every kind has its own payload and its own kernels; the Batch, the
// devices' submission path and the statistics are the same for all. MUL_MAT is the only kind so far;
// RMS norm, RoPE, attention and SwiGLU will be further kinds (and whole-layer kernels that chain them).
enum class KernelKind { matmul };
const char * kernel_kind_name(KernelKind kind);

// A region of device memory a kernel reads or writes, named by its role in the kernel's signature.
struct OperandRef {
    const char * role;   // "weights", "activations", "out", ...
    BufferSlice  slice;
    uint64_t     bytes;
    bool         written;
};

// One kernel call: its kind, the kernel it names, its operands; the kind's payload holds the rest.
struct Invocation {
    KernelKind       kind = KernelKind::matmul;
    MatmulInvocation matmul;  // kind == matmul

    static Invocation of(const MatmulInvocation & m) { return {KernelKind::matmul, m}; }

    // The kernel this invocation calls (a matmul's contract), nullptr if unresolved.
    const char * kernel_name() const;
    // Every device buffer it touches, in its kernel's argument order.
    std::vector<OperandRef> operands() const;
    uint64_t macs() const;
    uint64_t bytes_read() const;
    uint64_t bytes_written() const;
};

struct Batch {
    std::vector<Invocation> invocations;
    bool empty() const { return invocations.empty(); }
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
    double modelled_us = 0;         // modelled: submission + every invocation back to back
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

    // Whether a kernel for this contract and tile shape is available on this device.
    virtual bool has_kernel(const MatmulContract & contract, const TileShape & tile) const = 0;

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
