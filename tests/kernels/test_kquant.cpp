// The K-quant core program (aie/matmul/kernels/mm_kquant.cc) against an independent reference.
//
// The reference starts from the GGUF bytes (bit extraction as ggml-common.h lays the blocks out and
// ggml's dequantize_row_q{4,5,6}_K orders the values), quantizes the activations itself (the
// contract's rule), forms the integer sums in int64 and applies the fp32 epilogue in the contract's
// order. Only the tile codec's encode_block / quantize_activation_tile (the inputs) are shared.
//
// fp32 products: the core has no fp32 multiplier. The kernel calls the 32-lane `fast` fp32 intrinsic
// (Peano's bf16-split emulation; aie::mul on floats is the `safe` one), which the host aie_api
// models; neither is the correctly rounded IEEE product. The reference therefore has its own
// implementations of the emulations (floor-rounded bf16 parts, the mode the kernel runs in; exact
// partial products summed smallest first): `core` (the kernel's: nine products in a chain of
// single-rounding MACs) must match the kernel bit for bit; `safe` (each product rounded, then added)
// must give the same bits wherever no operand or product is tiny; `ieee` is the contract's text,
// compared within a derived error budget; and all, with the six-product `fast16`, against an fp64
// evaluation (NMSE printed).
#include "contracts/tile-codec.h"
#include "xdna_aie/matmul_tiles.h"

#include <aie_api/aie.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

extern "C" {
void mm_q4_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void mm_q4_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void mm_q5_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void mm_q5_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void mm_q6_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void mm_q6_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void mm_zero_c_n4(float * c);
void mm_zero_c_n32(float * c);
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
    switch (type) {
        case GGML_TYPE_Q4_K: return tn == 4 ? mm_q4_K_a8_n4 : mm_q4_K_a8_n32;
        case GGML_TYPE_Q5_K: return tn == 4 ? mm_q5_K_a8_n4 : mm_q5_K_a8_n32;
        case GGML_TYPE_Q6_K: return tn == 4 ? mm_q6_K_a8_n4 : mm_q6_K_a8_n32;
        default: return nullptr;
    }
}

struct AlignedBytes {
    explicit AlignedBytes(size_t n) : p(static_cast<uint8_t *>(std::aligned_alloc(64, (n + 63) / 64 * 64))), size(n) {
        std::memset(p.get(), 0, size);
    }
    struct Free {
        void operator()(uint8_t * q) const { std::free(q); }
    };
    std::unique_ptr<uint8_t, Free> p;
    size_t size;
    uint8_t * data() { return p.get(); }
};

// ---- reference: GGUF decoding (ggml-common.h block layouts) ----------------------------------------

float half_to_float(const uint8_t * p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const int e = (h >> 10) & 31;
    const uint32_t m = h & 0x3ff;
    float v;
    if (e == 0) v = std::ldexp(float(m), -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = std::ldexp(float(m | 0x400), e - 25);
    uint32_t u;
    std::memcpy(&u, &v, 4);
    u |= sign;
    std::memcpy(&v, &u, 4);
    return v;
}

// One superblock: 256 integer weights as the contract multiplies them (Q4_K/Q5_K unsigned codes,
// Q6_K code - 32) with the sub-block of each, sub-block scales and mins, d and dmin.
struct RefBlock {
    int q[kTK];
    int sub_size;  // 32 (Q4_K, Q5_K) or 16 (Q6_K)
    int sc[16], m[16];
    float d, dmin;
};

void scale_min_k4(int j, const uint8_t * q, int & sc, int & m) {  // ggml's get_scale_min_k4
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
    }
}

