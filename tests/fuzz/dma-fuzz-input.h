// The DMA-interpreter fuzzer's input (fuzz_dma_interpreter.cc), shared with the test that writes its seed
// corpus from streams the matmul sequence builder makes (tests/kernels/test_dma_fuzz_seeds.cpp):
//   word 0    which xclbin runs the stream: kDmaFuzzTargets[word 0 % size] (family, token tile)
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
};

inline constexpr DmaFuzzTarget kDmaFuzzTargets[] = {{"kquant", 4},     {"kquant", 32}, {"legacy", 4}, {"legacy", 32},
                                                    {"kquant_low", 4}, {"kquant_low", 32}, {"float", 4}, {"float", 32}};
inline constexpr size_t kDmaFuzzTargetCount = sizeof(kDmaFuzzTargets) / sizeof(kDmaFuzzTargets[0]);

// Bytes of the weights, activations, output and params arguments (the design's argument order).
inline constexpr uint64_t kDmaFuzzArgBytes[4] = {3u << 20, 512u << 10, 1u << 20, 48};

}  // namespace xdna_fuzz
