#include "sim/timing-model.h"

#include "runtime/options.h"

#include "sim/design-traffic.h"
#include "sim/feasibility.h"
#include "sim/kernel-cycles.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace xdna {

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

int limit(int wanted, int available) {
    return wanted > 0 ? std::min(wanted, available) : available;
}

}  // namespace

const char * ModelledTime::bound() const {
    const double busy = std::max(compute_us, dram_us);
    if (dispatch_us >= busy) {
        return "dispatch";
    }
    return compute_us >= dram_us ? "compute" : "dram";
}

const MatmulContract * model_contract(const ModelShape & s) {
    if (s.contract != nullptr) return s.contract;
    return s.weight_type != GGML_TYPE_COUNT ? matmul_contract_for(s.weight_type) : nullptr;
}

ModelShape shape_of(const MatmulInvocation & inv) {
    ModelShape s;
    const ggml_type wt = inv.contract->weight_type;
    s.family = inv.contract->act_format == ActFormat::bfp16 ? KernelFamily::bfp16 : family_of(wt);
    s.weight_type = wt;
    s.contract = inv.contract;
    s.tile = inv.tile;
    s.m = inv.m;
    s.n = inv.n;
    s.k = inv.k_tiles * inv.tile.k;
    s.m_tiles = inv.m_tiles;
    s.n_tiles = inv.n_tiles;
    s.k_tiles = inv.k_tiles;
    s.weight_bytes = static_cast<double>(inv.weight_bytes());
    s.activation_bytes = static_cast<double>(inv.activation_bytes());
    s.out_bytes = static_cast<double>(inv.out_bytes());
    s.scale_ops_per_k = scale_ops_per_k(wt);
    s.by_design = true;
    s.exact_w = exact_w_objects();  // the xclbins the simulator runs (runtime/options.h)
    return s;
}

ModelShape gemm_shape(KernelFamily family, int64_t m, int64_t n, int64_t k, TileShape tile,
                      double weight_bytes_per_value, double act_bytes_per_value, double out_bytes_per_value) {
    ModelShape s;
    s.family = family;
    s.tile = tile;
    s.m = m;
    s.n = n;
    s.k = k;
    s.m_tiles = ceil_div(m, tile.m);
    s.n_tiles = ceil_div(n, tile.n);
    s.k_tiles = ceil_div(k, tile.k);
    const double kp = static_cast<double>(s.k_tiles * tile.k);
    s.weight_bytes = static_cast<double>(s.m_tiles * tile.m) * kp * weight_bytes_per_value;
    s.activation_bytes = static_cast<double>(s.n_tiles * tile.n) * kp * act_bytes_per_value;
    s.out_bytes = static_cast<double>(m) * n * out_bytes_per_value;
    return s;
}

void TimingModel::dram_traffic(const ModelShape & s, int columns, int rows, double & total, double & weights) const {
    // Published kernels only (the project's design charges its own stream's bytes, design-traffic.h).
    // Output-stationary blocking (the mlir-aie whole_array pattern): each pass computes a block of
    // (columns x bm) row tiles by (rows x bn) token tiles; the block's weight panel is broadcast down a
    // column, its activation panel across a row. Weights are read once per token block, activations
    // once per row block. A core holds one fp32 output tile; bm*bn tiles per core fit when the memory
    // tile stages the others, so the kernel picks the split that reads the least.
    const double c_tile_bytes = 4.0 * s.tile.m * s.tile.n;
    const int64_t per_core = std::max<int64_t>(1, static_cast<int64_t>(p_.c_stage_kb * 1024 / (rows * c_tile_bytes)));
    total = std::numeric_limits<double>::infinity();
    for (int64_t bn = 1; bn <= per_core; ++bn) {
        const int64_t bm = per_core / bn;
        const double w = s.weight_bytes * ceil_div(s.n_tiles, rows * bn);
        const double inputs = w + s.activation_bytes * ceil_div(s.m_tiles, columns * bm);
        if (inputs < total) {
            total = inputs;
            weights = w;
        }
        if (rows * bn >= s.n_tiles) {
            break;  // larger token blocks cannot read the weights fewer than once
        }
    }
    total += s.out_bytes;
}

