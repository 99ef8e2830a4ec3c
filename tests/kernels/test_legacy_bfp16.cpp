// The legacy bfp16 prefill core program (aie/matmul/kernels/mm_legacy_bfp16.cc: Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0) against the independent reference of tests/common/bfp16-reference.cpp: bit for bit,
// through the simulator's kernel-code and instruction-stream modes, on fresh random GGUF rows and
// activations (one in 50 scaled by 20, so blocks span a range their 8-bit mantissas cannot hold), over
// several K tiles, a K that ends inside a tile, a ragged last row tile and partial token tiles; and
// blocks whose d and m are any finite fp16 values (the rounding order of o, subnormal fields).
#include "bfp16-reference.h"
#include "sim-operands.h"

#include "contracts/matmul-contract.h"
#include "runtime/thread-pool.h"
#include "sim/sim-matmul.h"
#include "sim/tile-kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace xdna;

uint64_t seed() {
    static const uint64_t s = [] {
        const char * e = std::getenv("GGML_XDNA_TEST_SEED");
        return e ? std::strtoull(e, nullptr, 10) : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    }();
    return s;
}

struct Case {
    ggml_type type;
    int64_t   m, k_tiles, n;
    SimExec   exec;
    int64_t   k_tail = 0;  // K = k_tiles * 256 + k_tail (a multiple of 32: the last tile padded)
    bool      any_fields = false;  // d and m any finite fp16 (subnormals too), each independently
};

// Every block's d (and m) replaced by a random finite fp16 bit pattern: exponent fields 0..30, so m
// ranges up to 2^30 away from d and the adds of o round (the specification's order then decides the
// bits), and subnormal fields test the exact widening.
void randomize_fields(ggml_type t, std::vector<uint8_t> & rows, std::mt19937_64 & g) {
    const size_t bs = ggml_type_size(t);
    const bool has_m = t == GGML_TYPE_Q4_1 || t == GGML_TYPE_Q5_1;
    for (size_t b = 0; b < rows.size() / bs; ++b) {
        for (int f = 0; f < (has_m ? 2 : 1); ++f) {
            const uint16_t h = static_cast<uint16_t>(((g() & 1) << 15) | ((g() % 31) << 10) | (g() & 0x3ff));
            std::memcpy(&rows[b * bs + 2 * f], &h, 2);  // d at byte 0, m at byte 2 (ggml's block layouts)
        }
    }
}

std::string exec_name(SimExec e) { return e == SimExec::kernels ? "kernels" : e == SimExec::stream ? "stream" : "twin"; }

// Runs one invocation of the prefill contract of `cs.type` in mode `cs.exec`; returns out[n][m].
std::vector<float> run(const Case & cs, const std::vector<uint8_t> & rows, const std::vector<float> & x) {
    const MatmulContract & c = *prefill_contract_for(cs.type);
    const int tn = 32;
    const int64_t k = cs.k_tiles * c.tile_k + cs.k_tail;
    const int64_t ne[4] = {k, cs.m, 1, 1};
    WeightLayout wl;
    EXPECT_TRUE(make_weight_layout(cs.type, ne, wl));
    xdna_test::HostBuffer w(wl.total_bytes);
    clear_weight_padding(wl, w.host_ptr());
    pack_weight_rows(wl, rows.data(), 0, cs.m, w.host_ptr());
    const ActivationLayout al = make_activation_layout(c, k, wl.padded_k(), cs.n, tn);
    xdna_test::HostBuffer a(al.total_bytes);
    ggml_init_params ip = {ggml_tensor_overhead() * 2, nullptr, true};
    ggml_context * ctx = ggml_init(ip);
    ggml_tensor * src1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, cs.n);
    src1->data = const_cast<float *>(x.data());
    std::vector<float> scratch(wl.padded_k());
    quantize_activation_rows(src1, 0, 0, al, 0, al.n_pad, a.host_ptr(), scratch.data());
    ggml_free(ctx);
    xdna_test::HostBuffer out(cs.m * cs.n * 4);
    MatmulInvocation inv;
    inv.contract = &c;
    inv.tile = c.tile(tn);
    inv.weights = {&w, 0};
    inv.activations = {&a, 0};
    inv.out = {&out, 0};
    inv.m = cs.m;
    inv.n = cs.n;
    inv.m_tiles = wl.m_tiles;
    inv.n_tiles = al.n_tiles;
    inv.k_tiles = wl.k_tiles;
    inv.weight_tile_bytes = wl.tile_bytes;
    inv.act_tile_bytes = al.weight_k_tile_bytes();
    inv.out_row_stride = cs.m;
    ThreadPool pool(2);
    const Status st = sim_run_matmul(inv, pool, cs.exec);
    EXPECT_TRUE(st.ok) << st.message;
    const auto * p = static_cast<const float *>(out.host_ptr());
    return std::vector<float>(p, p + cs.m * cs.n);
}