RefBlock decode_gguf(ggml_type type, const uint8_t * b) {
    RefBlock r{};
    if (type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K) {
        // {d, dmin, scales[12], (Q5_K: qh[32]), qs[128]}; 64 values per 32 qs bytes: low nibbles first.
        r.sub_size = 32;
        r.d = half_to_float(b);
        r.dmin = half_to_float(b + 2);
        const uint8_t * scales = b + 4;
        const uint8_t * qh = b + 16;
        const uint8_t * qs = b + (type == GGML_TYPE_Q5_K ? 48 : 16);
        for (int i = 0; i < kTK; ++i) {
            const int chunk = i / 64, l = i % 32, upper = (i % 64) / 32;
            const uint8_t byte = qs[32 * chunk + l];
            int code = upper ? byte >> 4 : byte & 0xF;
            if (type == GGML_TYPE_Q5_K && (qh[l] >> (2 * chunk + upper)) & 1) code += 16;
            r.q[i] = code;
        }
        for (int j = 0; j < 8; ++j) scale_min_k4(j, scales, r.sc[j], r.m[j]);
    } else {
        // {ql[128], qh[64], scales[16] int8, d}: per 128 values, ql low/high nibbles of 64 bytes and
        // 2-bit fields of 32 qh bytes.
        r.sub_size = 16;
        const uint8_t * ql = b;
        const uint8_t * qh = b + 128;
        const int8_t * scales = reinterpret_cast<const int8_t *>(b + 192);
        r.d = half_to_float(b + 208);
        r.dmin = 0.0f;
        for (int i = 0; i < kTK; ++i) {
            const int half = i / 128, quarter = (i % 128) / 32, l = i % 32;
            const uint8_t lbyte = ql[64 * half + l + (quarter & 1) * 32];
            const int low = quarter < 2 ? lbyte & 0xF : lbyte >> 4;
            const int high = (qh[32 * half + l] >> (2 * quarter)) & 3;
            r.q[i] = (low | high << 4) - 32;
        }
        for (int j = 0; j < 16; ++j) r.sc[j] = scales[j];
    }
    return r;
}

// ---- reference: activations (the contract's quantizer) ---------------------------------------------

struct RefAct {
    std::vector<int> code;  // [t][k]
    std::vector<float> s;   // [t]
};

RefAct quantize_ref(const float * x, int x_stride, int tn, int valid_tokens) {
    RefAct r{std::vector<int>(size_t(tn) * kTK, 0), std::vector<float>(tn, 0.0f)};
    for (int t = 0; t < valid_tokens; ++t) {
        float amax = 0.0f;
        for (int k = 0; k < kTK; ++k) amax = std::max(amax, std::fabs(x[t * x_stride + k]));
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        r.s[t] = amax / 127.0f;
        for (int k = 0; k < kTK; ++k) {
            const float v = std::nearbyint(x[t * x_stride + k] * id);
            r.code[size_t(t) * kTK + k] = int(std::min(127.0f, std::max(-127.0f, v)));
        }
    }
    return r;
}

// ---- reference: fp32 products -----------------------------------------------------------------------

float bits_to_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
uint32_t float_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// bf16 part of x rounded toward -infinity (NaN stays NaN, infinities stay).
float bf16_floor(float x) {
    const uint32_t u = float_to_bits(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x7fffffu) ? NAN : x;
    uint32_t hi = u & 0xffff0000u;
    if ((u & 0xffffu) != 0 && (u >> 31)) hi += 0x10000u;  // negative: truncation went up, step down
    return bits_to_float(hi);
}

struct Parts3 {
    float a, b, c;  // x = a + b + c: a = bf16(x), b = bf16(x - a), c = bf16(x - a - b), toward -inf
};
Parts3 split3(float x) {
    Parts3 p;
    p.a = bf16_floor(x);
    p.b = bf16_floor(x - p.a);
    p.c = bf16_floor(x - p.a - p.b);
    return p;
}

