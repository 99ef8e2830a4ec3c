// Fuzz target: the host instruction-stream builder (runtime/matmul-sequence.h) on arbitrary shapes.
// Input bytes choose a contract, a token tile, the design layout (byte 1 bit 1: n_split, whose N comes in
// whole groups of 4 token tiles), the M/N/K tile counts (K past the design's three chunks of 64
// included), an output row stride (the minimum, larger, or too small) and a column count (0 to 9; the
// design has 8). The oracle:
//   - a refused shape carries a reason, and a too-small output stride is always refused;
//   - an accepted shape's words decode, and the simulator's DMA interpreter runs them to their end on
//     arguments of EXACTLY the sizes the builder declares (weights_bytes, activations_bytes, out_bytes;
//     heap buffers, so ASan reports any access past them), with one core call per output tile per K
//     tile: a stream that reads or writes outside what its builder declares, or does less work than
//     the shape needs, is a finding. The cores are stand-ins that read every byte of their W and A
//     objects and write their whole C tile (the interpreter's library links no kernels).
#include "control/control-ops.h"
#include "fuzz-support.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

[[noreturn]] void finding(const std::string & what, const xdna::MatmulSequenceShape & s) {
    std::fprintf(stderr, "stream builder finding: %s (contract %s, TN %d, m_tiles %lld, n_tiles %lld, k_tiles %lld, "
                 "out_row_stride %lld, columns %d, layout '%s')\n", what.c_str(), s.contract.c_str(), s.tile_n,
                 static_cast<long long>(s.m_tiles), static_cast<long long>(s.n_tiles), static_cast<long long>(s.k_tiles),
                 static_cast<long long>(s.out_row_stride), s.columns, s.layout.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const xdna::DesignRead & design = xdna::matmul_design();
    if (!design.ok() || size < 9) {
        return 0;
    }
    const xdna::DesignDescription & d = design.design;
    const auto & contracts = xdna::all_matmul_contracts();
    const xdna::MatmulContract & c = contracts[data[0] % contracts.size()];

    const bool n_split = (data[1] & 2) != 0;
    const std::string layout = n_split ? "n_split" : "m_split";
    xdna::MatmulSequenceShape s = xdna_fuzz::contract_shape(d, c, (data[1] & 1) ? 32 : 4, 1 + data[2] % 24,
                                                             (n_split ? 4 : 1) * (1 + data[3] % 3),
                                                             1 + (data[4] | data[5] << 8) % 200, layout);
    const int64_t m_rows = xdna_fuzz::stream_m_rows(d, s.m_tiles, layout);
    const int64_t min_stride = s.out_row_stride;
    switch (data[6] % 4) {
        case 0: s.out_row_stride = min_stride; break;
        case 1: s.out_row_stride = min_stride + data[7]; break;
        case 2: s.out_row_stride = min_stride - 1 - data[7] % min_stride; break;  // too small: must be refused
        default: s.out_row_stride = 2 * min_stride; break;
    }
    s.columns = data[8] % 10;
    s.exact = (data[1] & 4) != 0;  // the contract's own xclbin
    const std::string exact = s.exact ? s.contract : std::string();

    const xdna::MatmulSequence seq = xdna::build_matmul_sequence(d, s);
    if (!seq.ok()) {
        return 0;  // refused, with its reason (error is the reason)
    }
    if (s.out_row_stride < min_stride) {
        finding("an output row stride below the whole row units the drain writes was accepted", s);
    }
    const xdna::control::Decoded dec = xdna::control::decode(seq.words.data(), seq.words.size());
    if (!dec.ok()) {
        finding("its own words do not decode: " + dec.error, s);
    }

    xdna::CoreProgram cores;
    std::string error;
    if (!xdna_fuzz::stand_in_cores(d, seq.family, s.tile_n, cores, error, exact)) {
        finding("the family of an accepted shape has no buffers: " + error, s);
    }

    // Exactly the declared sizes (the params argument: the design's 48 bytes of RTP words).
    std::vector<std::vector<uint8_t>> bufs;
    bufs.emplace_back(seq.weights_bytes);
    bufs.emplace_back(seq.activations_bytes);
    bufs.emplace_back(seq.out_bytes);
    bufs.emplace_back(48);
    std::vector<xdna::DmaArgument> args;
    for (auto & b : bufs) {
        args.push_back({b.data(), b.size()});
    }
    const xdna::DmaRun run = xdna::run_control_stream(d, seq.family, s.tile_n, cores, seq.words.data(), seq.words.size(),
                                                      args, nullptr, seq.layout, exact);
    if (!run.ok()) {
        finding("the interpreter refuses its stream on arguments of the declared sizes: " + run.error, s);
    }
    if (run.stats.kernel_calls != static_cast<uint64_t>(m_rows * s.n_tiles * s.k_tiles)) {
        finding("the stream ran " + std::to_string(run.stats.kernel_calls) + " core calls, the shape needs " +
                    std::to_string(m_rows * s.n_tiles * s.k_tiles), s);
    }
    return 0;
}
