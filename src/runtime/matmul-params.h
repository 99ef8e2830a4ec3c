// The matmul kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "contracts/matmul-contract.h"
#include "runtime/kernel-kind.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace xdna {

// The matmul kind's parameter block: the scalars of out[n][m] = sum_k W[m][k] * A[n][k] over packed
// tiles (runtime/matmul-invocation.h says what each means). Every kind's block names its kind and says,
// from its key's tile, how many multiply-accumulates it does and how its shape reads in a profile row.
struct MatmulParams {
    static constexpr KernelKind kKind = KernelKind::matmul;
    static constexpr const char * kName = "matmul";

    const MatmulContract * contract = nullptr;
    int64_t m = 0, n = 0;
    int64_t m_tiles = 0, n_tiles = 0, k_tiles = 0;
    size_t  weight_tile_bytes = 0, act_tile_bytes = 0;
    int64_t out_row_stride = 0;
    int32_t expert = -1;

    uint64_t    macs(const TileShape & tile) const;  // padded: what the cores compute
    std::string shape_label(const TileShape & tile) const;  // "M x N x padded K"
};

}  // namespace xdna
