// The bfp16 prefill core program (aie/matmul/kernels/mm_kquant_bfp16.cc) against the independent
// reference of tests/common/bfp16-reference.cpp: bit for bit, through the simulator's kernel-code and
// instruction-stream modes, on fresh random GGUF rows and activations (one in 50 scaled by 20, so
// blocks span a range their 8-bit mantissas cannot hold), over several K tiles, a ragged last row tile
// and partial token tiles.
#include "bfp16-reference.h"
#include "sim-operands.h"

#include "contracts/bfp16-codec.h"
#include "contracts/matmul-contract.h"
#include "runtime/thread-pool.h"
#include "sim/sim-matmul.h"
#include "sim/tile-kernels.h"
#include "kquant-bfp16-twin.h"

#include <aie_api/host/bfp16.hpp>
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
};

std::string exec_name(SimExec e) { return e == SimExec::kernels ? "kernels" : e == SimExec::stream ? "stream" : "twin"; }

// Runs one invocation of the prefill contract of `cs.type` in mode `cs.exec`; returns out[n][m].
std::vector<float> run(const Case & cs, const std::vector<uint8_t> & rows, const std::vector<float> & x) {
    const MatmulContract & c = *prefill_contract_for(cs.type);
    const int tn = 32;
    const int64_t k = cs.k_tiles * c.tile_k;
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
    inv.act_tile_bytes = al.tile_bytes;
    inv.out_row_stride = cs.m;
    ThreadPool pool(2);
    const Status st = sim_run_matmul(inv, pool, cs.exec);
    EXPECT_TRUE(st.ok) << st.message;
    const auto * p = static_cast<const float *>(out.host_ptr());
    return std::vector<float>(p, p + cs.m * cs.n);
}

class KQuantBfp16 : public ::testing::TestWithParam<Case> {};

TEST_P(KQuantBfp16, MatchesIndependentReferenceBitForBit) {
    const Case cs = GetParam();
    SCOPED_TRACE(testing::Message() << ggml_type_name(cs.type) << " m " << cs.m << " k_tiles " << cs.k_tiles << " n " << cs.n
                                    << " " << exec_name(cs.exec) << " GGML_XDNA_TEST_SEED=" << seed());
    std::mt19937_64 g(seed() ^ (uint64_t(cs.type) * 7919 + cs.m * 131 + cs.n * 17 + int(cs.exec)));
    const int64_t k = cs.k_tiles * 256;
    const std::vector<uint8_t> rows = xdna_test::random_rows(cs.type, k, cs.m, g);
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
    for (ggml_type t : {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K}) {
        v.push_back({t, 64, 2, 32, SimExec::kernels});
        v.push_back({t, 64 + 23, 3, 37, SimExec::kernels});  // ragged rows, two token tiles, the second partial
        v.push_back({t, 130, 2, 5, SimExec::stream});
    }
    return v;
}

std::string case_name(const testing::TestParamInfo<Case> & info) {
    const Case & c = info.param;
    return std::string(ggml_type_name(c.type)) + "_m" + std::to_string(c.m) + "_k" + std::to_string(c.k_tiles) + "_n" +
           std::to_string(c.n) + "_" + exec_name(c.exec);
}

INSTANTIATE_TEST_SUITE_P(Contracts, KQuantBfp16, ::testing::ValuesIn(cases()), case_name);

