// The timing model charges a MUL_MAT_ID the weight traffic of the experts a ubatch selects, not of the
// whole stack: the planner makes one invocation per selected expert over its slice (plan/expert-plan.h),
// so the model sees each slice's bytes, as the design streams them (with the family window's over-fetch). Checked on a fresh random routing against a count made here
// from the ids alone (GGUF bytes per expert: the shapes are whole tiles, so packed bytes = GGUF bytes).
#include "plan/expert-plan.h"
#include "sim/timing-model.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace xdna {
namespace {

TEST(ExpertTraffic, ModelledWeightBytesAreTheSelectedExpertsOnly) {
    const uint64_t seed = std::random_device{}();
    SCOPED_TRACE(testing::Message() << "seed=" << seed);
    std::mt19937_64 rng(seed);
    // Qwen3-30B-A3B's gate_exps: 128 experts of 768 x 2048, 8 per token.
    const int64_t k = 2048, m = 768, n_expert = 128, n_used = 8;
    const TimingModel model(*find_npu_preset("krackan"));
    for (int64_t n_tokens : {1, 3, 17}) {
        ggml_init_params p = {16 << 20, nullptr, false};
        ggml_context * ctx = ggml_init(p);
        ggml_set_no_alloc(ctx, true);
        ggml_tensor * w = ggml_new_tensor_3d(ctx, GGML_TYPE_Q4_K, k, m, n_expert);
        ggml_tensor * x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, 1, n_tokens);
        ggml_set_no_alloc(ctx, false);
        ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, n_used, n_tokens);
        std::set<int32_t> selected;
        for (int64_t t = 0; t < n_tokens; ++t) {
            // Distinct experts per token, as top-k gives.
            std::set<int32_t> row;
            while (static_cast<int64_t>(row.size()) < n_used) {
                row.insert(static_cast<int32_t>(rng() % n_expert));
            }
            int64_t e = 0;
            for (int32_t id : row) {
                static_cast<int32_t *>(ids->data)[t * n_used + e++] = id;
                selected.insert(id);
            }
        }
        ggml_tensor * dst = ggml_mul_mat_id(ctx, w, x, ids);

        ExpertPlan plan;
        ExpertRouting routing;
        std::string why;
        ASSERT_TRUE(plan_matmul_id(dst, {}, {matmul_contract_for(GGML_TYPE_Q4_K), 4}, plan, why)) << why;
        ASSERT_TRUE(route_experts(ids, plan, routing, why)) << why;
        std::vector<Invocation> invs;
        expert_invocations(plan, routing, {}, {}, {}, invs);
        std::vector<ModelShape> shapes;
        for (const Invocation & i : invs) {
            shapes.push_back(shape_of(matmul_of(i)));
        }
        const ModelledBatch b = model.batch(shapes);
        double weight_bytes = 0;
        for (const ModelledTime & t : b.invocations) {
            weight_bytes += t.weight_dram_bytes;
        }
        // Every selected expert's slice once (at most 32 tokens per expert: one token tile), nothing else:
        // its 12 row tiles x 8 K tiles, each streamed as a window of the K-quant family's W object (the
        // Q6_K tile, 13440 bytes: one xclbin serves the family, aie/matmul/README.md), so 13440 / 9216
        // of the GGUF bytes.
        const double expected = static_cast<double>(selected.size()) * ggml_row_size(GGML_TYPE_Q4_K, k) * m * 13440 / 9216;
        EXPECT_EQ(invs.size(), selected.size()) << "tokens " << n_tokens;
        EXPECT_DOUBLE_EQ(weight_bytes, expected) << "tokens " << n_tokens;
        ggml_free(ctx);
    }
}

}  // namespace
}  // namespace xdna
