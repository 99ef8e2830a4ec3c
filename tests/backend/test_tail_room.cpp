// Packed weights carry their own tail room (contracts/weight-layout.h): every window the NPU's instruction
// stream reads for a weight lies inside the tensor's own memory, so no device copies a weight per run.
// For every contract, M = 67 (2 row tiles: half a group of 4), M = 259 (5 row tiles: one past a group)
// and the last expert of a 3-D MUL_MAT_ID stack:
//   - the buffer type's alloc size holds the stream window of every matrix of the tensor;
//   - on the device, results are the contract's and no submission falls back. CTest runs these tests
//     again with GGML_XDNA_SIM_EXEC=stream (backend-stream-tail-room): the simulator then executes the
//     instruction stream on the weight's own buffer, which the harness allocates to fit the weight
//     alone, so a window past the weight's alloc size is a device error, counted as a fallback.
#include "backend-harness.h"
#include "contracts/weight-layout.h"
#include "plan/matmul-plan.h"
#include "runtime/design-description.h"
#include "runtime/matmul-sequence.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace xdna_test;

namespace {

std::vector<ggml_type> contract_types() {
    std::vector<ggml_type> types;
    for (const auto & c : xdna::all_matmul_contracts()) {
        if (c.use != xdna::ContractUse::any) continue;  // a prefill alternative: tested with its own reference
        types.push_back(c.weight_type);
    }
    return types;
}

// K of one whole K tile and one block more: two K tiles, the second mostly padding.
int64_t odd_k(ggml_type t) {
    return xdna::matmul_contract_for(t)->tile_k + ggml_blck_size(t);
}

uint64_t fallback_runs(ggml_backend_t backend) {
    auto f = reinterpret_cast<ggml_backend_xdna_fallback_runs_t>(
        ggml_backend_reg_get_proc_address(ggml_backend_xdna_reg(), "ggml_backend_xdna_fallback_runs"));
    EXPECT_NE(f, nullptr);
    return f != nullptr ? f(backend) : 0;
}

class TailRoom : public ::testing::TestWithParam<ggml_type> {};

TEST_P(TailRoom, AllocSizeHoldsTheStreamWindowOfEveryMatrix) {
    const ggml_type type = GetParam();
    const int64_t k = odd_k(type);
    const xdna::DesignRead & design = xdna::matmul_design();
    ASSERT_TRUE(design.ok()) << design.error;
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(xdna_device());
    struct Shape {
        int64_t m, mats;
    };
    for (const Shape s : {Shape{67, 1}, Shape{259, 1}, Shape{67, 3}, Shape{64 * 4, 2}}) {
        SCOPED_TRACE(testing::Message() << ggml_type_name(type) << " k=" << k << " m=" << s.m << " mats=" << s.mats);
        alignas(64) char mem[1024];
        ggml_init_params p = {sizeof mem, mem, true};
        ggml_context * ctx = ggml_init(p);
        ggml_tensor * w = ggml_new_tensor_3d(ctx, type, k, s.m, s.mats);
        const size_t alloc = ggml_backend_buft_get_alloc_size(buft, w);
        xdna::WeightLayout L;
        ASSERT_TRUE(xdna::make_weight_layout(type, w->ne, L));
        EXPECT_EQ(alloc, L.total_bytes);
        for (int64_t n : {1, 40}) {  // both token tiles: the W window does not depend on it
            xdna::MatmulInvocation inv;
            ASSERT_TRUE(xdna::invocation_geometry(type, s.m, k, n, inv));
            const int64_t rows = design.design.core_rows;
            const int64_t m_rows = (inv.m_tiles + rows - 1) / rows * rows;
            const xdna::MatmulSequence seq =
                xdna::build_matmul_sequence(design.design, xdna::sequence_shape_of(inv, m_rows * 64));
            ASSERT_TRUE(seq.ok()) << seq.error;
            // Every matrix's window (an expert's slice starts at mat * mat_bytes) ends inside the tensor;
            // the last one ends exactly at its end.
            for (int64_t mat = 0; mat < s.mats; ++mat) {
                EXPECT_LE(mat * L.mat_bytes + seq.weights_bytes, alloc) << "matrix " << mat;
            }
            EXPECT_EQ((s.mats - 1) * L.mat_bytes + seq.weights_bytes, alloc);
        }
        ggml_free(ctx);
    }
}

TEST_P(TailRoom, OddRowsAndTheLastExpertRunOnTheDeviceWithoutFallback) {
    const ggml_type type = GetParam();
    const int64_t k = odd_k(type);
    SCOPED_TRACE(testing::Message() << ggml_type_name(type) << " k=" << k << " seed=" << test_seed());
    ggml_backend_t backend = xdna_backend();
    const uint64_t fallbacks_before = fallback_runs(backend);

    for (const int64_t m : {67, 259}) {
        const MatmulCase c{type, k, m, 3};
        const std::vector<uint8_t> w = random_weights(type, k, m);
        const std::vector<float> x = random_floats(activation_count(c));
        const MatmulResult r = run_matmul(backend, c, w, x);
        EXPECT_EQ(0, std::memcmp(r.readback.data(), w.data(), w.size())) << "m=" << m << ": get_tensor";
        EXPECT_EQ(contract_mismatch(c, w, x, r.out), "") << "m=" << m;
    }

    // Three experts of 67 rows; every token routes its first slot to the last expert (whose windows end
    // at the stack's end), its second to a random one.
    const MatmulIdCase c{type, k, 67, 3, 2, 3};
    const std::vector<uint8_t> w = random_weights(type, k, c.m * c.n_expert);
    const std::vector<float> x = random_floats(static_cast<size_t>(c.k * c.x_rows() * c.n_tokens));
    std::vector<int32_t> ids(c.n_used * c.n_tokens);
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(c.n_expert - 1));
    for (int64_t t = 0; t < c.n_tokens; ++t) {
        ids[t * c.n_used] = static_cast<int32_t>(c.n_expert - 1);
        ids[t * c.n_used + 1] = pick(rng());
    }
    const MatmulResult r = run_mul_mat_id(backend, c, w, x, ids, /*weights_usage=*/true);
    EXPECT_EQ(0, std::memcmp(r.readback.data(), w.data(), w.size())) << "MUL_MAT_ID: get_tensor";
    EXPECT_EQ(contract_id_mismatch(c, w, x, ids, r.out), "");

    EXPECT_EQ(fallback_runs(backend), fallbacks_before) << "a device run failed (a window past the weight?)";
}

INSTANTIATE_TEST_SUITE_P(EveryContract, TailRoom, ::testing::ValuesIn(contract_types()),
                         [](const auto & info) { return std::string(ggml_type_name(info.param)); });

}  // namespace