// The kernel's fp32 multiply (llvm-aie aie2p_vmult.h mul_elem_32_accuracy_fast): x = a + b + c,
// y = d + e + f; c*f, then c*e, b*f, a*f, b*e, c*d, b*d, a*e, a*d each added with one rounding.
float core_fmul(float x, float y) {
    const Parts3 u = split3(x), v = split3(y);
    float t = u.c * v.c;
    t = std::fma(u.c, v.b, t);
    t = std::fma(u.b, v.c, t);
    t = std::fma(u.a, v.c, t);
    t = std::fma(u.b, v.b, t);
    t = std::fma(u.c, v.a, t);
    t = std::fma(u.b, v.a, t);
    t = std::fma(u.a, v.b, t);
    t = std::fma(u.a, v.a, t);
    return t;
}

// aie::mul's `safe`: the same products, each rounded to fp32 and then added.
float safe_fmul(float x, float y) {
    const Parts3 u = split3(x), v = split3(y);
    const float p[9] = {u.c * v.c, u.c * v.b, u.b * v.c, u.a * v.c, u.b * v.b, u.c * v.a, u.b * v.a, u.a * v.b, u.a * v.a};
    float t = p[0];
    for (int i = 1; i < 9; ++i) t = t + p[i];
    return t;
}

// The 16-lane `fast` (mul_elem_16_accuracy_fast): six products, a*f, b*e, c*d, b*d, a*e, a*d.
float fast16_fmul(float x, float y) {
    const Parts3 u = split3(x), v = split3(y);
    float t = u.a * v.c;
    t = std::fma(u.b, v.b, t);
    t = std::fma(u.c, v.a, t);
    t = std::fma(u.b, v.a, t);
    t = std::fma(u.a, v.b, t);
    t = std::fma(u.a, v.a, t);
    return t;
}

float ieee_fmul(float x, float y) { return x * y; }

// c[t][r] over all K tiles: the contract's epilogue with the given fp32 multiply. `mag` collects, per
// output, the error budget of the IEEE comparison in units of 2^-24 (see kEmulatedChainUlps below),
// `tiny` marks outputs with an operand or product below 2^-100, where the emulated multiply's third
// bf16 part (2^-16 down) is subnormal and the product loses relative accuracy.
//
// The budget, derived rather than fitted: the kernel's emulated multiply keeps all nine exact partial
// products of x = a + b + c, y = d + e + f (floor parts: |b| < 2^-6 |x|, |c| < 2^-13 |x|, likewise for
// y), so the sum before the last product a*d is below 0.04 |xy|; its 8 earlier roundings cost under
// 8 * 0.04 units and the last one 1 unit: 1.3 units per multiply. A product of the epilogue is two
// chained multiplies (d * s, then * sumi): 2.6 units on the kernel's side, 2 on the IEEE side, so 5
// units of |x| + |y| (the six-product multiply needed 20). Each fp32 subtraction and accumulation
// rounds once on each side: 2 units of |term| + |c| per step.
constexpr double kProductUlps = 5.0;   // two chained emulated multiplies vs two IEEE ones
constexpr double kRoundingUlps = 2.0;  // one rounding of a sum on each side

