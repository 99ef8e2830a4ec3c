// A NaN or an infinity in a token's activations reaches that token's outputs as NaN, as on the CPU
// backend, whichever contract computes the batch: the integer contracts carry it in the activation
// scale; the bfp16 prefill contracts (GGML_XDNA_PREFILL=bfp16, CTest backend-prefill-bfp16) cannot
// carry it in a block, so the activation tile flags the token and the kernel writes NaN into its
// outputs (BlockActTileFormat). The other rows are the contract's values bit for bit. Every family of
// the bfp16 programs is covered: K-quants, Q2_K/Q3_K, the legacy types, the float types (F32 with its
// 64-value K tile).
#include "backend-harness.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

using namespace xdna_test;

namespace {

void check_non_finite(ggml_type t, int64_t n) {
    const MatmulCase c{t, 512, 67, n};
    SCOPED_TRACE(testing::Message() << ggml_type_name(t) << " n=" << n << " seed=" << test_seed());
    const std::vector<uint8_t> w = random_weights(t, c.k, c.m);
    std::vector<float> x = random_floats(activation_count(c));
    const int64_t nan_tok = 3 % n, inf_tok = n - 1;
    x[nan_tok * c.k + 10] = std::numeric_limits<float>::quiet_NaN();
    x[inf_tok * c.k + 300] = -std::numeric_limits<float>::infinity();
    const MatmulResult npu = run_matmul(xdna_backend(), c, w, x);
    const MatmulResult cpu = run_matmul(cpu_backend(), c, w, x);
    int64_t finite_rows = 0, cpu_finite = 0;
    for (int64_t tok = 0; tok < n; ++tok) {
        const bool poisoned = tok == nan_tok || tok == inf_tok;
        for (int64_t r = 0; r < c.m; ++r) {
            const float v = npu.out[tok * c.m + r];
            if (poisoned) {
                ASSERT_TRUE(std::isnan(v)) << "token " << tok << " row " << r << ": " << v;
                cpu_finite += std::isfinite(cpu.out[tok * c.m + r]);
            } else {
                ASSERT_TRUE(std::isfinite(v)) << "token " << tok << " row " << r << ": a neighbour was corrupted";
            }
        }
        finite_rows += !poisoned;
    }
    EXPECT_GT(finite_rows, 0);
    std::printf("  %-5s n=%-3lld poisoned outputs the CPU backend gives as numbers: %lld of %lld\n", ggml_type_name(t),
                (long long) n, (long long) cpu_finite, (long long) (2 * c.m));
    // The float contracts' reference is an fp64 sum, which gives an infinite token +-inf where the core's
    // emulated product of an infinity is NaN (docs/kernels.md): their finite rows are checked against
    // the reference by the ClaimedTypes tests, and here the poisoned rows above.
    if (!ggml_is_quantized(t)) return;
    EXPECT_EQ(contract_mismatch(c, w, x, npu.out), "");
}

TEST(NonFiniteActivations, ReachTheirTokensOutputsOnly) {
    for (ggml_type t : {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q2_K,
                        GGML_TYPE_F16, GGML_TYPE_F32}) {
        for (int64_t n : {2, 37}) {  // decode (integer contract) and prefill (bfp16 under the option)
            check_non_finite(t, n);
        }
    }
}

}  // namespace
