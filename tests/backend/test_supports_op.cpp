// What the device claims: every claimed weight type at any batch size, nothing it cannot run.
#include "backend-harness.h"
#include "contracts/matmul-contract.h"
#include "test-random.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

using namespace xdna_test;

namespace {

struct Ctx {
    ggml_context * ctx;
    Ctx() {
        ggml_init_params p = {ggml_tensor_overhead() * 16, nullptr, true};
        ctx = ggml_init(p);
    }
    ~Ctx() { ggml_free(ctx); }
};

bool supports_mul_mat(ggml_type wt, ggml_type xt, int64_t k, int64_t n) {
    Ctx c;
    ggml_tensor * w = ggml_new_tensor_2d(c.ctx, wt, k, 64);
    ggml_tensor * x = ggml_new_tensor_2d(c.ctx, xt, k, n);
    return ggml_backend_dev_supports_op(xdna_device(), ggml_mul_mat(c.ctx, w, x));
}

TEST(SupportsOp, ClaimedWeightTypesAtEveryBatchSize) {
    ASSERT_FALSE(xdna::all_matmul_contracts().empty());
    for (const auto & c : xdna::all_matmul_contracts()) {
        if (c.use != xdna::ContractUse::any) continue;  // a prefill alternative: tested with its own reference  // every row of the contract table
        const ggml_type t = c.weight_type;
        for (int64_t n : {1, 2, 31, 512, 1000}) {
            EXPECT_TRUE(supports_mul_mat(t, GGML_TYPE_F32, 256, n)) << ggml_type_name(t) << " n=" << n;
        }
    }
}

// supports_op and the planner agree on K: what supports_op accepts is planned and computed exactly (a
// graph the device accepted must never fail at planning), and a row that is not a whole number of
// blocks is refused up front (it stays on the CPU).
TEST(SupportsOp, AcceptedRowLengthsArePlannedAndRaggedOnesRefused) {
    for (const auto & c : xdna::all_matmul_contracts()) {
        if (c.use != xdna::ContractUse::any) continue;  // a prefill alternative: tested with its own reference
        const ggml_type t = c.weight_type;
        const int64_t blck = ggml_blck_size(t);
        for (int64_t blocks : {1, 3, 9}) {  // K below, between and above the contract's tile depth
            const int64_t k = blck * blocks * (blck == 1 ? 7 : 1);
            SCOPED_TRACE(testing::Message() << ggml_type_name(t) << " K=" << k << " seed=" << test_seed());
            ASSERT_TRUE(supports_mul_mat(t, GGML_TYPE_F32, k, 3));
            const MatmulCase mc{t, k, 64, 3};
            const std::vector<uint8_t> w = random_weights(t, k, mc.m);
            const std::vector<float> x = random_floats(activation_count(mc));
            EXPECT_EQ(contract_mismatch(mc, w, x, run_matmul(xdna_backend(), mc, w, x).out), "");
        }
        if (blck > 1) {
            EXPECT_FALSE(supports_mul_mat(t, GGML_TYPE_F32, blck * 2 + blck / 2, 3)) << ggml_type_name(t);
        }
    }
}

TEST(SupportsOp, RefusesWhatHasNoKernel) {
    EXPECT_FALSE(supports_mul_mat(GGML_TYPE_IQ2_XXS, GGML_TYPE_F32, 256, 8));  // IQ types stay on the CPU
    EXPECT_FALSE(supports_mul_mat(GGML_TYPE_IQ4_NL, GGML_TYPE_F32, 256, 8));
    EXPECT_FALSE(supports_mul_mat(GGML_TYPE_MXFP4, GGML_TYPE_F32, 256, 8));
    EXPECT_FALSE(supports_mul_mat(GGML_TYPE_Q4_K, GGML_TYPE_Q8_0, 256, 8));    // quantized src1
    Ctx c;
    ggml_tensor * a = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 16, 16);
    EXPECT_FALSE(ggml_backend_dev_supports_op(xdna_device(), ggml_add(c.ctx, a, a)));
    EXPECT_FALSE(ggml_backend_dev_supports_op(xdna_device(), ggml_soft_max(c.ctx, a)));
}

