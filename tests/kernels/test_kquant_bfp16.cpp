// The bfp16 prefill core program (aie/matmul/kernels/mm_kquant_bfp16.cc) against the independent
// reference of tests/common/bfp16-reference.cpp: bit for bit, through the simulator's kernel-code and
// instruction-stream modes, on fresh random GGUF rows and activations (one in 50 scaled by 20, so
// blocks span a range their 8-bit mantissas cannot hold), over several K tiles, a ragged last row tile
// and partial token tiles. Token tile 64 (Q4_K, Q5_K; A in two K halves, the kernel called once per
// half): the kernel against the reference, against the TN 32 kernel on the same floats and against its
// twin, and what it issues per slot beside TN 32 (KQuantBfp16N64).
#include "bfp16-reference.h"
#include "sim-operands.h"
#include "test-random.h"

#include "contracts/bfp16-codec.h"
#include "contracts/matmul-contract.h"
#include "runtime/thread-pool.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "sim/sim-matmul.h"
#include "sim/tile-kernels.h"
#include "kquant-bfp16-twin.h"

#include <aie_api/host/bfp16.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
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
    inv.act_tile_bytes = al.weight_k_tile_bytes();
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

// ---- Token tile 64 (Q4_K, Q5_K): A in two K halves, the kernel called once per half ------------

extern "C" {
void mm_q4_K_bfp16_n32(const uint8_t * w, const uint8_t * a, float * c);
void mm_q5_K_bfp16_n32(const uint8_t * w, const uint8_t * a, float * c);
void mm_q4_K_bfp16_n64(const uint8_t * w, const uint8_t * a, float * c, int32_t k_half);
void mm_q5_K_bfp16_n64(const uint8_t * w, const uint8_t * a, float * c, int32_t k_half);
void mm_zero_c_n32(float * c);
void mm_zero_c_n64(float * c);
}

namespace {

using namespace xdna;

using Tn32Fn = void (*)(const uint8_t *, const uint8_t *, float *);
using Tn64Fn = void (*)(const uint8_t *, const uint8_t *, float *, int32_t);

constexpr xdna_aie::BlockActTileFormat kHalf64{64, 128};
constexpr int kHalf64Bytes = kHalf64.tile_bytes();  // 9280: one A object, two per K tile
static_assert(kHalf64Bytes == 9280, "BlockActTileFormat{64, 128}");

struct N64Type {
    ggml_type type;
    int       twin_id;  // kquant_bfp16_twin_tile_n64's type_id
    Tn32Fn    n32;
    Tn64Fn    n64;
    TileFn    twin64;
};
const N64Type kN64Types[] = {
    {GGML_TYPE_Q4_K, 0, mm_q4_K_bfp16_n32, mm_q4_K_bfp16_n64, twin_mm_q4_K_bfp16_n64},
    {GGML_TYPE_Q5_K, 1, mm_q5_K_bfp16_n32, mm_q5_K_bfp16_n64, twin_mm_q5_K_bfp16_n64},
};

// Bit for bit, or both NaN (a NaN's payload is not part of the contract).
bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0 || (std::isnan(a) && std::isnan(b)); }

// Aligned host memory for kernel operands (the kernels' vector loads check alignment).
struct Aligned {
    explicit Aligned(size_t n) : p(static_cast<uint8_t *>(std::aligned_alloc(64, (n + 63) / 64 * 64))), bytes(n) {}
    ~Aligned() { std::free(p); }
    Aligned(const Aligned &) = delete;
    Aligned & operator=(const Aligned &) = delete;
    float * f() const { return reinterpret_cast<float *>(p); }
    uint8_t * p;
    size_t    bytes;
};

// Tokens [t0, t0 + tn) x K [k0, k0 + tk) of x ([token][k], row length k) as one BlockActTileFormat{tn, tk}
// object: the host encoder's blocks (src/contracts/bfp16-codec.h) and a flag per token holding a NaN or
// an infinity in that range, as the backend's quantizer lays them out.
void encode_act(const std::vector<float> & x, int64_t k, int t0, int tn, int64_t k0, int tk, uint8_t * out) {
    const xdna_aie::BlockActTileFormat f{tn, tk};
    std::memset(out, 0, f.tile_bytes());
    for (int t = 0; t < tn; ++t) {
        bool finite = true;
        for (int kb = 0; kb < tk / 8; ++kb) finite &= bfp16_encode_block(&x[(t0 + t) * k + k0 + 8 * kb], out + f.block_offset(t, kb));
        out[f.flags_offset() + t] = finite ? 0 : 1;
    }
}

