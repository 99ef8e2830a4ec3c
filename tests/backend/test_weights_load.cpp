// The load-time path: weights set into a WEIGHTS buffer are converted once, read back byte-exactly,
// and every claimed weight type multiplies correctly on fresh random data of odd shapes: bit for bit
// equal to the contract reference for quantized weights (within the float contracts' bound for
// F16 / BF16 / F32; contract-reference.h), and close to the CPU backend (cpu_nmse_bound).
#include "backend-harness.h"
#include "contracts/matmul-contract.h"
#include "test-random.h"

#include "plan/weight-packing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

using namespace xdna_test;

namespace {

std::vector<double> to_double(const std::vector<float> & v) {
    return std::vector<double>(v.begin(), v.end());
}

void check_case(const MatmulCase & c, bool weights_usage = true, bool chunked = false) {
    SCOPED_TRACE(testing::Message() << ggml_type_name(c.wtype) << " k=" << c.k << " m=" << c.m << " n=" << c.n
                                    << " seed=" << test_seed());
    const int64_t mats = c.w_ne2 * c.w_ne3;
    const std::vector<uint8_t> w = random_weights(c.wtype, c.k, c.m * mats);
    const std::vector<float> x = random_floats(activation_count(c));

    const MatmulResult npu = run_matmul(xdna_backend(), c, w, x, weights_usage, chunked);
    const MatmulResult cpu = run_matmul(cpu_backend(), c, w, x);
    ASSERT_EQ(npu.out.size(), cpu.out.size());
    ASSERT_EQ(0, std::memcmp(npu.readback.data(), w.data(), w.size())) << "get_tensor is not the original bytes";

    const double vs_cpu = nmse(to_double(cpu.out), npu.out);
    EXPECT_LE(vs_cpu, cpu_nmse_bound(c.wtype, c.n)) << "NMSE vs CPU backend";
    const std::string mismatch = contract_mismatch(c, w, x, npu.out);
    EXPECT_EQ(mismatch, "") << "vs the contract reference";
    // The CPU backend must agree with the same reference: otherwise the reference is what is wrong.
    EXPECT_LE(nmse(contract_reference(c, w, x), cpu.out), cpu_nmse_bound(c.wtype, c.n)) << "reference vs CPU backend";
    std::printf("  %-5s k=%-5lld m=%-4lld n=%-3lld  NMSE vs CPU %.2e  vs contract: %s\n", ggml_type_name(c.wtype),
                (long long) c.k, (long long) c.m, (long long) c.n, vs_cpu,
                !mismatch.empty() ? "MISMATCH" : reference_is_quantized(c.wtype) ? "bit-exact" : "within bound");
}

class ClaimedTypes : public ::testing::TestWithParam<ggml_type> {};

// K: a multiple of the block size that is not a multiple of the contract's tile K where possible
// (exercising K padding); M = 67 (row padding); N = 1 (decode), 5 and 37 (token padding, two tiles).
TEST_P(ClaimedTypes, LoadConvertRoundTripAndMatmul) {
    const ggml_type t = GetParam();
    const int64_t blck = ggml_blck_size(t);
    const int64_t k = blck == 256 ? 768 : (blck == 32 ? 32 * 37 : 200);
    for (int64_t n : {1, 5, 37}) {
        check_case({t, k, 67, n});
    }
}

TEST_P(ClaimedTypes, ChunkedUploadGivesTheSameWeights) {
    const ggml_type t = GetParam();
    check_case({t, ggml_blck_size(t) == 256 ? 512 : 256, 70, 3}, true, /*chunked=*/true);
}

TEST_P(ClaimedTypes, PlainComputeBufferWeights) {
    // Not a WEIGHTS buffer (as in test-backend-ops): packed on the fly at compute time.
    const ggml_type t = GetParam();
    check_case({t, ggml_blck_size(t) == 256 ? 256 : 96, 33, 9}, /*weights_usage=*/false);
}

// Every weight type of the contract table: a new contract row is tested here without naming it.
std::vector<ggml_type> contract_weight_types() {
    std::vector<ggml_type> types;
    for (const auto & c : xdna::all_matmul_contracts()) {
        if (c.use != xdna::ContractUse::any) continue;  // a prefill alternative: tested with its own reference
        types.push_back(c.weight_type);
    }
    return types;
}

INSTANTIATE_TEST_SUITE_P(All, ClaimedTypes, ::testing::ValuesIn(contract_weight_types()),
                         [](const auto & info) { return std::string(ggml_type_name(info.param)); });

TEST(WeightsLoad, BroadcastBatchDims) {
    MatmulCase c{GGML_TYPE_Q4_K, 512, 65, 7};
    c.w_ne2 = 2;
    c.bcast2 = 2;
    c.bcast3 = 3;
    check_case(c);
}

TEST(WeightsLoad, HalfPrecisionActivations) {
    // F16 and BF16 src1 against the CPU where it has the case (16-bit weights) ...
    for (ggml_type t : {GGML_TYPE_F16, GGML_TYPE_BF16}) {
        MatmulCase c{t, 200, 40, 6};
        c.xtype = t;
        check_case(c);
    }
    // ... and where the CPU has not (quantized weights), against the contract alone.
    MatmulCase c{GGML_TYPE_Q8_0, 256, 40, 6};
    c.xtype = GGML_TYPE_F16;
    SCOPED_TRACE(testing::Message() << "q8_0 x f16, seed=" << test_seed());
    const std::vector<uint8_t> w = random_weights(c.wtype, c.k, c.m);
    const std::vector<float> x = random_floats(activation_count(c));
    const MatmulResult npu = run_matmul(xdna_backend(), c, w, x);
    EXPECT_EQ(contract_mismatch(c, w, x, npu.out), "");
}

TEST(WeightsLoad, LlamaShapedPrefillAndDecode) {
    // An 8B attn_q-sized slice: K = 4096, a full tile row count, prefill and decode token counts.
    check_case({GGML_TYPE_Q4_K, 4096, 256, 64});
    check_case({GGML_TYPE_Q6_K, 4096, 128, 1});
}

TEST(WeightsLoad, NonFiniteScalesAreStoredFaithfully) {
    // A block scale of NaN or Inf: no crash, exact bytes back, and the same non-finite rows as the CPU.
    const MatmulCase c{GGML_TYPE_Q4_0, 64, 8, 2};
    std::vector<uint8_t> w = random_weights(c.wtype, c.k, c.m);
    const size_t row = ggml_row_size(c.wtype, c.k);
    const ggml_fp16_t nan = ggml_fp32_to_fp16(NAN), inf = ggml_fp32_to_fp16(INFINITY);
    std::memcpy(w.data() + 2 * row, &nan, sizeof nan);  // first block of row 2: d = NaN
    std::memcpy(w.data() + 5 * row, &inf, sizeof inf);  // first block of row 5: d = Inf
    const std::vector<float> x = random_floats(activation_count(c));
    const MatmulResult npu = run_matmul(xdna_backend(), c, w, x);
    const MatmulResult cpu = run_matmul(cpu_backend(), c, w, x);
    ASSERT_EQ(0, std::memcmp(npu.readback.data(), w.data(), w.size()));
    // Non-finite values follow the contract's arithmetic exactly too (NaN matches NaN).
    EXPECT_EQ(contract_mismatch(c, w, x, npu.out), "");
    for (size_t i = 0; i < npu.out.size(); ++i) {
        ASSERT_EQ(std::isfinite(npu.out[i]), std::isfinite(cpu.out[i])) << "element " << i;
        if (std::isfinite(cpu.out[i])) {
            // Finite rows agree to activation-quantization noise (the CPU's Q8_0 keeps fp16 block scales,
            // the contract fp32 ones: up to 2^-11 relative per block); exactness is checked above.
            EXPECT_NEAR(npu.out[i], cpu.out[i], 1e-2 * (1 + std::fabs(cpu.out[i])));
        }
    }
    EXPECT_FALSE(std::isfinite(npu.out[2])) << "row with a NaN scale must not turn finite";
}

TEST(WeightsLoad, DeviceErrorsFallBackToTheCpuWithCorrectResults) {
    auto fail_runs = reinterpret_cast<ggml_backend_xdna_set_fail_runs_t>(
        ggml_backend_reg_get_proc_address(ggml_backend_xdna_reg(), "ggml_backend_xdna_set_fail_runs"));
    ASSERT_NE(fail_runs, nullptr);
    auto fallback_runs = reinterpret_cast<ggml_backend_xdna_fallback_runs_t>(
        ggml_backend_reg_get_proc_address(ggml_backend_xdna_reg(), "ggml_backend_xdna_fallback_runs"));
    ASSERT_NE(fallback_runs, nullptr);
    const uint64_t before = fallback_runs(xdna_backend());
    ASSERT_TRUE(fail_runs(xdna_device(), true));
    const MatmulCase c{GGML_TYPE_Q4_K, 512, 70, 9};
    const std::vector<uint8_t> w = random_weights(c.wtype, c.k, c.m);
    const std::vector<float> x = random_floats(activation_count(c));
    const MatmulResult npu = run_matmul(xdna_backend(), c, w, x);
    fail_runs(xdna_device(), false);
    // The fallback really ran (one submission), instead of the device having ignored the switch.
    EXPECT_EQ(fallback_runs(xdna_backend()), before + 1);
    const MatmulResult cpu = run_matmul(cpu_backend(), c, w, x);
    EXPECT_LE(nmse(to_double(cpu.out), npu.out), cpu_nmse_bound(c.wtype, c.n));
    // The fallback computes the contract exactly, as the device would have.
    EXPECT_EQ(contract_mismatch(c, w, x, npu.out), "");
    // A working device again: no further fallback.
    run_matmul(xdna_backend(), c, w, x);
    EXPECT_EQ(fallback_runs(xdna_backend()), before + 1);
}

TEST(WeightsLoad, BufferTypeIsNotHostAndPadsOnlyWeights) {
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(xdna_device());
    EXPECT_FALSE(ggml_backend_buft_is_host(buft));
    ggml_init_params params = {ggml_tensor_overhead() * 4, nullptr, true};
    ggml_context * ctx = ggml_init(params);
    ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_K, 256, 3);  // 3 rows -> padded to a 64-row tile
    ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 3);
    ggml_tensor * y = ggml_scale(ctx, a, 2.0f);                             // computed: never padded
    EXPECT_GT(ggml_backend_buft_get_alloc_size(buft, w), ggml_nbytes(w));
    EXPECT_EQ(ggml_backend_buft_get_alloc_size(buft, y), ggml_nbytes(y));
    ggml_free(ctx);
}