bool supports_mul_mat_id(ggml_type wt, ggml_type xt, int64_t n_tokens) {
    Ctx c;
    // As llama.cpp's loader probes an expert stack: 8 of 128 experts, 512 tokens.
    ggml_tensor * w = ggml_new_tensor_3d(c.ctx, wt, 256, 64, 128);
    ggml_tensor * x = ggml_new_tensor_3d(c.ctx, xt, 256, 8, n_tokens);
    ggml_tensor * ids = ggml_new_tensor_2d(c.ctx, GGML_TYPE_I32, 8, n_tokens);
    return ggml_backend_dev_supports_op(xdna_device(), ggml_mul_mat_id(c.ctx, w, x, ids));
}

TEST(SupportsOp, MulMatIdForClaimedWeightTypesOnly) {
    for (const auto & c : xdna::all_matmul_contracts()) {
        if (c.use != xdna::ContractUse::any) continue;  // a prefill alternative: tested with its own reference
        for (int64_t n : {1, 7, 512}) {
            EXPECT_TRUE(supports_mul_mat_id(c.weight_type, GGML_TYPE_F32, n)) << ggml_type_name(c.weight_type) << " n=" << n;
        }
    }
    EXPECT_FALSE(supports_mul_mat_id(GGML_TYPE_IQ2_XXS, GGML_TYPE_F32, 8));
    EXPECT_FALSE(supports_mul_mat_id(GGML_TYPE_MXFP4, GGML_TYPE_F32, 8));
    EXPECT_FALSE(supports_mul_mat_id(GGML_TYPE_Q4_K, GGML_TYPE_Q8_0, 8));
}

// llama.cpp keeps tied embeddings in a CPU weight buffer (get_rows reads them) and uses them as the
// output head: the XDNA device would re-pack them for every token, so it leaves that matmul to the CPU.
// Weights in an ordinary (compute) buffer are still taken.
TEST(SupportsOp, WeightsInAnotherBackendsWeightBufferAreRefused) {
    for (const auto usage : {GGML_BACKEND_BUFFER_USAGE_WEIGHTS, GGML_BACKEND_BUFFER_USAGE_COMPUTE}) {
        Ctx c;
        ggml_tensor * w = ggml_new_tensor_2d(c.ctx, GGML_TYPE_Q6_K, 256, 64);
        ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(c.ctx, ggml_backend_cpu_buffer_type());
        ASSERT_NE(buf, nullptr);
        ggml_backend_buffer_set_usage(buf, usage);
        ggml_init_params p = {ggml_tensor_overhead() * 4, nullptr, true};
        ggml_context * g = ggml_init(p);
        ggml_tensor * x = ggml_new_tensor_2d(g, GGML_TYPE_F32, 256, 1);
        const bool claimed = ggml_backend_dev_supports_op(xdna_device(), ggml_mul_mat(g, w, x));
        EXPECT_EQ(claimed, usage != GGML_BACKEND_BUFFER_USAGE_WEIGHTS) << "usage " << usage;
        ggml_free(g);
        ggml_backend_buffer_free(buf);
    }
}

TEST(SupportsOp, ViewOpsAreNoOps) {
    Ctx c;
    ggml_tensor * a = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 16, 16);
    EXPECT_TRUE(ggml_backend_dev_supports_op(xdna_device(), ggml_reshape_1d(c.ctx, a, 256)));
    EXPECT_TRUE(ggml_backend_dev_supports_op(xdna_device(), ggml_view_1d(c.ctx, a, 8, 0)));
    EXPECT_TRUE(ggml_backend_dev_supports_op(xdna_device(), ggml_transpose(c.ctx, a)));
    EXPECT_TRUE(ggml_backend_dev_supports_op(xdna_device(), ggml_permute(c.ctx, ggml_reshape_3d(c.ctx, a, 4, 4, 16), 1, 0, 2, 3)));
}

