// The tests' contract reference (tests/common/contract-reference.h) checked on its own: its scalar
// conversions and GGUF decoding against IEEE and ggml's dequantization (ggml is the witness here, never
// a part of the reference), hand-computed one-block matmuls, and proof that it tells the contract's
// exact integer arithmetic from the plausible shortcut "dequantize to fp32, then a float dot".
#include "contract-reference.h"
#include "contracts/matmul-contract.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace {

using namespace xdna_test;

// ---- Test-side block builders (the GGUF layouts of ggml-common.h, written from the other direction) ----

void put_half(uint8_t * p, float f) {
    const ggml_fp16_t h = ggml_fp32_to_fp16(f);
    std::memcpy(p, &h, 2);
}

uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Distance in units in the last place of `want`.
double ulps(float want, float got) {
    const float ulp = std::nextafter(std::fabs(want), std::numeric_limits<float>::infinity()) - std::fabs(want);
    return std::fabs(double(want) - double(got)) / ulp;
}

// Q4_K / Q5_K: 8 six-bit scales and mins into 12 bytes (the inverse of ggml's get_scale_min_k4).
void pack_k4_scales(uint8_t * s, const int * sc, const int * mn) {
    for (int j = 0; j < 4; ++j) {
        s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
        s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
}

std::vector<uint8_t> q4_0_block(float d, const int * code) {
    std::vector<uint8_t> b(18);
    put_half(b.data(), d);
    for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(code[j] | (code[j + 16] << 4));
    return b;
}

std::vector<uint8_t> q8_0_block(float d, const int * code) {
    std::vector<uint8_t> b(34);
    put_half(b.data(), d);
    for (int i = 0; i < 32; ++i) b[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(code[i]));
    return b;
}

std::vector<uint8_t> q4_K_block(float d, float dmin, const int * sc, const int * mn, const int * code) {
    std::vector<uint8_t> b(144, 0);
    put_half(b.data(), d);
    put_half(b.data() + 2, dmin);
    pack_k4_scales(b.data() + 4, sc, mn);
    for (int v = 0; v < 256; ++v) b[16 + 32 * (v / 64) + v % 32] |= static_cast<uint8_t>(code[v] << (4 * ((v % 64) / 32)));
    return b;
}

std::vector<uint8_t> q6_K_block(float d, const int * sc, const int * code) {
    std::vector<uint8_t> b(210, 0);
    for (int v = 0; v < 256; ++v) {
        const int n = v / 128, i = (v % 128) / 32, l = v % 32;
        b[64 * n + l + 32 * (i & 1)] |= static_cast<uint8_t>((code[v] & 15) << (4 * (i >> 1)));
        b[128 + 32 * n + l] |= static_cast<uint8_t>((code[v] >> 4) << (2 * i));
    }
    for (int j = 0; j < 16; ++j) b[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(sc[j]));
    put_half(b.data() + 208, d);
    return b;
}

// One output of a one-row matmul through the reference, with correctly rounded fp32 products (the
// hand-computed cases below are worked out in IEEE arithmetic; the emulated product has its own test).
float reference_dot(ggml_type t, const std::vector<uint8_t> & w, const std::vector<float> & x) {
    const MatmulCase c{t, static_cast<int64_t>(x.size()), 1, 1};
    return contract_reference_exact(c, w, x, Fp32Multiply::ieee)[0];
}

// ---- The plausible wrong implementation ----
// Weights dequantized to fp32 as ggml does (d * sc * q - dmin * m, ggml's own to_float), activations
// dequantized to fp32 (s * code, with the contract's own activation codes), then an fp32 dot in K order.
// Everything it rounds is a faithful fp32 rounding; it only forms the sums in float instead of integers.
std::vector<float> dequantize_then_float_dot(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x) {
    const int ablk = reference_act_block(c.wtype);
    const size_t row = ggml_row_size(c.wtype, c.k);
    std::vector<float> wf(static_cast<size_t>(c.k)), out(static_cast<size_t>(c.m * c.n));
    for (int64_t t = 0; t < c.n; ++t) {
        const QuantizedActivations a = quantize_activations(x.data() + t * c.k, c.k, ablk);
        for (int64_t r = 0; r < c.m; ++r) {
            ggml_get_type_traits(c.wtype)->to_float(w.data() + r * row, wf.data(), c.k);
            float acc = 0.0f;
            for (int64_t i = 0; i < c.k; ++i) {
                const float af = a.scales[i / ablk] * a.codes[i];
                acc = acc + wf[i] * af;
            }
            out[t * c.m + r] = acc;
        }
    }
    return out;
}

// A second exact implementation, structured as a kernel might be: the integer sums formed per 16-value
// group from the last group to the first, activation sums of 16 codes held in int16 as in the tile,
// then the contract's epilogue. Integer sums do not depend on their order, so it must equal the
// reference bit for bit.
float exact_by_groups_reversed(ggml_type t, const uint8_t * block, const int8_t * a, float s) {
    const DecodedBlock w = decode_block_reference(t, block);
    int32_t sumi = 0, summ = 0;
    for (int g = w.values / 16 - 1; g >= 0; --g) {
        int32_t dot = 0;
        int16_t asum = 0;
        for (int i = 16 * g + 15; i >= 16 * g; --i) {
            dot += w.q[i] * a[i];
            asum = static_cast<int16_t>(asum + a[i]);
        }
        const int j = 16 * g / w.sub;
        sumi += w.scale[j] * dot;
        summ += w.min[j] * asum;
    }
    const float p = w.d * s;
    const float q = w.m * s;
    const float ip = p * static_cast<float>(sumi);
    const float im = q * static_cast<float>(summ);
    switch (w.epilogue) {
        case DecodedBlock::Epilogue::scale: return ip;
        case DecodedBlock::Epilogue::plus_min: return ip + im;
        case DecodedBlock::Epilogue::minus_min: return ip - im;
    }
    return NAN;
}

// ---- The reference itself ----

TEST(ContractReference, CoversEveryContractWithItsActivationBlock) {
    for (const auto & c : xdna::all_matmul_contracts()) {
        if (c.use != xdna::ContractUse::any) continue;  // a prefill alternative: tested with its own reference
        EXPECT_EQ(reference_act_block(c.weight_type), xdna::act_format_block(c.act_format)) << c.name;
    }
}

TEST(ContractReference, HalfAndBfloat16AreIeeeRoundToNearestEven) {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float want = ggml_fp16_to_fp32(static_cast<ggml_fp16_t>(h));
        const float got = half_to_float(static_cast<uint16_t>(h));
        ASSERT_TRUE(float_bits(want) == float_bits(got) || (std::isnan(want) && std::isnan(got))) << std::hex << h;
        if (!std::isnan(got)) ASSERT_EQ(float_to_half(got), h) << std::hex << h;  // every half round-trips
        ASSERT_EQ(float_bits(bf16_to_float(static_cast<uint16_t>(h))), h << 16);
    }
    // Halfway cases and range ends, then random values, against ggml's converters.
    std::vector<float> v = {65504.0f, 65519.0f, 65520.0f, 1e6f, 0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1.8p-24f, 0x1.4p-23f, 0x1p-26f,
                            1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 0x1.ffcp-15f, 0x1.ffep-15f, 0.0f, -0.0f, 1e-30f};
    for (int i = 0; i < 100000; ++i) v.push_back(uniform(-1.0f, 1.0f) * std::ldexp(1.0f, static_cast<int>(uniform(-30, 20))));
    for (float f : v) {
        for (float s : {f, -f}) {
            EXPECT_EQ(float_to_half(s), ggml_fp32_to_fp16(s)) << s;
            EXPECT_EQ(float_to_bf16(s), ggml_fp32_to_bf16(s).bits) << s;
        }
    }
    EXPECT_EQ(float_to_half(0x1p-25f), 0u);       // tie between 0 and the smallest subnormal: even
    EXPECT_EQ(float_to_half(0x1.8p-24f), 2u);     // 1.5 subnormal steps: to 2
    EXPECT_EQ(float_to_half(0x1.4p-23f), 2u);     // 2.5 steps: to 2, the even one
    EXPECT_EQ(float_to_half(65520.0f), 0x7C00u);  // tie between 65504 (odd) and 65536: infinity
}

