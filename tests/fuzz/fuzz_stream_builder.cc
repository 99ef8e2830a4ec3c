// Fuzz target: the host instruction-stream builder (runtime/matmul-sequence.h) on arbitrary shapes.
// Input bytes choose a contract, a token tile, the M/N/K tile counts (K past the design's three chunks of
// 64 included), an output row stride (the minimum, larger, or too small) and a column count (0 to 9; the
// design has 8). The oracle:
//   - a refused shape carries a reason, and a too-small output stride is always refused;
//   - an accepted shape's words decode, and the simulator's DMA interpreter runs them to their end on
//     arguments of EXACTLY the sizes the builder declares (weights_bytes, activations_bytes, out_bytes;
//     heap buffers, so ASan reports any access past them), with one core call per output tile per K
//     tile: a stream that reads or writes outside what its builder declares, or does less work than
//     the shape needs, is a finding. The cores are stand-ins that read every byte of their W and A
//     objects and write their whole C tile (the interpreter's library links no kernels).
#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"
#include "control/control-ops.h"
#include "runtime/design-description.h"
#include "runtime/matmul-sequence.h"
#include "sim/dma-interpreter.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

size_t g_w_bytes = 0, g_a_bytes = 0, g_c_floats = 0;

void stand_in_kernel(const uint8_t * w, const uint8_t * a, float * c) {
    uint32_t h = 0;
    for (size_t i = 0; i < g_w_bytes; ++i) {
        h = h * 31 + w[i];
    }
    for (size_t i = 0; i < g_a_bytes; ++i) {
        h = h * 31 + a[i];
    }
    for (size_t i = 0; i < g_c_floats; ++i) {
        c[i] += static_cast<float>(h & 0xFF);
    }
}

void stand_in_zero(float * c) {
    for (size_t i = 0; i < g_c_floats; ++i) {
        c[i] = 0.0f;
    }
}

[[noreturn]] void finding(const std::string & what, const xdna::MatmulSequenceShape & s) {
    std::fprintf(stderr, "stream builder finding: %s (contract %s, TN %d, m_tiles %lld, n_tiles %lld, k_tiles %lld, "
                 "out_row_stride %lld, columns %d)\n", what.c_str(), s.contract.c_str(), s.tile_n,
                 static_cast<long long>(s.m_tiles), static_cast<long long>(s.n_tiles), static_cast<long long>(s.k_tiles),
                 static_cast<long long>(s.out_row_stride), s.columns);
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

    xdna::MatmulSequenceShape s;
    s.contract = c.name;
    s.tile_n = (data[1] & 1) ? 32 : 4;
    s.m_tiles = 1 + data[2] % 24;
    s.n_tiles = 1 + data[3] % 3;
    s.k_tiles = 1 + (data[4] | data[5] << 8) % 200;
    const int64_t m_rows = (s.m_tiles + d.core_rows - 1) / d.core_rows * d.core_rows;
    const int64_t min_stride = m_rows * c.tile_m;
    switch (data[6] % 4) {
        case 0: s.out_row_stride = min_stride; break;
        case 1: s.out_row_stride = min_stride + data[7]; break;
        case 2: s.out_row_stride = min_stride - 1 - data[7] % min_stride; break;  // too small: must be refused
        default: s.out_row_stride = 2 * min_stride; break;
    }
    s.columns = data[8] % 10;
    s.weight_tile_bytes = ggml_row_size(c.weight_type, c.tile_k) * c.tile_m;
    s.act_tile_bytes = xdna::activation_tile_bytes(c, s.tile_n);

    const xdna::MatmulSequence seq = xdna::build_matmul_sequence(d, s);
    if (!seq.ok()) {
        return 0;  // refused, with its reason (error is the reason)
    }
    if (s.out_row_stride < min_stride) {
        finding("an output row stride below the whole 4-tile groups the drain writes was accepted", s);
    }
    const xdna::control::Decoded dec = xdna::control::decode(seq.words.data(), seq.words.size());
    if (!dec.ok()) {
        finding("its own words do not decode: " + dec.error, s);
    }

    xdna::FamilyBuffers fb;
    std::string error;
    const xdna::FifoDesc * w1 = d.fifo("w_l2l1");
    const xdna::FifoDesc * a1 = d.fifo("a_l2l1");
    const xdna::FifoDesc * c1 = d.fifo("c_l1l2");
    if (!xdna::family_buffers(d, seq.family, s.tile_n, fb, error) || !w1 || !a1 || !c1) {
        finding("the family of an accepted shape has no buffers: " + error, s);
    }
    g_w_bytes = w1->count * fb.unit(w1->tile);
    g_a_bytes = a1->count * fb.unit(a1->tile);
    g_c_floats = c1->count * fb.unit(c1->tile) / sizeof(float);
    xdna::CoreProgram cores;
    cores.kernels.assign(d.family_contracts(seq.family)->size(), stand_in_kernel);
    cores.zero = stand_in_zero;

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
                                                      args, nullptr);
    if (!run.ok()) {
        finding("the interpreter refuses its stream on arguments of the declared sizes: " + run.error, s);
    }
    if (run.stats.kernel_calls != static_cast<uint64_t>(m_rows * s.n_tiles * s.k_tiles)) {
        finding("the stream ran " + std::to_string(run.stats.kernel_calls) + " core calls, the shape needs " +
                    std::to_string(m_rows * s.n_tiles * s.k_tiles), s);
    }
    return 0;
}
