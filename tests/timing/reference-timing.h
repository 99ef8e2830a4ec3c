// The timing model of a contract invocation restated from its documentation (sim/timing-model.h,
// sim/kernel-cycles.h, docs/performance-model.md) and the preset's parameters, for the tests to compare
// the model with. Nothing here calls the model: the inputs are the shape (rows, K, tokens, token tile,
// stated by the test), the contract's tile and byte sizes stated by the test, the kernels' measured
// operation counts (kernel_profile: the kernel code's input to the model) and the design's C depth.
#pragma once

#include "contracts/matmul-contract.h"
#include "sim/feasibility.h"
#include "sim/kernel-cycles.h"
#include "sim/npu-presets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace xdna_test {

// Cycles of one kernel call under the per-operation table (kernel-cycles.h): vector 1 per cycle, the
// int8 x int4 mmul 1024 / int4 rate cycles; move 1; loads and unpacks share 2 load slots, unpacks alone
// have one; store 1; scalar 1. The busiest slot, plus the call overhead and the cost per entry of a
// pipelined loop.
inline double reference_call_cycles(const xdna::CoreOps & ops, const xdna::NpuPreset & p) {
    const double vector = double(ops.vector) + double(ops.mmul_i8xi4) * (1024.0 / p.int4_macs_per_cycle - 1);
    const double load = std::max(std::ceil((ops.load + ops.unpack) / 2.0), double(ops.unpack));
    const double busiest = std::max({vector, double(ops.move), load, double(ops.store), double(ops.scalar)});
    return busiest + p.call_overhead_cycles + p.pipelined_loop_cycles * double(ops.pipelined_loops);
}

struct ReferenceTime {
    int64_t m_tiles = 0, n_tiles = 0, k_tiles = 0;
    int     columns = 0, cores = 0;
    int64_t waves = 0;
    double  tile_cycles = 0, drain_cycles = 0;
    double  weight_bytes = 0, act_bytes = 0, out_bytes = 0, dram_bytes = 0, busiest_channel = 0;
    double  unique_bytes = 0;  // weights, activations and the valid outputs, once each
    double  compute_us = 0, dram_us = 0, total_us = 0;
};

// An M x K weight of `type` (K whole tiles) times N tokens on token tile `tn`, weight tiles of
// `w_tile_bytes`, W windows of `w_window_bytes` (the family's largest W tile: the xclbin's W object)
// and activation tiles of `a_tile_bytes`, on the design as aie/matmul/README.md documents it:
//   m_split (n_split false): row tiles in groups of 4 (padded), group q on column q % 8 in round q / 8,
//     each of a column's 4 cores one row tile of the group; per (round, token tile) step and active
//     column the shim streams the 4 cores' windows per K tile, the token tile's A once, and drains the
//     4 C tiles whole;
//   n_split: row tile q on column q % 8 in round q / 8, each of the column's 4 cores one token tile of
//     a group of 4; per (round, token group) step and active column one window and 4 A tiles per K
//     tile, and the 4 C tiles;
//   n_shared (a_shared): n_split on every column in every round (a column past the last row tile
//     recomputes it), the 4 A tiles per K tile streamed once per (round, token group) for the whole
//     array, on column 0's shim.
inline ReferenceTime reference_time(const xdna::NpuPreset & p, ggml_type type, int64_t m, int64_t k, int64_t n, int tn,
                                    double w_tile_bytes, double a_tile_bytes, double w_window_bytes, bool n_split = false,
                                    bool a_shared = false) {
    const xdna::MatmulContract & c = *xdna::matmul_contract_for(type);
    ReferenceTime r;
    r.m_tiles = (m + c.tile_m - 1) / c.tile_m;
    r.n_tiles = (n + tn - 1) / tn;
    r.k_tiles = k / c.tile_k;
    const int64_t groups = n_split ? r.m_tiles : (r.m_tiles + 3) / 4;  // row units
    const int64_t token_steps = n_split ? r.n_tiles / 4 : r.n_tiles;
    const int64_t w_per_k = n_split ? 1 : 4, a_per_k = n_split ? 4 : 1;
    r.columns = a_shared ? p.columns : static_cast<int>(std::min<int64_t>(p.columns, groups));
    r.cores = r.columns * 4;
    const int64_t rounds = (groups + p.columns - 1) / p.columns;
    auto rounds_of = [&](int64_t col) {
        return a_shared ? rounds : col < groups ? (groups - col + p.columns - 1) / p.columns : 0;
    };
    // Every core of column 0 has the most output tiles: one per (round, token step).
    r.waves = rounds_of(0) * token_steps;
    // One output tile: the C-tile clear and one call per K tile; a single-buffered C waits for its drain
    // (64 x TN floats at 8 bytes per cycle), which the efficiency does not scale.
    const xdna::KernelProfile & prof = *xdna::kernel_profile(type, tn);
    r.tile_cycles = double(r.k_tiles) * reference_call_cycles(prof.call, p) + reference_call_cycles(prof.zero, p);
    r.drain_cycles = xdna::budget_for(type, tn)->c_depth < 2 ? 64.0 * tn * 4 / 8 : 0.0;
    const double cycles_per_us = p.clock_ghz * 1e3;
    r.compute_us = double(r.waves) * (r.tile_cycles / cycles_per_us / p.efficiency() + r.drain_cycles / cycles_per_us);
    for (int64_t col = 0; col < p.columns; ++col) {
        const double steps = double(rounds_of(col) * token_steps);
        const double a_steps = a_shared ? (col == 0 ? double(rounds * token_steps) : 0.0) : steps;
        const double w = steps * r.k_tiles * w_per_k * w_window_bytes, a = a_steps * r.k_tiles * a_per_k * a_tile_bytes;
        const double o = steps * 4 * tn * 64 * 4;
        r.weight_bytes += w;
        r.act_bytes += a;
        r.out_bytes += o;
        r.busiest_channel = std::max({r.busiest_channel, w, a, o});
    }
    r.dram_bytes = r.weight_bytes + r.act_bytes + r.out_bytes;
    r.unique_bytes = double(r.m_tiles) * r.k_tiles * w_tile_bytes + double(r.n_tiles) * r.k_tiles * a_tile_bytes + 4.0 * m * n;
    // The sustained bandwidth, or the busiest shim channel at 8 bytes per cycle, whichever is slower.
    r.dram_us = std::max(r.dram_bytes / (p.dram_gbs * 1e3), r.busiest_channel / (8 * p.clock_ghz * 1e3));
    r.total_us = std::max(r.compute_us, r.dram_us) + p.invocation_us;
    return r;
}

}  // namespace xdna_test
