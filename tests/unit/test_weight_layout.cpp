// The packed weight layout: byte-exact round trips, zeroed padding, tiles holding the right rows.
#include "contracts/weight-layout.h"

#include "contracts/tile-codec.h"

#include "test-random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace xdna;
using namespace xdna_test;

namespace {

struct Shape {
    ggml_type type;
    int64_t   k, rows, mats;
};

class WeightLayoutTest : public ::testing::TestWithParam<Shape> {};

TEST_P(WeightLayoutTest, PackUnpackIsByteExactAndTilesHoldTheirRows) {
    const Shape s = GetParam();
    SCOPED_TRACE(testing::Message() << "seed " << test_seed());
    const int64_t ne[4] = {s.k, s.rows, s.mats, 1};
    WeightLayout L;
    ASSERT_TRUE(make_weight_layout(s.type, ne, L));
    EXPECT_EQ(L.padded_k() % ggml_blck_size(s.type), 0);
    EXPECT_GE(L.padded_k(), s.k);
    EXPECT_LT(L.padded_k() - s.k, L.tile_k);
    EXPECT_GE(L.padded_rows(), s.rows);
    // Row tiles stored in whole groups of the design's rows per column; the tail room after the last
    // matrix is the family's W window minus the tile.
    EXPECT_EQ(L.stored_m_tiles % kWeightRowTileGroup, 0);
    EXPECT_GE(L.stored_m_tiles, L.m_tiles);
    EXPECT_LT(L.stored_m_tiles - L.m_tiles, kWeightRowTileGroup);
    EXPECT_EQ(L.mat_bytes, L.tile_bytes * L.stored_m_tiles * L.k_tiles);
    EXPECT_EQ(L.tail_bytes, weight_window_bytes(s.type) - L.tile_bytes);
    EXPECT_EQ(L.total_bytes, L.mat_bytes * L.mats + L.tail_bytes);

    const std::vector<uint8_t> orig = random_weights(s.type, s.k, s.rows * s.mats);
    ASSERT_EQ(orig.size(), L.original_bytes());

    std::vector<uint8_t> packed(L.total_bytes, 0xA5);  // garbage where padding must be cleared
    clear_weight_padding(L, packed.data());
    pack_weight_rows(L, orig.data(), 0, s.rows * s.mats, packed.data());

    // Every block of every tile decodes to its original GGUF block, or to an all-zero block (padding).
    const int blocks_per_tile_row = L.tile_k / L.block_values;
    const std::vector<uint8_t> zero(L.block_bytes, 0);
    std::vector<uint8_t> block(L.block_bytes);
    size_t nonpad = 0;
    for (int64_t mat = 0; mat < L.mats; ++mat) {
        for (int64_t mt = 0; mt < L.stored_m_tiles; ++mt) {  // the group's padding row tiles too
            for (int64_t kt = 0; kt < L.k_tiles; ++kt) {
                const uint8_t * tile = packed.data() + L.tile_offset(mat, mt, kt);
                for (int r = 0; r < L.tile_m; ++r) {
                    const int64_t row = mt * L.tile_m + r;
                    for (int b = 0; b < blocks_per_tile_row; ++b) {
                        decode_block(s.type, tile, r, b, block.data());
                        const size_t in_row = (kt * blocks_per_tile_row + b) * L.block_bytes;
                        if (row < L.rows && in_row < L.row_bytes) {
                            ASSERT_EQ(0, std::memcmp(block.data(), &orig[(mat * L.rows + row) * L.row_bytes + in_row],
                                                     L.block_bytes));
                            nonpad += L.block_bytes;
                        } else {
                            ASSERT_EQ(block, zero) << "padding not cleared";
                        }
                    }
                }
            }
        }
    }
    EXPECT_EQ(nonpad, orig.size());
    // The tail room holds zeros (it was garbage).
    const size_t tiles_end = L.mat_bytes * L.mats;
    EXPECT_EQ(static_cast<size_t>(std::count(packed.begin() + tiles_end, packed.end(), 0)), L.tail_bytes)
        << "tail room not cleared";

    // Whole and partial reads give back the original bytes.
    std::vector<uint8_t> back(orig.size(), 0);
    unpack_weight_bytes(L, packed.data(), 0, back.size(), back.data());
    EXPECT_EQ(0, std::memcmp(back.data(), orig.data(), orig.size()));

    std::uniform_int_distribution<size_t> pick(0, orig.size() - 1);
    for (int i = 0; i < 20; ++i) {
        size_t a = pick(rng()), b = pick(rng());
        if (a > b) std::swap(a, b);
        std::vector<uint8_t> part(b - a + 1);
        unpack_weight_bytes(L, packed.data(), a, part.size(), part.data());
        ASSERT_EQ(0, std::memcmp(part.data(), orig.data() + a, part.size())) << "range " << a << ".." << b;
    }

    // Packing an arbitrary byte range in pieces gives the same buffer as packing whole rows.
    std::vector<uint8_t> pieces(L.total_bytes, 0);
    clear_weight_padding(L, pieces.data());
    size_t pos = 0;
    while (pos < orig.size()) {
        const size_t n = std::min<size_t>(orig.size() - pos, 1 + pick(rng()) % 997);
        pack_weight_bytes(L, orig.data() + pos, pos, n, pieces.data());
        pos += n;
    }
    EXPECT_EQ(0, std::memcmp(pieces.data(), packed.data(), packed.size()));
}

INSTANTIATE_TEST_SUITE_P(Shapes, WeightLayoutTest,
                         ::testing::Values(Shape{GGML_TYPE_Q4_K, 768, 67, 1}, Shape{GGML_TYPE_Q6_K, 256, 130, 2},
                                           Shape{GGML_TYPE_Q4_0, 32 * 37, 65, 1}, Shape{GGML_TYPE_Q8_0, 96, 3, 3},
                                           Shape{GGML_TYPE_Q5_1, 320, 129, 1}, Shape{GGML_TYPE_F16, 129, 70, 1},
                                           Shape{GGML_TYPE_F32, 1, 5, 1}, Shape{GGML_TYPE_BF16, 300, 64, 2}));

// Every row of the contract table, with K and rows that are not whole tiles (a new row is covered here
// without naming it).
std::vector<Shape> every_contract() {
    std::vector<Shape> shapes;
    for (const auto & c : all_matmul_contracts()) {
        if (c.use != ContractUse::any) continue;  // a prefill alternative: tested with its own reference
        shapes.push_back({c.weight_type, 3 * ggml_blck_size(c.weight_type), 67, 2});
    }
    return shapes;
}

INSTANTIATE_TEST_SUITE_P(EveryContract, WeightLayoutTest, ::testing::ValuesIn(every_contract()),
                         [](const auto & info) { return std::string(ggml_type_name(info.param.type)); });

TEST(WeightLayout, RefusesTypesWithoutContractAndPartialBlocks) {
    WeightLayout L;
    const int64_t ne[4] = {256, 8, 1, 1};
    EXPECT_FALSE(make_weight_layout(GGML_TYPE_IQ2_XXS, ne, L));
    const int64_t bad[4] = {100, 8, 1, 1};  // not a whole number of 32-blocks
    EXPECT_FALSE(make_weight_layout(GGML_TYPE_Q4_0, bad, L));
}

TEST(WeightLayout, Q4KStaysWithinItsBitsPlusPadding) {
    // Llama 3.1 8B ffn_down: no tile padding at all, so its tiles hold exactly 4.5 bits per weight; the
    // tensor adds only the tail room of the kquant family's W window (a Q6_K tile: 13440 - 9216 bytes).
    const int64_t ne[4] = {14336, 4096, 1, 1};
    WeightLayout L;
    ASSERT_TRUE(make_weight_layout(GGML_TYPE_Q4_K, ne, L));
    EXPECT_EQ(L.mat_bytes, L.original_bytes());
    EXPECT_DOUBLE_EQ(8.0 * L.mat_bytes / (14336.0 * 4096.0), 4.5);
    EXPECT_EQ(L.tail_bytes, 13440u - 9216u);
    EXPECT_EQ(L.total_bytes, L.original_bytes() + L.tail_bytes);
}

// The families' W windows: each contract's window is the largest tile of the contracts sharing its core
// program (docs/kernels.md, "Where the work happens on the core"; tile bytes from the tile table).
TEST(WeightLayout, WindowIsTheFamilysLargestTile) {
    EXPECT_EQ(weight_window_bytes(GGML_TYPE_Q4_K), 13440u);  // Q6_K
    EXPECT_EQ(weight_window_bytes(GGML_TYPE_Q6_K), 13440u);
    EXPECT_EQ(weight_window_bytes(GGML_TYPE_Q4_0), 17408u);  // Q8_0
    EXPECT_EQ(weight_window_bytes(GGML_TYPE_Q2_K), 7040u);   // Q3_K
    EXPECT_EQ(weight_window_bytes(GGML_TYPE_F16), 16384u);   // every float tile is 16 KB
    EXPECT_EQ(weight_window_bytes(GGML_TYPE_IQ2_XXS), 0u);   // no contract
}

// A model's matmul weights (type, K, M, matrices) and what their packed layouts add to the GGUF's bytes.
struct ModelWeight {
    ggml_type type;
    int64_t   k, m, mats;
};
struct PackedCost {
    size_t gguf = 0, packed = 0, tail = 0;
    double percent() const { return 100.0 * static_cast<double>(packed - gguf) / static_cast<double>(gguf); }
};
// llama.cpp's Q4_K_M mix gives layer i of n_layer the more precise type for attn_v and ffn_down here.
bool use_more_bits(int64_t i, int64_t n_layer) {
    return i < n_layer / 8 || i >= 7 * n_layer / 8 || (i - n_layer / 8) % 3 == 2;
}

PackedCost packed_cost(const std::vector<ModelWeight> & weights) {
    PackedCost c;
    for (const ModelWeight & w : weights) {
        const int64_t ne[4] = {w.k, w.m, w.mats, 1};
        WeightLayout L;
        EXPECT_TRUE(make_weight_layout(w.type, ne, L)) << ggml_type_name(w.type);
        c.gguf += L.original_bytes();
        c.packed += L.total_bytes;
        c.tail += L.tail_bytes;
    }
    return c;
}

// What the tail room costs on a real model: every matmul weight of Llama-3.1-8B in llama.cpp's Q4_K_M
// mix (32 layers; attn_v and ffn_down Q6_K in the layers llama.cpp's use_more_bits picks, Q4_K
// elsewhere; output Q6_K; token_embd is read by GET_ROWS on the CPU and never packed). The packed
// tensors must stay within 1 % of the GGUF's bytes (the bits-per-weight claims of README and
// docs/kernels.md); the figure is printed for docs/kernels.md.
TEST(WeightLayout, TailRoomOfLlama31_8B_Q4_K_M_IsTiny) {
    const int64_t n_layer = 32, n_embd = 4096, n_kv = 1024, n_ff = 14336, n_vocab = 128256;
    std::vector<ModelWeight> tensors;
    for (int64_t i = 0; i < n_layer; ++i) {
        const ggml_type more = use_more_bits(i, n_layer) ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K;
        tensors.push_back({GGML_TYPE_Q4_K, n_embd, n_embd, 1});  // attn_q
        tensors.push_back({GGML_TYPE_Q4_K, n_embd, n_kv, 1});    // attn_k
        tensors.push_back({more, n_embd, n_kv, 1});              // attn_v
        tensors.push_back({GGML_TYPE_Q4_K, n_embd, n_embd, 1});  // attn_output
        tensors.push_back({GGML_TYPE_Q4_K, n_embd, n_ff, 1});    // ffn_gate
        tensors.push_back({GGML_TYPE_Q4_K, n_embd, n_ff, 1});    // ffn_up
        tensors.push_back({more, n_ff, n_embd, 1});              // ffn_down
    }
    tensors.push_back({GGML_TYPE_Q6_K, n_embd, n_vocab, 1});  // output
    const PackedCost cost = packed_cost(tensors);
    const size_t gguf = cost.gguf, packed = cost.packed, tail = cost.tail;
    const double pct = cost.percent();
    std::printf("Llama-3.1-8B Q4_K_M, %zu matmul weights: %zu GGUF bytes, %zu packed, +%zu (%.5f %%), of which tail room %zu\n",
                tensors.size(), gguf, packed, packed - gguf, pct, tail);
    EXPECT_EQ(packed - gguf, tail) << "these shapes are whole tiles and whole groups: only tail room is added";
    EXPECT_LT(pct, 1.0);
}

// The same for Qwen3-30B-A3B (mixture of experts: 48 layers, n_embd 2048, 32 query and 4 KV heads of
// 128, 128 experts of 768, a 128-way F32 router), types as llama.cpp's Q4_K_M mix gives them without
// its special cases (attn_v and ffn_down_exps Q6_K where use_more_bits picks, Q4_K elsewhere). The
// router's 128 rows are 2 row tiles, stored as a group of 4: it, not the tail room, is most of the cost.
TEST(WeightLayout, TailRoomOfQwen3_30B_A3B_Q4_K_M_StaysUnderOnePercent) {
    const int64_t n_layer = 48, n_embd = 2048, n_q = 4096, n_kv = 512, n_ff = 768, n_expert = 128, n_vocab = 151936;
    std::vector<ModelWeight> tensors;
    for (int64_t i = 0; i < n_layer; ++i) {
        const ggml_type more = use_more_bits(i, n_layer) ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K;
        tensors.push_back({GGML_TYPE_Q4_K, n_embd, n_q, 1});        // attn_q
        tensors.push_back({GGML_TYPE_Q4_K, n_embd, n_kv, 1});       // attn_k
        tensors.push_back({more, n_embd, n_kv, 1});                 // attn_v
        tensors.push_back({GGML_TYPE_Q4_K, n_q, n_embd, 1});        // attn_output
        tensors.push_back({GGML_TYPE_F32, n_embd, n_expert, 1});    // ffn_gate_inp (the router)
        tensors.push_back({GGML_TYPE_Q4_K, n_embd, n_ff, n_expert});  // ffn_gate_exps
        tensors.push_back({GGML_TYPE_Q4_K, n_embd, n_ff, n_expert});  // ffn_up_exps
        tensors.push_back({more, n_ff, n_embd, n_expert});            // ffn_down_exps
    }
    tensors.push_back({GGML_TYPE_Q6_K, n_embd, n_vocab, 1});  // output
    const PackedCost cost = packed_cost(tensors);
    const size_t gguf = cost.gguf, packed = cost.packed, tail = cost.tail;
    const double pct = cost.percent();
    std::printf("Qwen3-30B-A3B Q4_K_M, %zu matmul weights: %zu GGUF bytes, %zu packed, +%zu (%.4f %%), of which tail room %zu\n",
                tensors.size(), gguf, packed, packed - gguf, pct, tail);
    EXPECT_LT(pct, 1.0);
}

}  // namespace

namespace {

TEST(TileChoice, SmallestAvailableWidthCoveringTheBatchElseTheLargest) {
    const xdna::MatmulContract & c = *xdna::matmul_contract_for(GGML_TYPE_Q4_K);
    auto only = [](std::vector<int> widths) {
        return [widths](const xdna::TileShape & t) { return std::find(widths.begin(), widths.end(), t.n) != widths.end(); };
    };
    EXPECT_EQ(xdna::choose_tile_n(c, 1), 4);
    EXPECT_EQ(xdna::choose_tile_n(c, 5), 32);
    EXPECT_EQ(xdna::choose_tile_n(c, 512), 32);
    EXPECT_EQ(xdna::choose_tile_n(c, 1, only({32})), 32);
    EXPECT_EQ(xdna::choose_tile_n(c, 512, only({4})), 4);  // a 4-wide kernel loops over 128 token tiles
    EXPECT_EQ(xdna::choose_tile_n(c, 3, only({})), 0);
    // A shape the contract does not allow is never chosen, whatever the device claims.
    EXPECT_EQ(xdna::choose_tile_n(c, 8, only({8})), 0);
}

}  // namespace
