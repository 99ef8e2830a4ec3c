// MUL_MAT_ID (mixture of experts) on the XDNA backend: every claimed weight type, fresh random weights,
// activations and routings (repeated experts per token allowed, most experts unselected at small
// batches), checked row by row against the independent contract reference (bit-exact for quantized
// weights, within the float contracts' bound otherwise); the planner streams only selected experts,
// all in one submission; ids outside the expert range are an error, not a crash.
#include "backend-harness.h"
#include "contracts/matmul-contract.h"
#include "host-memory-buffer.h"
#include "plan/batch-plan.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>

using namespace xdna_test;

namespace {

std::vector<int32_t> random_ids(const MatmulIdCase & c) {
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(c.n_expert - 1));
    std::vector<int32_t> ids(c.n_used * c.n_tokens);
    for (auto & id : ids) {
        id = pick(rng());
    }
    return ids;
}

void check_case(const MatmulIdCase & c, bool weights_usage) {
    SCOPED_TRACE(testing::Message() << ggml_type_name(c.wtype) << " k=" << c.k << " m=" << c.m << " experts=" << c.n_expert
                                    << " used=" << c.n_used << " tokens=" << c.n_tokens << " broadcast=" << c.broadcast
                                    << " weights_usage=" << weights_usage << " seed=" << test_seed());
    const std::vector<uint8_t> w = random_weights(c.wtype, c.k, c.m * c.n_expert);
    const std::vector<float> x = random_floats(static_cast<size_t>(c.k * c.x_rows() * c.n_tokens));
    const std::vector<int32_t> ids = random_ids(c);
    const MatmulResult npu = run_mul_mat_id(xdna_backend(), c, w, x, ids, weights_usage);
    ASSERT_EQ(0, std::memcmp(npu.readback.data(), w.data(), w.size())) << "get_tensor is not the original bytes";
    EXPECT_EQ(contract_id_mismatch(c, w, x, ids, npu.out), "");
}

class ClaimedTypesId : public ::testing::TestWithParam<ggml_type> {};

// K not a multiple of the tile K where the block allows it, M = 67 (row padding); 1 token (decode),
// 7 tokens (groups of 1-4 rows) and 45 tokens x 2 slots over 5 experts (groups wider than 32: two tiles).
TEST_P(ClaimedTypesId, LoadedWeightsEveryRoutingMatchesTheContract) {
    const ggml_type t = GetParam();
    const int64_t blck = ggml_blck_size(t);
    const int64_t k = blck == 256 ? 768 : (blck == 32 ? 32 * 11 : 200);
    for (int64_t n : {1, 7, 45}) {
        check_case({t, k, 67, 5, 2, n}, true);
    }
    check_case({t, k, 67, 5, 3, 6, /*broadcast=*/true}, true);
}

TEST_P(ClaimedTypesId, PlainComputeBufferWeights) {
    // As in test-backend-ops: the experts are packed at compute time, the selected ones only.
    const ggml_type t = GetParam();
    check_case({t, ggml_blck_size(t) == 256 ? 256 : 96, 33, 8, 2, 9}, false);
}

std::vector<ggml_type> contract_weight_types() {
    std::vector<ggml_type> types;
    for (const auto & c : xdna::all_matmul_contracts()) {
        if (c.use != xdna::ContractUse::any) continue;  // a prefill alternative: tested with its own reference
        types.push_back(c.weight_type);
    }
    return types;
}

INSTANTIATE_TEST_SUITE_P(All, ClaimedTypesId, ::testing::ValuesIn(contract_weight_types()),
                         [](const auto & info) { return std::string(ggml_type_name(info.param)); });

TEST(MulMatId, ExpertIdOutOfRangeIsAnErrorNotACrash) {
    const MatmulIdCase c{GGML_TYPE_Q4_K, 256, 64, 4, 2, 3};
    const std::vector<uint8_t> w = random_weights(c.wtype, c.k, c.m * c.n_expert);
    const std::vector<float> x = random_floats(static_cast<size_t>(c.k * c.x_rows() * c.n_tokens));
    for (int32_t bad : {4, -1}) {
        std::vector<int32_t> ids = random_ids(c);
        ids[3] = bad;
        ggml_status st = GGML_STATUS_SUCCESS;
        run_mul_mat_id(xdna_backend(), c, w, x, ids, true, &st);
        EXPECT_EQ(st, GGML_STATUS_FAILED) << "id " << bad;
    }
}

