// The tile codec against the tile ABI (aie/include/xdna_aie/matmul_tiles.h), checked with the test's
// own knowledge of the GGUF block layouts: every block round-trips byte-exactly whatever its bytes,
// code planes hold each value's code where the ABI says, field planes hold the GGUF fields verbatim.
#include "contracts/tile-codec.h"
#include "contracts/matmul-contract.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

namespace {

using namespace xdna;
namespace abi = xdna_aie;

std::vector<ggml_type> all_types() {
    std::vector<ggml_type> t;
    for (const auto & c : all_matmul_contracts())
        if (c.use == ContractUse::any) t.push_back(c.weight_type);
    return t;
}

class TileCodec : public ::testing::TestWithParam<ggml_type> {};

TEST_P(TileCodec, EveryBlockRoundTripsByteExactly) {
    const ggml_type type = GetParam();
    const abi::WeightTileFormat * f = tile_format(type);
    ASSERT_NE(f, nullptr);
    const int bpr = f->blocks_per_row();
    const size_t bs = ggml_type_size(type);
    ASSERT_EQ(static_cast<size_t>(f->block_bytes), bs);
    // A tile is exactly its blocks: nothing added, nothing dropped.
    ASSERT_EQ(static_cast<size_t>(f->tile_bytes()), bs * bpr * abi::kTileM);
    std::vector<uint8_t> blocks(bs * bpr * abi::kTileM), tile(f->tile_bytes(), 0xA5), back(bs);
    xdna_test::fill_random_bytes(blocks);
    for (int r = 0; r < abi::kTileM; ++r)
        for (int b = 0; b < bpr; ++b) encode_block(type, &blocks[(r * bpr + b) * bs], r, b, tile.data());
    for (int r = 0; r < abi::kTileM; ++r) {
        for (int b = 0; b < bpr; ++b) {
            decode_block(type, tile.data(), r, b, back.data());
            ASSERT_EQ(0, std::memcmp(back.data(), &blocks[(r * bpr + b) * bs], bs)) << "row " << r << " block " << b;
        }
    }
    // Every tile byte is written by some block: the encoding of a whole tile does not depend on
    // what the memory held before.
    std::vector<uint8_t> tile2(f->tile_bytes(), 0x5A);
    for (int r = 0; r < abi::kTileM; ++r)
        for (int b = 0; b < bpr; ++b) encode_block(type, &blocks[(r * bpr + b) * bs], r, b, tile2.data());
    EXPECT_EQ(tile, tile2);
}

INSTANTIATE_TEST_SUITE_P(All, TileCodec, ::testing::ValuesIn(all_types()),
                         [](const auto & info) { return std::string(ggml_type_name(info.param)); });

TEST(TileCodecAbi, ElementOrderIsAPermutation) {
    for (int tk : {256, 128, 64}) {
        std::set<int> q, f;
        for (int r = 0; r < abi::kTileM; ++r)
            for (int k = 0; k < tk; ++k) {
                q.insert(abi::q_element(tk, r, k));
                f.insert(abi::f_element(tk, r, k));
            }
        EXPECT_EQ(q.size(), size_t(abi::kTileM * tk));
        EXPECT_EQ(*q.rbegin(), abi::kTileM * tk - 1);
        EXPECT_EQ(f.size(), size_t(abi::kTileM * tk));
    }
}

// Q4_K by hand: value v of a block is nibble (v/32)%2 of qs[32*(v/64) + v%32] (ggml's dequantize order).
TEST(TileCodecAbi, Q4KCodesLandInInt4OperandOrder) {
    const ggml_type type = GGML_TYPE_Q4_K;
    const abi::WeightTileFormat & f = *tile_format(type);
    std::vector<uint8_t> block(144), tile(f.tile_bytes());
    xdna_test::fill_random_bytes(block);
    const int row = 37;
    encode_block(type, block.data(), row, 0, tile.data());
    const uint8_t * q4 = tile.data() + f.plane_offset(0);
    for (int v = 0; v < 256; ++v) {
        const int code = (block[16 + 32 * (v / 64) + v % 32] >> (4 * ((v / 32) % 2))) & 0xF;
        // B operand (row group 2, k step v/16): 256 elements, [k % 16][row % 16]
        const int e = (2 * 16 + v / 16) * 256 + (v % 16) * 16 + row % 16;
        const int nib = (q4[e / 2] >> (4 * (e % 2))) & 0xF;
        ASSERT_EQ(nib, code ^ 8) << "value " << v;
        // signed view: code - 8
        const int s = nib >= 8 ? nib - 16 : nib;
        ASSERT_EQ(s, code - 8);
    }
    // The 12 scale bytes: byte u of the 16 rows of row group 2 is one 16-byte run.
    const uint8_t * sc = tile.data() + f.plane_offset(1);
    for (int u = 0; u < 12; ++u) EXPECT_EQ(sc[(2 * 12 + u) * 16 + row % 16], block[4 + u]);
    // d and dmin: 16 fp16 per row group.
    uint16_t d, dmin, bd, bdmin;
    std::memcpy(&d, tile.data() + f.plane_offset(2) + (2 * 16 + row % 16) * 2, 2);
    std::memcpy(&dmin, tile.data() + f.plane_offset(3) + (2 * 16 + row % 16) * 2, 2);
    std::memcpy(&bd, block.data(), 2);
    std::memcpy(&bdmin, block.data() + 2, 2);
    EXPECT_EQ(d, bd);
    EXPECT_EQ(dmin, bdmin);
}

// Q6_K by hand: low nibble and 2 high bits of value v (ggml's dequantize_row_q6_K order).
TEST(TileCodecAbi, Q6KSplitsCodesIntoQ4AndQ2Planes) {
    const ggml_type type = GGML_TYPE_Q6_K;
    const abi::WeightTileFormat & f = *tile_format(type);
    std::vector<uint8_t> block(210), tile(f.tile_bytes());
    xdna_test::fill_random_bytes(block);
    encode_block(type, block.data(), 5, 0, tile.data());
    const uint8_t * q4 = tile.data() + f.plane_offset(0);
    const uint8_t * q2 = tile.data() + f.plane_offset(1);
    for (int n = 0; n < 2; ++n)
        for (int l = 0; l < 32; ++l) {
            const uint8_t * ql = block.data() + 64 * n;
            const uint8_t * qh = block.data() + 128 + 32 * n;
            const int codes[4] = {(ql[l] & 0xF) | ((qh[l] & 3) << 4), (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4),
                                  (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4), (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)};
            for (int i = 0; i < 4; ++i) {
                const int v = 128 * n + 32 * i + l;
                const int e = (0 * 16 + v / 16) * 256 + (v % 16) * 16 + 5;
                ASSERT_EQ((q4[e / 2] >> (4 * (e % 2))) & 0xF, (codes[i] & 0xF) ^ 8) << v;
                ASSERT_EQ((q2[e / 4] >> (2 * (e % 4))) & 3, codes[i] >> 4) << v;
            }
        }
}

TEST(ActivationTile, QuantizesPerBlockWithSumsAndZeroPadding) {
    const abi::ActTileFormat f{4, 256, 32};
    std::vector<float> x(3 * 256);
    for (auto & v : x) v = xdna_test::uniform(-3.0f, 3.0f);
    x[5] = 2.5f;  // a value that must map to exactly +-127 when it is the block's amax
    std::vector<uint8_t> tile(f.tile_bytes(), 0xCC);
    quantize_activation_tile(x.data(), 256, 3, 250, f, tile.data());
    const auto * codes = reinterpret_cast<const int8_t *>(tile.data() + f.codes_offset());
    const auto * scales = reinterpret_cast<const float *>(tile.data() + f.scales_offset());
    const auto * sums = reinterpret_cast<const int16_t *>(tile.data() + f.sums_offset());
    for (int t = 0; t < 4; ++t) {
        for (int blk = 0; blk < 8; ++blk) {
            float amax = 0;
            for (int i = 0; i < 32; ++i) {
                const int k = blk * 32 + i;
                if (t < 3 && k < 250) amax = std::max(amax, std::fabs(x[t * 256 + k]));
            }
            EXPECT_EQ(scales[f.scale_index(t, blk)], amax / 127.0f);
            for (int i = 0; i < 32; ++i) {
                const int k = blk * 32 + i;
                const float v = (t < 3 && k < 250) ? x[t * 256 + k] : 0.0f;
                const long want = amax > 0 ? std::lrint(v * (127.0f / amax)) : 0;
                ASSERT_EQ(codes[f.code_index(t, k)], want) << t << " " << k;
            }
        }
        for (int g = 0; g < 16; ++g) {
            int s = 0;
            for (int i = 0; i < 16; ++i) s += codes[f.code_index(t, 16 * g + i)];
            EXPECT_EQ(sums[f.sum_index(t, g)], s);
        }
    }
    // The A operand of the 4x16x16 mmul is 64 consecutive bytes: [token][16 k].
    EXPECT_EQ(f.code_index(1, 16 * 3 + 2), 3 * 64 + 16 + 2);
}

}  // namespace
