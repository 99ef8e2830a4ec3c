// What the rope design's core program and the host agree on (aie/rope/README.md).
#pragma once

namespace xdna_aie {

constexpr int kRopeLanes = 16;     // fp32 lanes per vector op (one 512-bit register)
constexpr int kRopePairLanes = 32; // rotated dims per step: 16 pairs (NORM) or 16 + 16 (NEOX)
constexpr int kRopeMaxRow = 512;   // values of a head row a core holds (2 KB each of x, y and the table row)

// The rotated dims must fill whole steps, the copied tail whole vectors.
constexpr bool rope_row_fits(int n_dims, int ne0) {
    return n_dims > 0 && n_dims % kRopePairLanes == 0 && n_dims <= ne0 && ne0 <= kRopeMaxRow &&
           (ne0 - n_dims) % kRopeLanes == 0;
}

}  // namespace xdna_aie
