// The NPU through XRT: the runtime interface (device.h) on a real XDNA/XDNA2 device.
//
// - Memory: host_only BOs (xrt-buffer.h), allocated by the glue's buffer type, weights included.
// - Kernels: one per (contract, tile) a manifest design entry serves, loaded on first use (has_kernel
//   or run): the xclbin's shared hardware context (xrt-context-registry.h) and the xrt::kernel. A kernel
//   that fails to load is logged once and reported absent, so its ops stay on the CPU. The attention may
//   have one per layout of a key: an invocation runs on the one of its stream's layout, else on one that
//   holds its tasks (resolve_attention).
// - Instruction streams: built on the host for each problem shape (runtime/matmul-sequence.h), written
//   once into an instruction BO and kept with the kernel, so every later invocation of that shape (every
//   token of a plan) reuses it. One xclbin thus serves every M, K, N of its contracts.
// - Runs: one xrt::run per (kernel, position in the batch), reused across batches; each batch goes to the
//   NPU as one xrt::runlist per hardware context it touches, submitted together and waited on once.
#pragma once

#include "ops/flash_attn/flash-attn-sequence.h"
#include "runtime/device.h"
#include "runtime/invocation-args.h"
#include "runtime/kernel-manifest.h"
#include "runtime/matmul-sequence.h"
#include "runtime/npu-discovery.h"
#include "runtime/gather-sequence.h"
#include "runtime/quant-sequence.h"
#include "runtime/rows-sequence.h"
#include "runtime/rope-sequence.h"
#include "runtime/scatter-sequence.h"
#include "xrt/xrt-buffer.h"

#include <variant>
#include "xrt/xrt-context-registry.h"
#include "xrt/xrt-headers.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace xdna {

// The shape a described design's stream is built from (runtime/rows-sequence.h, gather-sequence.h,
// quant-sequence.h, scatter-sequence.h, rope-sequence.h, ops/flash_attn/flash-attn-sequence.h).
using DescribedShape = std::variant<RowsShape, GatherShape, QuantShape, ScatterShape, RopeShape, AttentionShape>;

class XrtDevice final : public Device {
public:
    // `manifest` holds the kernels for `npu`'s generation (load_installed_kernels).
    XrtDevice(const NpuInfo & npu, std::shared_ptr<xrt::device> device, Manifest manifest);
    ~XrtDevice() override;

    const DeviceInfo &            info() const override { return info_; }
    std::unique_ptr<DeviceBuffer> allocate(size_t bytes, BufferRole role) override;
    using Device::has_kernel;
    bool                          has_kernel(const KernelKey & key) const override;
    bool                          has_kernel_in_layout(const KernelKey & key, const std::string & layout) const override;
    Status                        run(const Batch & batch, std::chrono::milliseconds timeout) override;
    const std::vector<InvocationStats> & last_stats() const override { return stats_; }

private:
    // A reusable run of one kernel, with its own params BO.
    struct RunSlot {
        xrt::run             run;
        xrt::bo              params;
        xrt::bo              out_stage;  // every output drains here; copied into place after the run
        xrt::bo              host_in;    // a host-written operand (the rope's angle rows), written at submission
        ParamWords           params_held{};  // what `params` holds on the device
        bool                 params_valid = false;
        std::vector<xrt::bo> operands;       // sub-BOs of the current submission, released after it
    };

    enum class LoadState { untried, ready, failed };

    // The instruction stream of one problem shape, in its instruction BO.
    struct ShapeStream {
        MatmulSequenceShape                   shape;
        std::shared_ptr<const MatmulSequence> seq;
        DescribedShape                        described;  // a described design's (seq null)
        std::shared_ptr<const RowsSequence>   rows_seq;
        std::vector<ArgumentPlace>            places;     // the attention's: its operands' arguments
        xrt::bo                               bo;
        const std::vector<uint32_t> & words() const { return seq ? seq->words : rows_seq->words; }
    };

    struct LoadedKernel {
        const KernelEntry *                   entry = nullptr;
        LoadState                             state = LoadState::untried;
        std::shared_ptr<SharedContext>        ctx;
        xrt::kernel                           kernel;
        std::vector<std::unique_ptr<ShapeStream>> streams;  // built on first use of each shape
        std::vector<std::unique_ptr<RunSlot>> slots;
    };

    // A runlist per hardware context, reused across batches (reset after each).
    struct ContextRunlist {
        std::unique_ptr<xrt::runlist> list;
        bool                          executing = false;  // executed and not yet successfully waited on
    };

