// Does a contract's kernel, at a token tile, fit the core and the array as designed?
//
// Four limits of an AIE2P core and its column, checked per kernel family and token tile:
//   core data memory  64 KB [AM027]: the design's buffers (W, A, C objects x depth, RTP words) plus what
//                     the kernel itself needs on the stack (scratch arrays, spills, call frames; the
//                     kernel sources' budgets, written once in aie/matmul/dataflow.json, from which
//                     design.py also sizes the stack and the C depth)
//   accumulators      8 registers of 2048 bits [AM027]: the most the kernel keeps live (kernel sources)
//   DMA channels      core 2 in / 2 out, memory tile 6 / 6, shim 2 / 2 [AM020 ch. 5; design.py]
//   program memory    16 KB [AM027 "Instruction Fetch and Decode Unit"]: the kernel sources' upper estimate
// The timing model flags an invocation whose (contract, token tile) breaks one (ModelledTime::infeasible);
// it still models its time, as the design would run if the limit were lifted.
#pragma once

#include "contracts/matmul-contract.h"
#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

struct KernelBudget {
    const char * family;           // design.py --family
    int          tile_n;
    // The design's figures (design.py --print-plan --format json: core_bytes, c_depth, channels; the
    // runtime computes them from the same design description, aie/matmul/dataflow.json).
    int          design_core_bytes;     // its total, including the stack and static data it reserves
    int          design_stack_bytes;    // the stack it gives each core (dataflow.json core_budget.kernel_stack)
    int          design_data_bytes;     // its static-data reserve (core_budget.kernel_data_bytes)
    int          c_depth;
    int          core_in_used, core_out_used, memtile_in_used, memtile_out_used, shim_out_used, shim_in_used;
    // From the kernel source's own budget comments (the stack figure by way of dataflow.json).
    int          kernel_stack_bytes;    // scratch arrays + spills + call frames
    int          accumulators;          // 2048-bit accumulator registers live at once (most of the family)
    int          program_bytes;         // upper estimate of the family's core program
    const char * kernel_source;

    int core_bytes() const { return design_core_bytes - design_stack_bytes - design_data_bytes + kernel_stack_bytes; }
};

struct CoreLimits {
    int core_data_bytes = 65536;
    int accumulators = 8;
    int core_in = 2, core_out = 2, memtile_in = 6, memtile_out = 6, shim_out = 2, shim_in = 2;
    int program_bytes = 16384;
};

// Every limit `b` breaks, as sentences (empty: it fits).
std::vector<std::string> violations(const KernelBudget & b, const CoreLimits & limits = CoreLimits{});

// The budgets of the project's kernel families (both token tiles).
const std::vector<KernelBudget> & kernel_budgets();

// The budget of a contract's family at a token tile (nullptr: none known).
const KernelBudget * budget_for(ggml_type weight_type, int tile_n);
// The same by the contract's family (the prefill contracts share weight types with other families).
const KernelBudget * budget_for(const MatmulContract & contract, int tile_n);

// The first limit the contract's kernel breaks at this token tile, or nullptr (a stable string).
const char * first_violation(ggml_type weight_type, int tile_n);
const char * first_violation(const MatmulContract & contract, int tile_n);

}  // namespace xdna
