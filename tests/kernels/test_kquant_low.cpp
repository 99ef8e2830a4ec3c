// The Q2_K / Q3_K core program (aie/matmul/kernels/mm_kquant_low.cc) against an independent
// reference, and its twin (src/sim/twins/kquant-low-twin.cpp) against the kernel, bit for bit.
//
// The reference starts from the GGUF bytes (bit extraction per ggml-common.h's block layouts and
// ggml's dequantize_row_q2_K / _q3_K value order, Q3_K's scales by its kmask unpacking), quantizes the
// activations itself (the contract's rule), forms integer sums in int64 and applies the contract's
// fp32 epilogue with IEEE single operations in the contract's order. Only the tile codec's
// encode_block / quantize_activation_tile (which make the kernel's inputs) are shared.
#include "contracts/tile-codec.h"
#include "kquant-low-twin.h"
#include "xdna_aie/matmul_tiles.h"

#include <aie_api/aie.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

extern "C" {
void mm_q2_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void mm_q2_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void mm_q3_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void mm_q3_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
}

namespace {

constexpr int kTM = 64, kTK = 256, kKTiles = 2;

uint64_t seed() {
    static const uint64_t s = [] {
        const char * e = std::getenv("GGML_XDNA_TEST_SEED");
        return e ? std::strtoull(e, nullptr, 10) : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    }();
    return s;
}

using Kernel = void (*)(const uint8_t *, const uint8_t *, float *);

Kernel kernel_for(ggml_type type, int tn) {
    if (type == GGML_TYPE_Q2_K) return tn == 4 ? mm_q2_K_a8_n4 : mm_q2_K_a8_n32;
    return tn == 4 ? mm_q3_K_a8_n4 : mm_q3_K_a8_n32;
}
Kernel twin_for(ggml_type type, int tn) {
    if (type == GGML_TYPE_Q2_K) return tn == 4 ? xdna::twin_mm_q2_K_a8_n4 : xdna::twin_mm_q2_K_a8_n32;
    return tn == 4 ? xdna::twin_mm_q3_K_a8_n4 : xdna::twin_mm_q3_K_a8_n32;
}

struct AlignedBytes {
    explicit AlignedBytes(size_t n) : p(static_cast<uint8_t *>(std::aligned_alloc(64, (n + 63) / 64 * 64))), size(n) {
        std::memset(p, 0, (n + 63) / 64 * 64);
    }
    ~AlignedBytes() { std::free(p); }
    AlignedBytes(const AlignedBytes &) = delete;
    AlignedBytes & operator=(const AlignedBytes &) = delete;
    uint8_t * p;
    size_t size;
};

float as_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
uint32_t as_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// ---- independent reference ----

// GGUF block sizes and field offsets (ggml-common.h): Q2_K {scales[16]; qs[64]; d; dmin},
// Q3_K {hmask[32]; qs[64]; scales[12]; d}.
int block_bytes(ggml_type t) { return t == GGML_TYPE_Q2_K ? 84 : 110; }

// Values (codes), sub-block scales and mins of one super-block, in K order (dequantize_row_q*_K).
struct RefBlock {
    int v[256];
    int sc[16];
    int mn[16];
    float d, dmin;
};

RefBlock ref_decode(ggml_type type, const uint8_t * b) {
    RefBlock r{};
    if (type == GGML_TYPE_Q2_K) {
        const uint8_t * scales = b;
        const uint8_t * qs = b + 16;
        for (int i = 0; i < 256; ++i) {
            const int half = i / 128, shift = 2 * ((i % 128) / 32), l = i % 32;
            r.v[i] = (qs[32 * half + l] >> shift) & 3;
        }
        for (int j = 0; j < 16; ++j) {
            r.sc[j] = scales[j] & 0xF;
            r.mn[j] = scales[j] >> 4;
        }
        ggml_fp16_t h;
        std::memcpy(&h, b + 80, 2);
        r.d = ggml_fp16_to_fp32(h);
        std::memcpy(&h, b + 82, 2);
        r.dmin = ggml_fp16_to_fp32(h);
    } else {
        const uint8_t * hm = b;
        const uint8_t * qs = b + 32;
        for (int i = 0; i < 256; ++i) {
            const int half = i / 128, j = (i % 128) / 32, l = i % 32;
            const int low = (qs[32 * half + l] >> (2 * j)) & 3;
            const bool high = (hm[l] >> (4 * half + j)) & 1;
            r.v[i] = low - (high ? 0 : 4);
        }
        // ggml's kmask unpacking of the 12 scale bytes (dequantize_row_q3_K).
        uint32_t aux[4];
        std::memcpy(aux, b + 96, 12);
        const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
        const uint32_t tmp = aux[2];
        aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
        aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
        aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
        aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
        int8_t s8[16];
        std::memcpy(s8, aux, 16);
        for (int j = 0; j < 16; ++j) r.sc[j] = s8[j] - 32;
        ggml_fp16_t h;
        std::memcpy(&h, b + 108, 2);
        r.d = ggml_fp16_to_fp32(h);
    }
    return r;
}

// The contract's activation quantization of one 256-value block.
void ref_quantize(const float * x, int8_t * q, float & s) {
    float amax = 0.0f;
    bool nan = false;
    for (int i = 0; i < 256; ++i) {
        amax = std::max(amax, std::fabs(x[i]));
        nan |= std::isnan(x[i]);
    }
    if (nan || !std::isfinite(amax)) {
        s = std::numeric_limits<float>::quiet_NaN();
        std::memset(q, 0, 256);
        return;
    }
    s = amax / 127.0f;
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int i = 0; i < 256; ++i) {
        const float v = std::nearbyint(x[i] * id);
        q[i] = static_cast<int8_t>(std::min(127.0f, std::max(-127.0f, v)));
    }
}