TEST(ContractReference, ActivationQuantizationHandCases) {
    // amax = 127: s = 1 and id = 1, so the codes are x rounded half to even.
    std::vector<float> x(32, 1.0f);
    x[0] = 127.0f;
    x[1] = 2.5f;
    x[2] = 3.5f;
    x[3] = -2.5f;
    x[4] = -126.5f;
    x[5] = 0.5f;
    x[6] = -0.49f;
    QuantizedActivations a = quantize_activations(x.data(), 32, 32);
    EXPECT_EQ(a.scales[0], 1.0f);
    const int want[] = {127, 2, 4, -2, -126, 0, 0, 1};
    for (int i = 0; i < 8; ++i) EXPECT_EQ(a.codes[i], want[i]) << i;

    // s = amax / 127 and id = 127 / amax in fp32; the block maximum maps to +-127.
    std::vector<float> y(256);
    for (int i = 0; i < 256; ++i) y[i] = uniform(-3.0f, 3.0f);
    y[77] = -4.0f;
    a = quantize_activations(y.data(), 256, 256);
    EXPECT_EQ(a.scales[0], 4.0f / 127.0f);
    EXPECT_EQ(a.codes[77], -127);
    for (int i = 0; i < 256; ++i) {
        EXPECT_LE(std::fabs(y[i] * (127.0f / 4.0f) - a.codes[i]), 0.5f) << i;
    }

    // A non-finite value makes the block's scale NaN and its codes 0; an all-zero block has s = 0.
    std::vector<float> z(96, 0.0f);
    for (int i = 32; i < 96; ++i) z[i] = uniform(-1.0f, 1.0f);
    z[40] = NAN;
    z[70] = INFINITY;
    a = quantize_activations(z.data(), 96, 32);
    EXPECT_EQ(a.scales[0], 0.0f);
    EXPECT_TRUE(std::isnan(a.scales[1]));
    EXPECT_TRUE(std::isnan(a.scales[2]));
    for (int i = 0; i < 96; ++i) EXPECT_EQ(a.codes[i], 0) << i;
}

