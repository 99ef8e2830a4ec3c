// The matmul kind (MUL_MAT, and MUL_MAT_ID per expert) as its planner builds it and its engines read it.
#pragma once

#include "runtime/invocation.h"

namespace xdna {

// The name of the matmul design's description (aie/matmul/dataflow.json; runtime/design-registry.h).
inline constexpr const char * kMatmulDesign = "matmul";

// One matmul contract call: out[n][m] = sum_k W[m][k] * A[n][k] for a whole (padded) matrix.
// W is in the packed weight layout (weight-layout.h), A in the activation layout (activation-layout.h:
// [n_tile][k_tile][tile]),
// out is fp32 with a row stride of `out_row_stride` floats; only the valid m < M, n < N are written.
struct MatmulInvocation {
    const MatmulContract * contract = nullptr;
    TileShape   tile{};
    BufferSlice weights;
    BufferSlice activations;
    BufferSlice out;
    int64_t     m = 0, n = 0;           // valid output rows (weights) and columns (tokens)
    int64_t     m_tiles = 0, n_tiles = 0, k_tiles = 0;
    size_t      weight_tile_bytes = 0;  // bytes of one packed W tile
    size_t      act_tile_bytes = 0;     // bytes of A per token tile and K tile (TN tokens x TK; all its K parts)
    int64_t     out_row_stride = 0;     // floats between consecutive tokens in out
    int32_t     expert = -1;            // MUL_MAT_ID: the expert of a weight stack whose slice `weights`
                                        // is (for accounting only); -1 for a plain matmul

    uint64_t macs() const { return static_cast<uint64_t>(m_tiles * tile.m) * (n_tiles * tile.n) * (k_tiles * tile.k); }
    uint64_t weight_bytes() const { return weight_tile_bytes * m_tiles * k_tiles; }
    uint64_t activation_bytes() const { return act_tile_bytes * n_tiles * k_tiles; }
    uint64_t out_bytes() const { return static_cast<uint64_t>(m) * n * sizeof(float); }
};

// The matmul kernel of `contract` at `tile`.
KernelKey matmul_key(const MatmulContract & contract, const TileShape & tile);

// Its operands, in the kernel's argument order (the manifest's weights, activations, output):
// weights and activations read whole, out written as n rows of m floats, out_row_stride floats apart.
Invocation to_invocation(const MatmulInvocation & m);

// The typed view of a matmul-kind invocation (its operands by the slots to_invocation gave them).
// Aborts on another kind: callers dispatch by kind first.
MatmulInvocation matmul_of(const Invocation & inv);

}  // namespace xdna
