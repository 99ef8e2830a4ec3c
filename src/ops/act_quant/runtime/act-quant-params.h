// The act_quant kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>

namespace xdna {

struct TileShape;

// fp32 activations (n rows of k values, x_row_stride floats apart) -> the a8 activation tiles of an
// integer matmul contract ([n_tile][k_tile][tile], tiles of tile_n tokens x 256 values, act_block
// values per scale), or the bfp16 tiles of a prefill contract v3 (bfp16 set, act_block 0), written
// whole: rows n .. n_tiles * tile_n - 1 as zeros (aie/act_quant).
struct ActQuantParams {
    static constexpr KernelKind kKind = KernelKind::act_quant;
    static constexpr const char * kName = "act_quant";

    int64_t n = 0, k = 0;         // valid rows; k a multiple of 256
    int     tile_n = 0;           // 4 or 32 (bfp16: 32)
    int     act_block = 0;        // 32 or 256 (a8); 0 for bfp16
    bool    bfp16 = false;        // BlockActTileFormat tiles
    int64_t n_tiles = 0, k_tiles = 0;
    size_t  tile_bytes = 0;
    int64_t x_row_stride = 0;

    uint64_t    macs(const TileShape &) const { return 0; }
    std::string shape_label(const TileShape &) const;  // "n x k"
};

}  // namespace xdna