// c[t][r] after the K tiles, as the contract defines it (kKTiles super-blocks per row).
std::vector<float> reference(ggml_type type, int tn, const std::vector<std::vector<uint8_t>> & blocks,
                             const std::vector<float> & x) {
    std::vector<float> c(static_cast<size_t>(tn) * kTM, 0.0f);
    for (int kt = 0; kt < kKTiles; ++kt) {
        std::vector<int8_t> q(static_cast<size_t>(tn) * kTK);
        std::vector<float> s(tn);
        for (int t = 0; t < tn; ++t) ref_quantize(&x[(static_cast<size_t>(t) * kKTiles + kt) * kTK], &q[t * kTK], s[t]);
        for (int r = 0; r < kTM; ++r) {
            const RefBlock b = ref_decode(type, blocks[kt].data() + static_cast<size_t>(r) * block_bytes(type));
            for (int t = 0; t < tn; ++t) {
                int64_t sumi = 0, summ = 0;
                for (int j = 0; j < 16; ++j) {
                    int64_t dot = 0, bsum = 0;
                    for (int i = 16 * j; i < 16 * j + 16; ++i) {
                        dot += static_cast<int64_t>(b.v[i]) * q[t * kTK + i];
                        bsum += q[t * kTK + i];
                    }
                    sumi += b.sc[j] * dot;
                    summ += b.mn[j] * bsum;
                }
                float & out = c[static_cast<size_t>(t) * kTM + r];
                const float p = b.d * s[t];
                if (type == GGML_TYPE_Q3_K) {
                    out = out + p * static_cast<float>(sumi);
                } else {
                    const float qm = b.dmin * s[t];
                    out = out + (p * static_cast<float>(sumi) - qm * static_cast<float>(summ));
                }
            }
        }
    }
    return c;
}

// ---- inputs ----

// fp16 scales: LLM-like magnitudes of either sign, and (when `extremes`) now and then the largest
// finite, the smallest subnormal, the largest subnormal, the smallest normal and zeros.
uint16_t random_scale(std::mt19937_64 & g, bool extremes) {
    if (extremes && g() % 8 == 0) {
        static const uint16_t kExtreme[] = {0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x03FF, 0x0400, 0x0000, 0x8000, 0x3C00};
        return kExtreme[g() % (sizeof kExtreme / sizeof kExtreme[0])];
    }
    std::uniform_real_distribution<float> ud(1e-4f, 3e-2f);
    return ggml_fp32_to_fp16(ud(g) * ((g() & 1) ? 1.0f : -1.0f));
}

