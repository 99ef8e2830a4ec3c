#include "matmul-contract.h"

#include <algorithm>

namespace xdna {

namespace {

// Tile sizes, with their AIE2P core data memory budget (64 KB per core, double-buffered inputs):
//   quantized weights, TK = 256, TM = 64: W tile 64 rows x 256 at <= 8.5 bits = <= 17 KB (Q8_0),
//     9.2 KB (Q4_K); int8 activations 32 x 256 = 8.5 KB with scales; C tile 64 x 32 fp32 = 8 KB;
//     2 x (17 + 8.5) + 8 = 59 KB in the worst case (Q8_0), 43 KB for Q4_K.
//   16-bit weights, TK = 128: W 64 x 128 x 2 = 16 KB, A 32 x 128 x 2 = 8 KB, C 8 KB: 56 KB.
//   32-bit weights, TK = 64: W 64 x 64 x 4 = 16 KB, A 32 x 64 x 4 = 8 KB, C 8 KB: 56 KB.
// TM = 64 and TN in {4, 32} are multiples of the 4x8x8 / 8x8x8 int8 and 4x16x16 int4 mmul shapes.
const std::vector<int> kTokenTiles = {4, 32};

std::vector<MatmulContract> make_contracts() {
    return {
        {"mm_f32_f32",   GGML_TYPE_F32,  GGML_TYPE_F32,  64,  64, kTokenTiles},
        {"mm_f16_f16",   GGML_TYPE_F16,  GGML_TYPE_F16,  128, 64, kTokenTiles},
        {"mm_bf16_bf16", GGML_TYPE_BF16, GGML_TYPE_BF16, 128, 64, kTokenTiles},
        {"mm_q4_0_q8_0", GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, 256, 64, kTokenTiles},
        {"mm_q4_1_q8_1", GGML_TYPE_Q4_1, GGML_TYPE_Q8_1, 256, 64, kTokenTiles},
        {"mm_q5_0_q8_0", GGML_TYPE_Q5_0, GGML_TYPE_Q8_0, 256, 64, kTokenTiles},
        {"mm_q5_1_q8_1", GGML_TYPE_Q5_1, GGML_TYPE_Q8_1, 256, 64, kTokenTiles},
        {"mm_q8_0_q8_0", GGML_TYPE_Q8_0, GGML_TYPE_Q8_0, 256, 64, kTokenTiles},
        {"mm_q2_K_q8_K", GGML_TYPE_Q2_K, GGML_TYPE_Q8_K, 256, 64, kTokenTiles},
        {"mm_q3_K_q8_K", GGML_TYPE_Q3_K, GGML_TYPE_Q8_K, 256, 64, kTokenTiles},
        {"mm_q4_K_q8_K", GGML_TYPE_Q4_K, GGML_TYPE_Q8_K, 256, 64, kTokenTiles},
        {"mm_q5_K_q8_K", GGML_TYPE_Q5_K, GGML_TYPE_Q8_K, 256, 64, kTokenTiles},
        {"mm_q6_K_q8_K", GGML_TYPE_Q6_K, GGML_TYPE_Q8_K, 256, 64, kTokenTiles},
    };
}

}  // namespace

const std::vector<MatmulContract> & all_matmul_contracts() {
    static const std::vector<MatmulContract> contracts = make_contracts();
    return contracts;
}

const MatmulContract * matmul_contract_for(ggml_type weight_type) {
    for (const auto & c : all_matmul_contracts()) {
        if (c.weight_type == weight_type) {
            return &c;
        }
    }
    return nullptr;
}

bool contract_allows_tile(const MatmulContract & c, const TileShape & tile) {
    return tile.m == c.tile_m && tile.k == c.tile_k && std::find(c.tile_n.begin(), c.tile_n.end(), tile.n) != c.tile_n.end();
}

int choose_tile_n(const MatmulContract & c, int64_t n) {
    return choose_tile_n(c, n, [](const TileShape &) { return true; });
}

int choose_tile_n(const MatmulContract & c, int64_t n, const TileAvailable & available) {
    int largest = 0;
    for (int t : c.tile_n) {  // ascending
        if (!available(c.tile(t))) {
            continue;
        }
        if (t >= n) {
            return t;
        }
        largest = t;
    }
    return largest;
}

}  // namespace xdna