// A failed device run is recomputed on the host (the contracts' twins): the experts' outputs still
// arrive in dst, exactly the contract's.
TEST(MulMatId, DeviceErrorsFallBackWithExactResults) {
    auto fail_runs = reinterpret_cast<ggml_backend_xdna_set_fail_runs_t>(
        ggml_backend_reg_get_proc_address(ggml_backend_xdna_reg(), "ggml_backend_xdna_set_fail_runs"));
    ASSERT_NE(fail_runs, nullptr);
    const MatmulIdCase c{GGML_TYPE_Q4_K, 512, 70, 6, 2, 5};
    SCOPED_TRACE(testing::Message() << "seed=" << test_seed());
    const std::vector<uint8_t> w = random_weights(c.wtype, c.k, c.m * c.n_expert);
    const std::vector<float> x = random_floats(static_cast<size_t>(c.k * c.x_rows() * c.n_tokens));
    const std::vector<int32_t> ids = random_ids(c);
    ASSERT_TRUE(fail_runs(xdna_device(), true));
    const MatmulResult npu = run_mul_mat_id(xdna_backend(), c, w, x, ids, true);
    fail_runs(xdna_device(), false);
    EXPECT_EQ(contract_id_mismatch(c, w, x, ids, npu.out), "");
}

// A host buffer standing in for device memory, for planning without a device.
using HostBuffer = xdna_test::BorrowedHostBuffer;

// Gate and up MUL_MAT_IDs over one x and one random routing, in host memory standing in for the device
// (the gate and up stacks packed at load), for planning without a device.
struct ExpertGraph {
    static constexpr int64_t k = 512, m = 96, n_expert = 16, n_used = 2;
    ggml_context *       ctx = nullptr;
    ggml_tensor *        gate = nullptr, * up = nullptr, * x = nullptr, * ids = nullptr;
    std::set<int32_t>    selected;  // experts some (slot, token) routes to
    std::unique_ptr<HostBuffer> mem;
    xdna::TensorResolver resolve;

    ExpertGraph(int64_t n_tokens, ggml_type up_type) {
        ggml_init_params p = {64 << 20, nullptr, false};
        ctx = ggml_init(p);
        gate = ggml_new_tensor_3d(ctx, GGML_TYPE_Q4_K, k, m, n_expert);
        up = ggml_new_tensor_3d(ctx, up_type, k, m, n_expert);
        x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, 1, n_tokens);
        ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, n_used, n_tokens);
        std::uniform_int_distribution<int32_t> pick(0, n_expert - 1);
        for (int64_t i = 0; i < n_used * n_tokens; ++i) {
            static_cast<int32_t *>(ids->data)[i] = pick(rng());
            selected.insert(static_cast<int32_t *>(ids->data)[i]);
        }
        mem = std::make_unique<HostBuffer>(ggml_get_mem_buffer(ctx), ggml_get_mem_size(ctx));
        resolve.slice_of = [this](const ggml_tensor * t) {
            return xdna::BufferSlice{mem.get(), static_cast<size_t>(static_cast<char *>(t->data) - static_cast<char *>(mem->host_ptr()))};
        };
        resolve.is_packed = [this](const ggml_tensor * t) { return t == gate || t == up; };
    }
    ExpertGraph(const ExpertGraph &) = delete;
    ExpertGraph & operator=(const ExpertGraph &) = delete;
    ~ExpertGraph() { ggml_free(ctx); }

    std::vector<ggml_tensor *> gate_and_up() {
        std::vector<ggml_tensor *> nodes = {ggml_mul_mat_id(ctx, gate, x, ids), ggml_mul_mat_id(ctx, up, x, ids)};
        for (ggml_tensor * n : nodes) ggml_set_name(n, "node");
        return nodes;
    }
};

// layout_batch, fill_invocations and route_batch of `nodes`, with scratch in host memory.
void plan_and_route(const std::vector<ggml_tensor *> & nodes, const xdna::TensorResolver & resolve, xdna::BatchPlan & plan,
                    std::vector<uint8_t> & scratch_bytes, xdna::RoutedBatch & routed) {
    std::string why;
    ASSERT_TRUE(xdna::layout_batch(nodes, resolve, plan, why)) << why;
    scratch_bytes.assign(plan.scratch_bytes, 0);
    HostBuffer scratch(scratch_bytes.data(), scratch_bytes.size());
    ASSERT_TRUE(xdna::fill_invocations(plan, resolve, &scratch, why)) << why;
    ASSERT_TRUE(xdna::route_batch(plan, nodes, resolve, &scratch, routed, why)) << why;
}

