#include "sim/feasibility.h"

#include "runtime/design-description.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

namespace xdna {

namespace {

const char * family_of_type(ggml_type t) {
    switch (t) {
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K:
        case GGML_TYPE_Q6_K: return "kquant";
        case GGML_TYPE_Q2_K:
        case GGML_TYPE_Q3_K: return "kquant_low";
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1:
        case GGML_TYPE_Q8_0: return "legacy";
        case GGML_TYPE_F16:
        case GGML_TYPE_BF16:
        case GGML_TYPE_F32: return "float";
        default: return nullptr;
    }
}

}  // namespace

std::vector<std::string> violations(const KernelBudget & b, const CoreLimits & l) {
    std::vector<std::string> out;
    const std::string where = std::string(b.family) + " TN=" + std::to_string(b.tile_n) + ": ";
    if (b.core_bytes() > l.core_data_bytes) {
        out.push_back(where + "core data memory " + std::to_string(b.core_bytes()) + " of " +
                      std::to_string(l.core_data_bytes) + " bytes (design buffers with C depth " +
                      std::to_string(b.c_depth) + " + kernel stack and scratch " + std::to_string(b.kernel_stack_bytes) + ")");
    }
    if (b.accumulators > l.accumulators) {
        out.push_back(where + "accumulator registers " + std::to_string(b.accumulators) + " of " + std::to_string(l.accumulators));
    }
    const std::pair<const char *, std::pair<int, int>> channels[] = {
        {"core input DMA channels", {b.core_in_used, l.core_in}},
        {"core output DMA channels", {b.core_out_used, l.core_out}},
        {"memory-tile input DMA channels", {b.memtile_in_used, l.memtile_in}},
        {"memory-tile output DMA channels", {b.memtile_out_used, l.memtile_out}},
        {"shim output DMA channels", {b.shim_out_used, l.shim_out}},
        {"shim input DMA channels", {b.shim_in_used, l.shim_in}},
    };
    for (const auto & [name, used] : channels) {
        if (used.first > used.second) {
            out.push_back(where + name + " " + std::to_string(used.first) + " of " + std::to_string(used.second));
        }
    }
    if (b.program_bytes > l.program_bytes) {
        out.push_back(where + "program memory " + std::to_string(b.program_bytes) + " of " + std::to_string(l.program_bytes) +
                      " bytes");
    }
    return out;
}

namespace {

// Per family: the figures no design file holds (kernel sources' budget comments) and the DMA channels
// design.py uses (its plan's channels.*.used, the same for every family and token tile).
struct KernelFigures {
    const char * family;
    int          accumulators_tn4, accumulators_tn32;
    int          program_bytes;
};

}  // namespace

const std::vector<KernelBudget> & kernel_budgets() {
    // Core data memory and C depth: the design description (aie/matmul/dataflow.json) through
    // family_buffers, the same arithmetic design.py does; tests/timing/check-budgets.sh compares them
    // with `python3 aie/matmul/design.py --family F --tile-n TN --print-plan --format json`. The kernel's
    // stack (scratch arrays + spills + frames) is dataflow.json's core_budget.kernel_stack, which cites
    // the budget comments of aie/matmul/kernels/<source>:
    //   kquant   TN=4: scratch RowScales x2 (1792) + token sums (1024) + frames 1024; TN=32: RowScales
    //            (896) + token sums x2 (2048) + frames 1024 (mm_kquant.cc "Data memory budget").
    //   legacy   1536 (dots handed to the epilogue, spilled B operands, frames; mm_legacy.cc).
    //   kquant_low  ~1.5 KB (mm_kquant_low.cc).   float  up to 2 KB at TN = 4, ~0.5 KB at TN = 32 (mm_float.cc).
    // Accumulators and program memory, from the same comments:
    //   kquant   Q5_K keeps S, M, D, E for 2 blocks: 8. Program about 9.5 KB of 16 (estimate).
    //   legacy   2 dots + 6 for the epilogue's emulated multiplies: 8; program up to 10.5 KB.
    //   kquant_low  NT sumi + 1 dot, 2 more in the epilogue: 7 at TN = 32 (NT = 4), 4 at TN = 4;
    //            program up to 7 KB.
    //   float    4 (TN = 4) or 8 (TN = 32) accumulators; program up to 5 KB.
    //   kquant_bfp16  4 mmul accumulators + 1 for the dequantization, at TN = 32 and at TN = 64 (two passes
    //            of 4 token groups, not 8 live accumulators); program about 9 KB with the TN = 64 entry
    //            points (mm_kquant_bfp16.cc; its stack 7872 B at TN = 32: the dequantized row group,
    //            scales, parameters; 5568 B at TN = 64: the dequantized half row group).
    //   legacy_bfp16  TN = 32 only: the same 5; program about 10.5 KB (mm_legacy_bfp16.cc; its stack
    //            3328 B: the dequantized K half of a row group and frames).
    //   kquant_low_bfp16  the same structure for Q2_K / Q3_K: 5 accumulators; program about 5.5 KB
    //            (mm_kquant_low_bfp16.cc; its stack 8384 B).
    //   float_bfp16  F16 / BF16 / F32 as bfp16: 4 mmul accumulators; program about 3.5 KB
    //            (mm_float_bfp16.cc; its stack 2176 B: one row block's blocks + frames). F32 is the
    //            family f32_bfp16 of the same program (its A tile, K = 64, is half F16's; stack 1600 B).
    static const KernelFigures figures[] = {
        {"kquant", 8, 8, 9728},
        {"legacy", 8, 8, 10752},
        {"kquant_low", 4, 7, 7168},
        {"float", 4, 8, 5120},
        {"kquant_bfp16", 0, 5, 9216},
        {"legacy_bfp16", 0, 5, 10752},
        {"kquant_low_bfp16", 0, 5, 5632},
        {"float_bfp16", 0, 4, 3584},
        {"f32_bfp16", 0, 4, 3584},
    };
    static const std::vector<KernelBudget> budgets = [] {
        std::vector<KernelBudget> out;
        const DesignRead & design = matmul_design();
        if (!design.ok()) {
            return out;  // a broken built-in description is a build defect; the model then checks nothing
        }
        const DesignDescription & d = design.design;
        for (const KernelFigures & f : figures) {
            for (const int tn : {4, 32, 64}) {
                FamilyBuffers fb;
                std::string err;
                const DesignDescription::KernelStack * stack = d.kernel_stack(f.family, tn);
                // A family that does not fit even with one C buffer still gets its figures (and then a
                // verdict below); only one the description cannot size at all is left out.
                if (stack == nullptr || (!family_buffers(d, f.family, tn, fb, err) && fb.core_bytes == 0)) {
                    continue;
                }
                KernelBudget b{};
                b.family = f.family;
                b.tile_n = tn;
                b.design_core_bytes = static_cast<int>(fb.core_bytes);
                b.design_stack_bytes = static_cast<int>(fb.stack);
                b.design_data_bytes = static_cast<int>(d.kernel_data_bytes);
                b.c_depth = fb.c_depth;
                // design.py's channels, the same in both layouts: core W, A in / C out; memory tile W, A,
                // 4 x C in / 4 x W (split) + A (broadcast) + C out in m_split, W (broadcast) + 4 x A (split)
                // + C out in n_split; shim W, A out / C in. The buffers too: n_split moves the 4-part
                // object from W to A in the memory tile, and the cores hold the same 2 W + 2 A + C.
                b.core_in_used = 2, b.core_out_used = 1, b.memtile_in_used = 2 + d.core_rows;
                b.memtile_out_used = d.core_rows + 2, b.shim_out_used = 2, b.shim_in_used = 1;
                b.kernel_stack_bytes = static_cast<int>(stack->bytes);
                b.accumulators = tn == 4 ? f.accumulators_tn4 : f.accumulators_tn32;  // TN 64: as TN 32 (two passes)
                b.program_bytes = f.program_bytes;
                b.kernel_source = stack->source.c_str();  // lives as long as the built-in description
                out.push_back(b);
            }
        }
        return out;
    }();
    return budgets;
}

const KernelBudget * budget_for(const MatmulContract & contract, int tile_n) {
    // A contract without a program at the token tile is in no xclbin of it (Q6_K at 64).
    if (!contract_allows_tile(contract, contract.tile(tile_n))) {
        return nullptr;
    }
    for (const KernelBudget & b : kernel_budgets()) {
        if (b.tile_n == tile_n && std::string(b.family) == contract.family) {
            return &b;
        }
    }
    return nullptr;
}

const KernelBudget * budget_for(ggml_type weight_type, int tile_n) {
    const char * family = family_of_type(weight_type);
    if (family == nullptr) {
        return nullptr;
    }
    for (const KernelBudget & b : kernel_budgets()) {
        if (b.tile_n == tile_n && std::string(b.family) == family) {
            return &b;
        }
    }
    return nullptr;
}

const char * first_violation(ggml_type weight_type, int tile_n) {
    const MatmulContract * c = matmul_contract_for(weight_type);
    return c != nullptr ? first_violation(*c, tile_n) : nullptr;
}

const char * first_violation(const MatmulContract & contract, int tile_n) {
    // The sentences are built once per budget and kept, so the model can hand out stable pointers.
    static std::mutex mu;
    static std::map<const KernelBudget *, std::string> cache;
    const KernelBudget * b = budget_for(contract, tile_n);
    if (b == nullptr) {
        return nullptr;
    }
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(b);
    if (it == cache.end()) {
        const std::vector<std::string> v = violations(*b);
        it = cache.emplace(b, v.empty() ? std::string() : v.front()).first;
    }
    return it->second.empty() ? nullptr : it->second.c_str();
}

}  // namespace xdna
