// What the stream fuzzers (fuzz_dma_interpreter, fuzz_stream_builder) and the test of their seeds share:
// the stand-in core program the interpreter's library runs in place of the kernels, and the stream shape
// of a contract's invocation.
#pragma once

#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"
#include "runtime/design-description.h"
#include "runtime/matmul-sequence.h"
#include "sim/dma-interpreter.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace xdna_fuzz {

// Bytes of the core objects of the xclbin the stand-ins run on (set by stand_in_cores).
inline size_t g_w_bytes = 0, g_a_bytes = 0, g_c_floats = 0;

// Reads every byte of its W and A objects and writes every float of its C tile, so a FIFO object smaller
// than the family's tiles is an out-of-range access (ASan) too.
inline void stand_in_kernel(const uint8_t * w, const uint8_t * a, float * c) {
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

inline void stand_in_zero(float * c) {
    for (size_t i = 0; i < g_c_floats; ++i) {
        c[i] = 0.0f;
    }
}

// The stand-in core program of `family` at `tile_n`: one stand-in per contract of the family, the core
// objects' sizes those of the design (of `exact`'s own xclbin when given). False if the design has no
// buffers for them.
inline bool stand_in_cores(const xdna::DesignDescription & d, const std::string & family, int tile_n,
                           xdna::CoreProgram & cores, std::string & error, const std::string & exact = "") {
    xdna::FamilyBuffers fb;
    const xdna::FifoDesc * w1 = d.fifo("w_l2l1");
    const xdna::FifoDesc * a1 = d.fifo("a_l2l1");
    const xdna::FifoDesc * c1 = d.fifo("c_l1l2");
    if (!xdna::family_buffers(d, family, tile_n, fb, error, exact) || !w1 || !a1 || !c1) {
        return false;
    }
    g_w_bytes = w1->count * fb.unit(w1->tile);
    g_a_bytes = a1->count * fb.unit(a1->tile);
    g_c_floats = c1->count * fb.unit(c1->tile) / sizeof(float);
    cores.kernels.assign(d.family_contracts(family)->size(), stand_in_kernel);
    cores.zero = stand_in_zero;
    return true;
}

// Row tiles the stream computes: m_tiles in whole row units of the layout (m_split: groups of the
// design's core rows; n_split: single row tiles).
inline int64_t stream_m_rows(const xdna::DesignDescription & d, int64_t m_tiles, const std::string & layout = "") {
    const xdna::LayoutDesc * L = d.layout(layout);
    const int64_t unit = L != nullptr ? L->w_parts : d.core_rows;
    return (m_tiles + unit - 1) / unit * unit;
}

// The stream shape of an invocation of contract `c` at `tile_n`, its output rows packed at the smallest
// stride the drain allows (whole groups of row tiles).
inline xdna::MatmulSequenceShape contract_shape(const xdna::DesignDescription & d, const xdna::MatmulContract & c,
                                                int tile_n, int64_t m_tiles, int64_t n_tiles, int64_t k_tiles,
                                                const std::string & layout = "") {
    xdna::MatmulSequenceShape s;
    s.layout = layout;
    s.contract = c.name;
    s.tile_n = tile_n;
    s.m_tiles = m_tiles;
    s.n_tiles = n_tiles;
    s.k_tiles = k_tiles;
    s.out_row_stride = stream_m_rows(d, m_tiles, layout) * c.tile_m;
    s.weight_tile_bytes = ggml_row_size(c.weight_type, c.tile_k) * c.tile_m;
    s.act_tile_bytes = xdna::activation_tile_bytes(c, tile_n);
    return s;
}

}  // namespace xdna_fuzz
