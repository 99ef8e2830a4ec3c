// Argument layout of a kernel invocation: the mlir-aie convention, params packing and range checks.
#include "host-memory-buffer.h"
#include "runtime/invocation-args.h"
#include "runtime/kernel-manifest.h"

#include <gtest/gtest.h>

#include <vector>

using namespace xdna;

namespace {

// Memory the test owns; only its size matters to the layout.
using FakeBuffer = xdna_test::OwnedHostBuffer;

KernelEntry mlir_aie_entry(const MatmulContract & c, int tile_n) {
    KernelEntry k;
    k.index = 2;
    k.design = "matmul";
    k.family = "kquant";
    k.contract = &c;
    k.tile = c.tile(tile_n);
    k.kernel_name = "MLIR_AIE";
    k.npu = {NpuGeneration::npu2};
    k.args = {
        {ArgKind::opcode, -1, 3},
        {ArgKind::instructions, 1, 0},
        {ArgKind::instruction_count, -1, 0},
        {ArgKind::weights, 3, 0},
        {ArgKind::activations, 4, 0},
        {ArgKind::output, 5, 0},
        {ArgKind::params, 6, 0},
    };
    return k;
}

// A Q4_K invocation of 100 rows x 3 tokens x K = 512, with operands at offsets inside larger buffers.
struct Q4KCase {
    const MatmulContract & c = *matmul_contract_for(GGML_TYPE_Q4_K);
    FakeBuffer             weights{1 << 20};
    FakeBuffer             acts{1 << 16};
    FakeBuffer             out{1 << 16};
    MatmulInvocation       inv;

    Q4KCase() {
        inv.contract = &c;
        inv.tile = c.tile(4);
        inv.m = 100;
        inv.n = 3;
        inv.m_tiles = 2;
        inv.n_tiles = 1;
        inv.k_tiles = 2;
        inv.weight_tile_bytes = 64 * 144;  // 64 rows x one 256-value Q4_K block
        inv.act_tile_bytes = 1216;  // 4 tokens x 256: codes 1024, scales 64, sums 128
        inv.out_row_stride = 128;
        inv.weights = {&weights, 4096};
        inv.activations = {&acts, 64};
        inv.out = {&out, 256};
    }
};

}  // namespace

TEST(InvocationArgs, MlirAieLayout) {
    Q4KCase                     t;
    const KernelEntry           k = mlir_aie_entry(t.c, 4);
    std::vector<ArgValue>       args;
    std::string                 err;
    ASSERT_TRUE(layout_invocation_args(k, t.inv, 1234, args, err)) << err;
    ASSERT_EQ(args.size(), 7u);

    for (size_t i = 0; i < args.size(); ++i) {
        EXPECT_EQ(args[i].index, static_cast<int>(i));
        EXPECT_EQ(args[i].kind, k.args[i].kind);
    }
    EXPECT_EQ(args[0].scalar, 3u);  // opcode
    EXPECT_EQ(args[1].buffer, nullptr);  // instructions: the device's own BO
    EXPECT_EQ(args[1].bytes, 1234u * 4);
    EXPECT_EQ(args[1].group_id, 1);
    EXPECT_EQ(args[2].scalar, 1234u);  // instruction count in words

    EXPECT_EQ(args[3].buffer, &t.weights);
    EXPECT_EQ(args[3].offset, 4096u);
    EXPECT_EQ(args[3].bytes, 2u * 2 * 64 * 144);  // m_tiles * k_tiles tiles
    EXPECT_EQ(args[3].group_id, 3);
    EXPECT_EQ(args[4].buffer, &t.acts);
    EXPECT_EQ(args[4].offset, 64u);
    EXPECT_EQ(args[4].bytes, 1u * 2 * 1216);  // n_tiles * k_tiles activation tiles
    EXPECT_EQ(args[4].group_id, 4);
    EXPECT_EQ(args[5].buffer, &t.out);
    EXPECT_EQ(args[5].offset, 256u);
    EXPECT_EQ(args[5].bytes, (2u * 128 + 100) * 4);  // up to the last valid float of the last token
    EXPECT_EQ(args[5].group_id, 5);
    EXPECT_EQ(args[6].buffer, nullptr);
    EXPECT_EQ(args[6].bytes, sizeof(ParamWords));
    EXPECT_EQ(args[6].group_id, 6);
}

TEST(InvocationArgs, LayoutFollowsTheManifestOrder) {
    Q4KCase     t;
    KernelEntry k = mlir_aie_entry(t.c, 4);
    // A kernel without opcode or params, with the operands in another order.
    k.args = {{ArgKind::instructions, 1, 0}, {ArgKind::instruction_count, -1, 0}, {ArgKind::output, 2, 0},
              {ArgKind::activations, 3, 0}, {ArgKind::weights, 4, 0}};
    std::vector<ArgValue> args;
    std::string           err;
    ASSERT_TRUE(layout_invocation_args(k, t.inv, 8, args, err)) << err;
    ASSERT_EQ(args.size(), 5u);
    EXPECT_EQ(args[2].kind, ArgKind::output);
    EXPECT_EQ(args[2].buffer, &t.out);
    EXPECT_EQ(args[2].index, 2);
    EXPECT_EQ(args[4].kind, ArgKind::weights);
    EXPECT_EQ(args[4].group_id, 4);
}

