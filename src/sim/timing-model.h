// Analytical timing model of XDNA2 matmul kernels: what an invocation would take on the NPU.
//
// The simulator computes results, not time; this model predicts time from the invocation's shape
// alone (never from the simulator's wall time). Every figure it produces is MODELLED, and printed
// figures must say so. docs/performance-model.md derives it and compares it with published results.
//
// Per invocation of a contract (the project's design, aie/matmul):
//   compute = the busiest core's output tiles x tile time: the cores' work as the instruction stream
//             the runtime builds for the shape gives it (design-traffic.h: row tiles in groups of 4,
//             padded, over the columns; a batch-1 GEMV of 16 row tiles keeps 16 of 32 cores busy), a
//             tile taking the cycles of its kernel calls (kernel-cycles.h: the busiest VLIW slot of the
//             operations the contract's kernel code issues, plus loop overhead; one call per K tile and
//             one C-tile clear), divided by the efficiency of the tier (npu-presets.h);
//   dram    = max(traffic / sustained bandwidth, busiest shim channel's bytes / 8 bytes per cycle),
//             where traffic is what that stream's BDs move (W windows of the family's W object, so its
//             over-fetch; A and whole C tiles; W re-read per token tile): the figures design.py
//             --print-plan prints for the shape, checked equal by tests/timing/check-traffic.sh;
//   total   = max(compute, dram) + per-invocation argument cost: tiles are double-buffered, so DMA
//             and compute overlap inside an invocation; argument setup does not overlap anything.
// Published kernels (gemm_shape, calibration points) have no stream here: their waves spread the
// output tiles over the cores, and their traffic re-reads weights once per block of tokens and
// activations once per block of weight rows that the memory tiles can stage (output-stationary
// blocking, NpuPreset::c_stage_kb), with the weights through the used columns' shim ingress.
// Per submission: one submission cost + its invocations back to back (the array runs one at a time;
// the next invocation's setup starts when the previous one has finished) + one contract switch per
// change of contract between consecutive invocations.
// Feasibility (feasibility.h): an invocation whose contract and token tile do not fit the core (memory
// with scratch, accumulator registers, DMA channels, program memory) is flagged, not refused.
#pragma once

#include "runtime/device.h"
#include "sim/core-state.h"
#include "sim/npu-presets.h"

#include <array>
#include <optional>

#include <vector>

namespace xdna {

struct DesignFigures;  // design-traffic.h

// One kind of kernel call a core makes `count` times (kinds other than matmul, below).
struct KernelCalls {
    CoreOps ops;         // what one call issues (measured from the kernel code)
    double  count = 0;   // calls on the busiest core
};

// The shape facts the model needs about one kernel call.
struct ModelShape {
    // Kinds other than matmul (the elementwise and row ops of src/ops/) state their busiest core's work
    // as kernel calls and their DRAM bytes (weight_bytes: operands read once per column that uses them,
    // activation_bytes: inputs, out_bytes: outputs); the matmul fields below stay unset for them.
    KernelKind kind = KernelKind::matmul;
    std::array<KernelCalls, 5> core_calls{};
    int          n_core_calls = 0;
    int          kind_cores = 0, kind_columns = 0;    // cores and columns the kind's design keeps busy
    // The kind whose design (xclbin) runs the invocation, when its program is linked into another kind's
    // design (the Hadamard rotations run in set_rows' and flash_attn's): no switch between them. Unset:
    // its own kind's design.
    std::optional<KernelKind> design_kind;

    KernelFamily family = KernelFamily::int8xint8;
    ggml_type    weight_type = GGML_TYPE_COUNT;       // contract's weight format (COUNT: not a contract)
    const MatmulContract * contract = nullptr;        // the contract itself (nullptr: weight_type's default one)
    TileShape    tile{64, 32, 256};
    int64_t      m = 0, n = 0, k = 0;                 // valid sizes (useful work is m*n*k MACs)
    int64_t      m_tiles = 0, n_tiles = 0, k_tiles = 0;
    double       weight_bytes = 0;                    // packed weights incl. padding, read from DRAM
    double       activation_bytes = 0;                // activation operand incl. padding
    double       out_bytes = 0;                       // results written to DRAM
    double       scale_ops_per_k = 0;                 // block-scale ops per output per K value (used
                                                      // when weight_type is COUNT; else from the preset)
    int          max_columns = 0, max_rows = 0;       // cores the kernel's design uses; 0: all
    // The invocation runs the project's design (shape_of): its traffic and its cores' work are those of
    // the instruction stream the runtime builds (design-traffic.h). False for published kernels
    // (gemm_shape), whose own data movement the output-stationary blocking below stands for.
    bool         by_design = false;
    const char * layout = nullptr;                    // by_design: time only this layout (nullptr: the fastest)
    // by_design: on the contract's exact xclbin (W objects of its own tile: no W window over-fetch), as
    // GGML_XDNA_W_OBJECTS=exact runs it; else the family's xclbin.
    bool         exact_w = false;