TEST(ContractReference, EmulatedFp32MultiplyIsNearButNotAlwaysIeee) {
    // Operands that are bf16 values multiply exactly either way; general fp32 operands mostly round
    // alike and sometimes differ by an ulp (the nine partial products' sum rounds 8 times: about 0.3 %
    // of random products), never by more than 2 units of 2^-24 of the product; the safe form (products
    // rounded, then added) gives the same bits in the normal range; an infinite operand gives NaN.
    EXPECT_EQ(fp32_multiply(1.5f, -0.375f, Fp32Multiply::aie2p_emulated), -0.5625f);
    int differ = 0;
    for (int i = 0; i < 20000; ++i) {
        const float x = uniform(-2.0f, 2.0f), y = uniform(-300.0f, 300.0f);
        const float ieee = fp32_multiply(x, y, Fp32Multiply::ieee), emu = fp32_multiply(x, y, Fp32Multiply::aie2p_emulated);
        EXPECT_EQ(float_bits(ieee), float_bits(x * y));
        EXPECT_EQ(float_bits(emu), float_bits(fp32_multiply(x, y, Fp32Multiply::aie2p_safe)));
        differ += float_bits(ieee) != float_bits(emu);
        ASSERT_LE(std::fabs(double(ieee) - emu), std::ldexp(std::fabs(double(x) * y), -23)) << x << " * " << y;
    }
    EXPECT_GT(differ, 10);
    EXPECT_TRUE(std::isnan(fp32_multiply(INFINITY, 2.0f, Fp32Multiply::aie2p_emulated)));
    EXPECT_EQ(fp32_multiply(INFINITY, 2.0f, Fp32Multiply::ieee), INFINITY);
}

class ReferenceDecoder : public ::testing::TestWithParam<ggml_type> {};