template <typename Mul>
void reference(ggml_type type, const std::vector<std::vector<RefBlock>> & w /*[kt][row]*/,
               const std::vector<RefAct> & act /*[kt]*/, int tn, Mul fmul, std::vector<float> & c, std::vector<double> * mag,
               std::vector<char> * tiny) {
    c.assign(size_t(tn) * kTM, 0.0f);
    if (mag) mag->assign(c.size(), 0.0);
    if (tiny) tiny->assign(c.size(), 0);
    const auto sub = [](float v) { return v != 0.0f && std::fabs(v) < 0x1p-100f; };
    for (int kt = 0; kt < kKTiles; ++kt)
        for (int t = 0; t < tn; ++t)
            for (int r = 0; r < kTM; ++r) {
                const RefBlock & b = w[kt][r];
                const int * a = &act[kt].code[size_t(t) * kTK];
                int64_t sumi = 0, summ = 0;
                for (int j = 0; j < kTK / b.sub_size; ++j) {
                    int64_t dot = 0, asum = 0;
                    for (int i = j * b.sub_size; i < (j + 1) * b.sub_size; ++i) {
                        dot += int64_t(b.q[i]) * a[i];
                        asum += a[i];
                    }
                    sumi += int64_t(b.sc[j]) * dot;
                    summ += int64_t(b.m[j]) * asum;
                }
                EXPECT_LT(std::llabs(sumi), int64_t(1) << 31);
                const float s = act[kt].s[t];
                const float p = fmul(b.d, s);
                float term;
                if (type == GGML_TYPE_Q6_K) {
                    term = fmul(p, float(sumi));
                    if (tiny && (sub(s) || sub(p) || sub(term))) (*tiny)[size_t(t) * kTM + r] = 1;
                } else {
                    const float q = fmul(b.dmin, s);
                    const float x = fmul(p, float(sumi));
                    const float y = fmul(q, float(summ));
                    term = x - y;
                    if (tiny && (sub(s) || sub(p) || sub(q) || sub(x) || sub(y))) (*tiny)[size_t(t) * kTM + r] = 1;
                    if (mag) (*mag)[size_t(t) * kTM + r] += kProductUlps * (std::fabs(double(x)) + std::fabs(double(y)));
                }
                float & cc = c[size_t(t) * kTM + r];
                if (mag && type == GGML_TYPE_Q6_K) (*mag)[size_t(t) * kTM + r] += kProductUlps * std::fabs(double(term));
                if (mag) (*mag)[size_t(t) * kTM + r] += kRoundingUlps * (std::fabs(double(term)) + std::fabs(double(cc)));
                cc = cc + term;
            }
}

// The contract's value in fp64: exact products, every sum in double.
void reference_fp64(ggml_type type, const std::vector<std::vector<RefBlock>> & w, const std::vector<RefAct> & act, int tn,
                    std::vector<double> & c) {
    c.assign(size_t(tn) * kTM, 0.0);
    for (int kt = 0; kt < kKTiles; ++kt)
        for (int t = 0; t < tn; ++t)
            for (int r = 0; r < kTM; ++r) {
                const RefBlock & b = w[kt][r];
                const int * a = &act[kt].code[size_t(t) * kTK];
                int64_t sumi = 0, summ = 0;
                for (int j = 0; j < kTK / b.sub_size; ++j) {
                    int64_t dot = 0, asum = 0;
                    for (int i = j * b.sub_size; i < (j + 1) * b.sub_size; ++i) {
                        dot += int64_t(b.q[i]) * a[i];
                        asum += a[i];
                    }
                    sumi += int64_t(b.sc[j]) * dot;
                    summ += int64_t(b.m[j]) * asum;
                }
                const double s = act[kt].s[t];
                double term = double(b.d) * s * double(sumi);
                if (type != GGML_TYPE_Q6_K) term -= double(b.dmin) * s * double(summ);
                c[size_t(t) * kTM + r] += term;
            }
}

// Normalised mean squared error of `got` against `want` over the outputs `use` marks.
double nmse(const std::vector<float> & got, const std::vector<double> & want, const std::vector<char> & use) {
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
        if (!use[i]) continue;
        const double d = double(got[i]) - want[i];
        err += d * d;
        ref += want[i] * want[i];
    }
    return ref > 0.0 ? err / ref : 0.0;
}

// ---- test data --------------------------------------------------------------------------------------

// Extreme fp16 scales: largest, subnormals, smallest normal, zeros, infinities, NaN.
constexpr uint16_t kExtremeHalves[] = {0x7bff, 0xfbff, 0x0001, 0x03ff, 0x0400, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00};

