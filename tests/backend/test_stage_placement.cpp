// Where the batch plan puts each op's invocations (plan/batch-plan.cpp fill_invocations): the earliest stage
// after what it reads and after every op before it in graph order that touches its memory with a write,
// and each stage's invocations grouped by program. llama.cpp orders a layer's projections Q, rope(Q), K,
// rope(K), V: K's matmul belongs in Q's stage, not beside Q's ROPE a stage later, where two more changes of
// program (xclbin switches on an NPU) come with it.
#include "context-buffer.h"
#include "plan/batch-plan.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace xdna;

// The stage of the invocation whose written operand starts at `slice`.
int stage_writing(const Batch & b, const BufferSlice & slice) {
    for (size_t s = 0; s < b.stages(); ++s) {
        for (size_t j = b.stage_begin(s); j < b.stage_end(s); ++j) {
            for (const Operand & o : b.invocations[j].operands()) {
                if (o.written() && o.slice.buffer == slice.buffer && o.slice.offset == slice.offset) return static_cast<int>(s);
            }
        }
    }
    return -1;
}

// Changes of program between consecutive invocations, as the timing model charges them.
int program_changes(const Batch & b) {
    int n = 0;
    for (size_t j = 1; j < b.invocations.size(); ++j) {
        n += same_key(b.invocations[j - 1].key, b.invocations[j].key) ? 0 : 1;
    }
    return n;
}

// A graph of F32 activations (256 x 4) and Q8_0 weights (256 x 256) in one context, planned into a batch.
// Run with GGML_XDNA_NPU_OPS=layer (CTest backend-stage-placement): the process reads it once.
class StagePlacement : public ::testing::Test {
protected:
    void SetUp() override {
        if (!npu_op_offered("add")) GTEST_SKIP() << "ADD not offered to the NPU";
    }
    ggml_tensor * activations() { return ggml_new_tensor_2d(c_.ctx, GGML_TYPE_F32, 256, 4); }
    ggml_tensor * weights() { return ggml_new_tensor_2d(c_.ctx, GGML_TYPE_Q8_0, 256, 256); }
    ggml_context * ctx() { return c_.ctx; }
    BufferSlice slice_of(const ggml_tensor * t) { return buf_.slice_of(t); }

    // Plans `nodes`; with `from`, the resolver places `from` where `to` is, as ggml's allocator does when
    // it reuses memory in graph order.
    const Batch & plan(const std::vector<ggml_tensor *> & nodes, const ggml_tensor * from = nullptr,
                       const ggml_tensor * to = nullptr) {
        TensorResolver resolve;
        resolve.slice_of = [this, from, to](const ggml_tensor * t) { return buf_.slice_of(t == from ? to : t); };
        std::string why;
        EXPECT_TRUE(layout_batch(nodes, resolve, plan_, why)) << why;
        scratch_ = std::make_unique<xdna_test::ScratchBuffer>(plan_.scratch_bytes);
        EXPECT_TRUE(fill_invocations(plan_, resolve, scratch_.get(), why)) << why;
        return plan_.batch;
    }

private:
    xdna_test::Context                        c_;
    xdna_test::ContextBuffer                  buf_{c_.ctx};
    BatchPlan                                 plan_;
    std::unique_ptr<xdna_test::ScratchBuffer> scratch_;
};

}  // namespace

TEST_F(StagePlacement, AProjectionJoinsTheStageOfTheOneBeforeItsNeighboursOp) {
    ggml_tensor * x = activations();
    ggml_tensor * q = ggml_mul_mat(ctx(), weights(), x);
    ggml_tensor * a = ggml_add(ctx(), q, q);          // another program, reading q (rope(Q)'s place)
    ggml_tensor * k = ggml_mul_mat(ctx(), weights(), x);  // reads only x, as Q does
    const Batch & b = plan({q, a, k});
    std::string kinds;
    for (const Invocation & i : b.invocations) kinds += std::string(kernel_kind_name(i.kind())) + " ";
    ASSERT_EQ(b.invocations.size(), 3u) << kinds;  // two matmuls (x quantized by the host), the ADD
    EXPECT_EQ(stage_writing(b, slice_of(k)), stage_writing(b, slice_of(q))) << "K's matmul in Q's stage";
    EXPECT_GT(stage_writing(b, slice_of(a)), stage_writing(b, slice_of(q)));
    EXPECT_EQ(b.invocations[0].kind(), KernelKind::matmul);
    EXPECT_EQ(b.invocations[1].kind(), KernelKind::matmul);
    EXPECT_EQ(b.invocations[2].kind(), KernelKind::add);
    EXPECT_EQ(program_changes(b), 1);  // matmul -> add; K beside the ADD, a stage later, would make 2
}