// The twin against the kernel on arbitrary bytes: any field values (NaN and infinite scales, subnormal
// ones), activation blocks of any exponent (the twin's exact slow path for scales outside the fp32
// normal range), a C tile of any values, and the partial form for a short last token tile.
TEST(KQuantBfp16Twin, KernelBitsOnArbitraryBytes) {
    std::mt19937_64 g(seed());
    struct Restore {
        ~Restore() { xdna::kquant_bfp16_twin_allow_vnni(true); }
    } restore;
    for (bool vnni : {true, false}) {  // the VNNI block dots where the host has them, and the fp32 form
    SCOPED_TRACE(vnni ? "VNNI allowed" : "fp32 block products");
    xdna::kquant_bfp16_twin_allow_vnni(vnni);
    for (ggml_type t : {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K}) {
        const TileEntry * e = find_tile_entry(*prefill_contract_for(t), 32);
        ASSERT_TRUE(e != nullptr && e->twin != nullptr && e->twin_partial != nullptr);
        for (int trial = 0; trial < 12; ++trial) {
            SCOPED_TRACE(testing::Message() << ggml_type_name(t) << " trial " << trial << " GGML_XDNA_TEST_SEED=" << seed());
            alignas(64) static uint8_t w[16384], a[16384];
            alignas(64) static float c0[32 * 64], ck[32 * 64], ct[32 * 64];
            for (auto & b : w) b = static_cast<uint8_t>(g());
            for (auto & b : a) b = static_cast<uint8_t>(g());
            if (trial % 2 == 0) {  // blocks of ordinary exponents too, so the fast path is taken
                for (int i = 0; i < 32 * 32; ++i) a[i * 9] = static_cast<uint8_t>(110 + g() % 30);
            }
            // The flag bytes (BlockActTileFormat): most tokens finite, so their values are compared; a
            // few flagged, whose outputs both must make NaN (any nonzero byte is a flag).
            const xdna_aie::BlockActTileFormat af{32, 256};
            int flagged = 0;
            for (int t = 0; t < 32; ++t) {
                a[af.flags_offset() + t] = g() % 8 == 0 ? static_cast<uint8_t>(1 + g() % 255) : 0;
                flagged += a[af.flags_offset() + t] != 0;
            }
            std::normal_distribution<float> nd(0.0f, 100.0f);
            for (auto & v : c0) v = nd(g);
            const int valid = trial == 11 ? 13 : 32;
            std::memcpy(ck, c0, sizeof c0);
            std::memcpy(ct, c0, sizeof c0);
            e->kernel(w, a, ck);
            if (valid < 32) e->twin_partial(w, a, ct, valid);
            else e->twin(w, a, ct);
            for (int i = 0; i < valid * 64; ++i) {
                ASSERT_TRUE(std::memcmp(&ck[i], &ct[i], 4) == 0 || (std::isnan(ck[i]) && std::isnan(ct[i])))
                    << "output " << i << ": kernel " << ck[i] << " twin " << ct[i];
                if (a[af.flags_offset() + i / 64] != 0) ASSERT_TRUE(std::isnan(ck[i])) << "output " << i << " of a flagged token";
            }
            ASSERT_LT(flagged, 32);
            for (int i = valid * 64; i < 32 * 64; ++i) ASSERT_EQ(0, std::memcmp(&ct[i], &c0[i], 4)) << "a token past the valid ones";
        }
    }
    }
}

}  // namespace

namespace {

// The host's activation encoder (src/contracts/bfp16-codec.h, fast path and exact path) makes the block
// the core's accfloat -> bfp16ebs8 conversion makes in conv_even (the host aie_api's model of it), on
// blocks of every kind: ordinary, one large value, zeros, subnormals, values near the clamp, huge and
// tiny exponents, infinities and NaNs (whose blocks the backend replaces by NaN outputs).
TEST(Bfp16Codec, HostEncoderIsTheCoresConversion) {
    std::mt19937_64 g(seed());
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int trial = 0; trial < 200000; ++trial) {
        float x[8];
        const int kind = trial % 6;
        for (float & v : x) {
            uint32_t u = static_cast<uint32_t>(g());
            switch (kind) {
                case 0: v = nd(g); break;
                case 1: v = nd(g) * (g() % 8 == 0 ? 1000.0f : 1.0f); break;
                case 2: std::memcpy(&v, &u, 4); break;  // any bits
                case 3: u &= 0x807fffffu; u |= (g() % 3) << 23; std::memcpy(&v, &u, 4); break;  // subnormal / tiny
                case 4: v = static_cast<float>(static_cast<int>(g() % 255) - 127) * 0.5f; break;  // ties
                default: v = g() % 4 == 0 ? 0.0f : nd(g) * 1e-30f; break;
            }
        }
        uint8_t got[9];
        xdna::bfp16_encode_block(x, got);
        const aie::detail::bfp16_block want = aie::detail::bfp16_from_fp32(x, aie::rounding_mode::conv_even);
        ASSERT_EQ(got[0], want.exponent) << "trial " << trial;
        for (int i = 0; i < 8; ++i) ASSERT_EQ(static_cast<int8_t>(got[1 + i]), want.mantissa[i]) << "trial " << trial << " lane " << i;
    }
}

}  // namespace
