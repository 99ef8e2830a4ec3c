// Operands of one simulated matmul invocation on random data, for the tests that run the simulator's
// execution modes against each other (test_sim_exec.cpp: twin vs kernel code; test_stream_exec.cpp:
// instruction stream vs kernel code).
#pragma once

#include "host-memory-buffer.h"
#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"
#include "contracts/tile-codec.h"
#include "contracts/weight-layout.h"
#include "runtime/device.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace xdna_test {

// Host memory standing in for a device buffer: page-aligned, with a page of slack behind it.
using HostBuffer = OwnedHostBuffer;

// Random GGUF rows of `type` whose fp16 fields are finite and of LLM-like size (random bytes elsewhere):
// the codes take every bit pattern, the scales stay numbers so the comparison is of values.
inline std::vector<uint8_t> random_rows(ggml_type type, int64_t k, int64_t rows, std::mt19937_64 & g) {
    std::vector<uint8_t> w(ggml_row_size(type, k) * rows);
    for (auto & b : w) b = static_cast<uint8_t>(g());
    const xdna_aie::WeightTileFormat * f = xdna::tile_format(type);
    if (f->act_block == 0) {  // float weights: random values of either sign
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (size_t i = 0; i < w.size() / f->block_bytes; ++i) {
            const float v = nd(g);
            if (type == GGML_TYPE_F32) std::memcpy(&w[i * 4], &v, 4);
            if (type == GGML_TYPE_F16) { const ggml_fp16_t h = ggml_fp32_to_fp16(v); std::memcpy(&w[i * 2], &h, 2); }
            if (type == GGML_TYPE_BF16) { const ggml_bf16_t h = ggml_fp32_to_bf16(v); std::memcpy(&w[i * 2], &h, 2); }
        }
        return w;
    }
    std::uniform_real_distribution<float> ud(1e-4f, 2e-2f);
    for (size_t blk = 0; blk < w.size() / f->block_bytes; ++blk) {
        for (int i = 0; i < f->n_planes; ++i) {
            const xdna_aie::Plane & p = f->planes[i];
            if (p.kind == xdna_aie::PlaneKind::field && p.unit_bytes == 2) {
                const ggml_fp16_t h = ggml_fp32_to_fp16(ud(g) * ((g() & 1) ? 1.0f : -1.0f));
                std::memcpy(&w[blk * f->block_bytes + p.gguf_offset], &h, 2);
            }
        }
    }
    return w;
}

// One invocation's packed operands: random weights, normally distributed activations (one in
// `outlier_every` scaled by 20 when non-zero) quantized by the contract's activation layout.
struct SimOperands {
    xdna::WeightLayout          wl;
    xdna::ActivationLayout      al;
    std::unique_ptr<HostBuffer> w, a;
    xdna::MatmulInvocation      inv;  // geometry and operands; `out` left for the caller
};

inline SimOperands make_sim_operands(const xdna::MatmulContract & c, int tn, int64_t m, int64_t k_tiles, int64_t n,
                                     std::mt19937_64 & g, unsigned outlier_every = 0) {
    SimOperands o;
    const int64_t k = k_tiles * c.tile_k;
    const int64_t ne[4] = {k, m, 1, 1};
    EXPECT_TRUE(xdna::make_weight_layout(c.weight_type, ne, o.wl));
    const std::vector<uint8_t> rows = random_rows(c.weight_type, k, m, g);
    o.w = std::make_unique<HostBuffer>(o.wl.total_bytes);
    xdna::clear_weight_padding(o.wl, o.w->host_ptr());
    xdna::pack_weight_rows(o.wl, rows.data(), 0, m, o.w->host_ptr());
    o.al = xdna::make_activation_layout(c, k, o.wl.padded_k(), n, tn);
    o.a = std::make_unique<HostBuffer>(o.al.total_bytes);
    std::vector<float> x(k * n);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto & v : x) v = nd(g) * ((outlier_every != 0 && g() % outlier_every == 0) ? 20.0f : 1.0f);
    ggml_init_params ip = {ggml_tensor_overhead() * 2, nullptr, true};
    ggml_context * ctx = ggml_init(ip);
    ggml_tensor * src1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, n);
    src1->data = x.data();
    std::vector<float> scratch(o.wl.padded_k());
    xdna::quantize_activation_rows(src1, 0, 0, o.al, 0, o.al.n_pad, o.a->host_ptr(), scratch.data());
    ggml_free(ctx);
    xdna::MatmulInvocation & inv = o.inv;
    inv.contract = &c;
    inv.tile = c.tile(tn);
    inv.weights = {o.w.get(), 0};
    inv.activations = {o.a.get(), 0};
    inv.m = m;
    inv.n = n;
    inv.m_tiles = o.wl.m_tiles;
    inv.n_tiles = o.al.n_tiles;
    inv.k_tiles = o.wl.k_tiles;
    inv.weight_tile_bytes = o.wl.tile_bytes;
    inv.act_tile_bytes = o.al.weight_k_tile_bytes();
    inv.out_row_stride = m;
    return o;
}

}  // namespace xdna_test
