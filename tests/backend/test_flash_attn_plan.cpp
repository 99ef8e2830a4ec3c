// The flash_attn planner (src/ops/flash_attn/plan): a FLASH_ATTN_EXT goes to the NPU only where the
// design's data movement takes it (attention_shape_fits, the stream builder's own rules), on every
// device: a mask row of an odd number of halves (a BD steps whole 32-bit words) or a mask per head goes to
// the host path up front with the reason, even where the kernels mode alone could run it.
#include "ops/flash_attn/flash-attn-invocation.h"
#include "ops/flash_attn/flash-attn-plan.h"
#include "context-buffer.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

using namespace xdna;

struct Planned {
    bool        ok = false;
    std::string why;
    size_t      invocations = 0;
};

// q [d, tokens, heads, 1], K and V [d, n_kv, kv heads, 1] F16, the mask [mask_cols, tokens, mask_heads, 1].
// `layouts`: the design layouts the device has kernels in (empty: every one).
Planned plan(int64_t d, int64_t tokens, int64_t heads, int64_t kv_heads, int64_t n_kv, int64_t mask_cols, int64_t mask_heads,
             const std::vector<std::string> & layouts = {}) {
    xdna_test::Context c;
    ggml_tensor * q = ggml_new_tensor_4d(c.ctx, GGML_TYPE_F32, d, tokens, heads, 1);
    ggml_tensor * k = ggml_new_tensor_4d(c.ctx, GGML_TYPE_F16, d, n_kv, kv_heads, 1);
    ggml_tensor * v = ggml_new_tensor_4d(c.ctx, GGML_TYPE_F16, d, n_kv, kv_heads, 1);
    ggml_tensor * m = ggml_new_tensor_4d(c.ctx, GGML_TYPE_F16, mask_cols, tokens, mask_heads, 1);
    ggml_tensor * fa = ggml_flash_attn_ext(c.ctx, q, k, v, m, 1.0f / std::sqrt(static_cast<float>(d)), 0.0f, 0.0f);
    xdna_test::ContextBuffer buf(c.ctx);
    TensorResolver resolve;
    resolve.slice_of = [&](const ggml_tensor * t) { return buf.slice_of(t); };
    if (!layouts.empty()) {
        resolve.has_kernel_in_layout = [&](const KernelKey &, const std::string & layout) {
            return std::find(layouts.begin(), layouts.end(), layout) != layouts.end();
        };
    }
    Planned out;
    std::vector<Invocation> invs;
    out.ok = plan_flash_attn(fa, resolve, invs, out.why);
    out.invocations = invs.size();
    return out;
}

}  // namespace

TEST(FlashAttnPlan, AShapeTheDataMovementTakesIsOneInvocation) {
    const Planned p = plan(128, 1, 32, 8, 512, 512, 1);
    ASSERT_TRUE(p.ok) << p.why;
    EXPECT_EQ(p.invocations, 1u);
}

TEST(FlashAttnPlan, MaskRowsOfOddHalvesGoToTheHostPathWithTheReason) {
    // 113 KV rows and a mask of 113 halves a row: 226 bytes, not whole words.
    const Planned p = plan(64, 1, 4, 4, 113, 113, 1);
    EXPECT_FALSE(p.ok);
    EXPECT_NE(p.why.find("the mask's row stride of 226 bytes"), std::string::npos) << p.why;
    // The same KV rows with the mask padded to whole words: taken.
    const Planned padded = plan(64, 1, 4, 4, 113, 114, 1);
    EXPECT_TRUE(padded.ok) << padded.why;
}

TEST(FlashAttnPlan, AMaskPerHeadGoesToTheHostPathWithTheReason) {
    const Planned p = plan(64, 2, 4, 4, 256, 256, 4);
    EXPECT_FALSE(p.ok);
    EXPECT_NE(p.why.find("a mask of 4 heads"), std::string::npos) << p.why;
}