// One GGUF block: random code and scale bytes; d (and dmin) of realistic magnitude, or the next
// extreme of the list (cycling, so that every run meets infinities and NaN).
std::vector<uint8_t> random_block(ggml_type type, std::mt19937_64 & g, bool extreme, unsigned & next_extreme) {
    const size_t n = ggml_type_size(type);
    std::vector<uint8_t> b(n);
    for (auto & x : b) x = uint8_t(g());
    std::uniform_real_distribution<float> lg(-6.0f, -1.0f);  // 1e-6 .. 1e-1
    std::bernoulli_distribution neg(0.1);
    auto scale = [&]() -> uint16_t {
        if (extreme) return kExtremeHalves[next_extreme++ % (sizeof kExtremeHalves / sizeof kExtremeHalves[0])];
        const float v = std::pow(10.0f, lg(g));
        const ggml_fp16_t h = ggml_fp32_to_fp16(neg(g) ? -v : v);
        uint16_t bits;
        std::memcpy(&bits, &h, 2);
        return bits;
    };
    auto put = [&](size_t off, uint16_t h) { std::memcpy(&b[off], &h, 2); };
    if (type == GGML_TYPE_Q6_K) {
        put(208, scale());
    } else {
        put(0, scale());
        put(2, scale());
    }
    return b;
}

struct Case {
    ggml_type type;
    int tn;
    int valid_tokens;
};

std::string case_name(const testing::TestParamInfo<Case> & i) {
    return std::string(ggml_type_name(i.param.type)) + "_n" + std::to_string(i.param.tn) +
           (i.param.valid_tokens < i.param.tn ? "_partial" + std::to_string(i.param.valid_tokens) : "_full");
}

class KQuantKernel : public testing::TestWithParam<Case> {};

