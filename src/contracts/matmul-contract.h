// Matmul kernel contracts: one entry per weight format the NPU multiplies.
//
// docs/kernels.md is the prose version of this table. A contract fixes, for one weight type:
//   - the weight operand: the GGUF block bits kept, re-arranged into the planes of a core tile
//     (aie/include/xdna_aie/matmul_tiles.h; weight-layout.h);
//   - the activation operand: src1 quantized on the host into activation tiles of `act_format`
//     (int8 codes with fp32 scales per 32 or 256 values and exact 16-value sums, or F16/BF16/F32);
//   - the allowed core tile shapes (rows of W x tokens x K) that fit a 64 KB AIE2P core data memory;
//   - the numerics: per block an exact integer (or exact float-product) dot of weight codes and
//     activation codes, scaled by the block scales in fp32 in a fixed order (docs/kernels.md).
// Every device (sim, XRT) executes exactly these contracts; the planner only chooses among them.
#pragma once

#include "ggml.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace xdna {

struct TileShape {
    int m;  // weight rows per core tile (output features)
    int n;  // activation rows (tokens) per core tile
    int k;  // reduction depth per core tile; a multiple of the weight block size
};

// Activation operand formats (docs/kernels.md, "Activations").
enum class ActFormat {
    a8_b32,   // int8 codes, one fp32 scale per 32 values, int16 sums per 16 (Q4_0 ... Q8_0 weights)
    a8_b256,  // the same with one scale per 256 values (K-quant weights: one epilogue per super-block)
    f16,
    bf16,
    f32,
    bfp16,    // bfp16ebs8 blocks of 8 values (prefill contracts v3: the bfp16 mmul's A operand)
};
const char * act_format_name(ActFormat f);
// Values per activation scale (0 for the float formats).
int act_format_block(ActFormat f);

// Row tiles of a weight matrix that one array column takes at once: the matmul design has this many
// core rows per column (aie/matmul/dataflow.json, "core_rows"), each computing one row tile, and its
// instruction stream fetches weights in whole groups of them. Packed weights are padded to whole
// groups (weight-layout.h); the stream builder refuses a design whose core rows do not divide it.
constexpr int kWeightRowTileGroup = 4;

// Which batches a contract serves. `any`: the weight type's default contract (every batch). `prefill`:
// an alternative for batches wider than the decode tile, chosen only when the user asks for it
// (GGML_XDNA_PREFILL=bfp16, op-support.h); the same weight tiles as the type's default contract.
enum class ContractUse { any, prefill };

// Token count up to which a batch is decode-shaped: it keeps the exact integer contracts, which the
// weight stream binds there anyway (docs/kernels.md, "Prefill contracts v3").
constexpr int kDecodeTokens = 4;

struct MatmulContract {
    const char * name;        // kernel name, e.g. "mm_q4_K_a8"
    ggml_type    weight_type; // GGUF block format of the weights, kept bit for bit
    ActFormat    act_format;  // what the host turns activations into
    int          tile_k;      // K depth of every tile of this contract (weights are padded to it)
    int          tile_m;      // weight rows per tile (weights are padded to it)
    // Token tile widths the contract allows; the planner picks the smallest that covers the batch
    // (4 serves decode, 32 or 64 prefill). Activations are padded to the chosen width.
    std::vector<int> tile_n;
    // The core program (one xclbin) serving it: aie/matmul/dataflow.json's "families", which the design
    // description is checked against. Its W buffers hold the family's largest tile, so every W fetch of
    // this contract reads that many bytes (weight-layout.h: the tail room of packed weights).
    const char * family;
    ContractUse  use = ContractUse::any;

    TileShape tile(int n) const { return {tile_m, n, tile_k}; }
};

// Contract for a weight type, or nullptr if the NPU has none (the op then stays on the CPU): the
// default (`ContractUse::any`) one, which also fixes the packed weight layout.
const MatmulContract * matmul_contract_for(ggml_type weight_type);

// The prefill alternative of a weight type (ContractUse::prefill), nullptr if it has none.
const MatmulContract * prefill_contract_for(ggml_type weight_type);

// The contract of that kernel name ("mm_q4_K_a8"), nullptr if none: a KernelKey's variant.
const MatmulContract * matmul_contract_named(const char * name);

// All contracts, for documentation, tests and tools.
const std::vector<MatmulContract> & all_matmul_contracts();

// Whether `tile` is one of the tile shapes contract `c` allows.
bool contract_allows_tile(const MatmulContract & c, const TileShape & tile);

// A objects per K tile at token tile `tile_n`: 1, or 2 where the activation tile of a whole K tile
// would not fit the core next to the rest (the bfp16 contracts at 64 tokens). The A tile then arrives
// as that many objects of tile_k / parts values each, consecutive in memory ([n_tile][k_tile][part]),
// and the core program calls the kernel once per object with the same W tile.
int act_k_parts(const MatmulContract & c, int tile_n);

// Smallest allowed token tile width that is >= n (or the largest one when n exceeds them all).
int choose_tile_n(const MatmulContract & c, int64_t n);

// The same among the widths whose tile `available` accepts (e.g. a device's installed kernels): any
// width serves any batch, a kernel invocation loops over as many token tiles as it needs; the choice
// only trades padding against per-tile work. 0 when no width is available.
using TileAvailable = std::function<bool(const TileShape &)>;
int choose_tile_n(const MatmulContract & c, int64_t n, const TileAvailable & available);

}  // namespace xdna
