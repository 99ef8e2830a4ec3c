// Feasibility checks (src/sim/feasibility.h): every limit is checked, and the model flags the kernels
// whose design breaks one. The expected verdicts are recomputed here from the budget figures, not read
// back from the checker.
#include "sim/feasibility.h"
#include "sim/kernel-cycles.h"
#include "sim/timing-model.h"
#include "reference-timing.h"

#include <gtest/gtest.h>

namespace xdna {
namespace {

TEST(Feasibility, EachLimitIsChecked) {
    const KernelBudget fits = {"test", 4, 30000, 1024, 512, 2, 2, 1, 6, 6, 2, 1, 1024, 8, 8192, "none"};
    EXPECT_TRUE(violations(fits).empty());
    KernelBudget b = fits;
    b.kernel_stack_bytes = 65536 - (30000 - 1024 - 512) + 1;  // one byte over
    ASSERT_EQ(violations(b).size(), 1u);
    EXPECT_NE(violations(b)[0].find("core data memory"), std::string::npos);
    b = fits;
    b.accumulators = 9;
    ASSERT_EQ(violations(b).size(), 1u);
    EXPECT_NE(violations(b)[0].find("accumulator"), std::string::npos);
    b = fits;
    b.core_in_used = 3;  // weights, activations and a partial-output stream
    ASSERT_EQ(violations(b).size(), 1u);
    EXPECT_NE(violations(b)[0].find("core input DMA"), std::string::npos);
    b = fits;
    b.memtile_out_used = 7;
    ASSERT_EQ(violations(b).size(), 1u);
    b = fits;
    b.program_bytes = 16385;
    ASSERT_EQ(violations(b).size(), 1u);
    EXPECT_NE(violations(b)[0].find("program memory"), std::string::npos);
}

TEST(Feasibility, ModelFlagsExactlyTheKernelsThatDoNotFit) {
    const TimingModel model(*find_npu_preset("krackan"));
    ASSERT_EQ(kernel_budgets().size(), 14u)
        << "4 families x 2 token tiles, the five bfp16 families' one each and the K-quant bfp16 one's TN 64, from the design description";
    for (const KernelBudget & b : kernel_budgets()) {
        // Independent arithmetic: the design's buffers without its stack and static-data reserves, plus
        // the kernel's stack.
        const int bytes = b.design_core_bytes - b.design_stack_bytes - b.design_data_bytes + b.kernel_stack_bytes;
        const bool expect_fit = bytes <= 65536 && b.accumulators <= 8 && b.core_in_used <= 2 && b.core_out_used <= 2 &&
                                b.memtile_in_used <= 6 && b.memtile_out_used <= 6 && b.shim_out_used <= 2 &&
                                b.shim_in_used <= 2 && b.program_bytes <= 16384;
        EXPECT_EQ(violations(b).empty(), expect_fit) << b.family << " TN=" << b.tile_n << ": " << bytes << " bytes";
        // The design reserves the kernel's own figure, so every family fits the core as designed.
        EXPECT_EQ(b.design_stack_bytes, b.kernel_stack_bytes) << b.family << " TN=" << b.tile_n;
        EXPECT_TRUE(violations(b).empty()) << violations(b).front();
    }
    // The K-quant program at TN = 32. Its pass keeps row scales (896 B) and broadcast token sums
    // (2 x 1024 B) plus ~1 KB of frames on the stack (mm_kquant.cc "Data memory budget"): with two C
    // tiles it would need 2 x 13440 (Q6_K W) + 2 x 9344 (A) + 2 x 8192 (C) + 16 (RTP) + 3968 = 65936 of
    // 65536 bytes, so the design single-buffers C: 57744 bytes.
    const KernelBudget * kq = budget_for(GGML_TYPE_Q4_K, 32);
    ASSERT_NE(kq, nullptr);
    EXPECT_EQ(kq->kernel_stack_bytes, 896 + 2 * 1024 + 1024);
    EXPECT_EQ(kq->c_depth, 1);
    EXPECT_EQ(kq->core_bytes(), 2 * 13440 + 2 * 9344 + 8192 + 16 + 3968);
    EXPECT_GT(kq->core_bytes() + 32 * 64 * 4, 65536) << "a second C tile would not fit";
    EXPECT_EQ(budget_for(GGML_TYPE_Q4_K, 4)->c_depth, 2);
    // The K-quant bfp16 program at TN = 64 (A in K halves; mm_kquant_bfp16.cc "Data memory budget, TN =
    // 64"): W sized to Q5_K (Q6_K has no 64-token program), two 64 x 128 A halves, one 16 KB C tile.
    const KernelBudget * kq64 = budget_for(*prefill_contract_for(GGML_TYPE_Q4_K), 64);
    ASSERT_NE(kq64, nullptr);
    EXPECT_EQ(kq64->kernel_stack_bytes, 2304 + 896 + 1344 + 1024);
    EXPECT_EQ(kq64->c_depth, 1);
    EXPECT_EQ(kq64->core_bytes(), 2 * 11264 + 2 * 9280 + 16384 + 16 + 5568);
    EXPECT_EQ(budget_for(*prefill_contract_for(GGML_TYPE_Q6_K), 64), nullptr) << "Q6_K has no TN 64 program";

    ModelShape s;
    s.weight_type = GGML_TYPE_Q4_K;
    s.family = KernelFamily::int8xint4;
    s.m = 4096, s.n = 512, s.k = 4096;
    s.tile = {64, 32, 256};
    s.m_tiles = 64, s.n_tiles = 16, s.k_tiles = 16;
    s.weight_bytes = 9216.0 * 64 * 16;
    s.activation_bytes = 9344.0 * 16 * 16;
    s.out_bytes = 4.0 * 4096 * 512;
    const ModelledTime prefill = model.invocation(s);
    EXPECT_EQ(prefill.infeasible, nullptr) << prefill.infeasible;
    // Single-buffered C: the core waits for its 8 KB C tile to leave at 8 bytes per cycle per output tile.
    EXPECT_EQ(prefill.c_drain_cycles, 32 * 64 * 4 / 8.0);
    s.tile.n = 4, s.n = 1, s.n_tiles = 1;
    const ModelledTime decode = model.invocation(s);
    EXPECT_EQ(decode.infeasible, nullptr);
    EXPECT_EQ(decode.c_drain_cycles, 0) << "two C buffers: the drain overlaps the next tile";
    s.weight_type = GGML_TYPE_Q8_0;
    s.tile = {64, 32, 256};
    EXPECT_EQ(model.invocation(s).infeasible, nullptr) << "legacy TN=32 fits with 496 bytes to spare";
}

// What single-buffered C costs: the same shape with the drain and without it differs by the drain
// cycles once per output tile of the busiest core, at the clock, not scaled by the efficiency tier.
TEST(Feasibility, SingleBufferedCChargesTheDrainPerOutputTile) {
    const NpuPreset & p = *find_npu_preset("krackan");
    const TimingModel model(p);
    ModelShape s;
    s.weight_type = GGML_TYPE_Q4_K;
    s.family = KernelFamily::int8xint4;
    s.m = 4096, s.n = 512, s.k = 4096;
    s.tile = {64, 32, 256};
    s.m_tiles = 64, s.n_tiles = 16, s.k_tiles = 16;
    s.weight_bytes = 9216.0 * 64 * 16;
    s.activation_bytes = 9344.0 * 16 * 16;
    s.out_bytes = 4.0 * 4096 * 512;
    const ModelledTime t = model.invocation(s);
    // 64 row tiles round robin over 8 columns, 16 token tiles each, shared by a column's 4 cores: 32
    // waves. A tile's kernel cycles: 16 calls and the C-tile clear, restated from the kernels' operation
    // counts (reference-timing.h), not read back from the model.
    ASSERT_EQ(p.columns, 8);
    ASSERT_EQ(p.rows, 4);
    const double waves = 8.0 * 16 / 4;
    const KernelProfile & k = *kernel_profile(GGML_TYPE_Q4_K, 32);
    const double tile_cycles = 16 * xdna_test::reference_call_cycles(k.call, p) + xdna_test::reference_call_cycles(k.zero, p);
    const double kernel_us = waves * tile_cycles / (p.clock_ghz * 1e3) / p.efficiency();
    EXPECT_NEAR(t.compute_us - kernel_us, waves * 1024 / (p.clock_ghz * 1e3), 1e-9 * t.compute_us);
}

}  // namespace
}  // namespace xdna