// 64 rows of random GGUF blocks: random codes and scale bytes, random fp16 d (and dmin).
std::vector<uint8_t> random_blocks(ggml_type type, std::mt19937_64 & g, bool extremes) {
    std::vector<uint8_t> v(static_cast<size_t>(kTM) * block_bytes(type));
    for (auto & b : v) b = static_cast<uint8_t>(g());
    for (int r = 0; r < kTM; ++r) {
        uint8_t * b = v.data() + static_cast<size_t>(r) * block_bytes(type);
        const uint16_t d = random_scale(g, extremes);
        if (type == GGML_TYPE_Q2_K) {
            const uint16_t dmin = random_scale(g, extremes);
            std::memcpy(b + 80, &d, 2);
            std::memcpy(b + 82, &dmin, 2);
        } else {
            std::memcpy(b + 108, &d, 2);
        }
    }
    return v;
}

void encode_tile(ggml_type type, const std::vector<uint8_t> & blocks, uint8_t * tile) {
    for (int r = 0; r < kTM; ++r) xdna::encode_block(type, blocks.data() + static_cast<size_t>(r) * block_bytes(type), r, 0, tile);
}

// Activations [tn][kKTiles * 256]: normal values with outliers; some tokens all zero.
std::vector<float> random_activations(int tn, std::mt19937_64 & g) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(tn) * kKTiles * kTK);
    for (auto & v : x) v = nd(g) * ((g() % 50 == 0) ? 20.0f : 1.0f);
    if (tn > 4) std::fill(x.begin() + 5 * kKTiles * kTK, x.begin() + 6 * kKTiles * kTK, 0.0f);
    return x;
}

// Everything one test call needs: the weight and activation tiles of kKTiles K tiles.
struct Problem {
    ggml_type type;
    int tn;
    std::vector<std::vector<uint8_t>> blocks;
    std::vector<float> x;
    std::vector<std::unique_ptr<AlignedBytes>> w, a;

    Problem(ggml_type ty, int n, std::mt19937_64 & g, bool extremes) : type(ty), tn(n) {
        const xdna_aie::WeightTileFormat * f = xdna::tile_format(type);
        const xdna_aie::ActTileFormat af{tn, kTK, kTK};
        x = random_activations(tn, g);
        for (int kt = 0; kt < kKTiles; ++kt) {
            blocks.push_back(random_blocks(type, g, extremes));
            w.push_back(std::make_unique<AlignedBytes>(f->tile_bytes()));
            encode_tile(type, blocks.back(), w.back()->p);
            a.push_back(std::make_unique<AlignedBytes>(af.tile_bytes()));
            xdna::quantize_activation_tile(x.data() + kt * kTK, kKTiles * kTK, tn, kTK, af, a.back()->p);
        }
    }

    std::vector<float> run(Kernel k) const {
        AlignedBytes c(static_cast<size_t>(tn) * kTM * 4);
        for (int kt = 0; kt < kKTiles; ++kt) k(w[kt]->p, a[kt]->p, reinterpret_cast<float *>(c.p));
        std::vector<float> out(static_cast<size_t>(tn) * kTM);
        std::memcpy(out.data(), c.p, out.size() * 4);
        return out;
    }
};

// Bit equality; with `nan_equal`, any two NaNs count as equal (NaN payloads of an add with two NaN
// operands depend on the host compiler's operand order).
::testing::AssertionResult same_bits(const std::vector<float> & want, const std::vector<float> & got, bool nan_equal,
                                     const char * what) {
    for (size_t i = 0; i < want.size(); ++i) {
        if (nan_equal && std::isnan(want[i]) && std::isnan(got[i])) continue;
        if (as_bits(want[i]) != as_bits(got[i])) {
            char msg[200];
            std::snprintf(msg, sizeof msg, "%s: token %zu row %zu: want %.9g (0x%08x), got %.9g (0x%08x)", what, i / kTM, i % kTM,
                          want[i], as_bits(want[i]), got[i], as_bits(got[i]));
            return ::testing::AssertionFailure() << msg;
        }
    }
    return ::testing::AssertionSuccess();
}

