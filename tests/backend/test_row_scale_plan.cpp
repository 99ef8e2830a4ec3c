// The row_scale planner (src/ops/row_scale/plan): which MUL it takes and which rows one invocation of the
// rows movement holds. MoE's expert outputs by their weights (llama-graph.cpp build_moe_ffn: experts
// [n_embd, n_expert_used, n_tokens] times weights [1, n_expert_used, n_tokens]) are one invocation of
// every row with a value per row; a b repeated along a dim gives stride 0 or one invocation per slice;
// a MUL of whole rows stays the add design's.
#include "context-buffer.h"
#include "ops/row_scale/row-scale-invocation.h"
#include "ops/row_scale/row-scale-plan.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace xdna;

struct Planned {
    bool                            ok = false;
    std::string                     why;
    std::vector<RowScaleInvocation> invs;
    std::vector<size_t>             w_offsets;
};

Planned plan(ggml_context * ctx, ggml_tensor * x, ggml_tensor * b) {
    xdna_test::ContextBuffer buf(ctx);
    ggml_tensor * y = ggml_mul(ctx, x, b);
    TensorResolver resolve;
    resolve.slice_of = [&](const ggml_tensor * t) { return buf.slice_of(t); };
    Planned out;
    std::vector<Invocation> invs;
    out.ok = plan_row_scale(y, resolve, invs, out.why);
    for (const Invocation & i : invs) {
        out.invs.push_back(row_scale_of(i));
        out.w_offsets.push_back(i.operand("w")->slice.offset - buf.slice_of(b).offset);
    }
    return out;
}

}  // namespace

TEST(RowScalePlan, ExpertOutputsByTheirWeightsAreOneInvocation) {
    xdna_test::Context c;
    ggml_tensor * experts = ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, 2048, 8, 5);
    ggml_tensor * weights = ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, 1, 8, 5);
    ASSERT_TRUE(mul_by_row_values(ggml_mul(c.ctx, experts, weights)));
    const Planned p = plan(c.ctx, experts, weights);
    ASSERT_TRUE(p.ok) << p.why;
    ASSERT_EQ(p.invs.size(), 1u);
    EXPECT_EQ(p.invs[0].p.rows, 40);
    EXPECT_EQ(p.invs[0].p.cols, 2048);
    EXPECT_EQ(p.invs[0].p.w_stride, 1);
    EXPECT_EQ(p.invs[0].p.x_row_stride, 2048);
}

TEST(RowScalePlan, ARepeatedValueIsStrideZeroOrOneInvocationPerSlice) {
    xdna_test::Context c;
    ggml_tensor * x = ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, 256, 4, 3);
    // One value for everything: one invocation, stride 0.
    const Planned one = plan(c.ctx, x, ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, 1, 1, 1));
    ASSERT_TRUE(one.ok) << one.why;
    ASSERT_EQ(one.invs.size(), 1u);
    EXPECT_EQ(one.invs[0].p.rows, 12);
    EXPECT_EQ(one.invs[0].p.w_stride, 0);
    // One value per slice: each slice's rows share it.
    const Planned per_slice = plan(c.ctx, x, ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, 1, 1, 3));
    ASSERT_TRUE(per_slice.ok) << per_slice.why;
    ASSERT_EQ(per_slice.invs.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(per_slice.invs[i].p.rows, 4);
        EXPECT_EQ(per_slice.invs[i].p.w_stride, 0);
        EXPECT_EQ(per_slice.w_offsets[i], i * sizeof(float));
    }
    // A value per row, the same for every slice: one invocation per slice at b's row stride.
    const Planned per_row = plan(c.ctx, x, ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, 1, 4, 1));
    ASSERT_TRUE(per_row.ok) << per_row.why;
    ASSERT_EQ(per_row.invs.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(per_row.invs[i].p.w_stride, 1);
        EXPECT_EQ(per_row.w_offsets[i], 0u);
    }
}

TEST(RowScalePlan, WholeRowsAndRowsTheDesignDoesNotTakeAreNotItsOwn) {
    xdna_test::Context c;
    ggml_tensor * x = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 256, 4);
    EXPECT_FALSE(mul_by_row_values(ggml_mul(c.ctx, x, ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 256, 4))));
    ggml_tensor * odd = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 96, 4);
    const Planned p = plan(c.ctx, odd, ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 1, 4));
    EXPECT_FALSE(p.ok);
    EXPECT_NE(p.why.find("96"), std::string::npos) << p.why;
}

// A MUL with no rows (llama.cpp reserves graphs of 0 tokens) plans no invocation and no error.
TEST(RowScalePlan, NoRowsPlanNothing) {
    xdna_test::Context c;
    const Planned p = plan(c.ctx, ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, 256, 4, 0), ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, 1, 4, 0));
    EXPECT_TRUE(p.ok) << p.why;
    EXPECT_TRUE(p.invs.empty());
}

// One value per slice of dim 3 under a dim 2 of one slice: each slice's rows share their value (stride 0),
// not a value per row.
TEST(RowScalePlan, AValuePerSliceIsNotAValuePerRow) {
    xdna_test::Context c;
    ggml_tensor * x = ggml_new_tensor_4d(c.ctx, GGML_TYPE_F32, 256, 4, 1, 2);
    const Planned p = plan(c.ctx, x, ggml_new_tensor_4d(c.ctx, GGML_TYPE_F32, 1, 1, 1, 2));
    ASSERT_TRUE(p.ok) << p.why;
    ASSERT_EQ(p.invs.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(p.invs[i].p.rows, 4);
        EXPECT_EQ(p.invs[i].p.w_stride, 0);
        EXPECT_EQ(p.w_offsets[i], i * sizeof(float));
    }
}
