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
    int     columns = 0;
    int64_t waves = 0;
    double  tile_cycles = 0, drain_cycles = 0;
    double  weight_bytes = 0, act_bytes = 0, out_bytes = 0, dram_bytes = 0;
    double  compute_us = 0, dram_us = 0, total_us = 0;
};

// An M x K weight of `type` (K whole tiles) times N tokens on token tile `tn`, weight tiles of
// `w_tile_bytes` and activation tiles of `a_tile_bytes`. Valid for shapes whose C tiles one memory-tile
// block can stage (checked): then every operand is read from DRAM exactly once.
inline ReferenceTime reference_time(const xdna::NpuPreset & p, ggml_type type, int64_t m, int64_t k, int64_t n, int tn,
                                    double w_tile_bytes, double a_tile_bytes) {
    const xdna::MatmulContract & c = *xdna::matmul_contract_for(type);
    ReferenceTime r;
    r.m_tiles = (m + c.tile_m - 1) / c.tile_m;
    r.n_tiles = (n + tn - 1) / tn;
    r.k_tiles = k / c.tile_k;
    // Row tiles round robin over the columns; a column's (row tile, token tile) pairs over its cores.
    r.columns = static_cast<int>(std::min<int64_t>(p.columns, r.m_tiles));
    const int64_t column_tiles = (r.m_tiles + r.columns - 1) / r.columns * r.n_tiles;
    r.waves = (column_tiles + p.rows - 1) / p.rows;
    // One output tile: the C-tile clear and one call per K tile; a single-buffered C waits for its drain
    // (64 x TN floats at 8 bytes per cycle), which the efficiency does not scale.
    const xdna::KernelProfile & prof = *xdna::kernel_profile(type, tn);
    r.tile_cycles = double(r.k_tiles) * reference_call_cycles(prof.call, p) + reference_call_cycles(prof.zero, p);
    r.drain_cycles = xdna::budget_for(type, tn)->c_depth < 2 ? 64.0 * tn * 4 / 8 : 0.0;
    const double cycles_per_us = p.clock_ghz * 1e3;
    r.compute_us = double(r.waves) * (r.tile_cycles / cycles_per_us / p.efficiency() + r.drain_cycles / cycles_per_us);
    // DRAM: the memory tile stages c_stage_kb of C tiles per column, i.e. this many per core (8 at TN 32,
    // 64 at TN 4 with 256 KB); when the column's row tiles times its cores' token tiles fit, one block
    // holds the whole output.
    const int64_t staged_per_core = static_cast<int64_t>(p.c_stage_kb * 1024 / (p.rows * 4.0 * c.tile_m * tn));
    const int64_t need = (r.m_tiles + r.columns - 1) / r.columns * ((r.n_tiles + p.rows - 1) / p.rows);
    EXPECT_LE(need, staged_per_core) << "reference_time: this shape's output does not fit one block";
    r.weight_bytes = double(r.m_tiles) * r.k_tiles * w_tile_bytes;
    r.act_bytes = double(r.n_tiles) * r.k_tiles * a_tile_bytes;
    r.out_bytes = 4.0 * m * n;
    r.dram_bytes = r.weight_bytes + r.act_bytes + r.out_bytes;
    // The sustained bandwidth, or the weights through the used columns' shim ingress (2 channels of
    // 8 bytes per cycle), whichever is slower.
    r.dram_us = std::max(r.dram_bytes / (p.dram_gbs * 1e3), r.weight_bytes / (r.columns * 2 * 8 * p.clock_ghz * 1e3));
    r.total_us = std::max(r.compute_us, r.dram_us) + p.invocation_us;
    return r;
}

}  // namespace xdna_test
