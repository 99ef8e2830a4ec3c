#include "contracts/matmul-contract.h"

#include <algorithm>
#include <cstring>

namespace xdna {

namespace {

// Tile sizes: TM = 64 weight rows (4 row groups of the int8 x int4 4x16x16 mmul), TK = 256 for
// quantized weights (one K-quant super-block, eight 32-blocks), 128 for F16/BF16 and 64 for F32 (16 KB
// tiles), TN in {4, 32} tokens (1 or 8 groups of the mmul's 4 rows; the bfp16 prefill contracts 32, and
// 64 for Q4_K / Q5_K). The core data memory budget of each contract (every buffer a core holds, against
// 64 KB) is tabled in docs/kernels.md.
const std::vector<int> kTokenTiles = {4, 32};
// The bfp16 prefill contracts take 32 tokens (four 8-token A operands per K block). Q4_K and Q5_K also
// take 64, their A arriving in K halves (act_k_parts): the whole K tile's A (2 x 18560 B double-buffered)
// beside C (16 KB) and W would not fit 64 KB, the halves do (58960 / 63056 B; docs/kernels.md, "Prefill
// contracts v3"). Q6_K's larger W tile does not fit even so (67408 B), nor do the other families'
// programs have a 64-token form.
const std::vector<int> kPrefillTokenTiles = {32};
const std::vector<int> kPrefillTokenTilesWide = {32, 64};

std::vector<MatmulContract> make_contracts() {
    return {
        {"mm_f32_f32",   GGML_TYPE_F32,  ActFormat::f32,  64,  64, kTokenTiles, "float"},
        {"mm_f16_f16",   GGML_TYPE_F16,  ActFormat::f16,  128, 64, kTokenTiles, "float"},
        {"mm_bf16_bf16", GGML_TYPE_BF16, ActFormat::bf16, 128, 64, kTokenTiles, "float"},
        {"mm_q4_0_a8", GGML_TYPE_Q4_0, ActFormat::a8_b32, 256, 64, kTokenTiles, "legacy"},
        {"mm_q4_1_a8", GGML_TYPE_Q4_1, ActFormat::a8_b32, 256, 64, kTokenTiles, "legacy"},
        {"mm_q5_0_a8", GGML_TYPE_Q5_0, ActFormat::a8_b32, 256, 64, kTokenTiles, "legacy"},
        {"mm_q5_1_a8", GGML_TYPE_Q5_1, ActFormat::a8_b32, 256, 64, kTokenTiles, "legacy"},
        {"mm_q8_0_a8", GGML_TYPE_Q8_0, ActFormat::a8_b32, 256, 64, kTokenTiles, "legacy"},
        {"mm_q2_K_a8", GGML_TYPE_Q2_K, ActFormat::a8_b256, 256, 64, kTokenTiles, "kquant_low"},
        {"mm_q3_K_a8", GGML_TYPE_Q3_K, ActFormat::a8_b256, 256, 64, kTokenTiles, "kquant_low"},
        {"mm_q4_K_a8", GGML_TYPE_Q4_K, ActFormat::a8_b256, 256, 64, kTokenTiles, "kquant"},
        {"mm_q5_K_a8", GGML_TYPE_Q5_K, ActFormat::a8_b256, 256, 64, kTokenTiles, "kquant"},
        {"mm_q6_K_a8", GGML_TYPE_Q6_K, ActFormat::a8_b256, 256, 64, kTokenTiles, "kquant"},
        {"mm_q4_K_bfp16", GGML_TYPE_Q4_K, ActFormat::bfp16, 256, 64, kPrefillTokenTilesWide, "kquant_bfp16", ContractUse::prefill},
        {"mm_q5_K_bfp16", GGML_TYPE_Q5_K, ActFormat::bfp16, 256, 64, kPrefillTokenTilesWide, "kquant_bfp16", ContractUse::prefill},
        {"mm_q6_K_bfp16", GGML_TYPE_Q6_K, ActFormat::bfp16, 256, 64, kPrefillTokenTiles, "kquant_bfp16", ContractUse::prefill},
        {"mm_q4_0_bfp16", GGML_TYPE_Q4_0, ActFormat::bfp16, 256, 64, kPrefillTokenTiles, "legacy_bfp16", ContractUse::prefill},
        {"mm_q4_1_bfp16", GGML_TYPE_Q4_1, ActFormat::bfp16, 256, 64, kPrefillTokenTiles, "legacy_bfp16", ContractUse::prefill},
        {"mm_q5_0_bfp16", GGML_TYPE_Q5_0, ActFormat::bfp16, 256, 64, kPrefillTokenTiles, "legacy_bfp16", ContractUse::prefill},
        {"mm_q5_1_bfp16", GGML_TYPE_Q5_1, ActFormat::bfp16, 256, 64, kPrefillTokenTiles, "legacy_bfp16", ContractUse::prefill},
        {"mm_q8_0_bfp16", GGML_TYPE_Q8_0, ActFormat::bfp16, 256, 64, kPrefillTokenTiles, "legacy_bfp16", ContractUse::prefill},
        {"mm_q2_K_bfp16", GGML_TYPE_Q2_K, ActFormat::bfp16, 256, 64, kPrefillTokenTiles, "kquant_low_bfp16", ContractUse::prefill},
        {"mm_q3_K_bfp16", GGML_TYPE_Q3_K, ActFormat::bfp16, 256, 64, kPrefillTokenTiles, "kquant_low_bfp16", ContractUse::prefill},
        {"mm_f16_bfp16", GGML_TYPE_F16, ActFormat::bfp16, 128, 64, kPrefillTokenTiles, "float_bfp16", ContractUse::prefill},
        {"mm_bf16_bfp16", GGML_TYPE_BF16, ActFormat::bfp16, 128, 64, kPrefillTokenTiles, "float_bfp16", ContractUse::prefill},
        {"mm_f32_bfp16", GGML_TYPE_F32, ActFormat::bfp16, 64, 64, kPrefillTokenTiles, "f32_bfp16", ContractUse::prefill},
    };
}

}  // namespace

const char * act_format_name(ActFormat f) {
    switch (f) {
        case ActFormat::a8_b32: return "a8/32";
        case ActFormat::a8_b256: return "a8/256";
        case ActFormat::f16: return "f16";
        case ActFormat::bf16: return "bf16";
        case ActFormat::f32: return "f32";
        case ActFormat::bfp16: return "bfp16";
    }
    return "?";
}

int act_k_parts(const MatmulContract & c, int tile_n) {
    return c.act_format == ActFormat::bfp16 && tile_n == 64 ? 2 : 1;
}

int act_format_block(ActFormat f) {
    return f == ActFormat::a8_b32 ? 32 : f == ActFormat::a8_b256 ? 256 : 0;
}

const std::vector<MatmulContract> & all_matmul_contracts() {
    static const std::vector<MatmulContract> contracts = make_contracts();
    return contracts;
}

namespace {
const MatmulContract * contract_for(ggml_type weight_type, ContractUse use) {
    for (const auto & c : all_matmul_contracts()) {
        if (c.weight_type == weight_type && c.use == use) {
            return &c;
        }
    }
    return nullptr;
}
}  // namespace

const MatmulContract * matmul_contract_for(ggml_type weight_type) { return contract_for(weight_type, ContractUse::any); }

const MatmulContract * prefill_contract_for(ggml_type weight_type) { return contract_for(weight_type, ContractUse::prefill); }

const MatmulContract * matmul_contract_named(const char * name) {
    if (name == nullptr) {
        return nullptr;
    }
    for (const auto & c : all_matmul_contracts()) {
        if (std::strcmp(c.name, name) == 0) {
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