// A kernel call as the simulator makes it: the modes it found must be the modes it leaves.
void call_checked(Tn64Fn fn, const uint8_t * w, const uint8_t * a, float * c, int k_half) {
    const CoreModes before = sim_core_modes();
    fn(w, a, c, k_half);
    const CoreModes after = sim_core_modes();
    ASSERT_EQ(before.rounding, after.rounding) << "k_half " << k_half << ": the rounding mode was not restored";
    ASSERT_EQ(before.saturation, after.saturation) << "k_half " << k_half;
}

// The TN 64 kernel (two half calls per K tile, over several K tiles, C cleared by mm_zero_c_n64) against
// the independent reference bit for bit, against the TN 32 kernel on the same floats (tokens 0-31 and
// 32-63 as two TN 32 tiles, A re-encoded in that layout) and against its twin (VNNI and fp32 block
// products). Weights: realistic GGUF rows, and rows of arbitrary bytes (any fp16 d / dmin: NaN,
// infinite, subnormal). Activations: normal, one in 50 scaled by 20, and some tokens holding a NaN or
// an infinity in one K half of one K tile.
TEST(KQuantBfp16N64, KernelMatchesReferenceTokenTile32AndTwin) {
    struct Restore {
        ~Restore() { xdna::kquant_bfp16_twin_allow_vnni(true); }
    } restore;
    constexpr int kM = 64, kN = 64, kKTiles = 3;
    constexpr int64_t kK = kKTiles * 256;
    std::mt19937_64 g(xdna_test::test_seed() ^ 0x6464);
    for (const N64Type & ty : kN64Types) {
        for (bool arbitrary : {false, true}) {
            SCOPED_TRACE(testing::Message() << ggml_type_name(ty.type) << (arbitrary ? " arbitrary bytes" : " realistic rows")
                                            << " GGML_XDNA_TEST_SEED=" << xdna_test::test_seed());
            std::vector<uint8_t> rows = xdna_test::random_rows(ty.type, kK, kM, g);
            if (arbitrary) for (auto & b : rows) b = static_cast<uint8_t>(g());
            std::vector<float> x(kK * kN);
            std::normal_distribution<float> nd(0.0f, 1.0f);
            for (auto & v : x) v = nd(g) * (g() % 50 == 0 ? 20.0f : 1.0f);
            // Non-finite tokens on both sides of token 32, in either K half of some K tile.
            const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                      -std::numeric_limits<float>::infinity()};
            std::vector<bool> bad_token(kN, false);
            for (int i = 0; i < 4; ++i) {
                const int t = static_cast<int>(g() % kN);
                bad_token[t] = true;
                x[t * kK + g() % kK] = specials[i % 3];
            }

            const int64_t ne[4] = {kK, kM, 1, 1};
            WeightLayout wl;
            ASSERT_TRUE(make_weight_layout(ty.type, ne, wl));
            ASSERT_EQ(wl.k_tiles, kKTiles);
            Aligned w(wl.total_bytes);
            clear_weight_padding(wl, w.p);
            pack_weight_rows(wl, rows.data(), 0, kM, w.p);

            // A: per K tile the two TN 64 half objects back to back (the twin's form); per token tile of 32
            // and K tile one TN 32 object.
            constexpr int kA32Bytes = xdna_aie::BlockActTileFormat{32, 256}.tile_bytes();
            Aligned a64(size_t(kKTiles) * 2 * kHalf64Bytes), a32(size_t(2) * kKTiles * kA32Bytes);
            for (int kt = 0; kt < kKTiles; ++kt) {
                for (int h = 0; h < 2; ++h) encode_act(x, kK, 0, 64, kt * 256 + h * 128, 128, a64.p + (kt * 2 + h) * kHalf64Bytes);
                for (int tt = 0; tt < 2; ++tt) encode_act(x, kK, 32 * tt, 32, kt * 256, 256, a32.p + (tt * kKTiles + kt) * kA32Bytes);
            }

            // The TN 64 kernel; C starts as garbage so the zero kernel is tested too.
            Aligned c64(kN * kM * 4);
            for (int i = 0; i < kN * kM; ++i) c64.f()[i] = nd(g);
            mm_zero_c_n64(c64.f());
            for (int kt = 0; kt < kKTiles; ++kt) {
                const uint8_t * wt = w.p + wl.tile_offset(0, 0, kt);
                call_checked(ty.n64, wt, a64.p + (kt * 2) * kHalf64Bytes, c64.f(), 0);
                call_checked(ty.n64, wt, a64.p + (kt * 2 + 1) * kHalf64Bytes, c64.f(), 1);
            }
            // The TN 32 kernel on the same tokens.
            Aligned c32(2 * 32 * kM * 4);
            for (int tt = 0; tt < 2; ++tt) {
                float * c = c32.f() + tt * 32 * kM;
                mm_zero_c_n32(c);
                for (int kt = 0; kt < kKTiles; ++kt) ty.n32(w.p + wl.tile_offset(0, 0, kt), a32.p + (tt * kKTiles + kt) * kA32Bytes, c);
            }
            const std::vector<float> want = xdna_test::contract_reference_bfp16(xdna_test::MatmulCase{ty.type, kK, kM, kN}, rows, x);
            ASSERT_EQ(want.size(), size_t(kN * kM));

            int64_t bad_ref = 0, bad_32 = 0, finite_nonzero = 0;
            for (int i = 0; i < kN * kM; ++i) {
                const float got = c64.f()[i];
                finite_nonzero += std::isfinite(got) && got != 0.0f;
                if (!same_bits(got, want[i]) && bad_ref++ < 5)
                    ADD_FAILURE() << "token " << i / kM << " row " << i % kM << ": TN 64 kernel " << got << ", reference " << want[i];
                if (!same_bits(got, c32.f()[i]) && bad_32++ < 5)
                    ADD_FAILURE() << "token " << i / kM << " row " << i % kM << ": TN 64 kernel " << got << ", TN 32 kernel " << c32.f()[i];
                if (bad_token[i / kM]) ASSERT_TRUE(std::isnan(got)) << "token " << i / kM << " holds a non-finite value";
            }
            EXPECT_EQ(bad_ref, 0);
            EXPECT_EQ(bad_32, 0);
            // Values were compared, not NaNs and zeros (arbitrary d / dmin make some rows NaN or infinite).
            EXPECT_GT(finite_nonzero, kN * kM * (arbitrary ? 5 : 9) / 10);

            // The twin over the same K tiles, whole and partial.
            for (bool vnni : {true, false}) {
                xdna::kquant_bfp16_twin_allow_vnni(vnni);
                for (int valid : {64, 37}) {
                    SCOPED_TRACE(testing::Message() << (vnni ? "VNNI allowed" : "fp32 block products") << ", valid tokens " << valid);
                    Aligned ct(kN * kM * 4);
                    for (int i = 0; i < kN * kM; ++i) ct.f()[i] = -1.0f;  // past `valid`: must stay
                    std::memset(ct.p, 0, size_t(valid) * kM * 4);
                    for (int kt = 0; kt < kKTiles; ++kt) {
                        const uint8_t * wt = w.p + wl.tile_offset(0, 0, kt);
                        if (valid == 64) ty.twin64(wt, a64.p + kt * 2 * kHalf64Bytes, ct.f());
                        else kquant_bfp16_twin_tile_n64(ty.twin_id, wt, a64.p + kt * 2 * kHalf64Bytes, ct.f(), valid);
                    }
                    for (int i = 0; i < kN * kM; ++i) {
                        if (i < valid * kM) ASSERT_TRUE(same_bits(ct.f()[i], c64.f()[i])) << "output " << i << ": twin " << ct.f()[i] << " kernel " << c64.f()[i];
                        else ASSERT_EQ(ct.f()[i], -1.0f) << "output " << i << " of a token past the valid ones";
                    }
                }
            }
        }
    }
}