TEST_P(KQuantKernel, MatchesIndependentReference) {
    const Case cs = GetParam();
    SCOPED_TRACE("GGML_XDNA_TEST_SEED=" + std::to_string(seed()));
    std::mt19937_64 g(seed() ^ (uint64_t(cs.type) << 40) ^ (uint64_t(cs.tn) << 20) ^ uint64_t(cs.valid_tokens));
    const xdna_aie::WeightTileFormat * f = xdna::tile_format(cs.type);
    ASSERT_NE(f, nullptr);
    const xdna_aie::ActTileFormat af{cs.tn, kTK, kTK};
    const Kernel kernel = kernel_for(cs.type, cs.tn);

    // Weights: per K tile, 64 random blocks; a few rows carry extreme d / dmin.
    std::vector<AlignedBytes> wt;
    std::vector<std::vector<RefBlock>> wref(kKTiles);
    unsigned next_extreme = unsigned(g() % 10);
    for (int kt = 0; kt < kKTiles; ++kt) {
        wt.emplace_back(size_t(f->tile_bytes()));
        for (int r = 0; r < kTM; ++r) {
            const bool extreme = (r % 16) == 7 + kt;  // two rows per row group over the two K tiles
            const std::vector<uint8_t> blk = random_block(cs.type, g, extreme, next_extreme);
            xdna::encode_block(cs.type, blk.data(), r, 0, wt.back().data());
            wref[kt].push_back(decode_gguf(cs.type, blk.data()));
        }
    }

    // Activations: LLM-like values with outliers; token 1 is all zero in K tile 1, and the last
    // valid token is tiny (subnormal products) in K tile 0.
    const int K = kKTiles * kTK;
    std::vector<float> x(size_t(cs.tn) * K, 0.0f);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_real_distribution<float> u01(0.0f, 1.0f);
    for (int t = 0; t < cs.valid_tokens; ++t)
        for (int k = 0; k < K; ++k) {
            float v = nd(g) * (0.25f + 2.0f * u01(g));
            if (u01(g) < 0.003f) v *= 30.0f;
            if (t == 1 && k >= kTK) v = 0.0f;
            if (t == cs.valid_tokens - 1 && k < kTK) v *= 1e-33f;
            x[size_t(t) * K + k] = v;
        }
    std::vector<AlignedBytes> at;
    std::vector<RefAct> aref;
    for (int kt = 0; kt < kKTiles; ++kt) {
        at.emplace_back(size_t(af.tile_bytes()));
        xdna::quantize_activation_tile(x.data() + kt * kTK, K, cs.valid_tokens, kTK, af, at.back().data());
        aref.push_back(quantize_ref(x.data() + kt * kTK, K, cs.tn, cs.valid_tokens));
    }

    // Kernel: C cleared by the program's zero kernel (over garbage), then both K tiles accumulated;
    // op counts of one call.
    AlignedBytes cbuf(size_t(cs.tn) * kTM * 4);
    std::memset(cbuf.data(), 0xA5, cbuf.size);
    float * c = reinterpret_cast<float *>(cbuf.data());
    (cs.tn == 4 ? mm_zero_c_n4 : mm_zero_c_n32)(c);
    aie_host::OpCounts ops;
    for (int kt = 0; kt < kKTiles; ++kt) {
        const aie_host::OpCounts before = aie_host::op_counts();
        kernel(wt[kt].data(), at[kt].data(), c);
        if (kt == 0) ops = aie_host::op_counts() - before;
    }
    std::printf("[ kquant ops ] mm_%s_a8_n%d per call: vector %llu (mmul int8xint4 %llu), move %llu, load %llu, unpack %llu, "
                "store %llu\n",
                ggml_type_name(cs.type), cs.tn, (unsigned long long) ops.vector,
                (unsigned long long) ops.mmul_calls(aie_host::mmul_shape::i8xi4_4x16x16), (unsigned long long) ops.move,
                (unsigned long long) ops.load, (unsigned long long) ops.unpack, (unsigned long long) ops.store);

    // Bit-exact against the reference with the core's fp32 multiply.
    std::vector<float> ref_core, ref_ieee;
    std::vector<double> mag;
    std::vector<char> tiny;
    reference(cs.type, wref, aref, cs.tn, core_fmul, ref_core, nullptr, nullptr);
    reference(cs.type, wref, aref, cs.tn, ieee_fmul, ref_ieee, &mag, &tiny);
    int mismatches = 0, nonfinite = 0;
    for (int t = 0; t < cs.tn; ++t)
        for (int r = 0; r < kTM; ++r) {
            const size_t i = size_t(t) * kTM + r;
            const bool same = std::isnan(c[i]) ? std::isnan(ref_core[i]) : float_to_bits(c[i]) == float_to_bits(ref_core[i]);
            if (!std::isfinite(ref_core[i])) ++nonfinite;
            if (!same && ++mismatches <= 10)
                ADD_FAILURE() << "token " << t << " row " << r << ": kernel " << c[i] << " reference " << ref_core[i];
        }
    EXPECT_EQ(mismatches, 0);
    EXPECT_GT(nonfinite, 0) << "extreme scales should reach some outputs";

    // Within the derived error budget of the IEEE evaluation (the emulated products' rounding), where
    // no operand or product is tiny.
    double worst = 0.0;
    int differ = 0, finite = 0, subnormal = 0;
    for (size_t i = 0; i < ref_ieee.size(); ++i) {
        if (!std::isfinite(ref_ieee[i]) || !std::isfinite(c[i]) || !std::isfinite(mag[i])) continue;
        if (tiny[i]) {
            ++subnormal;
            continue;
        }
        ++finite;
        const double diff = std::fabs(double(c[i]) - double(ref_ieee[i]));
        if (diff != 0.0) ++differ;
        const double scale = std::max(mag[i], 1e-300);
        worst = std::max(worst, diff / scale);
        EXPECT_LE(diff, std::ldexp(mag[i], -24)) << "output " << i;
    }
    std::printf("[ kquant ieee ] mm_%s_a8_n%d: %d of %d finite outputs differ from IEEE products, worst |diff| / budget = "
                "%.3g (limit 2^-24 = %.3g); %d outputs with tiny operands not compared\n",
                ggml_type_name(cs.type), cs.tn, differ, finite, worst, std::ldexp(1.0, -24), subnormal);

    // The kernel's fused products give aie::mul's safe bits wherever no operand or product is tiny;
    // and against fp64, NMSE of the kernel and of the alternatives (finite, non-tiny outputs).
    std::vector<float> ref_safe, ref_fast16;
    std::vector<double> exact;
    reference(cs.type, wref, aref, cs.tn, safe_fmul, ref_safe, nullptr, nullptr);
    reference(cs.type, wref, aref, cs.tn, fast16_fmul, ref_fast16, nullptr, nullptr);
    reference_fp64(cs.type, wref, aref, cs.tn, exact);
    std::vector<char> use(exact.size(), 0);
    int safe_differs = 0;
    for (size_t i = 0; i < exact.size(); ++i) {
        use[i] = std::isfinite(exact[i]) && std::isfinite(c[i]) && !tiny[i];
        if (use[i] && float_to_bits(ref_safe[i]) != float_to_bits(c[i])) ++safe_differs;
    }
    EXPECT_EQ(safe_differs, 0) << "the kernel's 32-lane fast products should equal aie::mul's safe ones";
    std::printf("[ kquant nmse ] mm_%s_a8_n%d vs fp64: kernel (fast32) %.3g, safe %.3g, fast16 (six products) %.3g, "
                "IEEE products %.3g\n",
                ggml_type_name(cs.type), cs.tn, nmse(std::vector<float>(c, c + exact.size()), exact, use),
                nmse(ref_safe, exact, use), nmse(ref_fast16, exact, use), nmse(ref_ieee, exact, use));
}

