#include "contracts/weight-layout.h"

#include "contracts/tile-codec.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace xdna {

bool make_weight_layout(ggml_type type, const int64_t ne[4], WeightLayout & L) {
    const MatmulContract * c = matmul_contract_for(type);
    if (c == nullptr || tile_format(type) == nullptr || ne[0] <= 0 || ne[0] % ggml_blck_size(type) != 0) {
        return false;
    }
    L = WeightLayout{};
    L.type = type;
    L.k = ne[0];
    L.rows = ne[1];
    L.mats = ne[2] * ne[3];
    L.tile_m = c->tile_m;
    L.tile_k = c->tile_k;
    L.m_tiles = (L.rows + c->tile_m - 1) / c->tile_m;
    L.k_tiles = (L.k + c->tile_k - 1) / c->tile_k;
    L.row_bytes = ggml_row_size(type, L.k);
    L.segment_bytes = ggml_row_size(type, c->tile_k);
    L.block_bytes = ggml_type_size(type);
    L.block_values = static_cast<int>(ggml_blck_size(type));
    L.tile_bytes = static_cast<size_t>(tile_format(type)->tile_bytes());
    GGML_ASSERT(L.tile_bytes == L.segment_bytes * c->tile_m);  // lossless: a tile is its blocks' bytes
    L.mat_bytes = L.tile_bytes * L.m_tiles * L.k_tiles;
    L.total_bytes = L.mat_bytes * L.mats;
    return true;
}

namespace {

// Where GGUF block `gb` (counting blocks of the row-major tensor) lives in the packed layout.
struct BlockPlace {
    size_t tile_offset;
    int    row, block;  // tile row and block index in that tile row
};

BlockPlace place_of(const WeightLayout & L, int64_t gb) {
    const int64_t blocks_per_row = static_cast<int64_t>(L.row_bytes / L.block_bytes);
    const int64_t blocks_per_tile_row = L.tile_k / L.block_values;
    const int64_t grow = gb / blocks_per_row, bi = gb % blocks_per_row;
    const int64_t mat = grow / L.rows, row = grow % L.rows;
    return {L.tile_offset(mat, row / L.tile_m, bi / blocks_per_tile_row), static_cast<int>(row % L.tile_m),
            static_cast<int>(bi % blocks_per_tile_row)};
}

// Visit the GGUF blocks overlapping original byte range [offset, offset+size): f(block index,
// first byte of the block inside the range, byte count, offset of that part inside the block).
template <typename F>
void for_each_block(const WeightLayout & L, size_t offset, size_t size, F && f) {
    const size_t bs = L.block_bytes;
    for (size_t pos = offset; pos < offset + size;) {
        const int64_t gb = static_cast<int64_t>(pos / bs);
        const size_t in_block = pos % bs;
        const size_t n = std::min(bs - in_block, offset + size - pos);
        f(gb, pos - offset, n, in_block);
        pos += n;
    }
}

}  // namespace

void pack_weight_bytes(const WeightLayout & L, const void * src, size_t offset, size_t size, void * packed) {
    const auto * s = static_cast<const uint8_t *>(src);
    auto * p = static_cast<uint8_t *>(packed);
    std::vector<uint8_t> block(L.block_bytes);
    for_each_block(L, offset, size, [&](int64_t gb, size_t src_off, size_t n, size_t in_block) {
        const BlockPlace at = place_of(L, gb);
        if (n == L.block_bytes) {
            encode_block(L.type, s + src_off, at.row, at.block, p + at.tile_offset);
            return;
        }
        // A write that covers part of a block (a chunked upload): merge it into what is there.
        decode_block(L.type, p + at.tile_offset, at.row, at.block, block.data());
        std::memcpy(block.data() + in_block, s + src_off, n);
        encode_block(L.type, block.data(), at.row, at.block, p + at.tile_offset);
    });
}

void unpack_weight_bytes(const WeightLayout & L, const void * packed, size_t offset, size_t size, void * dst) {
    const auto * p = static_cast<const uint8_t *>(packed);
    auto * d = static_cast<uint8_t *>(dst);
    std::vector<uint8_t> block(L.block_bytes);
    for_each_block(L, offset, size, [&](int64_t gb, size_t dst_off, size_t n, size_t in_block) {
        const BlockPlace at = place_of(L, gb);
        decode_block(L.type, p + at.tile_offset, at.row, at.block, block.data());
        std::memcpy(d + dst_off, block.data() + in_block, n);
    });
}

void pack_weight_rows(const WeightLayout & L, const void * src, int64_t first_row, int64_t n_rows, void * packed) {
    pack_weight_bytes(L, src, static_cast<size_t>(first_row) * L.row_bytes, static_cast<size_t>(n_rows) * L.row_bytes,
                      packed);
}

void clear_weight_padding(const WeightLayout & L, void * packed) {
    auto * p = static_cast<uint8_t *>(packed);
    const std::vector<uint8_t> zero(L.block_bytes, 0);  // an all-zero GGUF block: zero scales, zero values
    const int blocks_per_tile_row = L.tile_k / L.block_values;
    const int64_t valid_blocks = static_cast<int64_t>(L.row_bytes / L.block_bytes);
    for (int64_t mat = 0; mat < L.mats; ++mat) {
        for (int64_t mt = 0; mt < L.m_tiles; ++mt) {
            const int64_t valid_rows = std::min<int64_t>(L.tile_m, L.rows - mt * L.tile_m);
            for (int64_t kt = 0; kt < L.k_tiles; ++kt) {
                uint8_t * tile = p + L.tile_offset(mat, mt, kt);
                for (int r = 0; r < L.tile_m; ++r) {
                    for (int b = 0; b < blocks_per_tile_row; ++b) {
                        if (r >= valid_rows || kt * blocks_per_tile_row + b >= valid_blocks) {
                            encode_block(L.type, zero.data(), r, b, tile);
                        }
                    }
                }
            }
        }
    }
}

}  // namespace xdna