// A device whose manifest lists the decode layout's xclbins alone: a decoded token's attention (tasks of
// one token) goes to it, a prompt's (tasks of several) to the host path with the reason, not to a
// submission the device would refuse.
TEST(FlashAttnPlan, ADeviceOfDecodeXclbinsAloneTakesOnlyTasksOfOneToken) {
    const Planned decode = plan(128, 1, 32, 8, 512, 512, 1, {"decode"});
    EXPECT_TRUE(decode.ok) << decode.why;
    const Planned prompt = plan(128, 8, 32, 8, 512, 512, 1, {"decode"});
    EXPECT_FALSE(prompt.ok);
    EXPECT_NE(prompt.why.find("no flash_attn kernel of a layout holding tasks of"), std::string::npos) << prompt.why;
    EXPECT_NE(prompt.why.find("layouts that do: attention"), std::string::npos) << prompt.why;
    // With the attention layout's xclbins as well, both are taken.
    EXPECT_TRUE(plan(128, 8, 32, 8, 512, 512, 1, {"decode", "attention"}).ok);
}

// Where the stream builder reads which blocks the mask hides: the F16 mask when it is a leaf (llama.cpp's
// KQ mask, filled by the host before the graph runs), the F32 leaf it is cast from (its F16 copy is a CPY of
// the same submission, not there when the streams are built), and nowhere for a mask another op computes.
TEST(FlashAttnPlan, TheMasksProfileIsReadFromALeafOrTheF32LeafItIsCastFrom) {
    xdna_test::Context c;
    ggml_tensor * q = ggml_new_tensor_4d(c.ctx, GGML_TYPE_F32, 64, 4, 4, 1);
    ggml_tensor * k = ggml_new_tensor_4d(c.ctx, GGML_TYPE_F16, 64, 256, 4, 1);
    ggml_tensor * v = ggml_new_tensor_4d(c.ctx, GGML_TYPE_F16, 64, 256, 4, 1);
    ggml_tensor * leaf = ggml_new_tensor_4d(c.ctx, GGML_TYPE_F16, 256, 4, 1, 1);
    ggml_tensor * f32 = ggml_new_tensor_4d(c.ctx, GGML_TYPE_F32, 256, 4, 1, 1);
    ggml_tensor * cast = ggml_cast(c.ctx, f32, GGML_TYPE_F16);
    ggml_tensor * computed = ggml_cast(c.ctx, ggml_scale(c.ctx, f32, 2.0f), GGML_TYPE_F16);
    xdna_test::ContextBuffer buf(c.ctx);
    TensorResolver resolve;
    resolve.slice_of = [&](const ggml_tensor * t) { return buf.slice_of(t); };
    struct Want {
        ggml_tensor *                 mask;
        FlashAttnParams::MaskSource   source;
        const ggml_tensor *           from;
    };
    for (const Want & w : {Want{leaf, FlashAttnParams::MaskSource::f16, leaf}, Want{cast, FlashAttnParams::MaskSource::f32, f32},
                           Want{computed, FlashAttnParams::MaskSource::none, nullptr}}) {
        ggml_tensor * fa = ggml_flash_attn_ext(c.ctx, q, k, v, w.mask, 0.125f, 0.0f, 0.0f);
        std::vector<Invocation> invs;
        std::string why;
        ASSERT_TRUE(plan_flash_attn(fa, resolve, invs, why)) << why;
        ASSERT_EQ(invs.size(), 1u);
        const FlashAttnInvocation f = flash_attn_of(invs[0]);
        EXPECT_EQ(f.p.mask_source, w.source);
        const Operand * src = invs[0].operand("mask_source");
        if (w.from == nullptr) {
            EXPECT_EQ(src, nullptr);
            continue;
        }
        ASSERT_NE(src, nullptr);
        EXPECT_EQ(src->slice.offset, buf.slice_of(w.from).offset);
        EXPECT_EQ(src->bytes(), 0u);  // no BD moves it
        EXPECT_EQ(f.p.mask_source_nb[1], static_cast<int64_t>(w.from->nb[1]));
    }
}