struct Case {
    ggml_type type;
    int tn;
};

std::string case_name(const ::testing::TestParamInfo<Case> & info) {
    return std::string(info.param.type == GGML_TYPE_Q2_K ? "Q2_K" : "Q3_K") + "_n" + std::to_string(info.param.tn);
}

void PrintTo(const Case & c, std::ostream * os) { *os << (c.type == GGML_TYPE_Q2_K ? "Q2_K" : "Q3_K") << " n" << c.tn; }

class KquantLow : public ::testing::TestWithParam<Case> {};

// Random blocks (random codes and scale bytes, fp16 d/dmin of LLM size, now and then extreme finite
// values), 2 K tiles: the kernel equals the contract bit for bit.
TEST_P(KquantLow, KernelMatchesReferenceBitExact) {
    const Case cs = GetParam();
    for (int rep = 0; rep < 3; ++rep) {
        SCOPED_TRACE(testing::Message() << "seed " << seed() << " rep " << rep);
        std::mt19937_64 g(seed() ^ (cs.type * 1000003ull) ^ (cs.tn * 7919ull) ^ (rep * 0x9E3779B97F4A7C15ull));
        const Problem pr(cs.type, cs.tn, g, rep > 0);
        const std::vector<float> want = reference(cs.type, cs.tn, pr.blocks, pr.x);
        const std::vector<float> got = pr.run(kernel_for(cs.type, cs.tn));
        ASSERT_TRUE(same_bits(want, got, false, "kernel vs reference"));
        int nonzero = 0;
        for (float v : got) nonzero += v != 0.0f;
        EXPECT_GT(nonzero, cs.tn * kTM / 2);  // values were compared, not zeros
    }
}

// Infinite and NaN scales, NaN activations: the kernel follows IEEE single like the reference
// (NaN for inf * 0, inf - inf and NaN inputs, signed infinities otherwise).
TEST_P(KquantLow, NonFiniteScalesPropagateAsInIeee) {
    const Case cs = GetParam();
    SCOPED_TRACE(testing::Message() << "seed " << seed());
    std::mt19937_64 g(seed() ^ 0x51ED ^ cs.type ^ (cs.tn << 8));
    Problem pr(cs.type, cs.tn, g, true);
    // A few rows with infinite or NaN d / dmin in the first K tile.
    const int off_d = cs.type == GGML_TYPE_Q2_K ? 80 : 108;
    const uint16_t specials[] = {0x7C00, 0xFC00, 0x7E00, 0x7C01};
    for (int r = 0; r < kTM; r += 7) {
        uint8_t * b = pr.blocks[0].data() + static_cast<size_t>(r) * block_bytes(cs.type);
        std::memcpy(b + off_d + ((r / 7) % 2 && cs.type == GGML_TYPE_Q2_K ? 2 : 0), &specials[(r / 7) % 4], 2);
    }
    encode_tile(cs.type, pr.blocks[0], pr.w[0]->p);
    // Token 1's second block gets a NaN activation.
    pr.x[(1 * kKTiles + 1) * kTK + 17] = std::numeric_limits<float>::quiet_NaN();
    const xdna_aie::ActTileFormat af{cs.tn, kTK, kTK};
    xdna::quantize_activation_tile(pr.x.data() + kTK, kKTiles * kTK, cs.tn, kTK, af, pr.a[1]->p);
    const std::vector<float> want = reference(cs.type, cs.tn, pr.blocks, pr.x);
    const std::vector<float> got = pr.run(kernel_for(cs.type, cs.tn));
    int nonfinite = 0;
    for (float v : want) nonfinite += !std::isfinite(v);
    EXPECT_GT(nonfinite, 0);
    EXPECT_TRUE(same_bits(want, got, true, "kernel vs reference"));
}