TEST(InvocationArgs, ParamsWords) {
    Q4KCase    t;
    ParamWords p{};
    std::string err;
    ASSERT_TRUE(pack_params(t.inv, p, err)) << err;
    EXPECT_EQ(p[kParamVersion], kParamsLayoutVersion);
    EXPECT_EQ(p[kParamTileM], 64u);
    EXPECT_EQ(p[kParamTileN], 4u);
    EXPECT_EQ(p[kParamTileK], 256u);
    EXPECT_EQ(p[kParamM], 100u);
    EXPECT_EQ(p[kParamN], 3u);
    EXPECT_EQ(p[kParamMTiles], 2u);
    EXPECT_EQ(p[kParamNTiles], 1u);
    EXPECT_EQ(p[kParamKTiles], 2u);
    EXPECT_EQ(p[kParamWeightTileBytes], 64u * 144);
    EXPECT_EQ(p[kParamActTileBytes], 1216u);
    EXPECT_EQ(p[kParamOutRowStride], 128u);
    EXPECT_EQ(sizeof(ParamWords), 48u);
}

TEST(InvocationArgs, RejectsMismatchedKernel) {
    Q4KCase               t;
    std::vector<ArgValue> args;
    std::string           err;
    // Right contract, wrong token tile.
    EXPECT_FALSE(layout_invocation_args(mlir_aie_entry(t.c, 32), t.inv, 8, args, err));
    EXPECT_NE(err.find("invocation tile 64x4x256 given to designs[2] matmul/kquant (mm_q4_K_a8, tile 64x32x256)"),
              std::string::npos)
        << err;
    // Another contract.
    EXPECT_FALSE(layout_invocation_args(mlir_aie_entry(*matmul_contract_for(GGML_TYPE_Q6_K), 4), t.inv, 8, args, err));
    EXPECT_NE(err.find("invocation of mm_q4_K_a8 given to designs[2] matmul/kquant (mm_q6_K_a8"), std::string::npos) << err;
    // No instructions.
    EXPECT_FALSE(layout_invocation_args(mlir_aie_entry(t.c, 4), t.inv, 0, args, err));
    EXPECT_NE(err.find("empty or oversized instruction stream"), std::string::npos) << err;
}

TEST(InvocationArgs, RejectsOperandRangesPastTheirBuffer) {
    const KernelEntry k = mlir_aie_entry(*matmul_contract_for(GGML_TYPE_Q4_K), 4);
    std::vector<ArgValue> args;
    std::string           err;
    {
        Q4KCase t;
        t.inv.weights.offset = t.weights.size() - 100;
        EXPECT_FALSE(layout_invocation_args(k, t.inv, 8, args, err));
        EXPECT_NE(err.find("weight operand range"), std::string::npos) << err;
        EXPECT_NE(err.find("reaches past its buffer of 1048576 bytes"), std::string::npos) << err;
    }
    {
        Q4KCase t;
        t.inv.n_tiles = 64;  // 256 rows of activations: 149 KB, buffer is 64 KB
        EXPECT_FALSE(layout_invocation_args(k, t.inv, 8, args, err));
        EXPECT_NE(err.find("activation operand range"), std::string::npos) << err;
    }
    {
        Q4KCase t;
        t.inv.out_row_stride = 1 << 14;  // 3 tokens 64 KB apart
        EXPECT_FALSE(layout_invocation_args(k, t.inv, 8, args, err));
        EXPECT_NE(err.find("output operand range"), std::string::npos) << err;
    }
    {
        Q4KCase t;
        t.inv.out.buffer = nullptr;
        EXPECT_FALSE(layout_invocation_args(k, t.inv, 8, args, err));
        EXPECT_NE(err.find("output operand has no buffer"), std::string::npos) << err;
    }
}

TEST(InvocationArgs, RejectsInconsistentOrOversizedParameters) {
    const KernelEntry k = mlir_aie_entry(*matmul_contract_for(GGML_TYPE_Q4_K), 4);
    std::vector<ArgValue> args;
    std::string           err;
    {
        Q4KCase t;
        t.inv.m = 200;  // two 64-row tiles hold 128
        EXPECT_FALSE(layout_invocation_args(k, t.inv, 8, args, err));
        EXPECT_NE(err.find("exceed the 2 x 1 tiles"), std::string::npos) << err;
    }
    {
        Q4KCase t;
        t.inv.out_row_stride = 50;
        EXPECT_FALSE(layout_invocation_args(k, t.inv, 8, args, err));
        EXPECT_NE(err.find("output row stride 50 is smaller than m = 100"), std::string::npos) << err;
    }
    {
        Q4KCase t;
        t.inv.weight_tile_bytes = size_t(1) << 33;
        ParamWords p{};
        EXPECT_FALSE(pack_params(t.inv, p, err));
        EXPECT_NE(err.find("parameter weight_tile_bytes = 8589934592 does not fit in 32 bits"), std::string::npos)
            << err;
    }
    {
        Q4KCase t;
        t.inv.n = 0;
        EXPECT_FALSE(layout_invocation_args(k, t.inv, 8, args, err));
        EXPECT_NE(err.find("empty invocation"), std::string::npos) << err;
    }
}