// The layout of a weight is the consuming op's (plan/weight-packing.h): a matrix of a contract type is
// the matmul's, in its tiles; a norm weight (a vector), a 1-row matrix and a leaf whose tiles would pad it
// by gigabytes are no op's and stay in ggml's layout, also in a weights buffer.
TEST(WeightsLoad, TheConsumingOpChoosesTheLayout) {
    ggml_init_params params = {ggml_tensor_overhead() * 8, nullptr, true};
    ggml_context * ctx = ggml_init(params);
    ggml_tensor * q = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_K, 4096, 128);
    ggml_tensor * norm = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4096);
    ggml_tensor * row = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 4096, 1);
    ggml_tensor * wide = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 2, 2, 524281);
    xdna::WeightLayout L;
    const char * consumer = nullptr;
    EXPECT_TRUE(xdna::packed_layout_for(q, L, &consumer));
    EXPECT_STREQ(consumer, "matmul");
    EXPECT_GE(L.total_bytes, ggml_nbytes(q));
    EXPECT_FALSE(xdna::packed_layout_for(norm, L));
    EXPECT_FALSE(xdna::packed_layout_for(row, L));
    EXPECT_FALSE(xdna::packed_layout_for(wide, L));
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(xdna_device());
    EXPECT_EQ(ggml_backend_buft_get_alloc_size(buft, norm), ggml_nbytes(norm));
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(buft, 1 << 20);
    ASSERT_NE(buf, nullptr);
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ASSERT_EQ(ggml_backend_tensor_alloc(buf, norm, ggml_backend_buffer_get_base(buf)), GGML_STATUS_SUCCESS);
    std::vector<float> values(4096), back(4096);
    for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i) - 7.0f;
    ggml_backend_tensor_set(norm, values.data(), 0, ggml_nbytes(norm));
    EXPECT_EQ(std::memcmp(ggml_backend_buffer_get_base(buf), values.data(), ggml_nbytes(norm)), 0);  // ggml's layout in place
    ggml_backend_tensor_get(norm, back.data(), 0, ggml_nbytes(norm));
    EXPECT_EQ(back, values);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

}  // namespace
