// Packed weight layout: the GGUF's own bits, re-tiled so that each core tile is one contiguous run of
// memory the NPU's DMA streams linearly (pre-packed weights stream at several times the bandwidth of
// weights re-laid out by strided DMA descriptors), and arranged inside the tile into the planes the
// core kernel loads directly (aie/include/xdna_aie/matmul_tiles.h, via tile-codec.h).
//
// A weight tensor of type T with ne = {K, M, ne2, ne3} is seen as `mats` = ne2*ne3 matrices of M rows.
// Each matrix is padded to Mp = ceil(M/TM)*TM rows and Kp = ceil(K/TK)*TK columns with all-zero GGUF
// blocks (zero scales: the padding contributes exactly 0) and stored as
//     [mat][m_tile][k_tile][tile: the planes of TM rows x TK values]
// A tile holds exactly the bytes of its TM x TK/blck GGUF blocks: nothing is re-quantized, the bytes
// per weight are the GGUF's plus the tile padding.
//
// Tail room: a packed tensor holds every byte the NPU's instruction stream reads for it
// (runtime/matmul-sequence.h), so no device ever copies a weight into a padded staging buffer per run.
// The stream fetches a matrix's row tiles in whole groups of kWeightRowTileGroup (one per core of an
// array column), and each W fetch reads the W window of the contract's family (its largest tile; one
// core program serves the family) from the tile's start. Hence:
//   - each matrix stores `stored_m_tiles` row tiles, m_tiles rounded up to whole groups; the extra row
//     tiles are all-zero GGUF blocks like the other padding (they compute exact zeros, never copied out);
//   - after the last matrix come `tail_bytes` = window - tile bytes of zeros: the last fetch's over-read.
// An expert's (a matrix's) windows end at most tail_bytes past its own tiles, inside the next matrix or
// the tail. On Llama-3.1-8B Q4_K_M this adds 0.018 % to the matmul weights, on Qwen3-30B-A3B 0.28 %
// (mostly its routers' 2 row tiles stored as 4): docs/kernels.md, "Tail room".
#pragma once

#include "ggml.h"
#include "contracts/matmul-contract.h"

#include <cstddef>
#include <cstdint>

namespace xdna {

struct WeightLayout {
    ggml_type type = GGML_TYPE_COUNT;
    int64_t   k = 0;         // valid columns (ne0)
    int64_t   rows = 0;      // valid rows per matrix (ne1)
    int64_t   mats = 0;      // ne2 * ne3
    int       tile_m = 0;
    int       tile_k = 0;
    int64_t   m_tiles = 0;         // row tiles holding valid rows (what a kernel call computes)
    int64_t   stored_m_tiles = 0;  // row tiles stored per matrix: m_tiles in whole kWeightRowTileGroup groups
    int64_t   k_tiles = 0;
    size_t    row_bytes = 0;     // bytes of one unpadded GGUF row
    size_t    segment_bytes = 0; // GGUF bytes of one row's part of one tile (TK/blck blocks)
    size_t    block_bytes = 0;   // bytes of one GGUF block (one value for F32/F16/BF16)
    int       block_values = 0;
    size_t    tile_bytes = 0;
    size_t    window_bytes = 0;  // bytes one W fetch reads from a tile's start: the family's largest tile
    size_t    tail_bytes = 0;    // zeros after the last matrix: window_bytes - tile_bytes
    size_t    mat_bytes = 0;     // tile_bytes * stored_m_tiles * k_tiles
    size_t    total_bytes = 0;   // mat_bytes * mats + tail_bytes: what the tensor occupies

    int64_t padded_k() const { return k_tiles * tile_k; }
    int64_t padded_rows() const { return m_tiles * tile_m; }
    size_t  original_bytes() const { return row_bytes * rows * mats; }
    // Bytes the NPU's stream for one matrix reads from the matrix's start: its stored row tiles and the
    // last fetch's over-read (runtime/matmul-sequence.h, weights_bytes). Within total_bytes for every matrix.
    size_t  stream_bytes() const { return mat_bytes + tail_bytes; }

    // Byte offset, in the packed buffer, of tile (mt, kt) of matrix `mat`.
    size_t tile_offset(int64_t mat, int64_t mt, int64_t kt) const {
        return mat * mat_bytes + (mt * k_tiles + kt) * tile_bytes;
    }
};

// Layout for a tensor's type and shape under its contract; `ok` is false if the type has no contract
// or ne0 is not a whole number of blocks.
bool make_weight_layout(ggml_type type, const int64_t ne[4], WeightLayout & out);

// Bytes one W fetch of `type`'s contract reads: the largest weight tile of the contract's family (0 if
// the type has no contract).
size_t weight_window_bytes(ggml_type type);

// Pack whole original rows [first_row, first_row + n_rows) (global row = mat*rows + row) from `src`
// (GGUF row-major bytes of just those rows) into `packed`. Padding is not touched.
void pack_weight_rows(const WeightLayout & L, const void * src, int64_t first_row, int64_t n_rows, void * packed);

// Write zeros into every padding byte of `packed`: rows beyond M (all-zero GGUF blocks, up to
// stored_m_tiles row tiles), blocks beyond K, and the tail room after the last matrix.
void clear_weight_padding(const WeightLayout & L, void * packed);

// Copy the original byte range [offset, offset+size) of the GGUF row-major tensor out of `packed`.
void unpack_weight_bytes(const WeightLayout & L, const void * packed, size_t offset, size_t size, void * dst);

// Copy the original byte range [offset, offset+size) from `src` into its packed positions.
void pack_weight_bytes(const WeightLayout & L, const void * src, size_t offset, size_t size, void * packed);

}  // namespace xdna
