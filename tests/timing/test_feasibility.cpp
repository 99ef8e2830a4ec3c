// Feasibility checks (src/sim/feasibility.h): every limit is checked, and the model flags the kernels
// whose design breaks one. The expected verdicts are recomputed here from the budget figures, not read
// back from the checker.
#include "sim/feasibility.h"
#include "sim/timing-model.h"

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
    for (const KernelBudget & b : kernel_budgets()) {
        // Independent arithmetic: the design's buffers without its flat reserves, plus the kernel's stack.
        const int bytes = b.design_core_bytes - 1024 - 512 + b.kernel_stack_bytes;
        const bool expect_fit = bytes <= 65536 && b.accumulators <= 8 && b.core_in_used <= 2 && b.core_out_used <= 2 &&
                                b.memtile_in_used <= 6 && b.memtile_out_used <= 6 && b.shim_out_used <= 2 &&
                                b.shim_in_used <= 2 && b.program_bytes <= 16384;
        EXPECT_EQ(violations(b).empty(), expect_fit) << b.family << " TN=" << b.tile_n << ": " << bytes << " bytes";
    }
    // The K-quant program at TN = 32: the design double-buffers C (2 x 8 KB) and reserves 1.5 KB for the
    // stack and static data, but the kernel's pass keeps 2944 B of scratch (row scales, broadcast token
    // sums) plus ~1 KB of frames on the stack: 65936 of 65536 bytes. Decode (TN = 4) fits.
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
    ASSERT_NE(prefill.infeasible, nullptr);
    EXPECT_NE(std::string(prefill.infeasible).find("65936"), std::string::npos) << prefill.infeasible;
    EXPECT_GT(prefill.total_us, 0);  // still modelled
    s.tile.n = 4, s.n = 1, s.n_tiles = 1;
    EXPECT_EQ(model.invocation(s).infeasible, nullptr);
    s.weight_type = GGML_TYPE_Q8_0;
    s.tile = {64, 32, 256};
    EXPECT_EQ(model.invocation(s).infeasible, nullptr) << "legacy TN=32 fits with 512 bytes to spare";
}

}  // namespace
}  // namespace xdna