ModelledTime TimingModel::invocation(const ModelShape & s) const {
    // A contract invocation runs the project's design: its bytes and its cores' work are those of the
    // instruction stream the runtime builds for the shape (design-traffic.h), in each layout the design
    // offers (an xclbin each) that takes the shape; the model times the fastest. A shape no layout
    // takes cannot run: it is flagged and timed by the generic formulas.
    if (s.kind != KernelKind::matmul) {
        return time_of_calls(s);
    }
    if (!s.by_design || s.weight_type == GGML_TYPE_COUNT) {
        return time_of(s, nullptr);
    }
    const int cols_avail = limit(s.max_columns, p_.columns);
    const DesignRead & design = matmul_design();
    ModelledTime best;
    bool have = false;
    std::string refused;
    static const std::vector<LayoutDesc> none;
    for (const LayoutDesc & L : design.ok() ? design.design.layouts : none) {
        if (s.layout != nullptr && L.name != s.layout) {
            continue;
        }
        const std::shared_ptr<const DesignFigures> fig = design_figures(s, cols_avail, L.name);
        if (!fig->ok()) {
            refused += (refused.empty() ? "" : "; ") + L.name + ": " + fig->error;
            continue;
        }
        ModelledTime t = time_of(s, fig.get());
        t.layout = L.name.c_str();  // the built-in description lives as long as the process
        // The fastest; between equally fast layouts (both compute-bound), the one that moves fewer bytes.
        const bool tie = have && std::fabs(t.total_us - best.total_us) <= 1e-9 * best.total_us;
        if (!have || (tie ? t.dram_bytes < best.dram_bytes : t.total_us < best.total_us)) {
            best = t;
            have = true;
        }
    }
    if (!have) {
        best = time_of(s, nullptr);
        best.infeasible = design_refusal("the stream builder refuses the shape: " +
                                         (design.ok() ? refused : design.error));
    }
    return best;
}

ModelledTime TimingModel::time_of_calls(const ModelShape & s) const {
    ModelledTime t;
    // Each call pays its slot-bound cycles and the per-call overhead (kernel-cycles.h); the busiest
    // core's calls are back to back. DMA overlaps them (the design double-buffers its chunks).
    double cycles = 0;
    const char * binding = "vector";
    double binding_cycles = -1;
    for (int i = 0; i < s.n_core_calls; ++i) {
        const SlotCycles c = core_cycles(s.core_calls[i].ops, p_);
        cycles += s.core_calls[i].count * c.total;
        if (s.core_calls[i].count * c.slot_max > binding_cycles) {
            binding_cycles = s.core_calls[i].count * c.slot_max;
            binding = c.binding;
        }
    }
    t.tile_cycles = cycles;
    t.binding_slot = binding;
    t.from_kernel_code = s.n_core_calls > 0;
    t.compute_us = cycles / (p_.clock_ghz * 1e3) / p_.efficiency();
    t.cores_used = s.kind_cores;
    t.columns_used = s.kind_columns;
    t.dram_bytes = s.weight_bytes + s.activation_bytes + s.out_bytes;
    t.weight_dram_bytes = s.weight_bytes;
    t.dram_us = t.dram_bytes / (p_.dram_gbs * 1e3);
    t.bandwidth_gbs = p_.dram_gbs;
    t.dispatch_us = p_.invocation_us;
    t.total_us = std::max(t.compute_us, t.dram_us) + t.dispatch_us;
    t.unique_bytes = t.dram_bytes;
    t.roofline_us = t.unique_bytes / (p_.dram_gbs * 1e3);
    return t;
}

