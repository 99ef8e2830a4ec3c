// One invocation of a bfp16 prefill contract through the simulator (kernel-code, stream or twin mode)
// and its bit-for-bit comparison with the independent reference of tests/common/bfp16-reference.cpp:
// shared by the per-family kernel tests (test_kquant_low_bfp16.cpp, test_float_bfp16.cpp).
#pragma once

#include "bfp16-reference.h"
#include "sim-operands.h"

#include "contracts/matmul-contract.h"
#include "runtime/thread-pool.h"
#include "sim/sim-matmul.h"
#include "sim/tile-kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace xdna_test {

inline std::string bfp16_exec_name(xdna::SimExec e) {
    return e == xdna::SimExec::kernels ? "kernels" : e == xdna::SimExec::stream ? "stream" : "twin";
}

// out[n][m] of the prefill contract of `type` for GGUF rows [m][row bytes of k] and activations [n][k].
inline std::vector<float> run_bfp16_contract(ggml_type type, int64_t m, int64_t k, int64_t n, xdna::SimExec exec,
                                             const std::vector<uint8_t> & rows, const std::vector<float> & x) {
    using namespace xdna;
    const MatmulContract & c = *prefill_contract_for(type);
    const int tn = 32;
    const int64_t ne[4] = {k, m, 1, 1};
    WeightLayout wl;
    EXPECT_TRUE(make_weight_layout(type, ne, wl));
    HostBuffer w(wl.total_bytes);
    clear_weight_padding(wl, w.host_ptr());
    pack_weight_rows(wl, rows.data(), 0, m, w.host_ptr());
    const ActivationLayout al = make_activation_layout(c, k, wl.padded_k(), n, tn);
    HostBuffer a(al.total_bytes);
    ggml_init_params ip = {ggml_tensor_overhead() * 2, nullptr, true};
    ggml_context * ctx = ggml_init(ip);
    ggml_tensor * src1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, n);
    src1->data = const_cast<float *>(x.data());
    std::vector<float> scratch(wl.padded_k());
    quantize_activation_rows(src1, 0, 0, al, 0, al.n_pad, a.host_ptr(), scratch.data());
    ggml_free(ctx);
    HostBuffer out(m * n * 4);
    MatmulInvocation inv;
    inv.contract = &c;
    inv.tile = c.tile(tn);
    inv.weights = {&w, 0};
    inv.activations = {&a, 0};
    inv.out = {&out, 0};
    inv.m = m;
    inv.n = n;
    inv.m_tiles = wl.m_tiles;
    inv.n_tiles = al.n_tiles;
    inv.k_tiles = wl.k_tiles;
    inv.weight_tile_bytes = wl.tile_bytes;
    inv.act_tile_bytes = al.weight_k_tile_bytes();
    inv.out_row_stride = m;
    ThreadPool pool(2);
    const Status st = sim_run_matmul(inv, pool, exec);
    EXPECT_TRUE(st.ok) << st.message;
    const auto * p = static_cast<const float *>(out.host_ptr());
    return std::vector<float>(p, p + m * n);
}

// Bit for bit (NaN equals NaN), and most outputs nonzero (values were compared, not zeros).
inline void expect_bfp16_bits(const std::vector<float> & got, const std::vector<float> & want, int64_t m) {
    ASSERT_EQ(got.size(), want.size());
    int64_t bad = 0, nonzero = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        nonzero += std::isfinite(got[i]) && got[i] != 0.0f;
        if (std::memcmp(&got[i], &want[i], 4) != 0 && !(std::isnan(got[i]) && std::isnan(want[i]))) {
            if (bad++ < 5) {
                ADD_FAILURE() << "output " << i << " (token " << i / m << ", row " << i % m << "): kernel " << got[i]
                              << ", reference " << want[i];
            }
        }
    }
    EXPECT_EQ(bad, 0) << "of " << got.size();
    EXPECT_GT(nonzero, static_cast<int64_t>(got.size()) * 9 / 10);
}

}  // namespace xdna_test
