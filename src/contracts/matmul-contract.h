// Matmul kernel contracts: one entry per weight format the NPU multiplies.
//
// docs/kernels.md is the prose version of this table. A contract fixes, for one weight type:
//   - the weight operand: the GGUF block bytes kept unchanged, re-tiled (see weight-layout.h);
//   - the activation operand: src1 quantized on the host into `act_type` blocks (see activation-layout.h);
//   - the allowed core tile shapes (rows of W x tokens x K) that fit a 64 KB AIE2P core data memory;
//   - the numerics: per block an exact integer (or exact float-product) dot of weight codes and
//     activation codes, scaled by the block scales in fp32 and accumulated in fp32.
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

struct MatmulContract {
    const char * name;        // kernel name, e.g. "mm_q4_K_q8_K"
    ggml_type    weight_type; // GGUF block format of the weights, kept as loaded
    ggml_type    act_type;    // block format the host quantizes activations into
    int          tile_k;      // K depth of every tile of this contract (weights are padded to it)
    int          tile_m;      // weight rows per tile (weights are padded to it)
    // Token tile widths the contract allows; the planner picks the smallest that covers the batch
    // (4 serves decode, 32 serves prefill). Activations are padded to the chosen width.
    std::vector<int> tile_n;

    TileShape tile(int n) const { return {tile_m, n, tile_k}; }
};

// Contract for a weight type, or nullptr if the NPU has none (the op then stays on the CPU).
const MatmulContract * matmul_contract_for(ggml_type weight_type);

// All contracts, for documentation, tests and tools.
const std::vector<MatmulContract> & all_matmul_contracts();

// Whether `tile` is one of the tile shapes contract `c` allows.
bool contract_allows_tile(const MatmulContract & c, const TileShape & tile);

// Smallest allowed token tile width that is >= n (or the largest one when n exceeds them all).
int choose_tile_n(const MatmulContract & c, int64_t n);

// The same among the widths whose tile `available` accepts (e.g. a device's installed kernels): any
// width serves any batch, a kernel invocation loops over as many token tiles as it needs; the choice
// only trades padding against per-tile work. 0 when no width is available.
using TileAvailable = std::function<bool(const TileShape &)>;
int choose_tile_n(const MatmulContract & c, int64_t n, const TileAvailable & available);

}  // namespace xdna
