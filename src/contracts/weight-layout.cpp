#include "weight-layout.h"

#include <algorithm>
#include <cstring>

namespace xdna {

bool make_weight_layout(ggml_type type, const int64_t ne[4], WeightLayout & L) {
    const MatmulContract * c = matmul_contract_for(type);
    if (c == nullptr || ne[0] <= 0 || ne[0] % ggml_blck_size(type) != 0) {
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
    L.tile_bytes = L.segment_bytes * c->tile_m;
    L.mat_bytes = L.tile_bytes * L.m_tiles * L.k_tiles;
    L.total_bytes = L.mat_bytes * L.mats;
    return true;
}

namespace {

// Visit the pieces of original byte range [offset, offset+size): each piece lies in one row segment
// of one tile and is contiguous both in the original and in the packed layout.
template <typename F>
void for_each_piece(const WeightLayout & L, size_t offset, size_t size, F && f) {
    size_t pos = offset;
    const size_t end = offset + size;
    while (pos < end) {
        const int64_t grow = static_cast<int64_t>(pos / L.row_bytes);
        const size_t in_row = pos % L.row_bytes;
        const int64_t mat = grow / L.rows;
        const int64_t row = grow % L.rows;
        const int64_t kt = static_cast<int64_t>(in_row / L.segment_bytes);
        const size_t in_seg = in_row % L.segment_bytes;
        const size_t seg_left = std::min(L.segment_bytes - in_seg, L.row_bytes - in_row);
        const size_t n = std::min(seg_left, end - pos);
        const size_t packed_off = L.tile_offset(mat, row / L.tile_m, kt) +
                                  static_cast<size_t>(row % L.tile_m) * L.segment_bytes + in_seg;
        f(pos - offset, packed_off, n);
        pos += n;
    }
}

}  // namespace

void pack_weight_bytes(const WeightLayout & L, const void * src, size_t offset, size_t size, void * packed) {
    const auto * s = static_cast<const uint8_t *>(src);
    auto * p = static_cast<uint8_t *>(packed);
    for_each_piece(L, offset, size, [&](size_t src_off, size_t packed_off, size_t n) {
        std::memcpy(p + packed_off, s + src_off, n);
    });
}

void unpack_weight_bytes(const WeightLayout & L, const void * packed, size_t offset, size_t size, void * dst) {
    const auto * p = static_cast<const uint8_t *>(packed);
    auto * d = static_cast<uint8_t *>(dst);
    for_each_piece(L, offset, size, [&](size_t dst_off, size_t packed_off, size_t n) {
        std::memcpy(d + dst_off, p + packed_off, n);
    });
}

void pack_weight_rows(const WeightLayout & L, const void * src, int64_t first_row, int64_t n_rows, void * packed) {
    pack_weight_bytes(L, src, static_cast<size_t>(first_row) * L.row_bytes, static_cast<size_t>(n_rows) * L.row_bytes,
                      packed);
}

void clear_weight_padding(const WeightLayout & L, void * packed) {
    auto * p = static_cast<uint8_t *>(packed);
    const size_t valid_last = L.row_bytes - (L.k_tiles - 1) * L.segment_bytes;  // bytes used in the last k tile
    for (int64_t mat = 0; mat < L.mats; ++mat) {
        for (int64_t mt = 0; mt < L.m_tiles; ++mt) {
            const int64_t valid_rows = std::min<int64_t>(L.tile_m, L.rows - mt * L.tile_m);
            for (int64_t kt = 0; kt < L.k_tiles; ++kt) {
                uint8_t * tile = p + L.tile_offset(mat, mt, kt);
                if (kt == L.k_tiles - 1 && valid_last < L.segment_bytes) {
                    for (int64_t r = 0; r < valid_rows; ++r) {
                        std::memset(tile + r * L.segment_bytes + valid_last, 0, L.segment_bytes - valid_last);
                    }
                }
                std::memset(tile + valid_rows * L.segment_bytes, 0, (L.tile_m - valid_rows) * L.segment_bytes);
            }
        }
    }
}

}  // namespace xdna
