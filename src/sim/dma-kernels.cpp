// The DMA interpreter's cores running the aie/ core kernels (the interpreter itself links none).
#include "contracts/matmul-contract.h"
#include "sim/core-state.h"
#include "sim/dma-interpreter.h"
#include "sim/tile-kernels.h"

namespace xdna {

bool kernel_core_program(const DesignDescription & design, const std::string & family, int tile_n, CoreProgram & out,
                         std::string & error) {
    out = CoreProgram{};
    const std::vector<std::string> * contracts = design.family_contracts(family);
    if (contracts == nullptr) {
        error = "design " + design.design + " has no family '" + family + "'";
        return false;
    }
    for (const std::string & name : *contracts) {
        const TileEntry * e = nullptr;
        for (const MatmulContract & c : all_matmul_contracts()) {
            if (name == c.name) {
                e = find_tile_entry(c, tile_n);
            }
        }
        out.kernels.push_back(e != nullptr ? e->kernel : nullptr);
        out.part_kernels.push_back(e != nullptr ? e->part_kernel : nullptr);
    }
    out.zero = zero_kernel(tile_n);
    if (out.zero == nullptr) {
        error = "no core program for token tile " + std::to_string(tile_n);
        return false;
    }
    out.reset = sim_reset_core_state;
    return true;
}

DmaRun run_control_stream(const DesignDescription & design, const std::string & family, int tile_n, const uint32_t * words,
                          size_t n_words, const std::vector<DmaArgument> & args, ThreadPool * pool,
                          const std::string & layout, const std::string & exact) {
    LoadedDesign fresh;
    return run_control_stream(design, family, tile_n, words, n_words, args, pool, fresh, layout, exact);
}

DmaRun run_control_stream(const DesignDescription & design, const std::string & family, int tile_n, const uint32_t * words,
                          size_t n_words, const std::vector<DmaArgument> & args, ThreadPool * pool, LoadedDesign & loaded,
                          const std::string & layout, const std::string & exact) {
    CoreProgram cores;
    DmaRun result;
    if (!kernel_core_program(design, family, tile_n, cores, result.error)) {
        return result;
    }
    if (!exact.empty()) {
        // An exact xclbin links its one contract's kernel: an RTP word selecting another finds none.
        const int keep = design.contract_index(family, exact);
        for (size_t i = 0; i < cores.kernels.size(); ++i) {
            if (static_cast<int>(i) != keep) cores.kernels[i] = nullptr;
        }
        for (size_t i = 0; i < cores.part_kernels.size(); ++i) {
            if (static_cast<int>(i) != keep) cores.part_kernels[i] = nullptr;
        }
    }
    // The core program's kernels are mode-checked (tile-kernels.cpp): one that left a mode changed
    // fails the run, whatever the interpreter made of the rest of the stream.
    const CoreFaultWatch watch;
    result = run_control_stream(design, family, tile_n, cores, words, n_words, args, pool, loaded, layout, exact);
    std::string fault;
    if (watch.failed(fault)) {
        result.error = result.ok() ? fault : fault + "; then: " + result.error;
    }
    return result;
}

}  // namespace xdna