// ggml's allocator reuses memory in graph order: here K's output lands where r was, which the ADD before
// it reads. K reads nothing the ADD writes, but must still run after it, not in Q's stage.
TEST_F(StagePlacement, AnOpWritingWhatAnEarlierOpReadsRunsAfterIt) {
    ggml_tensor * x = activations();
    ggml_tensor * r = activations();
    ggml_tensor * q = ggml_mul_mat(ctx(), weights(), x);
    ggml_tensor * a = ggml_add(ctx(), q, r);
    ggml_tensor * k = ggml_mul_mat(ctx(), weights(), x);
    const Batch & b = plan({q, a, k}, k, r);
    ASSERT_EQ(b.invocations.size(), 3u);
    const int sq = stage_writing(b, slice_of(q)), sa = stage_writing(b, slice_of(a)), sk = stage_writing(b, slice_of(r));
    ASSERT_GE(sq, 0);
    EXPECT_GT(sa, sq);
    EXPECT_GT(sk, sa) << "K overwrites r, which the ADD reads: it must run in a later stage";
}

// Ops that write the same memory keep their graph order too (the second's result is the one left).
TEST_F(StagePlacement, TwoOpsWritingTheSameMemoryKeepTheirOrder) {
    ggml_tensor * x = activations();
    ggml_tensor * y = activations();
    ggml_tensor * q = ggml_mul_mat(ctx(), weights(), x);
    ggml_tensor * a = ggml_add(ctx(), q, y);   // after q: it reads it
    ggml_tensor * a2 = ggml_add(ctx(), x, y);  // reads inputs only, but writes where a does
    const Batch & b = plan({q, a, a2}, a2, a);
    int sa = -1, sa2 = -1;
    for (size_t s = 0; s < b.stages(); ++s) {
        for (size_t j = b.stage_begin(s); j < b.stage_end(s); ++j) {
            if (b.invocations[j].kind() != KernelKind::add) continue;
            const Operand * in = b.invocations[j].operand("a");
            ASSERT_NE(in, nullptr);
            (in->slice.offset == slice_of(q).offset ? sa : sa2) = static_cast<int>(s);
        }
    }
    ASSERT_GE(sa, 0);
    ASSERT_GE(sa2, 0);
    EXPECT_GT(sa2, sa) << "the second write to the same memory must stay the second";
}

// A decoded token's norm makes its matmuls' activation tiles itself (batch-plan.cpp norm_quantizing_for:
// the rms_norm design's quantizing program), so no act_quant invocation and no change of program to it
// run between the norm and the projections; it still writes its output for any other reader. Two tokens
// keep the act_quant invocation (the program takes one row).
TEST_F(StagePlacement, ADecodedTokensNormQuantizesForItsMatmuls) {
    for (const int64_t tokens : {1, 2}) {
        SCOPED_TRACE(tokens);
        ggml_tensor * x = ggml_new_tensor_2d(ctx(), GGML_TYPE_F32, 256, tokens);
        ggml_tensor * g = ggml_new_tensor_1d(ctx(), GGML_TYPE_F32, 256);
        ggml_tensor * y = ggml_mul(ctx(), ggml_rms_norm(ctx(), x, 1e-5f), g);
        ggml_tensor * q = ggml_mul_mat(ctx(), weights(), y);
        ggml_tensor * k = ggml_mul_mat(ctx(), weights(), y);
        const Batch & b = plan({y, q, k});
        std::string kinds;
        for (const Invocation & i : b.invocations) kinds += std::string(kernel_kind_name(i.kind())) + " ";
        ASSERT_EQ(b.invocations.size(), tokens == 1 ? 3u : 4u) << kinds;
        const Invocation & norm = b.invocations[0];
        ASSERT_EQ(norm.kind(), KernelKind::rms_norm) << kinds;
        ASSERT_NE(norm.operand("y"), nullptr);
        EXPECT_EQ(norm.operand("y")->slice.offset, slice_of(y).offset) << "the norm's output is written as before";
        const Operand * tiles = norm.operand("tiles");
        if (tokens == 2) {
            EXPECT_EQ(tiles, nullptr);
            EXPECT_EQ(b.invocations[1].kind(), KernelKind::act_quant) << kinds;
            continue;
        }
        ASSERT_NE(tiles, nullptr) << "a decoded token's norm writes its matmuls' activation tiles";
        EXPECT_EQ(program_changes(b), 1) << kinds;  // rms_norm -> matmul
        for (size_t j = 1; j < 3; ++j) {
            ASSERT_EQ(b.invocations[j].kind(), KernelKind::matmul) << kinds;
            EXPECT_EQ(b.invocations[j].operand("activations")->slice.offset, tiles->slice.offset) << "the matmuls read the norm's tiles";
        }
        EXPECT_GT(stage_writing(b, slice_of(q)), stage_writing(b, slice_of(y)));
    }
}