// The twin gives the kernel's bits: realistic tiles (memcmp), and hostile ones (random bytes in every
// plane, activation scales of any magnitude including subnormal, zero, negative and non-finite; any
// two NaNs equal), many seeds, both token tiles; and its portable path gives the vectorised path's bits.
TEST_P(KquantLow, TwinIsBitIdenticalToKernel) {
    const Case cs = GetParam();
    const Kernel kern = kernel_for(cs.type, cs.tn), twin = twin_for(cs.type, cs.tn);
    const xdna_aie::WeightTileFormat * f = xdna::tile_format(cs.type);
    const xdna_aie::ActTileFormat af{cs.tn, kTK, kTK};
    for (int rep = 0; rep < 24; ++rep) {
        SCOPED_TRACE(testing::Message() << "seed " << seed() << " rep " << rep);
        std::mt19937_64 g(seed() ^ (0xC0FFEEull * (rep + 1)) ^ cs.type ^ (cs.tn << 12));
        Problem pr(cs.type, cs.tn, g, rep % 2 == 1);
        const bool hostile = rep % 3 == 2;
        if (hostile) {
            for (int kt = 0; kt < kKTiles; ++kt) {
                for (int i = 0; i < f->tile_bytes(); ++i) pr.w[kt]->p[i] = static_cast<uint8_t>(g());
                for (int i = 0; i < af.tile_bytes(); ++i) pr.a[kt]->p[i] = static_cast<uint8_t>(g());
                auto * sc = reinterpret_cast<float *>(pr.a[kt]->p + af.scales_offset());
                for (int t = 0; t < cs.tn; ++t) {
                    const int kind = static_cast<int>(g() % 8);
                    const uint32_t mant = static_cast<uint32_t>(g()) & 0x7FFFFF;
                    uint32_t exp = 100 + static_cast<uint32_t>(g() % 40);
                    if (kind == 0) exp = 0;                              // subnormal or zero
                    if (kind == 1) exp = 255;                            // inf or NaN
                    if (kind == 2) exp = 1 + static_cast<uint32_t>(g() % 40);  // tiny: products underflow
                    if (kind == 3) exp = 200 + static_cast<uint32_t>(g() % 54);  // huge: products overflow
                    sc[t] = as_float(((static_cast<uint32_t>(g()) & 1) << 31) | (exp << 23) | mant);
                }
            }
        }
        const std::vector<float> k = pr.run(kern);
        const std::vector<float> t = pr.run(twin);
        ASSERT_TRUE(same_bits(k, t, hostile, "kernel vs twin"));
        if (xdna::kquant_low_twin_vectorised()) {
            xdna::kquant_low_twin_force_scalar(true);
            const std::vector<float> s = pr.run(twin);
            xdna::kquant_low_twin_force_scalar(false);
            ASSERT_TRUE(same_bits(t, s, hostile, "twin vectorised vs portable"));
        }
    }
}

// The partial form computes the valid tokens only and leaves the other C rows as they are.
TEST_P(KquantLow, TwinPartialTouchesOnlyValidTokens) {
    const Case cs = GetParam();
    SCOPED_TRACE(testing::Message() << "seed " << seed());
    std::mt19937_64 g(seed() ^ 0xBA5E ^ cs.type ^ cs.tn);
    const Problem pr(cs.type, cs.tn, g, false);
    const int valid = cs.tn == 4 ? 3 : 9;  // rounded up to 4 and 12
    const int computed = (valid + 3) / 4 * 4;
    AlignedBytes c(static_cast<size_t>(cs.tn) * kTM * 4), c2(static_cast<size_t>(cs.tn) * kTM * 4);
    auto * part = reinterpret_cast<float *>(c.p);
    auto * full = reinterpret_cast<float *>(c2.p);
    for (int i = 0; i < cs.tn * kTM; ++i) part[i] = full[i] = -7.0f;
    for (int kt = 0; kt < kKTiles; ++kt) {
        xdna::kquant_low_twin_tile(cs.type == GGML_TYPE_Q2_K ? 0 : 1, cs.tn, pr.w[kt]->p, pr.a[kt]->p, part, valid);
        twin_for(cs.type, cs.tn)(pr.w[kt]->p, pr.a[kt]->p, full);
    }
    for (int i = 0; i < cs.tn * kTM; ++i) {
        const float want = i < computed * kTM ? full[i] : -7.0f;
        ASSERT_EQ(as_bits(want), as_bits(part[i])) << "token " << i / kTM << " row " << i % kTM;
    }
}