// The planner turns two MUL_MAT_IDs and a MUL_MAT into one Batch with exactly one invocation per
// selected expert, each streaming exactly that expert's slice of the stack.
TEST(MulMatId, OnlySelectedExpertsAreStreamedAllInOneSubmission) {
    SCOPED_TRACE(testing::Message() << "seed=" << test_seed());
    const int64_t n_tokens = 3;
    ExpertGraph g(n_tokens, GGML_TYPE_Q6_K);
    const int64_t k = g.k, m = g.m, n_used = g.n_used;
    ggml_tensor * gate = g.gate, * up = g.up;
    const xdna::TensorResolver & resolve = g.resolve;
    const std::set<int32_t> & selected = g.selected;
    ggml_tensor * shared = ggml_new_tensor_2d(g.ctx, GGML_TYPE_Q8_0, k, m);
    std::vector<ggml_tensor *> nodes = g.gate_and_up();
    nodes.push_back(ggml_mul_mat(g.ctx, shared, ggml_reshape_2d(g.ctx, g.x, k, n_tokens)));
    ggml_set_name(nodes.back(), "node");

    xdna::BatchPlan plan;
    std::vector<uint8_t> scratch_bytes;
    xdna::RoutedBatch routed;
    plan_and_route(nodes, resolve, plan, scratch_bytes, routed);
    if (HasFatalFailure()) return;
    EXPECT_TRUE(plan.has_experts);

    ASSERT_EQ(routed.batch.invocations.size(), 1 + 2 * selected.size());
    for (int op = 0; op < 2; ++op) {
        const ggml_tensor * w = op == 0 ? gate : up;
        const xdna::WeightLayout & L = plan.ops[op].experts.weights;
        std::set<int32_t> streamed;
        uint64_t rows = 0;
        for (const xdna::Invocation & inv : routed.batch.invocations) {
            const xdna::MatmulInvocation mi = xdna::matmul_of(inv);
            if (mi.contract->weight_type != w->type) {
                continue;
            }
            const size_t off = mi.weights.offset - resolve.slice_of(w).offset;
            ASSERT_EQ(off % L.mat_bytes, 0u);
            streamed.insert(static_cast<int32_t>(off / L.mat_bytes));
            // One expert's valid row tiles per invocation; its stored slice (whole groups) holds them.
            EXPECT_EQ(mi.weight_bytes(), L.tile_bytes * L.m_tiles * L.k_tiles) << "one expert's weights per invocation";
            EXPECT_LE(mi.weight_bytes(), L.mat_bytes);
            rows += mi.n;
        }
        EXPECT_EQ(streamed, selected) << "streamed experts != selected experts";
        EXPECT_EQ(rows, static_cast<uint64_t>(n_used * n_tokens)) << "every (slot, token) routed once";
    }
}

}  // namespace

