// Fuzz target: the simulator's DMA interpreter on arbitrary control-code words. Whatever the words,
// run_control_stream must return (ok or an error), never crash, hang or touch memory outside the
// arguments it was given (build with -fsanitize=address,fuzzer). The arguments are sized for the
// corpus's streams (a small kquant shape at TN 4), so valid-looking streams also run their kernels.
#include "runtime/design-description.h"
#include "sim/dma-interpreter.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const xdna::DesignRead & design = xdna::matmul_design();
    if (!design.ok()) {
        return 0;
    }
    std::vector<uint32_t> words(size / 4);
    std::memcpy(words.data(), data, words.size() * 4);
    // Weights: 8 row tiles x 2 K tiles of 9216 bytes + the 4224-byte window over-read; activations:
    // 2 tiles of 1216; output: 4 tokens x 512 floats; params: 12 words.
    std::vector<uint8_t> w(8 * 2 * 9216 + 4224), a(2 * 1216), out(4 * 512 * 4), params(48);
    const std::vector<xdna::DmaArgument> args = {
        {w.data(), w.size()}, {a.data(), a.size()}, {out.data(), out.size()}, {params.data(), params.size()}};
    (void)xdna::run_control_stream(design.design, "kquant", 4, words.data(), words.size(), args, nullptr);
    return 0;
}
