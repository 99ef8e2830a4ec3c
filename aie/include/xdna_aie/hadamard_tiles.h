// What the hadamard design's core program and the host agree on (aie/hadamard/README.md).
#pragma once

namespace xdna_aie {

constexpr int kHadamardLanes = 32;     // fp32 lanes per vector
constexpr int kHadamardMaxN = 256;     // the longest transform a core holds (8 vectors)

// Transform lengths the program takes: whole vector pairs, within its registers.
constexpr bool hadamard_n_fits(int n) { return n == 64 || n == 128 || n == 256; }

}  // namespace xdna_aie