namespace {

// The kinds of a routed batch's invocations, per stage.
std::vector<std::vector<xdna::KernelKind>> stage_kinds(const xdna::Batch & b) {
    std::vector<std::vector<xdna::KernelKind>> kinds(b.stages());
    for (size_t s = 0; s < b.stages(); ++s) {
        for (size_t j = b.stage_begin(s); j < b.stage_end(s); ++j) {
            kinds[s].push_back(b.invocations[j].key.kind);
        }
    }
    return kinds;
}

size_t count_kind(const std::vector<std::vector<xdna::KernelKind>> & kinds, xdna::KernelKind k) {
    size_t n = 0;
    for (const auto & s : kinds) n += static_cast<size_t>(std::count(s.begin(), s.end(), k));
    return n;
}

// Gate and up of a MoE FFN read the same rows by the same routing. When the NPU moves the rows
// (GGML_XDNA_NPU_OPS=glue|layer, read once per process: CTest test-backend-npu-moved-experts runs this
// with it), the first one's gather and quantization serve both, and their matmuls share a stage; up
// of another type than gate (another contract: other activation tiles) makes its own. 37 tokens x 2
// slots over 16 experts give groups of both tile sizes (the gather lays them out by tile).
void check_shared_expert_rows(int64_t n_tokens, ggml_type up_type, bool shared) {
    SCOPED_TRACE(testing::Message() << "tokens=" << n_tokens << " up=" << ggml_type_name(up_type) << " seed=" << test_seed());
    ExpertGraph g(n_tokens, up_type);
    const std::set<int32_t> & selected = g.selected;
    xdna::BatchPlan plan;
    std::vector<uint8_t> scratch_bytes;
    xdna::RoutedBatch routed;
    plan_and_route(g.gate_and_up(), g.resolve, plan, scratch_bytes, routed);
    if (testing::Test::HasFatalFailure()) return;
    ASSERT_TRUE(plan.ops[0].experts.on_npu && plan.ops[1].experts.on_npu);

    const auto kinds = stage_kinds(routed.batch);
    const size_t makers = shared ? 1 : 2;  // MUL_MAT_IDs that gather and quantize
    EXPECT_EQ(plan.ops[1].expert_rows_of, shared ? 0 : -1);
    // Each expert takes the smallest tile its rows fit (the widest when none does), no wider: the
    // gathered rows are laid out by tile, so there is one quantization per tile size in use.
    std::set<int> tiles_used;
    int last_tile = 0;
    for (const xdna::ExpertGroup & g : routed.routing[0].groups) {
        const std::vector<int> & tiles = plan.ops[0].experts.tiles;
        const auto fits = std::find_if(tiles.begin(), tiles.end(), [&](int t) { return t >= g.rows; });
        EXPECT_EQ(g.activations.tile_n, fits == tiles.end() ? tiles.back() : *fits) << "expert " << g.expert << ", " << g.rows << " rows";
        if (n_tokens > 1) EXPECT_GE(g.activations.tile_n, last_tile) << "the gathered rows are laid out by tile";
        last_tile = g.activations.tile_n;
        tiles_used.insert(g.activations.tile_n);
    }
    const size_t quantizations = n_tokens > 1 ? tiles_used.size() : 1;
    // Up of another contract quantizes for its own tiles.
    std::set<int> up_tiles;
    for (const xdna::ExpertGroup & g : routed.routing[1].groups) up_tiles.insert(g.activations.tile_n);
    const size_t up_quantizations = shared ? 0 : (n_tokens > 1 ? up_tiles.size() : 1);
    // One gather back each; a gather of src1's rows per maker when there are several tokens.
    EXPECT_EQ(count_kind(kinds, xdna::KernelKind::get_rows), 2 + (n_tokens > 1 ? makers : 0));
    EXPECT_EQ(count_kind(kinds, xdna::KernelKind::act_quant), quantizations + up_quantizations);
    EXPECT_EQ(count_kind(kinds, xdna::KernelKind::matmul), 2 * selected.size());
    if (shared) {
        // Both experts' matmuls in one stage, right after the one quantization, and both gathers back
        // in the next: no stage of its own for up.
        size_t quant = kinds.size(), mm = kinds.size();
        for (size_t s = 0; s < kinds.size(); ++s) {
            if (std::count(kinds[s].begin(), kinds[s].end(), xdna::KernelKind::act_quant) > 0) {
                EXPECT_EQ(static_cast<size_t>(std::count(kinds[s].begin(), kinds[s].end(), xdna::KernelKind::act_quant)), quantizations)
                    << "the quantizations of every tile size share a stage";
                quant = s;
            }
            if (std::count(kinds[s].begin(), kinds[s].end(), xdna::KernelKind::matmul) > 0 && mm == kinds.size()) mm = s;
        }
        ASSERT_LT(quant, kinds.size());
        ASSERT_EQ(mm, quant + 1);
        EXPECT_EQ(static_cast<size_t>(std::count(kinds[mm].begin(), kinds[mm].end(), xdna::KernelKind::matmul)), 2 * selected.size());
        ASSERT_EQ(kinds.size(), mm + 2);
        EXPECT_EQ(kinds[mm + 1], std::vector<xdna::KernelKind>(2, xdna::KernelKind::get_rows));
        // Up's matmuls read the very activation tiles gate's quantization wrote.
        EXPECT_EQ(plan.ops[1].expert_act_offset, plan.ops[0].expert_act_offset);
    }
}

bool npu_moves_expert_rows() {
    const char * ops = std::getenv("GGML_XDNA_NPU_OPS");
    return ops != nullptr && (std::string(ops) == "glue" || std::string(ops) == "layer");
}

TEST(MulMatIdNpuMoved, GateAndUpShareOneGatherAndOneQuantization) {
    if (!npu_moves_expert_rows()) {
        GTEST_SKIP() << "runs with GGML_XDNA_NPU_OPS=glue (CTest test-backend-npu-moved-experts)";
    }
    for (int64_t n_tokens : {1, 3, 37, 200}) {
        check_shared_expert_rows(n_tokens, GGML_TYPE_Q4_K, true);
        check_shared_expert_rows(n_tokens, GGML_TYPE_Q6_K, false);
    }
}

}  // namespace