// Per-call core instruction counts (host aie_api counters) and the twin's speed, printed.
TEST_P(KquantLow, OpCountsAndTwinSpeed) {
    const Case cs = GetParam();
    std::mt19937_64 g(seed());
    const Problem pr(cs.type, cs.tn, g, false);
    AlignedBytes c(static_cast<size_t>(cs.tn) * kTM * 4);
    auto * cf = reinterpret_cast<float *>(c.p);
    aie_host::reset_op_counts();
    kernel_for(cs.type, cs.tn)(pr.w[0]->p, pr.a[0]->p, cf);
    const aie_host::OpCounts n = aie_host::op_counts();
    std::printf("[ops] %s n%d per call: vector %llu move %llu load %llu unpack %llu store %llu | mmul int8xint4 %llu"
                " (MACs %llu)\n",
                cs.type == GGML_TYPE_Q2_K ? "Q2_K" : "Q3_K", cs.tn, (unsigned long long)n.vector, (unsigned long long)n.move,
                (unsigned long long)n.load, (unsigned long long)n.unpack, (unsigned long long)n.store,
                (unsigned long long)n.mmul_calls(aie_host::mmul_shape::i8xi4_4x16x16), (unsigned long long)n.mmul_macs);
    EXPECT_EQ(n.mmul_calls(aie_host::mmul_shape::i8xi4_4x16x16),
              static_cast<uint64_t>(4 * 16 * (cs.tn / 4) + (cs.type == GGML_TYPE_Q2_K ? 2 * 4 * (cs.tn / 4) : 0)));
    using clk = std::chrono::steady_clock;
    const int iters_k = 20, iters_t = 2000;
    auto t0 = clk::now();
    for (int i = 0; i < iters_k; ++i) kernel_for(cs.type, cs.tn)(pr.w[0]->p, pr.a[0]->p, cf);
    const double us_k = std::chrono::duration<double, std::micro>(clk::now() - t0).count() / iters_k;
    t0 = clk::now();
    for (int i = 0; i < iters_t; ++i) twin_for(cs.type, cs.tn)(pr.w[0]->p, pr.a[0]->p, cf);
    const double us_t = std::chrono::duration<double, std::micro>(clk::now() - t0).count() / iters_t;
    std::printf("[speed] %s n%d: kernel on host aie_api %.1f us/call, twin %.2f us/call (%s), %.0fx\n",
                cs.type == GGML_TYPE_Q2_K ? "Q2_K" : "Q3_K", cs.tn, us_k, us_t,
                xdna::kquant_low_twin_vectorised() ? "AVX-512" : "portable", us_k / us_t);
}

INSTANTIATE_TEST_SUITE_P(All, KquantLow,
                         ::testing::Values(Case{GGML_TYPE_Q2_K, 4}, Case{GGML_TYPE_Q2_K, 32}, Case{GGML_TYPE_Q3_K, 4},
                                           Case{GGML_TYPE_Q3_K, 32}),
                         case_name);

// The table names every kernel of the core program once.
TEST(KquantLowTwin, TableNamesTheKernels) {
    const char * names[] = {"mm_q2_K_a8_n4", "mm_q2_K_a8_n32", "mm_q3_K_a8_n4", "mm_q3_K_a8_n32"};
    const Kernel twins[] = {xdna::twin_mm_q2_K_a8_n4, xdna::twin_mm_q2_K_a8_n32, xdna::twin_mm_q3_K_a8_n4,
                            xdna::twin_mm_q3_K_a8_n32};
    for (int i = 0; i < 4; ++i) {
        EXPECT_STREQ(xdna::kKquantLowTwins[i].kernel, names[i]);
        EXPECT_EQ(xdna::kKquantLowTwins[i].twin, twins[i]);
    }
}

}  // namespace