TEST(SupportsOp, ViewsOfPackedWeightsAreRefusedButReadable) {
    // A view into a packed weight is not a whole packed matrix: refused, yet get_tensor on it gives the
    // original bytes so the CPU can take the op.
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(xdna_device());
    Ctx c;
    ggml_tensor * w = ggml_new_tensor_2d(c.ctx, GGML_TYPE_Q8_0, 64, 10);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(c.ctx, buft);
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    const std::vector<uint8_t> bytes = random_weights(GGML_TYPE_Q8_0, 64, 10);
    ggml_backend_tensor_set(w, bytes.data(), 0, bytes.size());

    ggml_tensor * rows = ggml_view_2d(c.ctx, w, 64, 4, w->nb[1], 3 * w->nb[1]);
    ggml_tensor * x = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 64, 2);
    EXPECT_FALSE(ggml_backend_dev_supports_op(xdna_device(), ggml_mul_mat(c.ctx, rows, x)));
    EXPECT_TRUE(ggml_backend_dev_supports_op(xdna_device(), ggml_mul_mat(c.ctx, w, x)));

    std::vector<uint8_t> got(ggml_nbytes(rows));
    ggml_backend_tensor_get(rows, got.data(), 0, got.size());
    EXPECT_EQ(0, std::memcmp(got.data(), bytes.data() + 3 * w->nb[1], got.size()));
    ggml_backend_buffer_free(buf);
}

}  // namespace

namespace {

// What the contract table does not cover stays on the CPU: every ggml type without a contract row.
TEST(SupportsOp, EveryTypeWithoutAContractIsRefused) {
    int refused = 0;
    for (int i = 0; i < GGML_TYPE_COUNT; ++i) {
        const ggml_type t = static_cast<ggml_type>(i);
        const int64_t blck = ggml_blck_size(t);
        if (xdna::matmul_contract_for(t) != nullptr || ggml_type_size(t) == 0 || blck <= 0 || 256 % blck != 0) {
            continue;  // claimed, or a removed type (no size), or one whose blocks do not fit K = 256
        }
        EXPECT_FALSE(supports_mul_mat(t, GGML_TYPE_F32, 256, 8)) << ggml_type_name(t);
        ++refused;
    }
    EXPECT_GT(refused, 0);
}

// supports_op says why it refuses, at debug level.
struct CapturedLog {
    ggml_log_callback previous = nullptr;
    void *            previous_data = nullptr;
    std::string       debug;
    CapturedLog() {
        ggml_log_get(&previous, &previous_data);
        ggml_log_set(
            [](ggml_log_level level, const char * text, void * self) {
                if (level == GGML_LOG_LEVEL_DEBUG) {
                    static_cast<CapturedLog *>(self)->debug += text;
                }
            },
            this);
    }
    ~CapturedLog() { ggml_log_set(previous, previous_data); }
};

TEST(SupportsOp, RefusalReasonIsLoggedAtDebugLevel) {
    Ctx c;
    ggml_tensor * w = ggml_new_tensor_2d(c.ctx, GGML_TYPE_Q4_K, 256, 64);
    ggml_tensor * x = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 256, 4);
    ggml_tensor * mm = ggml_mul_mat(c.ctx, w, x);
    // An F16 output with I32 activations: neither the NPU nor (as a device that owns layers) the host-op
    // path runs it, and no other test asks about it, so this reason is logged here first.
    mm->type = GGML_TYPE_F16;
    x->type = GGML_TYPE_I32;
    CapturedLog log;
    EXPECT_FALSE(ggml_backend_dev_supports_op(xdna_device(), mm));
    EXPECT_NE(log.debug.find("activation type i32"), std::string::npos) << log.debug;
    EXPECT_NE(log.debug.find("refused"), std::string::npos) << log.debug;
    if (ggml_backend_dev_type(xdna_device()) == GGML_BACKEND_DEVICE_TYPE_GPU) {
        EXPECT_NE(log.debug.find("; host-op path: "), std::string::npos) << log.debug;
    }
}

}  // namespace