    double padded_macs() const {
        return static_cast<double>(m_tiles * tile.m) * (n_tiles * tile.n) * (k_tiles * tile.k);
    }
};

// The contract a shape runs: `contract`, or the weight type's default one (nullptr: not a contract).
const MatmulContract * model_contract(const ModelShape & s);

// Shape of a planned invocation (K counted padded: the invocation does not carry the valid K).
ModelShape shape_of(const MatmulInvocation & inv);

// Shape of a GEMM from outside the project's contracts (published kernels), with bytes per value.
ModelShape gemm_shape(KernelFamily family, int64_t m, int64_t n, int64_t k, TileShape tile,
                      double weight_bytes_per_value, double act_bytes_per_value, double out_bytes_per_value);

// Modelled time of one invocation (all microseconds, all modelled).
struct ModelledTime {
    double compute_us = 0;     // array busy with MACs and block scales
    double dram_us = 0;        // DRAM traffic at the reachable bandwidth
    double dispatch_us = 0;    // this invocation's argument setup (the submission is counted per batch)
    double total_us = 0;       // max(compute, dram) + dispatch
    double dram_bytes = 0;     // modelled traffic, with re-reads
    double weight_dram_bytes = 0;  // the weights' share of it
    double unique_bytes = 0;   // weights + activations + output, once each
    double useful_macs = 0;    // m * n * k
    double padded_macs = 0;    // what the tiles compute
    double bandwidth_gbs = 0;  // bandwidth the traffic gets: dram_bytes / dram_us
    double roofline_us = 0;    // max(useful MACs at the family peak, unique bytes at full bandwidth)
    int    cores_used = 0;
    int    columns_used = 0;
    double tile_cycles = 0;         // one output tile on one core, before the efficiency tier
    double c_drain_cycles = 0;      // per output tile the core waits for its C drain (single-buffered C), else 0
    const char * binding_slot = ""; // the VLIW slot that sets a kernel call's pace
    bool   from_kernel_code = false;  // tile cycles from the contract kernel's own op counts
    const char * infeasible = nullptr;  // the first limit the contract's design breaks, or nullptr
    // The design layout the model times (the fastest of the design's layouts that take the shape: each
    // is an xclbin of the family and token tile; design-description.h LayoutDesc), "" for published kernels.
    const char * layout = "";

    double tops() const { return total_us > 0 ? 2.0 * useful_macs / total_us / 1e6 : 0; }
    double gbs() const { return total_us > 0 ? unique_bytes / total_us / 1e3 : 0; }
    double roofline_fraction() const { return total_us > 0 ? roofline_us / total_us : 0; }
    double arithmetic_intensity() const { return unique_bytes > 0 ? 2.0 * useful_macs / unique_bytes : 0; }
    // The term that sets the time: "compute", "dram" or "dispatch".
    const char * bound() const;
};

// Modelled time of one submission.
struct ModelledBatch {
    std::vector<ModelledTime> invocations;
    double submit_us = 0;      // the submission's own cost
    double compute_us = 0;     // sums over the invocations
    double dram_us = 0;
    double busy_us = 0;        // sum of max(compute, dram)
    double dispatch_us = 0;    // submission + every invocation's setup
    int    contract_switches = 0;  // changes of contract, or of the design layout (another xclbin),
                                   // between consecutive invocations
    double switch_us = 0;      // their cost
    double total_us = 0;       // submission + invocations back to back + switches
};

class TimingModel {
public:
    explicit TimingModel(NpuPreset preset) : p_(std::move(preset)) {}

    const NpuPreset & preset() const { return p_; }

    ModelledTime invocation(const ModelShape & s) const;
    ModelledBatch batch(const std::vector<ModelShape> & shapes) const;
    // The same into `out`, reusing its storage (the simulator models every submission). `last`, when
    // given, is the contract of the invocation before this submission (nullptr: none) and is updated,
    // so that switches across submissions are charged too; `last_layout` likewise for the design
    // layout ("" or nullptr: none).
    void batch(const std::vector<ModelShape> & shapes, ModelledBatch & out, const MatmulContract ** last = nullptr,
               const char ** last_layout = nullptr) const;

    // Cycles of one output tile of `s` on one core (before the efficiency), and the busiest slot.
    double tile_cycles(const ModelShape & s, const char ** binding = nullptr, bool * from_code = nullptr) const;

private:
    // The time of `s` run as `fig` has it (nullptr: a published kernel or a refused shape).
    ModelledTime time_of(const ModelShape & s, const DesignFigures * fig) const;
    // A kind other than matmul: its busiest core's calls at the tier's efficiency against its bytes.
    ModelledTime time_of_calls(const ModelShape & s) const;
    // Published kernels: modelled DRAM bytes (all, and the weights' share) for the best output-stationary
    // blocking that fits the memory-tile staging.
    void dram_traffic(const ModelShape & s, int columns, int rows, double & total, double & weights) const;

    NpuPreset p_;
};

}  // namespace xdna