// The reference's per-value integers, sub-block scales and fields, recombined in float64, give ggml's
// dequantized values (to fp32 rounding): every bit lands where ggml's dequantize_row_* reads it.
TEST_P(ReferenceDecoder, AgreesWithGgmlDequantization) {
    const ggml_type t = GetParam();
    SCOPED_TRACE(testing::Message() << ggml_type_name(t) << " seed=" << test_seed());
    const int64_t k = 1024, rows = 8;
    std::vector<uint8_t> w = random_weights(t, k, rows);  // quantized by ggml from random floats
    std::vector<uint8_t> bytes(w.size());                  // plus every bit pattern of codes and scales
    fill_random_bytes(bytes);
    w.insert(w.end(), bytes.begin(), bytes.end());
    const size_t bs = ggml_type_size(t);
    const int bv = static_cast<int>(ggml_blck_size(t));
    // Keep the fp16 fields finite so values compare as numbers (their offsets: ggml-common.h).
    std::vector<int> halves;
    switch (t) {
        case GGML_TYPE_Q4_0: case GGML_TYPE_Q5_0: case GGML_TYPE_Q8_0: halves = {0}; break;
        case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_1: case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K: halves = {0, 2}; break;
        case GGML_TYPE_Q2_K: halves = {80, 82}; break;
        case GGML_TYPE_Q3_K: halves = {108}; break;
        case GGML_TYPE_Q6_K: halves = {208}; break;
        default: FAIL();
    }
    for (size_t b = 0; b < w.size() / bs; ++b) {
        for (int off : halves) w[b * bs + off + 1] &= 0xBF;  // clear the exponent's top bit
    }
    std::vector<float> deq(static_cast<size_t>(k));
    for (size_t r = 0; r < w.size() / ggml_row_size(t, k); ++r) {
        ggml_get_type_traits(t)->to_float(w.data() + r * ggml_row_size(t, k), deq.data(), k);
        for (int64_t b = 0; b < k / bv; ++b) {
            const DecodedBlock d = decode_block_reference(t, w.data() + r * ggml_row_size(t, k) + b * bs);
            ASSERT_EQ(d.values, bv);
            for (int i = 0; i < bv; ++i) {
                const int j = i / d.sub;
                const double scaled = double(d.d) * d.scale[j] * d.q[i];
                const double offset = double(d.m) * d.min[j];
                const double want = d.epilogue == DecodedBlock::Epilogue::plus_min ? scaled + offset
                                  : d.epilogue == DecodedBlock::Epilogue::minus_min ? scaled - offset : scaled;
                // ggml rounds up to three fp32 operations (d * sc, * q, - dmin * m).
                const double tol = std::ldexp(std::fabs(scaled) + std::fabs(offset), -21);
                ASSERT_LE(std::fabs(want - deq[b * bv + i]), tol) << "row " << r << " block " << b << " value " << i;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Quantized, ReferenceDecoder,
                         ::testing::Values(GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0,
                                           GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K),
                         [](const auto & info) { return std::string(ggml_type_name(info.param)); });

// ---- Hand-computed one-block matmuls ----

TEST(ContractReferenceByHand, Q4_0) {
    // d = 0.25; values 0..15 have code 9 (9 - 8 = +1), values 16..31 code 6 (-2).
    int code[32];
    for (int i = 0; i < 32; ++i) code[i] = i < 16 ? 9 : 6;
    // Activations 2.54 (the block maximum: code 127) and 0.2 (0.2 * 127 / 2.54 = 10: code 10).
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) x[i] = i < 16 ? 2.54f : 0.2f;
    const QuantizedActivations a = quantize_activations(x.data(), 32, 32);
    ASSERT_EQ(a.codes[0], 127);
    ASSERT_EQ(a.codes[31], 10);
    // isum = 16 * (+1) * 127 + 16 * (-2) * 10 = 2032 - 320 = 1712;  c = 0 + (d * s) * 1712.
    const float s = 2.54f / 127.0f;
    const float want = 0.0f + (0.25f * s) * 1712.0f;
    EXPECT_EQ(float_bits(reference_dot(GGML_TYPE_Q4_0, q4_0_block(0.25f, code), x)), float_bits(want));
}

TEST(ContractReferenceByHand, Q4_K) {
    // d = 0.5, dmin = 0.25; sub-block j (32 values) has one code c_j, scale sc_j and min m_j (sub-blocks
    // 4..7 use the scale bytes' high-bit packing: 33, 40, 63 need it).
    const int sc[8] = {1, 2, 3, 4, 33, 5, 6, 63};
    const int mn[8] = {0, 1, 2, 3, 4, 40, 5, 6};
    const int cj[8] = {1, 15, 0, 7, 8, 3, 12, 5};
    const float aj[8] = {127, -50, 3, 20, -7, 1, -100, 9};  // amax 127: s = 1, codes = the values
    int code[256];
    std::vector<float> x(256);
    for (int v = 0; v < 256; ++v) {
        code[v] = cj[v / 32];
        x[v] = aj[v / 32];
    }
    // sc*c*a per sub-block: 127, -1500, 0, 560, -1848, 15, -7200, 2835 -> sum -7011, sumi = 32 * -7011 = -224352
    // m*a per sub-block:    0, -50, 6, 60, -28, 40, -500, 54         -> sum -418,  summ = 32 * -418  = -13376
    // c = 0.5 * -224352 - 0.25 * -13376 = -112176 + 3344 = -108832 (every step exact in fp32).
    EXPECT_EQ(reference_dot(GGML_TYPE_Q4_K, q4_K_block(0.5f, 0.25f, sc, mn, code), x), -108832.0f);
}

TEST(ContractReferenceByHand, Q6_K) {
    // d = 0.125; sub-block j (16 values) has one 6-bit code c_j (value c_j - 32) and int8 scale sc_j.
    const int sc[16] = {1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 127, -128, 0, 7, -7, 10};
    const int cj[16] = {0, 63, 32, 31, 33, 1, 62, 40, 20, 10, 50, 5, 60, 45, 15, 35};
    const float aj[16] = {10, -20, 30, -40, 50, -60, 70, -80, 90, -100, 110, -120, 127, -127, 1, -1};
    int code[256];
    std::vector<float> x(256);
    for (int v = 0; v < 256; ++v) {
        code[v] = cj[v / 16];
        x[v] = aj[v / 16];
    }
    // sc*(c-32)*a per sub-block: -320, 620, 0, -80, 150, -5580, 8400, 2560, -5400, -11000, 251460,
    // -414720, 0, -11557, 119, -30 -> sum -185378; sumi = 16 * -185378 = -2966048; c = 0.125 * sumi.
    EXPECT_EQ(reference_dot(GGML_TYPE_Q6_K, q6_K_block(0.125f, sc, code), x), -370756.0f);
}

TEST(ContractReferenceByHand, Q4_1RoundsBothProductsBeforeAdding) {
    // c + (p * float(isum) + q * float(asum)) with each product rounded: a fused multiply-add of the
    // last product would round once, and these inputs make that visible.
    std::vector<uint8_t> b(20, 0);
    put_half(b.data(), 0.0123f);      // d
    put_half(b.data() + 2, -0.0711f); // m
    for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>((j * 5 + 3) % 16 | (((j * 11 + 7) % 16) << 4));
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) x[i] = std::sin(1.0f + i) * 3.1f;
    const QuantizedActivations a = quantize_activations(x.data(), 32, 32);
    int isum = 0, asum = 0;
    for (int j = 0; j < 16; ++j) {
        isum += ((j * 5 + 3) % 16) * a.codes[j] + ((j * 11 + 7) % 16) * a.codes[j + 16];
        asum += a.codes[j] + a.codes[j + 16];
    }
    const float p = ggml_fp16_to_fp32(ggml_fp32_to_fp16(0.0123f)) * a.scales[0];
    const float q = ggml_fp16_to_fp32(ggml_fp32_to_fp16(-0.0711f)) * a.scales[0];
    const float pi = p * static_cast<float>(isum), qa = q * static_cast<float>(asum);
    const float want = 0.0f + (pi + qa);
    ASSERT_NE(float_bits(want), float_bits(std::fma(p, static_cast<float>(isum), qa))) << "inputs do not discriminate";
    EXPECT_EQ(float_bits(reference_dot(GGML_TYPE_Q4_1, b, x)), float_bits(want));
}

// ---- Rejecting "dequantize to fp32, then float dot" ----

struct Crafted {
    std::vector<uint8_t> w;
    std::vector<float>   x;
};

// Q8_0, one block: an outlier pair (+1000 and -1000, both weight code 127) whose products cancel, pairs
// of equal codes with opposite activations between them, and one surviving product of 1 x 1 code step.
// The integer sum is exactly 1; the float dot carries the rounding of every addition to a partial sum
// of about 1560 (ulp 1.2e-4) into a result of about 0.097.
Crafted crafted_q8_0() {
    int code[32];
    std::vector<float> x(32);
    code[0] = 127;
    x[0] = 1000.0f;
    code[31] = 127;
    x[31] = -1000.0f;
    for (int i = 1; i < 29; i += 2) {
        code[i] = code[i + 1] = 41 + 3 * i;
        x[i] = 10.0f + 27.3f * i;
        x[i + 1] = -x[i];
    }
    code[29] = 1;
    x[29] = 1000.0f / 127.0f;  // one activation code step
    code[30] = 0;
    x[30] = 3.0f;
    return {q8_0_block(0.0123f, code), x};
}

// Q4_K, one super-block: activation outliers +1000 in sub-block 0 and -1000 in sub-block 7, which
// share scale and min, so the two sub-blocks cancel; every other sub-block holds pairs of equal codes
// with opposite activations (their integer sums and activation sums are 0); one product of code 1 and
// one activation step survives in sub-block 3 (min 0). Exact: c = d * s * sc_3. The float dot adds
// 250 small products to a partial sum ~1000 times larger than the result before the outliers cancel.
Crafted crafted_q4_K() {
    const int sc[8] = {63, 17, 40, 5, 29, 51, 8, 63};
    const int mn[8] = {47, 3, 60, 0, 12, 33, 21, 47};
    int code[256];
    std::vector<float> x(256);
    code[0] = 15;
    x[0] = 1000.0f;
    code[255] = 15;
    x[255] = -1000.0f;
    for (int v = 2; v < 254; v += 2) {
        code[v] = code[v + 1] = (v * 7) % 16;
        x[v] = 20.0f + 3.7f * (v % 61);
        x[v + 1] = -x[v];
    }
    code[1] = 9;
    x[1] = 0.0f;
    code[254] = 4;
    x[254] = 0.0f;
    code[96] = 1;
    x[96] = 1000.0f / 127.0f;
    code[97] = 0;
    x[97] = 0.0f;
    return {q4_K_block(0.0123f, 0.0371f, sc, mn, code), x};
}

class CraftedRejection : public ::testing::TestWithParam<ggml_type> {};

TEST_P(CraftedRejection, DequantizeThenFloatDotDiffersFarBeyondTheTolerance) {
    const ggml_type t = GetParam();
    const Crafted in = t == GGML_TYPE_Q8_0 ? crafted_q8_0() : crafted_q4_K();
    const MatmulCase c{t, static_cast<int64_t>(in.x.size()), 1, 1};
    const float exact = contract_reference_exact(c, in.w, in.x)[0];
    const float wrong = dequantize_then_float_dot(c, in.w, in.x)[0];

    // The exact path matches itself: another grouping of the integer sums gives the same bits, and so
    // does the hand formula (integer sum 1 resp. sc_3 = 5 of one code step each).
    const QuantizedActivations a = quantize_activations(in.x.data(), c.k, static_cast<int>(c.k));
    const int sumi = t == GGML_TYPE_Q8_0 ? 1 : 5;
    const float d = ggml_fp16_to_fp32(ggml_fp32_to_fp16(0.0123f));
    EXPECT_EQ(float_bits(exact), float_bits(0.0f + (d * a.scales[0]) * static_cast<float>(sumi)));
    EXPECT_EQ(float_bits(exact), float_bits(0.0f + exact_by_groups_reversed(t, in.w.data(), a.codes.data(), a.scales[0])));

    // The backend tests demand equality for quantized contracts; the wrong path misses by thousands of
    // ulps, relative 1e-4 or more: beyond even the float64-NMSE bound (1e-10) the previous tests used.
    const double rel = std::fabs(double(wrong) - exact) / std::fabs(exact);
    std::printf("  %s crafted: exact %.9g, dequantize-then-float-dot %.9g: %.0f ulps, relative %.2e\n", ggml_type_name(t),
                exact, wrong, ulps(exact, wrong), rel);
    EXPECT_GT(ulps(exact, wrong), 1000.0);
    EXPECT_GT(rel * rel, 1e-10 * 100);
    EXPECT_FALSE(contract_mismatch(c, in.w, in.x, {wrong}).empty());
    EXPECT_TRUE(contract_mismatch(c, in.w, in.x, {exact}).empty());
}

INSTANTIATE_TEST_SUITE_P(Crafted, CraftedRejection, ::testing::Values(GGML_TYPE_Q8_0, GGML_TYPE_Q4_K),
                         [](const auto & info) { return std::string(ggml_type_name(info.param)); });

// On ordinary random data the shortcut is close (NMSE far below the old 1e-10 bound) yet differs in
// the last bits of many outputs: only an exact comparison sees it; the exact regrouping never differs.
TEST(RandomDataRejection, ShortcutDiffersInTheLastBitsWhereExactRegroupingDoesNot) {
    for (ggml_type t : {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K}) {
        SCOPED_TRACE(testing::Message() << ggml_type_name(t) << " seed=" << test_seed());
        const MatmulCase c{t, 2048, 32, 4};
        const std::vector<uint8_t> w = random_weights(t, c.k, c.m);
        const std::vector<float> x = random_floats(activation_count(c));
        const std::vector<float> exact = contract_reference_exact(c, w, x);
        const std::vector<float> wrong = dequantize_then_float_dot(c, w, x);
        size_t differ = 0;
        for (size_t i = 0; i < exact.size(); ++i) differ += float_bits(exact[i]) != float_bits(wrong[i]);
        EXPECT_GT(differ, exact.size() / 2);
        EXPECT_LT(nmse(std::vector<double>(exact.begin(), exact.end()), wrong), 1e-10);
        EXPECT_FALSE(contract_mismatch(c, w, x, wrong).empty());

        // The regrouped evaluation below multiplies in IEEE fp32: compare it with the reference in that mode.
        const std::vector<float> exact_ieee = contract_reference_exact(c, w, x, Fp32Multiply::ieee);
        const int ablk = reference_act_block(t);
        const size_t row = ggml_row_size(t, c.k), bs = ggml_type_size(t);
        for (int64_t tok = 0; tok < c.n; ++tok) {
            const QuantizedActivations a = quantize_activations(x.data() + tok * c.k, c.k, ablk);
            for (int64_t r = 0; r < c.m; ++r) {
                float acc = 0.0f;
                for (int64_t b = 0; b < c.k / ablk; ++b) {
                    acc = acc + exact_by_groups_reversed(t, w.data() + r * row + b * bs, a.codes.data() + b * ablk, a.scales[b]);
                }
                ASSERT_EQ(float_bits(acc), float_bits(exact_ieee[tok * c.m + r])) << "token " << tok << " row " << r;
            }
        }
    }
}

// ---- Float contracts: the tolerance admits any summation order and the F32 emulation, not lost bits ----

// fp32 x as aie_api's emulated multiply splits it: three bf16 parts taken with rounding toward -inf.
void split3(float x, float & a, float & b, float & c) {
    auto floor_bf16 = [](float v) {
        uint32_t u = float_bits(v);
        if (std::signbit(v) && (u & 0xFFFF) != 0) u += 0x10000;  // toward -inf for negatives
        u &= 0xFFFF0000u;
        float r;
        std::memcpy(&r, &u, 4);
        return r;
    };
    a = floor_bf16(x);
    b = floor_bf16(x - a);
    c = floor_bf16(x - a - b);
}

enum class FloatImpl { exact_products_reversed, f32_emulated_safe, operands_as_bf16 };

// One float-contract matmul computed three ways: exact products summed in fp32 from the last K to
// the first in groups of 8 (a valid order); F32 through the emulated multiply (aie::mul's safe: all 9
// bf16 partial products, each rounded, then added); or every operand rounded to bf16 first (what a
// bfp16 / bf16-only shortcut would do).
std::vector<float> float_matmul(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x, FloatImpl impl) {
    std::vector<float> out(static_cast<size_t>(c.m * c.n));
    auto weight = [&](int64_t r, int64_t i) -> float {
        const uint8_t * p = w.data() + r * ggml_row_size(c.wtype, c.k);
        if (c.wtype == GGML_TYPE_F32) {
            float f;
            std::memcpy(&f, p + 4 * i, 4);
            return f;
        }
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        return c.wtype == GGML_TYPE_F16 ? ggml_fp16_to_fp32(h) : ggml_bf16_to_fp32(ggml_bf16_t{h});
    };
    auto act = [&](float v) {
        return c.wtype == GGML_TYPE_F16 ? ggml_fp16_to_fp32(ggml_fp32_to_fp16(v))
             : c.wtype == GGML_TYPE_BF16 ? ggml_bf16_to_fp32(ggml_fp32_to_bf16(v)) : v;
    };
    auto bf16 = [](float v) { return ggml_bf16_to_fp32(ggml_fp32_to_bf16(v)); };
    for (int64_t t = 0; t < c.n; ++t) {
        for (int64_t r = 0; r < c.m; ++r) {
            float acc = 0.0f;
            for (int64_t g = (c.k - 1) / 8; g >= 0; --g) {
                float part = 0.0f;
                for (int64_t i = g * 8; i < std::min<int64_t>(c.k, g * 8 + 8); ++i) {
                    const float wv = weight(r, i), av = act(x[t * c.k + i]);
                    switch (impl) {
                        case FloatImpl::exact_products_reversed: {
                            // F16: hi/lo bf16 halves, four exact products; BF16 / F32 here: one product
                            // (exact for BF16; F32 uses the emulated path below).
                            float wa, wb, wc, aa, ab, ac;
                            split3(wv, wa, wb, wc);
                            split3(av, aa, ab, ac);
                            const float wl = wb + wc, al = ab + ac;  // exact for fp16 / bf16 values
                            part = part + wa * aa;
                            part = part + wa * al;
                            part = part + wl * aa;
                            part = part + wl * al;
                            break;
                        }
                        case FloatImpl::f32_emulated_safe: {
                            float a, b, cc, d, e, f;
                            split3(wv, a, b, cc);
                            split3(av, d, e, f);
                            float p = cc * f;
                            p = p + cc * e;
                            p = p + b * f;
                            p = p + a * f;
                            p = p + b * e;
                            p = p + cc * d;
                            p = p + b * d;
                            p = p + a * e;
                            p = p + a * d;
                            part = part + p;
                            break;
                        }
                        case FloatImpl::operands_as_bf16:
                            part = part + bf16(wv) * bf16(av);
                            break;
                    }
                }
                acc = acc + part;
            }
            out[t * c.m + r] = acc;
        }
    }
    return out;
}

TEST(FloatContractTolerance, AdmitsOrderAndEmulationRejectsBf16Shortcuts) {
    for (int64_t k : {200, 4096}) {
        for (ggml_type t : {GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_F32}) {
            SCOPED_TRACE(testing::Message() << ggml_type_name(t) << " k=" << k << " seed=" << test_seed());
            const MatmulCase c{t, k, 64, 4};
            const std::vector<uint8_t> w = random_weights(t, c.k, c.m);
            const std::vector<float> x = random_floats(activation_count(c));
            const FloatImpl good = t == GGML_TYPE_F32 ? FloatImpl::f32_emulated_safe : FloatImpl::exact_products_reversed;
            EXPECT_EQ(contract_mismatch(c, w, x, float_matmul(c, w, x, good)), "");
            if (t != GGML_TYPE_BF16) {  // for BF16 the shortcut is the contract
                EXPECT_NE(contract_mismatch(c, w, x, float_matmul(c, w, x, FloatImpl::operands_as_bf16)), "");
            }
        }
    }
}

}  // namespace
