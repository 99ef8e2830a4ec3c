// The float core program (aie/matmul/kernels/mm_float.cc: F16, BF16, F32) against a float64
// reference. Tiles are written here with the ABI's index functions (matmul_tiles.h f_element and
// FloatActTileFormat::value_index); values come from ggml's own fp16 / bf16 conversions.
//
// Tolerances are the rigorous bounds of what the kernel does (its top comment):
//   BF16, F16: products exact, n fp32 adds in sequence: |c - ref| <= n * 2^-24 * sum |products|
//              (n = 2 K tiles x TK values; F16 x4: four partial products per value);
//   F32:       the 32-lane fp32 products of the kernel (Peano's emulation, aie::mul's `safe` bits:
//              operands split toward -inf into three bf16 parts, all nine exact partial products added)
//              err by < 1.3 * 2^-24 relative each (the parts b, c are below 2^-6 and 2^-13 of their
//              operand, so the eight roundings before the last product's add cost < 0.3 units), so
//              |c - ref| <= (n + 2) * 2^-24 * sum |products|.
// Crafted cases show that F16 products are exact (every output is one product of two full-precision
// fp16 values, 22 significant bits, subnormals included, and must equal it bit for bit) and that F32
// products are the safe emulation's bits (computed here from its definition).
#include "xdna_aie/matmul_tiles.h"

#include "core-fp32-reference.h"

#include <aie_api/aie.hpp>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

extern "C" {
void mm_f16_n4(const uint8_t * w, const uint8_t * a, float * c);
void mm_f16_n32(const uint8_t * w, const uint8_t * a, float * c);
void mm_bf16_n4(const uint8_t * w, const uint8_t * a, float * c);
void mm_bf16_n32(const uint8_t * w, const uint8_t * a, float * c);
void mm_f32_n4(const uint8_t * w, const uint8_t * a, float * c);
void mm_f32_n32(const uint8_t * w, const uint8_t * a, float * c);
}

namespace {

constexpr int kTM = 64, kKTiles = 2;

uint64_t seed() {
    static const uint64_t s = [] {
        const char * e = std::getenv("GGML_XDNA_TEST_SEED");
        return e ? std::strtoull(e, nullptr, 10) : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    }();
    return s;
}

enum class Kind { f16, bf16, f32 };
using Kernel = void (*)(const uint8_t *, const uint8_t *, float *);

Kernel kernel_for(Kind k, int tn) {
    switch (k) {
        case Kind::f16: return tn == 4 ? mm_f16_n4 : mm_f16_n32;
        case Kind::bf16: return tn == 4 ? mm_bf16_n4 : mm_bf16_n32;
        default: return tn == 4 ? mm_f32_n4 : mm_f32_n32;
    }
}
int tile_k(Kind k) { return k == Kind::f32 ? 64 : 128; }
int value_bytes(Kind k) { return k == Kind::f32 ? 4 : 2; }
const char * kind_name(Kind k) { return k == Kind::f16 ? "F16" : k == Kind::bf16 ? "BF16" : "F32"; }

struct Buf {
    explicit Buf(size_t n) : p(static_cast<uint8_t *>(std::aligned_alloc(64, (n + 63) / 64 * 64))) { std::memset(p, 0, (n + 63) / 64 * 64); }
    ~Buf() { std::free(p); }
    Buf(const Buf &) = delete;
    Buf & operator=(const Buf &) = delete;
    uint8_t * p;
};

// A value of the kind as stored (bits) and as a number.
struct Val {
    uint32_t bits;
    double v;
};

Val make_val(Kind k, float f) {
    if (k == Kind::f16) {
        const ggml_fp16_t h = ggml_fp32_to_fp16(f);
        return {h, ggml_fp16_to_fp32(h)};
    }
    if (k == Kind::bf16) {
        const ggml_bf16_t h = ggml_fp32_to_bf16(f);
        return {h.bits, ggml_bf16_to_fp32(h)};
    }
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return {u, f};
}
Val f16_bits(uint16_t h) { return {h, ggml_fp16_to_fp32(h)}; }

void put(uint8_t * base, int index, int bytes, uint32_t bits) { std::memcpy(base + static_cast<size_t>(index) * bytes, &bits, bytes); }

// W[r][k] and X[t][k] over kKTiles K tiles, their tiles, and the kernel's C.
struct Problem {
    Kind kind;
    int tn, tk;
    std::vector<Val> w, x;  // [r][K], [t][K], K = kKTiles * tk

