// The act_quant kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "contracts/matmul-contract.h"
#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>

namespace xdna {

struct TileShape;

// fp32 activations (n rows of k values, x_row_stride floats apart) -> the activation tiles of a matmul
// contract ([n_tile][k_tile][tile], tiles of tile_n tokens x tile_k values) in its format: a8 (act_block
// values per scale, tile_k 256), bfp16 (prefill contracts v3, tile_k 256, 128 or 64) or F16/BF16/F32
// (the float contracts, tile_k 128 or 64); written whole: rows n .. n_tiles * tile_n - 1 as zeros
// (aie/act_quant).
struct ActQuantParams {
    static constexpr KernelKind kKind = KernelKind::act_quant;
    static constexpr const char * kName = "act_quant";

    int64_t   n = 0, k = 0;         // valid rows; k a multiple of tile_k
    int       tile_n = 0;           // 4 or 32 (bfp16: 32)
    int       tile_k = 256;
    ActFormat format = ActFormat::a8_b32;
    int       act_block = 0;        // 32 or 256 (a8); 0 otherwise
    int64_t n_tiles = 0, k_tiles = 0;
    size_t  tile_bytes = 0;
    int64_t x_row_stride = 0;

    uint64_t    macs(const TileShape &) const { return 0; }
    std::string shape_label(const TileShape &) const;  // "n x k"
};

}  // namespace xdna
