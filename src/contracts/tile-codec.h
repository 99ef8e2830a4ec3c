// GGUF blocks <-> the planes of a weight tile (aie/include/xdna_aie/matmul_tiles.h), and float rows ->
// activation tiles. This is the whole host side of the tile ABI: weights are encoded once at load
// (set_tensor) and decoded back byte-exactly for get_tensor; activations are quantized per submission.
#pragma once

#include "ggml.h"
#include "xdna_aie/matmul_tiles.h"

#include <cstddef>
#include <cstdint>

namespace xdna {

// Tile format of a weight type, or nullptr when no core kernel takes that type.
const xdna_aie::WeightTileFormat * tile_format(ggml_type type);

// Write GGUF block `block` (ggml_type_size(type) bytes) into the tile as block number `b` of tile row
// `row` (0 <= row < 64, 0 <= b < blocks_per_row()). Every bit of the block lands somewhere: decode_block
// returns the same bytes whatever they hold (NaN scales, any code bits).
void encode_block(ggml_type type, const void * block, int row, int b, void * tile);
void decode_block(ggml_type type, const void * tile, int row, int b, void * block);

// `n` consecutive GGUF blocks (n * ggml_type_size(type) bytes) as blocks b .. b + n - 1 of tile row `row`:
// the same bytes as n calls of encode_block / decode_block, with one dispatch on the type.
void encode_blocks(ggml_type type, const void * blocks, int row, int b, int n, void * tile);
void decode_blocks(ggml_type type, const void * tile, int row, int b, int n, void * blocks);

// Activation tile of a quantized contract. `x` holds `valid_tokens` rows of `valid_k` floats, rows
// `x_row_stride` floats apart; tokens and K beyond them are written as zeros (codes, scales and sums).
// Quantization per token and block of act_block values (docs/kernels.md, "Activations"):
//   amax = max |x|; s = amax / 127; id = amax > 0 ? 127 / amax : 0; code = clamp(rint(x * id), +-127),
//   rint rounding half to even. A NaN or an infinity in the block: s = NaN, every code 0. amax so small
//   that 127 / amax overflows (below 127 / FLT_MAX, ~3.7e-37): every code 0.
void quantize_activation_tile(const float * x, int64_t x_row_stride, int valid_tokens, int valid_k,
                              const xdna_aie::ActTileFormat & f, void * tile);

// One token of an activation tile (the same arithmetic, for callers that fill a tile row by row).
void quantize_activation_token(const float * x, int valid_k, int t, const xdna_aie::ActTileFormat & f, void * tile);

// Zero the bytes of an activation tile that hold no token value (plane alignment padding).
void clear_activation_tile_padding(const xdna_aie::ActTileFormat & f, void * tile);

// Float activation tiles: one token's values (fp16 / bf16 bits with round-to-nearest-even, or fp32).
enum class FloatAct { f16, bf16, f32 };
void store_float_activation_token(const float * x, int valid_k, int t, FloatAct kind,
                                  const xdna_aie::FloatActTileFormat & f, void * tile);

}  // namespace xdna
