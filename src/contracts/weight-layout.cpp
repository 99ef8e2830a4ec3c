#include "contracts/weight-layout.h"

#include "contracts/tile-codec.h"

#include <algorithm>
#include <cstring>

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
    L.stored_m_tiles = (L.m_tiles + kWeightRowTileGroup - 1) / kWeightRowTileGroup * kWeightRowTileGroup;
    L.k_tiles = (L.k + c->tile_k - 1) / c->tile_k;
    L.row_bytes = ggml_row_size(type, L.k);
    L.segment_bytes = ggml_row_size(type, c->tile_k);
    L.block_bytes = ggml_type_size(type);
    L.block_values = static_cast<int>(ggml_blck_size(type));
    L.tile_bytes = static_cast<size_t>(tile_format(type)->tile_bytes());
    GGML_ASSERT(L.tile_bytes == L.segment_bytes * c->tile_m);  // lossless: a tile is its blocks' bytes
    L.window_bytes = weight_window_bytes(type);
    GGML_ASSERT(L.window_bytes >= L.tile_bytes);
    L.tail_bytes = L.window_bytes - L.tile_bytes;
    L.mat_bytes = L.tile_bytes * L.stored_m_tiles * L.k_tiles;
    L.total_bytes = L.mat_bytes * L.mats + L.tail_bytes;
    return true;
}

size_t weight_window_bytes(ggml_type type) {
    const MatmulContract * c = matmul_contract_for(type);
    if (c == nullptr) {
        return 0;
    }
    size_t window = 0;
    for (const MatmulContract & f : all_matmul_contracts()) {
        if (std::strcmp(f.family, c->family) == 0 && tile_format(f.weight_type) != nullptr) {
            window = std::max(window, static_cast<size_t>(tile_format(f.weight_type)->tile_bytes()));
        }
    }
    return window;
}

namespace {

constexpr size_t kMaxBlockBytes = 256;      // the largest block of a contract type (Q6_K: 210 bytes)
constexpr size_t kMaxSegmentBytes = 1024;   // the largest row segment of a tile (TK / blck blocks)

// A run of whole GGUF blocks of one row inside one tile: blocks [block, block + n) of tile row `row`.
struct BlockRun {
    size_t tile_offset;
    int    row, block, n;
};

// The run that starts at GGUF block `gb` (counting blocks of the row-major tensor) and holds at most
// `max_blocks` blocks (it ends at the end of the row's segment of that tile).
BlockRun run_at(const WeightLayout & L, int64_t gb, int64_t max_blocks) {
    const int64_t blocks_per_row = static_cast<int64_t>(L.row_bytes / L.block_bytes);
    const int64_t blocks_per_tile_row = L.tile_k / L.block_values;
    const int64_t grow = gb / blocks_per_row, bi = gb % blocks_per_row;
    const int64_t mat = grow / L.rows, row = grow % L.rows;
    const int64_t b = bi % blocks_per_tile_row;
    const int64_t n = std::min({max_blocks, blocks_per_tile_row - b, blocks_per_row - bi});
    return {L.tile_offset(mat, row / L.tile_m, bi / blocks_per_tile_row), static_cast<int>(row % L.tile_m),
            static_cast<int>(b), static_cast<int>(n)};
}

// Visit [pos, end) in original (row-major) order: runs of whole blocks f(run, byte offset of the run
// inside the range) and parts of blocks g(run of one block, byte offset inside the range, byte count,
// offset of that part inside the block).
template <typename Whole, typename Part>
void visit_in_order(const WeightLayout & L, size_t offset, size_t pos, size_t end, Whole & whole, Part & part) {
    const size_t bs = L.block_bytes;
    while (pos < end) {
        const int64_t gb = static_cast<int64_t>(pos / bs);
        const size_t in_block = pos % bs;
        if (in_block != 0 || end - pos < bs) {
            const size_t n = std::min(bs - in_block, end - pos);
            part(run_at(L, gb, 1), pos - offset, n, in_block);
            pos += n;
            continue;
        }
        const BlockRun r = run_at(L, gb, static_cast<int64_t>((end - pos) / bs));
        whole(r, pos - offset);
        pos += static_cast<size_t>(r.n) * bs;
    }
}

// Visit the original byte range [offset, offset+size) as for visit_in_order, the whole rows in it
// tile by tile: all the rows of a tile row band in one tile, then the next tile. Each visit touches
// only its own blocks' bits, so the order changes no byte; it keeps a tile's planes in cache while
// its rows land in them (in row-major order, a row's blocks are a whole row of tiles apart).
template <typename Whole, typename Part>
void for_each_run(const WeightLayout & L, size_t offset, size_t size, Whole && whole, Part && part) {
    const size_t end = offset + size;
    const int64_t first_row = static_cast<int64_t>((offset + L.row_bytes - 1) / L.row_bytes);  // global rows
    const int64_t last_row = static_cast<int64_t>(end / L.row_bytes);                           // exclusive
    if (last_row - first_row < 2) {
        visit_in_order(L, offset, offset, end, whole, part);
        return;
    }
    const size_t whole_begin = static_cast<size_t>(first_row) * L.row_bytes;
    const size_t whole_end = static_cast<size_t>(last_row) * L.row_bytes;
    visit_in_order(L, offset, offset, whole_begin, whole, part);
    const int64_t blocks_per_row = static_cast<int64_t>(L.row_bytes / L.block_bytes);
    const int blocks_per_tile_row = L.tile_k / L.block_values;
    for (int64_t g = first_row; g < last_row;) {
        const int64_t mat = g / L.rows, row = g % L.rows;
        const int64_t mt = row / L.tile_m;
        const int64_t band_end = std::min(last_row, mat * L.rows + std::min(L.rows, (mt + 1) * L.tile_m));
        for (int64_t kt = 0; kt < L.k_tiles; ++kt) {
            const int64_t b0 = kt * blocks_per_tile_row;
            const int n = static_cast<int>(std::min<int64_t>(blocks_per_tile_row, blocks_per_row - b0));
            const size_t tile_offset = L.tile_offset(mat, mt, kt);
            for (int64_t gr = g; gr < band_end; ++gr) {
                const BlockRun r{tile_offset, static_cast<int>((gr - mat * L.rows) % L.tile_m), 0, n};
                whole(r, static_cast<size_t>(gr) * L.row_bytes + static_cast<size_t>(b0) * L.block_bytes - offset);
            }
        }
        g = band_end;
    }
    visit_in_order(L, offset, whole_end, end, whole, part);
}

}  // namespace