// The TN 64 twin against the TN 64 kernel on arbitrary bytes, one K tile: any field values, activation
// blocks of any exponent in both halves (the twin's exact slow path), any C, flags in either half, and
// the partial form. As KQuantBfp16Twin.KernelBitsOnArbitraryBytes does for TN 32.
TEST(KQuantBfp16N64, TwinKernelBitsOnArbitraryBytes) {
    std::mt19937_64 g(xdna_test::test_seed() ^ 0x6400);
    struct Restore {
        ~Restore() { xdna::kquant_bfp16_twin_allow_vnni(true); }
    } restore;
    for (bool vnni : {true, false}) {
        SCOPED_TRACE(vnni ? "VNNI allowed" : "fp32 block products");
        xdna::kquant_bfp16_twin_allow_vnni(vnni);
        for (const N64Type & ty : kN64Types) {
            for (int trial = 0; trial < 12; ++trial) {
                SCOPED_TRACE(testing::Message() << ggml_type_name(ty.type) << " trial " << trial
                                                << " GGML_XDNA_TEST_SEED=" << xdna_test::test_seed());
                alignas(64) static uint8_t w[16384], a[2 * kHalf64Bytes];
                alignas(64) static float c0[64 * 64], ck[64 * 64], ct[64 * 64];
                for (auto & b : w) b = static_cast<uint8_t>(g());
                for (auto & b : a) b = static_cast<uint8_t>(g());
                if (trial % 2 == 0) {  // blocks of ordinary exponents too, so the fast paths are taken
                    for (int h = 0; h < 2; ++h)
                        for (int i = 0; i < kHalf64.blocks(); ++i) a[h * kHalf64Bytes + i * 9] = static_cast<uint8_t>(110 + g() % 30);
                }
                int flagged = 0;
                for (int t = 0; t < 64; ++t) {
                    bool any = false;
                    for (int h = 0; h < 2; ++h) {
                        const bool f = g() % 12 == 0;
                        a[h * kHalf64Bytes + kHalf64.flags_offset() + t] = f ? static_cast<uint8_t>(1 + g() % 255) : 0;
                        any |= f;
                    }
                    flagged += any;
                }
                std::normal_distribution<float> nd(0.0f, 100.0f);
                for (auto & v : c0) v = nd(g);
                const int valid = trial == 10 ? 13 : trial == 11 ? 40 : 64;
                std::memcpy(ck, c0, sizeof c0);
                std::memcpy(ct, c0, sizeof c0);
                call_checked(ty.n64, w, a, ck, 0);
                call_checked(ty.n64, w, a + kHalf64Bytes, ck, 1);
                if (valid < 64) kquant_bfp16_twin_tile_n64(ty.twin_id, w, a, ct, valid);
                else ty.twin64(w, a, ct);
                for (int i = 0; i < valid * 64; ++i) {
                    const int t = i / 64;
                    ASSERT_TRUE(same_bits(ck[i], ct[i])) << "output " << i << ": kernel " << ck[i] << " twin " << ct[i];
                    if (a[kHalf64.flags_offset() + t] != 0 || a[kHalf64Bytes + kHalf64.flags_offset() + t] != 0)
                        ASSERT_TRUE(std::isnan(ck[i])) << "output " << i << " of a flagged token";
                }
                ASSERT_LT(flagged, 64);
                for (int i = valid * 64; i < 64 * 64; ++i) ASSERT_EQ(0, std::memcmp(&ct[i], &c0[i], 4)) << "a token past the valid ones";
            }
        }
    }
}

