#include "sim/feasibility.h"

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

const std::vector<KernelBudget> & kernel_budgets() {
    // design_*, c_depth and channels: `python3 aie/matmul/design.py --family F --tile-n TN --print-plan
    // --format json` (core_bytes.total, stack_bytes, kernel_data_bytes, c_depth, channels.*.used);
    // tests/aie compares this table with the script's output. Kernel figures: the budget comments of
    // aie/matmul/kernels/<source> (stack = scratch arrays + spills + frames; accumulators; program
    // memory upper estimate).
    //   kquant   TN=4: scratch RowScales x2 (1792) + token sums (1024) + stack 1024; TN=32: RowScales
    //            (896) + token sums x2 (2048) + stack 1024. Q5_K keeps S, M, D, E for 2 blocks: 8.
    //            Program about 9.5 KB of 16 (estimate).
    //   legacy   stack 1536 (dots handed to the epilogue, spilled B operands, frames); 2 dots + 6 for the
    //            epilogue's emulated multiplies: 8; program up to 10.5 KB.
    //   kquant_low  ~1.5 KB stack; NT sumi + 1 dot, 2 more in the epilogue: 7 at TN = 32 (NT = 4),
    //            4 at TN = 4; program up to 7 KB.
    //   float    stack up to 2 KB at TN = 4, ~0.5 KB at TN = 32; 4 (TN = 4) or 8 (TN = 32)
    //            accumulators; program up to 5 KB.
    static const std::vector<KernelBudget> budgets = {
        {"kquant", 4, 32912, 1024, 512, 2, 2, 1, 6, 6, 2, 1, 2816 + 1024, 8, 9728, "mm_kquant.cc"},
        {"kquant", 32, 63504, 1024, 512, 2, 2, 1, 6, 6, 2, 1, 2944 + 1024, 8, 9728, "mm_kquant.cc"},
        {"legacy", 4, 40976, 1024, 512, 2, 2, 1, 6, 6, 2, 1, 1536, 8, 10752, "mm_legacy.cc"},
        {"legacy", 32, 65040, 1024, 512, 1, 2, 1, 6, 6, 2, 1, 1536, 8, 10752, "mm_legacy.cc"},
        {"kquant_low", 4, 20112, 1024, 512, 2, 2, 1, 6, 6, 2, 1, 1536, 4, 7168, "mm_kquant_low.cc"},
        {"kquant_low", 32, 50704, 1024, 512, 2, 2, 1, 6, 6, 2, 1, 1536, 7, 7168, "mm_kquant_low.cc"},
        {"float", 4, 38416, 1024, 512, 2, 2, 1, 6, 6, 2, 1, 2048, 4, 5120, "mm_float.cc"},
        {"float", 32, 58896, 1024, 512, 1, 2, 1, 6, 6, 2, 1, 512, 8, 5120, "mm_float.cc"},
    };
    return budgets;
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
    // The sentences are built once per budget and kept, so the model can hand out stable pointers.
    static std::mutex mu;
    static std::map<const KernelBudget *, std::string> cache;
    const KernelBudget * b = budget_for(weight_type, tile_n);
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
