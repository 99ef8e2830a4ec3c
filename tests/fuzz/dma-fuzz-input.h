// The DMA-interpreter fuzzer's input (fuzz_dma_interpreter.cc), shared with the test that writes its seed
// corpus from streams the matmul and rows sequence builders make (tests/kernels/test_dma_fuzz_seeds.cpp):
//   word 0    which xclbin runs the stream: kDmaFuzzTargets[word 0 % size] (design, family, tile, layout;
//             targets are only ever appended, so a committed seed's index keeps its xclbin)
//   words 1.. the control-code words, as the NPU receives them
// The kernel arguments have fixed sizes, large enough for every seed's stream to run to its end, so the
// seeds exercise whole runs; anything the words ask beyond them must be refused by the interpreter.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xdna_fuzz {

struct DmaFuzzTarget {
    const char * family;
    int          tile_n;
    const char * layout;             // design-description.h LayoutDesc
    const char * design = "matmul";  // the description (runtime/design-registry.h)
};

inline constexpr DmaFuzzTarget kDmaFuzzTargets[] = {
    {"kquant", 4, "m_split"},     {"kquant", 32, "m_split"},     {"legacy", 4, "m_split"}, {"legacy", 32, "m_split"},
    {"kquant_low", 4, "m_split"}, {"kquant_low", 32, "m_split"}, {"float", 4, "m_split"},  {"float", 32, "m_split"},
    {"kquant", 4, "n_split"},     {"kquant", 32, "n_split"},     {"legacy", 4, "n_split"}, {"legacy", 32, "n_split"},
    {"kquant_low", 4, "n_split"}, {"kquant_low", 32, "n_split"}, {"float", 4, "n_split"},  {"float", 32, "n_split"},
    // The rows designs (their arguments: a, b and y in the first three buffers; the scale's x and y in
    // the first two), the norm design (x, weight and y), and the gather (src and y; no cores).
    {"binary", 256, "rows", "add"}, {"swiglu", 64, "rows", "glu"}, {"norm", 128, "rows", "rms_norm"}, {"scale", 256, "rows", "scale"},
    {"gather", 1024, "gather", "get_rows"},
    // The quant design (x, zeros, tiles), at one program's xclbin.
    {"a8_b256_n4", 4, "tiles", "act_quant"},
    // The scatter (x and y), its Q8_0 layout: y's objects of 34 bytes per 32 values.
    {"q8_0", 256, "q8_0", "set_rows"},
    // The rope (x, its angle rows cs, y), at head rows of 128.
    {"norm", 128, "rope", "rope"}};
inline constexpr size_t kDmaFuzzTargetCount = sizeof(kDmaFuzzTargets) / sizeof(kDmaFuzzTargets[0]);

// Bytes of the weights, activations, output and params arguments (the design's argument order).
inline constexpr uint64_t kDmaFuzzArgBytes[4] = {3u << 20, 512u << 10, 1u << 20, 48};

}  // namespace xdna_fuzz
