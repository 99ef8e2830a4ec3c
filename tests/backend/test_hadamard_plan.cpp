// The hadamard planner (src/ops/hadamard/plan): which rows one invocation of the rows movement takes.
// Slices whose rows follow each other at the row stride fold into one invocation (llama.cpp's rotations
// are 2-D: llama-impl.h llama_mul_mat_hadamard); slices that do not (per-head views of a wider row) are
// one invocation each; the scale word is 1 / sqrtf(n) as ggml's CPU backend computes it.
#include "ops/hadamard/hadamard-invocation.h"
#include "ops/hadamard/hadamard-plan.h"
#include "context-buffer.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

using namespace xdna;

struct Planned {
    bool                            ok = false;
    std::string                     why;
    std::vector<HadamardInvocation> invs;
    std::vector<size_t>             x_offsets;
};

Planned plan(ggml_context * ctx, ggml_tensor * x) {
    xdna_test::ContextBuffer buf(ctx);
    ggml_tensor * h = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, x->ne[0], x->ne[0]);
    ggml_tensor * y = ggml_mul_mat(ctx, h, x);
    ggml_mul_mat_set_hint(y, GGML_HINT_SRC0_IS_HADAMARD);
    TensorResolver resolve;
    resolve.slice_of = [&](const ggml_tensor * t) { return buf.slice_of(t); };
    Planned out;
    std::vector<Invocation> invs;
    out.ok = plan_hadamard(y, resolve, invs, out.why);
    for (const Invocation & i : invs) {
        out.invs.push_back(hadamard_of(i));
        out.x_offsets.push_back(i.operand("x")->slice.offset);
    }
    return out;
}

}  // namespace

TEST(HadamardPlan, ContiguousSlicesFoldIntoOneInvocation) {
    xdna_test::Context c;
    ggml_tensor * x = ggml_new_tensor_4d(c.ctx, GGML_TYPE_F32, 128, 8, 3, 2);
    const Planned p = plan(c.ctx, x);
    ASSERT_TRUE(p.ok) << p.why;
    ASSERT_EQ(p.invs.size(), 1u);
    EXPECT_EQ(p.invs[0].p.rows, 8 * 3 * 2);
    EXPECT_EQ(p.invs[0].p.n, 128);
    EXPECT_EQ(p.invs[0].p.x_row_stride, 128);
    EXPECT_EQ(p.invs[0].p.scale, 1.0f / sqrtf(128.0f));
}

TEST(HadamardPlan, PerHeadViewsOfAWiderRowAreOneInvocationPerToken) {
    xdna_test::Context c;
    // V of a fused QKV row: 8 heads of 64 at 32 heads' offset in rows of 48 heads, 5 tokens.
    ggml_tensor * qkv = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 64 * 48, 5);
    ggml_tensor * v = ggml_view_3d(c.ctx, qkv, 64, 8, 5, 64 * sizeof(float), qkv->nb[1], 64 * 40 * sizeof(float));
    const Planned p = plan(c.ctx, v);
    ASSERT_TRUE(p.ok) << p.why;
    ASSERT_EQ(p.invs.size(), 5u);
    for (size_t t = 0; t < 5; ++t) {
        EXPECT_EQ(p.invs[t].p.rows, 8);
        EXPECT_EQ(p.invs[t].p.x_row_stride, 64);
        EXPECT_EQ(p.x_offsets[t] - p.x_offsets[0], t * qkv->nb[1]);
    }
    // The heads of one token are the rows; the tokens after the first start a fused row further on.
    EXPECT_EQ(p.x_offsets[1] - p.x_offsets[0], static_cast<size_t>(64 * 48 * sizeof(float)));
}

TEST(HadamardPlan, LengthsWithoutAnXclbinAreRefusedWithTheReason) {
    xdna_test::Context c;
    const Planned p = plan(c.ctx, ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, 512, 4));
    EXPECT_FALSE(p.ok);
    EXPECT_NE(p.why.find("512"), std::string::npos) << p.why;
}

// A rotation of no rows (llama.cpp reserves graphs of 0 tokens) plans no invocation and no error.
TEST(HadamardPlan, NoRowsPlanNothing) {
    xdna_test::Context c;
    const Planned p = plan(c.ctx, ggml_new_tensor_3d(c.ctx, GGML_TYPE_F32, 128, 8, 0));
    EXPECT_TRUE(p.ok) << p.why;
    EXPECT_TRUE(p.invs.empty());
}