// The runtime interface is kind-neutral: an invocation names its kernel by a key (design, variant,
// tile) and its operands by role, with their extents, without the device knowing the kind's parameter
// block; a matmul is one kind.
TEST(Invocation, NamesItsKernelAndOperandsGenerically) {
    Q4KCase          t;
    t.inv.out_row_stride = 128;  // rows of the output further apart than the valid M floats
    const Invocation inv = to_invocation(t.inv);
    EXPECT_EQ(inv.kind(), KernelKind::matmul);
    EXPECT_STREQ(kernel_kind_name(inv.kind()), "matmul");
    EXPECT_STREQ(inv.key.design, "matmul");
    EXPECT_STREQ(inv.key.variant, "mm_q4_K_a8");
    EXPECT_STREQ(inv.kernel_name(), "mm_q4_K_a8");
    EXPECT_EQ(inv.key.tile.n, t.inv.tile.n);
    const Invocation::Operands ops = inv.operands();
    ASSERT_EQ(ops.size(), 3u);
    const Operand * w = ops.begin();
    EXPECT_STREQ(w[0].role, "weights");
    EXPECT_EQ(w[0].slice.buffer, &t.weights);
    EXPECT_EQ(w[0].bytes(), 2u * 2 * 64 * 144);
    EXPECT_FALSE(w[0].written());
    EXPECT_STREQ(w[1].role, "activations");
    EXPECT_EQ(w[1].bytes(), 1u * 2 * 1216);
    EXPECT_STREQ(w[2].role, "out");
    EXPECT_TRUE(w[2].written());
    EXPECT_EQ(w[2].bytes(), 100u * 3 * 4);             // the valid M x N floats
    EXPECT_EQ(w[2].rows, 3);                           // one run per token
    EXPECT_EQ(w[2].row_stride, 128u * 4);
    EXPECT_EQ(w[2].extent(), 2u * 128 * 4 + 100 * 4);  // the last token's row ends the range
    EXPECT_EQ(inv.operand("activations"), &w[1]);
    EXPECT_EQ(inv.operand("bias"), nullptr);
    EXPECT_EQ(inv.bytes_read(), w[0].bytes() + w[1].bytes());
    EXPECT_EQ(inv.bytes_written(), w[2].bytes());
    EXPECT_EQ(inv.macs(), 2u * 64 * 4 * 2 * 256);
    EXPECT_EQ(inv.shape_label(), "   100 x    3 x   512");
}

// The matmul kind's typed view is exactly what went in: the operands by their slots, the rest from the
// parameter block.
TEST(Invocation, MatmulViewRoundTrips) {
    Q4KCase t;
    t.inv.expert = 5;
    t.inv.out_row_stride = 111;
    const MatmulInvocation back = matmul_of(to_invocation(t.inv));
    EXPECT_EQ(back.contract, t.inv.contract);
    EXPECT_EQ(back.weights.buffer, t.inv.weights.buffer);
    EXPECT_EQ(back.weights.offset, t.inv.weights.offset);
    EXPECT_EQ(back.activations.buffer, t.inv.activations.buffer);
    EXPECT_EQ(back.out.buffer, t.inv.out.buffer);
    EXPECT_EQ(back.out.offset, t.inv.out.offset);
    EXPECT_EQ(back.m, t.inv.m);
    EXPECT_EQ(back.n, t.inv.n);
    EXPECT_EQ(back.m_tiles, t.inv.m_tiles);
    EXPECT_EQ(back.n_tiles, t.inv.n_tiles);
    EXPECT_EQ(back.k_tiles, t.inv.k_tiles);
    EXPECT_EQ(back.weight_tile_bytes, t.inv.weight_tile_bytes);
    EXPECT_EQ(back.act_tile_bytes, t.inv.act_tile_bytes);
    EXPECT_EQ(back.out_row_stride, 111);
    EXPECT_EQ(back.expert, 5);
    EXPECT_EQ(back.tile.n, t.inv.tile.n);
}

// Keys compare by content: a variant spelled by another string is the same kernel.
TEST(Invocation, KeysCompareByContent) {
    const MatmulContract & c = *matmul_contract_for(GGML_TYPE_Q4_K);
    const std::string      name = c.name;
    KernelKey              a = matmul_key(c, c.tile(4));
    KernelKey              b{KernelKind::matmul, "matmul", name.c_str(), c.tile(4)};
    EXPECT_TRUE(same_key(a, b));
    b.tile = c.tile(32);
    EXPECT_FALSE(same_key(a, b));
    EXPECT_EQ(matmul_contract_named(name.c_str()), &c);
    EXPECT_EQ(matmul_contract_named("mm_nothing"), nullptr);
}