class LegacyBfp16 : public ::testing::TestWithParam<Case> {};

TEST_P(LegacyBfp16, MatchesIndependentReferenceBitForBit) {
    const Case cs = GetParam();
    SCOPED_TRACE(testing::Message() << ggml_type_name(cs.type) << " m " << cs.m << " k_tiles " << cs.k_tiles << " n " << cs.n
                                    << " " << exec_name(cs.exec) << " GGML_XDNA_TEST_SEED=" << seed());
    std::mt19937_64 g(seed() ^ (uint64_t(cs.type) * 7919 + cs.m * 131 + cs.n * 17 + int(cs.exec)));
    const int64_t k = cs.k_tiles * 256 + cs.k_tail;
    std::vector<uint8_t> rows = xdna_test::random_rows(cs.type, k, cs.m, g);
    if (cs.any_fields) randomize_fields(cs.type, rows, g);
    std::vector<float> x(k * cs.n);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto & v : x) v = nd(g) * (g() % 50 == 0 ? 20.0f : 1.0f);
    const std::vector<float> got = run(cs, rows, x);
    xdna_test::MatmulCase mc{cs.type, k, cs.m, cs.n};
    const std::vector<float> want = xdna_test::contract_reference_bfp16(mc, rows, x);
    ASSERT_EQ(got.size(), want.size());
    int64_t bad = 0, nonzero = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        nonzero += std::isfinite(got[i]) && got[i] != 0.0f;
        if (std::memcmp(&got[i], &want[i], 4) != 0 && !(std::isnan(got[i]) && std::isnan(want[i]))) {
            if (bad++ < 5) {
                ADD_FAILURE() << "output " << i << " (token " << i / cs.m << ", row " << i % cs.m << "): kernel " << got[i]
                              << ", reference " << want[i];
            }
        }
    }
    EXPECT_EQ(bad, 0) << "of " << got.size();
    EXPECT_GT(nonzero, static_cast<int64_t>(got.size()) * 9 / 10);  // values were compared, not zeros
}

std::vector<Case> cases() {
    std::vector<Case> v;
    for (ggml_type t : {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0}) {
        v.push_back({t, 64, 2, 32, SimExec::kernels});
        v.push_back({t, 64 + 23, 3, 37, SimExec::kernels});  // ragged rows, two token tiles, the second partial
        v.push_back({t, 130, 2, 5, SimExec::stream});
        v.push_back({t, 40, 1, 9, SimExec::kernels, 96});   // K = 352: the second K tile holds 3 of 8 blocks
        v.push_back({t, 64, 2, 32, SimExec::kernels, 0, true});
        v.push_back({t, 70, 1, 6, SimExec::stream, 32, true});
    }
    return v;
}

std::string case_name(const testing::TestParamInfo<Case> & info) {
    const Case & c = info.param;
    return std::string(ggml_type_name(c.type)) + "_m" + std::to_string(c.m) + "_k" + std::to_string(c.k_tiles) + "_n" +
           std::to_string(c.n) + (c.k_tail ? "_tail" + std::to_string(c.k_tail) : std::string()) + (c.any_fields ? "_anyfields" : "") + "_" +
           exec_name(c.exec);
}

INSTANTIATE_TEST_SUITE_P(Contracts, LegacyBfp16, ::testing::ValuesIn(cases()), case_name);

}  // namespace