INSTANTIATE_TEST_SUITE_P(Tiles, KQuantKernel,
                         testing::Values(Case{GGML_TYPE_Q4_K, 4, 4}, Case{GGML_TYPE_Q4_K, 32, 32}, Case{GGML_TYPE_Q4_K, 4, 3},
                                         Case{GGML_TYPE_Q4_K, 32, 19}, Case{GGML_TYPE_Q5_K, 4, 4}, Case{GGML_TYPE_Q5_K, 32, 32},
                                         Case{GGML_TYPE_Q5_K, 4, 2}, Case{GGML_TYPE_Q5_K, 32, 21}, Case{GGML_TYPE_Q6_K, 4, 4},
                                         Case{GGML_TYPE_Q6_K, 32, 32}, Case{GGML_TYPE_Q6_K, 4, 3}, Case{GGML_TYPE_Q6_K, 32, 17}),
                         case_name);

// The activation tile the kernel reads is the contract's quantization (the reference above quantizes
// on its own; this pins the two to each other so a failure above points at the kernel).
TEST(KQuantActivationTile, MatchesReferenceQuantizer) {
    std::mt19937_64 g(seed());
    SCOPED_TRACE("GGML_XDNA_TEST_SEED=" + std::to_string(seed()));
    const xdna_aie::ActTileFormat af{32, kTK, kTK};
    std::vector<float> x(32 * kTK);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto & v : x) v = nd(g);
    AlignedBytes tile(size_t(af.tile_bytes()));
    xdna::quantize_activation_tile(x.data(), kTK, 29, kTK, af, tile.data());
    const RefAct r = quantize_ref(x.data(), kTK, 32, 29);
    const auto * codes = reinterpret_cast<const int8_t *>(tile.data() + af.codes_offset());
    const auto * scales = reinterpret_cast<const float *>(tile.data() + af.scales_offset());
    const auto * sums = reinterpret_cast<const int16_t *>(tile.data() + af.sums_offset());
    for (int t = 0; t < 32; ++t) {
        EXPECT_EQ(float_to_bits(scales[af.scale_index(t, 0)]), float_to_bits(r.s[t])) << "token " << t;
        for (int k16 = 0; k16 < kTK / 16; ++k16) {
            int sum = 0;
            for (int k = 16 * k16; k < 16 * k16 + 16; ++k) {
                EXPECT_EQ(codes[af.code_index(t, k)], r.code[size_t(t) * kTK + k]) << "token " << t << " k " << k;
                sum += r.code[size_t(t) * kTK + k];
            }
            EXPECT_EQ(sums[af.sum_index(t, k16)], sum) << "token " << t << " k16 " << k16;
        }
    }
}

}  // namespace