ModelledTime TimingModel::time_of(const ModelShape & s, const DesignFigures * fig) const {
    ModelledTime t;
    const int cols_avail = limit(s.max_columns, p_.columns);
    const int rows_avail = limit(s.max_rows, p_.rows);

    // Row tiles go to columns round robin (each column streams its own weight rows through its shim);
    // a column's cores take its (row tile, token tile) pairs. Cores without a pair idle.
    int64_t waves = 0;
    if (fig) {
        waves = fig->max_core_tiles;  // every core walks its own output tiles one after the other
        t.columns_used = fig->columns_used;
        t.cores_used = fig->cores_used;
    } else {
        const int64_t cols = std::max<int64_t>(1, std::min<int64_t>(cols_avail, s.m_tiles));
        const int64_t base = s.m_tiles / cols, extra = s.m_tiles % cols;
        const int64_t busiest_column_tiles = (base + (extra > 0 ? 1 : 0)) * s.n_tiles;
        waves = ceil_div(busiest_column_tiles, rows_avail);
        t.columns_used = static_cast<int>(cols);
        t.cores_used = static_cast<int>(extra * std::min<int64_t>(rows_avail, (base + 1) * s.n_tiles) +
                                        (cols - extra) * std::min<int64_t>(rows_avail, base * s.n_tiles));
    }

    // One output tile: the cycles of its kernel calls, at the tier's efficiency.
    t.tile_cycles = tile_cycles(s, &t.binding_slot, &t.from_kernel_code);
    if (s.weight_type != GGML_TYPE_COUNT) {
        t.infeasible = first_violation(*model_contract(s), s.tile.n);
        // With one C buffer (the design's C depth, aie/matmul/dataflow.json) the core cannot start the
        // next output tile until the memory tile has taken this one: its C tile leaves on one core MM2S
        // channel of the 64-bit stream switch, 8 bytes per cycle (the assumption of column_in_gbs). With
        // two, the drain overlaps the next tile's K loop.
        const KernelBudget * b = budget_for(*model_contract(s), s.tile.n);
        if (b != nullptr && b->c_depth < 2) {
            t.c_drain_cycles = static_cast<double>(s.tile.n) * 64 * sizeof(float) / 8.0;
        }
    }
    // The drain is DMA time, not kernel instructions: the efficiency tier does not scale it.
    const double tile_us = t.tile_cycles / (p_.clock_ghz * 1e3) / p_.efficiency() + t.c_drain_cycles / (p_.clock_ghz * 1e3);
    t.compute_us = waves * tile_us;

    if (fig) {
        // What the stream's BDs move; the busiest shim channel moves at most 8 bytes per cycle (half a
        // column's ingress, column_in_gbs), whichever operand it carries.
        t.dram_bytes = static_cast<double>(fig->total());
        t.weight_dram_bytes = static_cast<double>(fig->traffic.w_read);
        t.dram_us = std::max(t.dram_bytes / (p_.dram_gbs * 1e3),
                             static_cast<double>(fig->traffic.busiest_channel()) / (0.5 * p_.column_in_gbs() * 1e3));
    } else {
        dram_traffic(s, t.columns_used, rows_avail, t.dram_bytes, t.weight_dram_bytes);
        t.dram_us = std::max(t.dram_bytes / (p_.dram_gbs * 1e3),
                             t.weight_dram_bytes / (t.columns_used * p_.column_in_gbs() * 1e3));
    }
    t.bandwidth_gbs = t.dram_us > 0 ? t.dram_bytes / t.dram_us / 1e3 : p_.dram_gbs;

    t.dispatch_us = p_.invocation_us;
    t.total_us = std::max(t.compute_us, t.dram_us) + t.dispatch_us;

    t.useful_macs = static_cast<double>(s.m) * s.n * s.k;
    t.padded_macs = s.padded_macs();
    t.unique_bytes = s.weight_bytes + s.activation_bytes + s.out_bytes;
    t.roofline_us = std::max(t.useful_macs / p_.peak_macs_per_us(s.family), t.unique_bytes / (p_.dram_gbs * 1e3));
    return t;
}

