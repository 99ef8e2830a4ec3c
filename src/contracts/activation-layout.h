// Activation operand of a matmul contract: src1 quantized on the host, once per src1 tensor, into the
// activation tiles the core kernels read (aie/include/xdna_aie/matmul_tiles.h):
//
//     [n_tile][k_tile][tile]      tile = TN tokens x TK values
//
// so the TN x TK tile a core needs is one contiguous run (one linear DMA). Where A arrives in K parts
// (act_k_parts: the bfp16 contracts at 64 tokens) a tile here is one part, TK = the contract's K tile /
// parts, so the parts of one weight K tile are consecutive tiles. Quantized contracts get int8
// codes in the 4x16x16 mmul's A-operand order, fp32 scales per 32 or 256 values and exact int16 sums
// of every 16 codes; float contracts get F16/BF16/F32 values in the 4x8x8 A-operand order. Tokens
// beyond N and values beyond K are zeros. The quantizer is the contract's own (tile-codec.h), not
// ggml-cpu's: the arithmetic of the NPU path depends on no CPU backend code.
#pragma once

#include "contracts/matmul-contract.h"
#include "xdna_aie/matmul_tiles.h"

#include "ggml.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xdna {

struct ActivationLayout {
    ActFormat format = ActFormat::f32;
    int64_t   k = 0;       // valid K
    int64_t   k_pad = 0;   // padded K (multiple of the contract's tile K)
    int64_t   n = 0;       // valid tokens
    int64_t   n_pad = 0;   // padded tokens (multiple of the token tile)
    int       tile_n = 0;
    int       tile_k = 0;    // K of one tile: the contract's K tile / k_parts
    int       k_parts = 1;   // tiles per weight K tile (act_k_parts)
    int64_t   n_tiles = 0, k_tiles = 0;
    size_t    tile_bytes = 0;
    size_t    total_bytes = 0;

    // Bytes of A per token tile and weight K tile: what one K step of the kernel's core program takes.
    size_t weight_k_tile_bytes() const { return tile_bytes * static_cast<size_t>(k_parts); }

    size_t tile_offset(int64_t nt, int64_t kt) const { return static_cast<size_t>(nt * k_tiles + kt) * tile_bytes; }
    bool   quantized() const { return act_format_block(format) > 0; }
    xdna_aie::ActTileFormat      quant_tile() const { return {tile_n, tile_k, act_format_block(format)}; }
    xdna_aie::FloatActTileFormat float_tile() const { return {tile_n, tile_k, format == ActFormat::f32 ? 4 : 2}; }
};

// Bytes of A per token tile and weight K tile of contract `c` at token tile `tile_n` (all its K parts).
size_t activation_tile_bytes(const MatmulContract & c, int tile_n);
// Bytes of one A object: one K part of that (the whole of it where act_k_parts is 1).
size_t activation_object_bytes(const MatmulContract & c, int tile_n);

// Layout for n tokens in token tiles of `tile_n` (by default choose_tile_n(c, n)).
ActivationLayout make_activation_layout(const MatmulContract & c, int64_t k, int64_t k_pad, int64_t n, int tile_n = 0);

// Quantize rows [r0, r1) of the 2-D slice (i2, i3) of src1 (F32, F16 or BF16, any strides) into `dst`,
// a buffer of layout.total_bytes. Rows at or beyond layout.n (up to n_pad) are written as zeros.
// `scratch` holds at least k_pad floats. Disjoint row ranges may run in parallel.
// Returns false when a row of a bfp16 layout holds a NaN or an infinity, which a bfp16 block cannot
// carry: the tile's flag byte of that token is set, and the kernel makes the token's outputs NaN
// (BlockActTileFormat; docs/kernels.md, "Prefill contracts v3"); the rows are appended to `non_finite`
// when given. The other formats carry them and return true.
bool quantize_activation_rows(const ggml_tensor * src1, int64_t i2, int64_t i3, const ActivationLayout & L,
                              int64_t r0, int64_t r1, void * dst, float * scratch, std::vector<int64_t> * non_finite = nullptr);

// Token row `r` of a buffer of layout L from `row`, one row of src1's type and element stride (any
// row of any tensor of that type: MUL_MAT_ID gathers the tokens routed to one expert this way), or
// zeros when `row` is null (padding tokens). `scratch` holds at least k_pad floats. False as above.
bool quantize_activation_row(const ggml_tensor * src1, const void * row, const ActivationLayout & L, int64_t r, void * dst,
                             float * scratch);

}  // namespace xdna