void pack_weight_bytes(const WeightLayout & L, const void * src, size_t offset, size_t size, void * packed) {
    GGML_ASSERT(L.block_bytes <= kMaxBlockBytes);
    const auto * s = static_cast<const uint8_t *>(src);
    auto * p = static_cast<uint8_t *>(packed);
    for_each_run(
        L, offset, size,
        [&](const BlockRun & r, size_t src_off) { encode_blocks(L.type, s + src_off, r.row, r.block, r.n, p + r.tile_offset); },
        [&](const BlockRun & r, size_t src_off, size_t n, size_t in_block) {
            // A write that covers part of a block (a chunked upload): merge it into what is there.
            uint8_t block[kMaxBlockBytes];
            decode_block(L.type, p + r.tile_offset, r.row, r.block, block);
            std::memcpy(block + in_block, s + src_off, n);
            encode_block(L.type, block, r.row, r.block, p + r.tile_offset);
        });
}

void unpack_weight_bytes(const WeightLayout & L, const void * packed, size_t offset, size_t size, void * dst) {
    GGML_ASSERT(L.block_bytes <= kMaxBlockBytes);
    const auto * p = static_cast<const uint8_t *>(packed);
    auto * d = static_cast<uint8_t *>(dst);
    for_each_run(
        L, offset, size,
        [&](const BlockRun & r, size_t dst_off) { decode_blocks(L.type, p + r.tile_offset, r.row, r.block, r.n, d + dst_off); },
        [&](const BlockRun & r, size_t dst_off, size_t n, size_t in_block) {
            uint8_t block[kMaxBlockBytes];
            decode_block(L.type, p + r.tile_offset, r.row, r.block, block);
            std::memcpy(d + dst_off, block + in_block, n);
        });
}

void pack_weight_rows(const WeightLayout & L, const void * src, int64_t first_row, int64_t n_rows, void * packed) {
    pack_weight_bytes(L, src, static_cast<size_t>(first_row) * L.row_bytes, static_cast<size_t>(n_rows) * L.row_bytes,
                      packed);
}

void clear_weight_padding(const WeightLayout & L, void * packed) {
    GGML_ASSERT(L.segment_bytes <= kMaxSegmentBytes);
    static const uint8_t zero[kMaxSegmentBytes] = {};  // all-zero GGUF blocks: zero scales, zero values
    auto * p = static_cast<uint8_t *>(packed);
    const int blocks_per_tile_row = L.tile_k / L.block_values;
    const int64_t valid_blocks = static_cast<int64_t>(L.row_bytes / L.block_bytes);
    for (int64_t mat = 0; mat < L.mats; ++mat) {
        // Row tiles past m_tiles (whole groups of row tiles) hold no valid row: all padding.
        for (int64_t mt = 0; mt < L.stored_m_tiles; ++mt) {
            const int64_t valid_rows = std::clamp<int64_t>(L.rows - mt * L.tile_m, 0, L.tile_m);
            for (int64_t kt = 0; kt < L.k_tiles; ++kt) {
                uint8_t * tile = p + L.tile_offset(mat, mt, kt);
                // Blocks [first_pad, blocks_per_tile_row) of a valid row lie beyond K; padding rows are all padding.
                const int first_pad = static_cast<int>(
                    std::max<int64_t>(0, std::min<int64_t>(blocks_per_tile_row, valid_blocks - kt * blocks_per_tile_row)));
                for (int r = 0; r < L.tile_m; ++r) {
                    const int b0 = r >= valid_rows ? 0 : first_pad;
                    if (b0 < blocks_per_tile_row) {
                        encode_blocks(L.type, zero, r, b0, blocks_per_tile_row - b0, tile);
                    }
                }
            }
        }
    }
    // The tail room: bytes a W fetch reads past the last tile, never part of a tile the kernel uses.
    std::memset(p + L.mat_bytes * L.mats, 0, L.tail_bytes);
}

}  // namespace xdna
