// The entry points of the core kernels (aie/matmul/kernels/*.cc, the extern "C" ABI of
// aie/include/xdna_aie/matmul_tiles.h) and of their twins, by contract and token tile.
#pragma once

#include "contracts/matmul-contract.h"

#include <cstdint>

namespace xdna {

// c_tile += W_tile x A_tile for one K tile (the kernels' ABI).
using TileFn = void (*)(const uint8_t * w_tile, const uint8_t * a_tile, float * c_tile);
// The same, skipping tokens at or beyond `valid_tokens` (their C rows are left as they are).
using PartialTileFn = void (*)(const uint8_t * w_tile, const uint8_t * a_tile, float * c_tile, int valid_tokens);
using ZeroFn = void (*)(float * c_tile);
// c_tile += W_tile x A part `part` for one K part of a K tile whose A arrives in parts (act_k_parts):
// the core program calls it once per part, in order, with the same W tile.
using PartTileFn = void (*)(const uint8_t * w_tile, const uint8_t * a_part, float * c_tile, int32_t part);

struct TileEntry {
    const char *  contract;
    int           tile_n;
    // The whole K tile: where A comes in parts, the core program's loop over them (the parts are
    // consecutive in memory), so every mode runs the same calls.
    TileFn        kernel;
    TileFn        twin;          // nullptr: no twin
    PartialTileFn twin_partial;  // nullptr: the twin has no partial form
    PartTileFn    part_kernel = nullptr;  // where A comes in parts: the entry point the core program calls per part
};

const TileEntry * find_tile_entry(const MatmulContract & contract, int tile_n);
ZeroFn zero_kernel(int tile_n);

// Test seam: while one exists, the simulator calls `kernel` (mode-checked, under `name`) instead of
// the core kernel of `contract` at token tile `tile_n`, wherever it runs kernel code (SimExec::kernels,
// ::stream). One at a time, made and destroyed while no run is in progress.
class ScopedTileKernelOverride {
public:
    ScopedTileKernelOverride(const MatmulContract & contract, int tile_n, TileFn kernel, const char * name);
    ~ScopedTileKernelOverride();
    ScopedTileKernelOverride(const ScopedTileKernelOverride &) = delete;
    ScopedTileKernelOverride & operator=(const ScopedTileKernelOverride &) = delete;

private:
    TileEntry * entry_;
    TileFn      saved_;
};

}  // namespace xdna