    // The loaded kernel of `key` (loaded on first use), or nullptr when none loads. Without a layout the
    // first entry of the key that loads; with one, only an entry built in that layout (the attention's).
    LoadedKernel * kernel_for(const KernelKey & key) const;
    LoadedKernel * kernel_for(const KernelKey & key, const std::string & layout) const;
    LoadedKernel * ready(const KernelEntry * e) const;
    void           load(LoadedKernel & lk) const;
    bool           load_xclbin(const std::string & path, xrt::xclbin & out, std::string & err) const;
    void           fail_kernel(LoadedKernel & lk, const std::string & why) const;
    void           fail_xclbin(const std::string & path, const std::string & why) const;
    RunSlot &      slot(LoadedKernel & lk, size_t i);
    // The stream of `shape` for `lk`, built and uploaded on first use; nullptr with `err` if refused.
    const ShapeStream * stream_for(LoadedKernel & lk, const MatmulSequenceShape & shape, std::string & err);
    // The stream of another described design's shape (a gather's holds the run's ids, so its streams are
    // kept per set of ids: a decode's output row is the same every token).
    const ShapeStream * described_stream_for(LoadedKernel & lk, const DesignDescription & d, const DescribedShape & shape,
                                             std::string & err);
    // The attention's stream with its operands placed (its words depend on where they live), kept per
    // shape and placing; its unplaced stream built once per shape.
    const ShapeStream * placed_stream_for(LoadedKernel & lk, const AttentionShape & shape, const AttentionSequence & seq,
                                          const AttentionArguments & placed, std::string & err);
    std::shared_ptr<const AttentionSequence> attention_sequence(const DesignDescription & d, const AttentionShape & shape);
    // Uploads a built stream into its instruction BO and keeps it with `lk`; nullptr with `err` if that fails.
    const ShapeStream * keep_stream(LoadedKernel & lk, std::unique_ptr<ShapeStream> st, std::string & err);

    // A submission goes through four steps; each fails the batch with the reason, and what it took is
    // released (drain runs after every step that set operands):
    //   resolve  each invocation to a loaded kernel, its stream, its arguments and parameter words, by
    //            its kind (resolve_matmul) or its design's movement (resolve_rows); touches no run;
    //   bind     each to a reusable run of its kernel: operands as sub-buffers, outputs through the
    //            run's staging BO, the parameter words synced when they changed; runs grouped per
    //            hardware context;
    //   execute  per stage: one runlist per context, all submitted before any wait; the next stage
    //            only when every run of this one completed; one deadline for the batch;
    //   drain    runlists reset, operands released, the outputs copied into place.
    struct Resolved {
        LoadedKernel *        lk = nullptr;
        const ShapeStream *   stream = nullptr;
        std::vector<ArgValue> args;
        ParamWords            params{};
        std::string           label;
        int64_t               m = 0, n = 0, out_row_stride = 0, stage_stride = 0;  // the output's valid part
        size_t                rows_out = SIZE_MAX;  // a rows design's written operand: its argument position
        // A scatter's written operand (the KV cache): bound in place, its position (scatter-sequence.h).
        size_t                direct_out = SIZE_MAX;
        // A host-written operand's argument position and its bytes (DesignDescription::host_written).
        size_t                host_in = SIZE_MAX;
        std::vector<uint8_t>  host_bytes;
        size_t                host_capacity = 0;  // the host-written buffer's bytes (the attention's: slopes, then scratch)
        std::vector<size_t>   spare;              // buffer arguments the invocation does not need: bound to that buffer
    };
    struct Pending {
        RunSlot *   slot;
        XrtBuffer * out;
        size_t      out_offset, out_bytes;
        std::string label;
        // Output drained into the slot's staging BO: the valid m x n part is copied out after the run.
        bool        staged = false;
        int64_t     m = 0, n = 0, out_row_stride = 0, stage_stride = 0;
    };
    // The runs of one stage, per hardware context (a runlist holds runs of one).
    struct StageRuns {
        std::vector<SharedContext *>                      order;  // contexts in first-use order
        std::map<SharedContext *, std::vector<RunSlot *>> groups;
    };
    struct Submission {
        std::vector<Resolved>         resolved;  // in submission order
        std::vector<Pending>          pending;   // bound runs, in submission order
        std::vector<StageRuns>        stages;    // the batch's stages, in order
        std::vector<SharedContext *>  contexts;  // every context the submission uses
        std::vector<ContextRunlist *> executed;  // executed and not yet waited on
        bool                          timed_out = false;
    };
    Status submit(const Batch & batch, std::chrono::milliseconds timeout);
    Status resolve(const Batch & batch, Submission & sub);
    Status resolve_matmul(const Invocation & inv, size_t i, size_t n, Resolved & r);
    Status resolve_rows(const Invocation & inv, const DesignDescription & d, size_t i, size_t n, Resolved & r);
    // The attention's (ops/flash_attn/flash-attn-sequence.h): its 7 operands placed in the kernel's 5
    // buffer arguments by the buffers they live in, the slopes and the scratch in the slot's own buffer.
    Status resolve_attention(const Invocation & inv, const DesignDescription & d, size_t i, size_t n, Resolved & r);
    Status bind(const Batch & batch, Submission & sub);
    Status execute(Submission & sub, std::chrono::milliseconds timeout);
    Status drain(Submission & sub, const Batch & batch, Status result);
    void   release_operands(Submission & sub);

    DeviceInfo                   info_;
    NpuGeneration                generation_;
    std::string                  pci_address_;
    std::shared_ptr<xrt::device> device_;
    Manifest                     manifest_;
    std::vector<InvocationStats> stats_;
    std::string                  disabled_;  // set after a timeout: every later run fails with this

    mutable std::mutex                                 mutex_;  // kernels_, xclbins_, runlists_
    mutable std::vector<LoadedKernel>                  kernels_;  // parallel to manifest_.kernels
    std::vector<std::pair<AttentionShape, std::shared_ptr<const AttentionSequence>>> attention_seqs_;  // the last 64 shapes
    mutable std::map<std::string, xrt::xclbin>         xclbins_;  // by path, loaded once
    std::map<SharedContext *, ContextRunlist>          runlists_;
};

}  // namespace xdna
