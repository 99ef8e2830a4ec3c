// Fuzz target: the simulator's DMA interpreter on arbitrary control-code words (input format:
// dma-fuzz-input.h). Whatever the words, run_control_stream must return, ok or with an error, and never
// crash, hang or touch memory outside the arguments it was given: the arguments are heap buffers of
// exactly their stated sizes, so ASan reports any access past them, and UBSan any undefined arithmetic.
// The interpreter's library (xdna_sim_dma) links no kernels: the cores run stand-ins here that read every
// byte of their input objects and write every byte of their outputs (the matmul's W, A and C; a rows
// design's a, b and y), so a FIFO object smaller than the description's is an out-of-range access too.
#include "dma-fuzz-input.h"
#include "fuzz-support.h"
#include "runtime/design-description.h"
#include "runtime/design-registry.h"
#include "sim/dma-interpreter.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    if (size < 4) {
        return 0;
    }
    uint32_t select = 0;
    std::memcpy(&select, data, 4);
    const xdna_fuzz::DmaFuzzTarget & t = xdna_fuzz::kDmaFuzzTargets[select % xdna_fuzz::kDmaFuzzTargetCount];
    const xdna::DesignRead * design = xdna::find_design(t.design);
    if (design == nullptr || !design->ok()) {
        return 0;
    }
    const xdna::DesignDescription & d = design->design;
    // The core objects of this xclbin: what a real kernel would read and write.
    xdna::CoreProgram cores;
    std::string error;
    if (d.matmul_movement && !xdna_fuzz::stand_in_cores(d, t.family, t.tile_n, cores, error)) {
        return 0;
    }

    std::vector<uint32_t> words((size - 4) / 4);
    if (!words.empty()) {
        std::memcpy(words.data(), data + 4, words.size() * 4);
    }
    // Allocated once (4.5 MB: zeroing them per input would cost more than most runs); their contents
    // do not matter to the oracle, their bounds do.
    static std::vector<std::vector<uint8_t>> bufs = [] {
        std::vector<std::vector<uint8_t>> b;
        for (uint64_t bytes : xdna_fuzz::kDmaFuzzArgBytes) {
            b.emplace_back(bytes);
        }
        return b;
    }();
    std::vector<xdna::DmaArgument> args;
    for (auto & b : bufs) {
        args.push_back({b.data(), b.size()});
    }
    if (d.matmul_movement) {
        (void)xdna::run_control_stream(d, t.family, t.tile_n, cores, words.data(), words.size(), args, nullptr, t.layout);
    } else {
        xdna::LoadedDesign loaded;
        (void)xdna::run_design_stream(d, xdna::XclbinId{t.family, t.tile_n, t.layout, ""}, xdna_fuzz::stand_in_roles(d, t.tile_n, t.family),
                                      words.data(), words.size(), args, nullptr, loaded);
    }
    return 0;
}