double TimingModel::tile_cycles(const ModelShape & s, const char ** binding, bool * from_code) const {
    const MatmulContract * mc = model_contract(s);
    const KernelProfile * k = mc != nullptr ? kernel_profile(*mc, s.tile.n) : nullptr;
    if (from_code != nullptr) {
        *from_code = k != nullptr;
    }
    if (k != nullptr) {
        // One call per K tile (one per A object where A comes in K parts: each pays the call overhead),
        // and the C-tile clear that starts the output tile.
        const SlotCycles call = core_cycles(k->call, p_);
        if (binding != nullptr) {
            *binding = call.binding;
        }
        const double per_k_tile = call.total + (k->calls_per_k_tile - 1) * p_.call_overhead_cycles;
        return static_cast<double>(s.k_tiles) * per_k_tile + core_cycles(k->zero, p_).total;
    }
    // A published kernel (no code of ours): its mmuls at the family rate, plus the block-scale work a
    // caller states for it (0 for the published GEMMs).
    const double out_per_value = s.m > 0 && s.n > 0 ? s.out_bytes / (static_cast<double>(s.m) * s.n) : 4.0;
    const SlotCycles c = core_cycles(reference_tile_ops(s.family, s.tile, s.k_tiles, out_per_value, p_), p_);
    if (binding != nullptr) {
        *binding = c.binding;
    }
    const double tile_macs = static_cast<double>(s.tile.m) * s.tile.n * s.k_tiles * s.tile.k;
    return c.total + tile_macs * s.scale_ops_per_k / p_.scale_ops_per_cycle;
}

ModelledBatch TimingModel::batch(const std::vector<ModelShape> & shapes) const {
    ModelledBatch b;
    batch(shapes, b);
    return b;
}

void TimingModel::batch(const std::vector<ModelShape> & shapes, ModelledBatch & b, const MatmulContract ** last_contract,
                        const char ** last_layout) const {
    b.invocations.clear();
    b.submit_us = b.compute_us = b.dram_us = b.busy_us = b.dispatch_us = b.total_us = b.switch_us = 0;
    b.contract_switches = 0;
    if (shapes.empty()) {
        return;
    }
    const MatmulContract * last = last_contract != nullptr ? *last_contract : nullptr;
    // Layout names point into the built-in design description, which lives as long as the process.
    const char * layout = last_layout != nullptr && *last_layout != nullptr ? *last_layout : "";
    b.submit_us = p_.submit_us;
    b.total_us = b.submit_us;
    b.dispatch_us = b.submit_us;
    for (const auto & s : shapes) {
        const ModelledTime t = invocation(s);
        b.compute_us += t.compute_us;
        b.dram_us += t.dram_us;
        b.busy_us += std::max(t.compute_us, t.dram_us);
        b.dispatch_us += t.dispatch_us;
        b.total_us += t.total_us;
        b.invocations.push_back(t);
        if (s.kind != KernelKind::matmul) {
            // Another design is another xclbin: charged as a switch when the invocation before it ran
            // another program (a matmul contract, or another kind's design: an ADD after a RMS_NORM
            // switches too, each kind's design being an xclbin of its own). One stand-in per kind; a program
            // linked into another kind's design stands with that kind.
            static const std::array<MatmulContract, 256> kind_design{};
            const MatmulContract * design = &kind_design[static_cast<size_t>(s.design_kind.value_or(s.kind))];
            if (last != nullptr && last != design) {
                ++b.contract_switches;
            }
            last = design;
            continue;
        }
        if (s.weight_type != GGML_TYPE_COUNT) {
            // Another contract starts another instruction stream and core-program branch; another layout
            // another xclbin of the family: either is charged as one switch.
            const bool other_layout = *layout != 0 && *t.layout != 0 && std::string(layout) != t.layout;
            const MatmulContract * mc = model_contract(s);
            if (last != nullptr && (last != mc || other_layout)) {
                ++b.contract_switches;
            }
            last = mc;
            if (*t.layout != 0) {
                layout = t.layout;
            }
        }
    }
    b.switch_us = b.contract_switches * p_.contract_switch_us;
    b.total_us += b.switch_us;
    if (last_contract != nullptr) {
        *last_contract = last;
    }
    if (last_layout != nullptr) {
        *last_layout = layout;
    }
}

}  // namespace xdna