    Problem(Kind k, int n) : kind(k), tn(n), tk(tile_k(k)), w(static_cast<size_t>(kTM) * kKTiles * tile_k(k)),
                             x(static_cast<size_t>(n) * kKTiles * tile_k(k)) {}
    int K() const { return kKTiles * tk; }

    std::vector<float> run(int k_tiles = kKTiles) const {
        const int vb = value_bytes(kind);
        const xdna_aie::FloatActTileFormat af{tn, tk, vb};
        Buf c(static_cast<size_t>(tn) * kTM * 4);
        for (int kt = 0; kt < k_tiles; ++kt) {
            Buf wt(static_cast<size_t>(kTM) * tk * vb), at(af.tile_bytes());
            for (int r = 0; r < kTM; ++r)
                for (int k = 0; k < tk; ++k) put(wt.p, xdna_aie::f_element(tk, r, k), vb, w[static_cast<size_t>(r) * K() + kt * tk + k].bits);
            for (int t = 0; t < tn; ++t)
                for (int k = 0; k < tk; ++k) put(at.p, af.value_index(t, k), vb, x[static_cast<size_t>(t) * K() + kt * tk + k].bits);
            kernel_for(kind, tn)(wt.p, at.p, reinterpret_cast<float *>(c.p));
        }
        std::vector<float> out(static_cast<size_t>(tn) * kTM);
        std::memcpy(out.data(), c.p, out.size() * 4);
        return out;
    }
};

struct Case {
    Kind kind;
    int tn;
};

void PrintTo(const Case & c, std::ostream * os) { *os << kind_name(c.kind) << " n" << c.tn; }

class FloatKernel : public ::testing::TestWithParam<Case> {};

std::string case_name(const ::testing::TestParamInfo<Case> & info) {
    return std::string(kind_name(info.param.kind)) + "_n" + std::to_string(info.param.tn);
}

// Random values (normal, with outliers, a few exact zeros), 2 K tiles, against float64 within the bound.
TEST_P(FloatKernel, MatchesFloat64WithinAccumulationBound) {
    const Case cs = GetParam();
    for (int rep = 0; rep < 3; ++rep) {
        SCOPED_TRACE(testing::Message() << "seed " << seed() << " rep " << rep);
        std::mt19937_64 g(seed() ^ (static_cast<uint64_t>(cs.kind) << 20) ^ (cs.tn << 4) ^ (rep * 0x9E3779B97F4A7C15ull));
        std::normal_distribution<float> nd(0.0f, 1.0f);
        Problem pr(cs.kind, cs.tn);
        for (auto & v : pr.w) v = make_val(cs.kind, g() % 97 == 0 ? 0.0f : nd(g) * (g() % 40 == 0 ? 30.0f : 1.0f));
        for (auto & v : pr.x) v = make_val(cs.kind, nd(g) * (g() % 40 == 0 ? 30.0f : 1.0f));
        const std::vector<float> got = pr.run();
        const double n_adds = (cs.kind == Kind::f16 ? 4.0 : 1.0) * pr.K();
        const double factor = cs.kind == Kind::f32 ? (n_adds + 2.0) : n_adds;
        double worst = 0.0;
        for (int t = 0; t < cs.tn; ++t) {
            for (int r = 0; r < kTM; ++r) {
                double ref = 0.0, mag = 0.0;
                for (int k = 0; k < pr.K(); ++k) {
                    const double p = pr.w[static_cast<size_t>(r) * pr.K() + k].v * pr.x[static_cast<size_t>(t) * pr.K() + k].v;
                    ref += p;
                    mag += std::fabs(p);
                }
                const double err = std::fabs(static_cast<double>(got[t * kTM + r]) - ref);
                const double bound = 1.01 * factor * std::ldexp(mag, -24);
                ASSERT_LE(err, bound) << "token " << t << " row " << r << ": got " << got[t * kTM + r] << " ref " << ref;
                if (mag > 0) worst = std::max(worst, err / mag);
            }
        }
        if (rep == 0) {
            std::printf("[float] %s n%d: largest |err| / sum|products| = %.3g (bound %.3g)\n", kind_name(cs.kind), cs.tn, worst,
                        1.01 * factor * std::ldexp(1.0, -24));
        }
    }
}

// Per-call core instruction counts (host aie_api counters), printed.
TEST_P(FloatKernel, OpCounts) {
    const Case cs = GetParam();
    const int tk = tile_k(cs.kind), vb = value_bytes(cs.kind);
    Buf wt(static_cast<size_t>(kTM) * tk * vb), at(static_cast<size_t>(cs.tn) * tk * vb), c(static_cast<size_t>(cs.tn) * kTM * 4);
    aie_host::reset_op_counts();
    kernel_for(cs.kind, cs.tn)(wt.p, at.p, reinterpret_cast<float *>(c.p));
    const aie_host::OpCounts n = aie_host::op_counts();
    const uint64_t mm = n.mmul_calls(aie_host::mmul_shape::bf16_4x8x8) + n.mmul_calls(aie_host::mmul_shape::f32_4x8x4);
    std::printf("[ops] %s n%d per call: vector %llu move %llu load %llu unpack %llu store %llu | mmul %s %llu (MAC lanes %llu)\n",
                kind_name(cs.kind), cs.tn, (unsigned long long)n.vector, (unsigned long long)n.move, (unsigned long long)n.load,
                (unsigned long long)n.unpack, (unsigned long long)n.store, cs.kind == Kind::f32 ? "none (elementwise fp32)" : "bf16 4x8x8",
                (unsigned long long)mm, (unsigned long long)n.mmul_macs);
    // Per (token group, 8-row group, 8-K step): one bf16 mmul (F16: four passes); F32 eight 32-lane fp32
    // multiplies at 13 vector instructions and eight accumulator adds, no mmul.
    const uint64_t blocks = static_cast<uint64_t>(cs.tn / 4) * (kTM / 8) * (tk / 8);
    EXPECT_EQ(mm, cs.kind == Kind::f32 ? 0 : blocks * (cs.kind == Kind::f16 ? 4 : 1));
    if (cs.kind == Kind::f32) EXPECT_EQ(n.vector, blocks * 8 * (13 + 1));
}

INSTANTIATE_TEST_SUITE_P(All, FloatKernel,
                         ::testing::Values(Case{Kind::f16, 4}, Case{Kind::f16, 32}, Case{Kind::bf16, 4}, Case{Kind::bf16, 32},
                                           Case{Kind::f32, 4}, Case{Kind::f32, 32}),
                         case_name);

// Every output is exactly one product w[r][t] * x[t][t] of full-precision fp16 values (all 11
// significant bits set or random, subnormals included): F16 products reach C exactly.
TEST(FloatKernelF16, ProductsAreExact) {
    for (int tn : {4, 32}) {
        SCOPED_TRACE(testing::Message() << "seed " << seed() << " tn " << tn);
        std::mt19937_64 g(seed() ^ 0xF16 ^ tn);
        Problem pr(Kind::f16, tn);
        // Full-significand values: 0x3FFF = 2047/1024 (its square needs all 22 bits), the largest and
        // smallest subnormals, and random patterns with the low mantissa bits set.
        const uint16_t crafted[] = {0x3FFF, 0xBFFF, 0x03FF, 0x0001, 0x7BFF, 0x0401, 0x3C01, 0x2AAB};
        for (size_t i = 0; i < pr.w.size(); ++i) {
            uint16_t h = i % 5 == 0 ? crafted[g() % 8] : static_cast<uint16_t>((g() % 0x7800) | 0x0007 | ((g() & 1) << 15));
            pr.w[i] = f16_bits(h);
        }
        for (int t = 0; t < tn; ++t) {
            for (int k = 0; k < pr.K(); ++k) pr.x[static_cast<size_t>(t) * pr.K() + k] = f16_bits(0);
            const uint16_t h = t == 0 ? 0x3FFF : t == 1 ? 0x03FF : static_cast<uint16_t>((g() % 0x3000 + 0x2000) | 0x0007 | ((g() & 1) << 15));
            pr.x[static_cast<size_t>(t) * pr.K() + t] = f16_bits(h);
        }
        pr.w[0] = f16_bits(0x3FFF);  // row 0, k 0: (2047/1024)^2 at token 0
        const std::vector<float> got = pr.run(1);
        for (int t = 0; t < tn; ++t) {
            for (int r = 0; r < kTM; ++r) {
                const double p = pr.w[static_cast<size_t>(r) * pr.K() + t].v * pr.x[static_cast<size_t>(t) * pr.K() + t].v;
                const float want = static_cast<float>(p);
                ASSERT_EQ(static_cast<double>(want), p) << "the product itself must be an fp32 value";
                uint32_t a, b;
                std::memcpy(&a, &want, 4);
                std::memcpy(&b, &got[t * kTM + r], 4);
                ASSERT_EQ(a, b) << "token " << t << " row " << r << ": want " << want << " got " << got[t * kTM + r];
            }
        }
        EXPECT_EQ(got[0], 4190209.0f / 1048576.0f);
    }
}

using xdna_test::bf16_down;
using xdna_test::safe_mul;

// Every F32 output is exactly one product x[t][t] * w[r][t] (all other products are zero, and adding
// +0 changes nothing): the kernel's result must be the safe emulation's bits, operands in the kernel's
// order (the emulation is not commutative). Row 0, token 0 holds (1 + 2^-12 + 2^-22) (1 + 2^-12), where
// the six-product `fast` emulation is one ulp lower.
TEST(FloatKernelF32, ProductsAreTheSafeEmulation) {
    for (int tn : {4, 32}) {
        SCOPED_TRACE(testing::Message() << "seed " << seed() << " tn " << tn);
        std::mt19937_64 g(seed() ^ 0xF32 ^ tn);
        std::uniform_real_distribution<float> u(-4.0f, 4.0f);
        Problem pr(Kind::f32, tn);
        for (auto & v : pr.w) v = make_val(Kind::f32, u(g));
        for (int t = 0; t < tn; ++t) {
            for (int k = 0; k < pr.K(); ++k) pr.x[static_cast<size_t>(t) * pr.K() + k] = make_val(Kind::f32, 0.0f);
            pr.x[static_cast<size_t>(t) * pr.K() + t] = make_val(Kind::f32, t == 0 ? 1.0f + 0x1p-12f + 0x1p-22f : u(g));
        }
        pr.w[0] = make_val(Kind::f32, 1.0f + 0x1p-12f);
        const std::vector<float> got = pr.run(1);
        int not_ieee = 0;
        for (int t = 0; t < tn; ++t) {
            for (int r = 0; r < kTM; ++r) {
                const float wv = static_cast<float>(pr.w[static_cast<size_t>(r) * pr.K() + t].v);
                const float xv = static_cast<float>(pr.x[static_cast<size_t>(t) * pr.K() + t].v);
                const float want = safe_mul(xv, wv);  // the kernel multiplies activation x weight (order matters)
                not_ieee += want != wv * xv;
                uint32_t a, b;
                std::memcpy(&a, &want, 4);
                std::memcpy(&b, &got[t * kTM + r], 4);
                ASSERT_EQ(a, b) << "token " << t << " row " << r << ": " << wv << " * " << xv << " want " << want << " got "
                                << got[t * kTM + r];
            }
        }
        EXPECT_EQ(got[0], 1.0f + 0x1p-11f + 0x1p-22f + 0x1p-23f);  // six products: 1 + 2^-11 + 2^-22
        std::printf("[float] F32 n%d: %d of %d single products differ from the IEEE product\n", tn, not_ieee, tn * kTM);
    }
}

// An infinite F16 operand splits into inf + NaN: its outputs are NaN (documented in the kernel).
TEST(FloatKernelF16, InfinityGivesNaN) {
    Problem pr(Kind::f16, 4);
    for (auto & v : pr.w) v = f16_bits(0x3C00);
    for (auto & v : pr.x) v = f16_bits(0x3800);
    pr.w[5 * pr.K() + 3] = f16_bits(0x7C00);
    const std::vector<float> got = pr.run();
    for (int t = 0; t < 4; ++t) {
        EXPECT_TRUE(std::isnan(got[t * kTM + 5]));
        EXPECT_EQ(got[t * kTM + 6], 0.5f * pr.K());
    }
}

}  // namespace