// What the core issues per slot for one K tile of 64 tokens: two TN 32 calls against the TN 64 kernel's
// two half calls (the host aie_api's counts, as src/sim/kernel-cycles.cpp measures a call). The same
// block mmuls; the dequantization is paid once per 64 tokens instead of twice, so the vector slot
// issues fewer instructions.
TEST(KQuantBfp16N64, OpCountsPerKTile) {
    for (const N64Type & ty : kN64Types) {
        Aligned w(16384), a(2 * kHalf64Bytes), c(64 * 64 * 4);
        std::memset(w.p, 0, w.bytes);
        std::memset(a.p, 0, a.bytes);
        std::memset(c.p, 0, c.bytes);
        const CoreOps n32 = measure_on_own_thread([&] { ty.n32(w.p, a.p, c.f()); });
        const CoreOps n64_0 = measure_on_own_thread([&] { ty.n64(w.p, a.p, c.f(), 0); });
        const CoreOps n64_1 = measure_on_own_thread([&] { ty.n64(w.p, a.p + kHalf64Bytes, c.f(), 1); });
        CoreOps n64 = n64_0;
        n64 += n64_1;
        auto line = [](const char * what, const CoreOps & o) {
            return testing::Message() << what << ": vector " << o.vector << " move " << o.move << " load " << o.load << " unpack "
                                      << o.unpack << " store " << o.store << " scalar " << o.scalar << " mmul MACs " << o.mmul_macs
                                      << " pipelined loops " << o.pipelined_loops;
        };
        std::printf("%s\n  %s\n  %s\n  %s\n", ggml_type_name(ty.type), (line("TN 32, one call (32 tokens)", n32)).GetString().c_str(),
                    (line("TN 64, half 0", n64_0)).GetString().c_str(), (line("TN 64, both halves (64 tokens)", n64)).GetString().c_str());
        EXPECT_EQ(n64_0.vector, n64_1.vector) << "both halves issue the same";
        EXPECT_EQ(n64.mmul_macs, 2 * n32.mmul_macs) << "64 x 64 x 256 MACs per K tile";
        EXPECT_LT(n64.vector, 2 * n32.vector) << "the dequantization once per 64 tokens";
    }
}

}  // namespace
