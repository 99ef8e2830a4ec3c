// The tests' bfp16 contract reference (tests/common/bfp16-reference.h) checked on its own: the block
// conversion on hand-computed blocks (exponent choice, round to nearest even on the two's complement
// value, the +128 clamp, zeros, subnormals, field 255), the on-core dequantization on hand-built Q4_K /
// Q5_K / Q6_K and Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 blocks (exact cases, the hi/lo split of the scale, the fp32 rounding order), the product's
// K order, and on random data its distance from an fp64 evaluation of ggml's dequantized weights.
#include "bfp16-reference.h"
#include "contract-reference.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace {

using namespace xdna_test;

// ---- Test-side block builders (the GGUF layouts of ggml-common.h, written from the other direction) ----

void put_half(uint8_t * p, float f) {
    const uint16_t h = float_to_half(f);
    std::memcpy(p, &h, 2);
}

// Q4_K / Q5_K: 8 six-bit scales and mins into 12 bytes (the inverse of ggml's get_scale_min_k4).
void pack_k4_scales(uint8_t * s, const int * sc, const int * mn) {
    for (int j = 0; j < 4; ++j) {
        s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
        s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
}

// Q4_K {d; dmin; scales[12]; qs[128]}, Q5_K {d; dmin; scales[12]; qh[32]; qs[128]}: value v's low
// nibble in qs[32 (v / 64) + v % 32] (high nibble for (v % 64) >= 32), Q5_K's 5th bit at bit v / 32 of qh[v % 32].
std::vector<uint8_t> k4_block(ggml_type t, float d, float dmin, const int * sc, const int * mn, const int * code) {
    const bool five = t == GGML_TYPE_Q5_K;
    std::vector<uint8_t> b(five ? 176 : 144, 0);
    put_half(b.data(), d);
    put_half(b.data() + 2, dmin);
    pack_k4_scales(b.data() + 4, sc, mn);
    uint8_t * qs = b.data() + (five ? 48 : 16);
    for (int v = 0; v < 256; ++v) {
        qs[32 * (v / 64) + v % 32] |= static_cast<uint8_t>((code[v] & 15) << (4 * ((v % 64) / 32)));
        if (five) b[16 + v % 32] |= static_cast<uint8_t>((code[v] >> 4) << (v / 32));
    }
    return b;
}

// Q6_K {ql[128]; qh[64]; scales[16]; d}: unsigned codes 0..63.
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

// Q2_K {scales[16]; qs[64]; d; dmin}: scales[j] = m_j << 4 | sc_j; value v's 2-bit code at shift
// 2 ((v % 128) / 32) of qs[32 (v / 128) + v % 32].
std::vector<uint8_t> q2_K_block(float d, float dmin, const int * sc, const int * mn, const int * code) {
    std::vector<uint8_t> b(84, 0);
    for (int j = 0; j < 16; ++j) b[j] = static_cast<uint8_t>(sc[j] | (mn[j] << 4));
    for (int v = 0; v < 256; ++v) b[16 + 32 * (v / 128) + v % 32] |= static_cast<uint8_t>((code[v] & 3) << (2 * ((v % 128) / 32)));
    put_half(b.data() + 80, d);
    put_half(b.data() + 82, dmin);
    return b;
}

// Q3_K {hmask[32]; qs[64]; scales[12]; d}: unsigned codes 0..7 (value code - 4), the low 2 bits as
// Q2_K, bit 2 at bit (v / 32) of hmask[v % 32]; 6-bit scales s_j (value s_j - 32): low nibble in byte
// j % 8 (high nibble for j >= 8), bits 4-5 at bit pair j / 4 of byte 8 + j % 4.
std::vector<uint8_t> q3_K_block(float d, const int * s6, const int * code) {
    std::vector<uint8_t> b(110, 0);
    for (int v = 0; v < 256; ++v) {
        b[32 + 32 * (v / 128) + v % 32] |= static_cast<uint8_t>((code[v] & 3) << (2 * ((v % 128) / 32)));
        b[v % 32] |= static_cast<uint8_t>(((code[v] >> 2) & 1) << (v / 32));
    }
    for (int j = 0; j < 16; ++j) {
        b[96 + j % 8] |= static_cast<uint8_t>((s6[j] & 15) << (j >= 8 ? 4 : 0));
        b[96 + 8 + j % 4] |= static_cast<uint8_t>((s6[j] >> 4) << (2 * (j / 4)));
    }
    put_half(b.data() + 108, d);
    return b;
}

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

RefBfp16Block block_of(std::vector<float> x) {
    x.resize(8, 0.0f);
    return ref_bfp16_block(x.data());
}

std::vector<int> mantissas(const RefBfp16Block & b) { return std::vector<int>(b.mantissa, b.mantissa + 8); }

// ggml's exact weight value d * sc * q - dmin * m (Q6_K: d * sc * (code - 32)) in double, per value;
// for the legacy types (32 values) d * q with q signed for *_0, d * q + m for Q4_1 / Q5_1.
std::vector<double> exact_weights(ggml_type t, const uint8_t * block) {
    const DecodedBlock db = decode_block_reference(t, block);
    std::vector<double> w(db.values);
    const bool legacy = db.values == 32;
    for (int v = 0; v < db.values; ++v) {
        const int j = v / db.sub;
        w[v] = legacy ? double(db.d) * db.q[v] + double(db.m) * db.min[0]
                      : double(db.d) * db.scale[j] * db.q[v] - double(db.m) * db.min[j];
    }
    return w;
}

// Legacy blocks from d, m and 32 codes (unsigned b for Q4/Q5, the signed int8 for Q8_0): Q4_0 {d;
// qs[16]}, Q4_1 {d; m; qs[16]} with value j in the low nibble of qs[j] and j + 16 in its high nibble;
// Q5_0 {d; qh[4]; qs[16]}, Q5_1 {d; m; qh[4]; qs[16]} with value i's 5th bit at bit i of the
// little-endian qh; Q8_0 {d; qs[32]}.
std::vector<uint8_t> legacy_block(ggml_type t, float d, float m, const int * code) {
    const bool has_m = t == GGML_TYPE_Q4_1 || t == GGML_TYPE_Q5_1;
    const bool five = t == GGML_TYPE_Q5_0 || t == GGML_TYPE_Q5_1;
    std::vector<uint8_t> b(ggml_type_size(t), 0);
    put_half(b.data(), d);
    if (has_m) put_half(b.data() + 2, m);
    uint8_t * p = b.data() + (has_m ? 4 : 2);
    if (t == GGML_TYPE_Q8_0) {
        for (int i = 0; i < 32; ++i) p[i] = static_cast<uint8_t>(static_cast<int8_t>(code[i]));
        return b;
    }
    uint8_t * qs = p + (five ? 4 : 0);
    for (int i = 0; i < 32; ++i) {
        qs[i % 16] |= static_cast<uint8_t>((code[i] & 15) << (4 * (i / 16)));
        if (five) p[i / 8] |= static_cast<uint8_t>(((code[i] >> 4) & 1) << (i % 8));
    }
    return b;
}

// ---- The block conversion ----

TEST(Bfp16Block, ExponentIsTheLargestFieldAndValuesScaleFromIt) {
    // Field of -3.0 is 128 (the largest, whatever the sign): -3.0 = -96 units of 2^(128 - 133).
    const RefBfp16Block b = block_of({1.0f, 0.5f, -3.0f, 0.25f});
    EXPECT_EQ(b.exponent, 128);
    EXPECT_EQ(mantissas(b), (std::vector<int>{32, 16, -96, 8, 0, 0, 0, 0}));
    EXPECT_EQ(ref_bfp16_value(b, 2), -3.0);
    EXPECT_EQ(ref_bfp16_value(b, 0), 1.0);
    // 1.0 alone: mantissa 64, exponent 127 (the format's identity).
    const RefBfp16Block one = block_of({1.0f});
    EXPECT_EQ(one.exponent, 127);
    EXPECT_EQ(one.mantissa[0], 64);
}

TEST(Bfp16Block, SmallValuesBesideALargeOneRoundInUnitsOfItsStep) {
    // 100 has field 133: one mantissa unit is 1.0, so the others round to integers.
    const RefBfp16Block b = block_of({100.0f, 1e-3f, -1e-3f, 0.75f, -0.75f, 0.25f, -0.25f, 1.25f});
    EXPECT_EQ(b.exponent, 133);
    EXPECT_EQ(mantissas(b), (std::vector<int>{100, 0, 0, 1, -1, 0, 0, 1}));  // -0.25 -> 0: not floor's -1
}

TEST(Bfp16Block, TiesGoToEvenForBothSigns) {
    const RefBfp16Block b = block_of({100.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, -3.5f});
    EXPECT_EQ(mantissas(b), (std::vector<int>{100, 0, 2, 2, 0, -2, -2, -4}));
    // Measured on the NPU under conv_even (IRON's packing.py): 106.5 -> 106, 94.5 -> 94, 14.9375 -> 15 units.
    const RefBfp16Block npu = block_of({106.5f, 94.5f, 14.9375f});
    EXPECT_EQ(npu.exponent, 133);
    EXPECT_EQ(mantissas(npu), (std::vector<int>{106, 94, 15, 0, 0, 0, 0, 0}));
}

TEST(Bfp16Block, PlusOneTwentyEightClampsMinusOneTwentyEightStays) {
    // Round to nearest even is symmetric in the sign, so -x gives -(round x) except where round x is
    // +128: that clamps to 127 (the exponent is not raised), while -128 is a mantissa.
    const RefBfp16Block b = block_of({127.75f, -127.75f, 127.5f, -127.5f, 127.25f, -127.25f});
    EXPECT_EQ(b.exponent, 133);
    EXPECT_EQ(mantissas(b), (std::vector<int>{127, -128, 127, -128, 127, -127, 0, 0}));
    // The largest value alone (the block's max is always in [64, 128) units before rounding).
    const RefBfp16Block up = block_of({std::nextafter(2.0f, 0.0f)});
    EXPECT_EQ(up.exponent, 127);
    EXPECT_EQ(up.mantissa[0], 127);
    const RefBfp16Block down = block_of({-std::nextafter(2.0f, 0.0f)});
    EXPECT_EQ(down.mantissa[0], -128);
    EXPECT_EQ(ref_bfp16_value(down, 0), -2.0);
}

TEST(Bfp16Block, ZerosGiveExponentZero) {
    const RefBfp16Block z = block_of({0.0f, -0.0f});
    EXPECT_EQ(z.exponent, 0);
    EXPECT_EQ(mantissas(z), std::vector<int>(8, 0));
}

TEST(Bfp16Block, SubnormalsWeighAsFieldZero) {
    // All subnormal: E = 0, shift 17 of the bare fraction bits (worth half their IEEE value).
    const RefBfp16Block b = block_of({from_bits(0x007FFFFF), from_bits(3u << 16), from_bits(1u << 16), from_bits(0x807FFFFF),
                                      from_bits(1u << 17)});
    EXPECT_EQ(b.exponent, 0);
    EXPECT_EQ(mantissas(b), (std::vector<int>{64, 2, 0, -64, 1, 0, 0, 0}));
    EXPECT_EQ(ref_bfp16_value(b, 0), std::ldexp(1.0, -127));  // the IEEE value is just below 2^-126
    // Beside the smallest normal (field 1, 64 units), the largest subnormal shifts one more: 32 units.
    const RefBfp16Block n = block_of({from_bits(0x00800000), from_bits(0x007FFFFF)});
    EXPECT_EQ(n.exponent, 1);
    EXPECT_EQ(mantissas(n), (std::vector<int>{64, 32, 0, 0, 0, 0, 0, 0}));
}

TEST(Bfp16Block, FieldTwoFiftyFiveIsAnOrdinaryExponent) {
    const float inf = std::numeric_limits<float>::infinity();
    const RefBfp16Block b = block_of({inf, 1.0f, -inf, from_bits(0x7FC00000)});
    EXPECT_EQ(b.exponent, 255);
    EXPECT_EQ(mantissas(b), (std::vector<int>{64, 0, -64, 96, 0, 0, 0, 0}));
}

TEST(Bfp16Block, BlockDotIsTheExactScaledIntegerSum) {
    const RefBfp16Block a = block_of({1.0f, -2.0f, 0.5f});
    const RefBfp16Block w = block_of({3.0f, 1.0f, -4.0f});
    EXPECT_EQ(ref_bfp16_block_dot(a, w), 1.0f * 3.0f + -2.0f * 1.0f + 0.5f * -4.0f);
}

// ---- The dequantization ----

TEST(Bfp16Dequant, SupportsEveryClaimedType) {
    for (ggml_type t : {GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K}) {
        EXPECT_TRUE(bfp16_reference_supports(t));
        EXPECT_EQ(bfp16_reference_block_values(t), 256);
    }
    for (ggml_type t : {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0}) {
        EXPECT_TRUE(bfp16_reference_supports(t));
        EXPECT_EQ(bfp16_reference_block_values(t), 32);
    }
    for (ggml_type t : {GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_F32}) EXPECT_TRUE(bfp16_reference_supports(t) && bfp16_reference_is_float(t));
    EXPECT_FALSE(bfp16_reference_supports(GGML_TYPE_IQ4_XS));
}

// Q2_K / Q3_K with exact scales: w = d sc code - dmin m (Q3_K: d (s6 - 32) (code - 4)), and the
// builders agree with the decoder (the hmask bit and the 6-bit scale packing both ways).
TEST(Bfp16Dequant, SimpleLowKQuantBlocksAreExact) {
    int sc[16], mn[16], code[256];
    for (int j = 0; j < 16; ++j) {
        sc[j] = (3 * j + 1) % 16;
        mn[j] = 15 - j;
    }
    for (int v = 0; v < 256; ++v) code[v] = (v * 3 + v / 16) % 4;
    const std::vector<uint8_t> b2 = q2_K_block(0.5f, 0.25f, sc, mn, code);
    float w[256];
    ref_bfp16_dequant_superblock(GGML_TYPE_Q2_K, b2.data(), w);
    for (int v = 0; v < 256; ++v) ASSERT_EQ(w[v], 0.5 * sc[v / 16] * code[v] - 0.25 * mn[v / 16]) << "Q2_K value " << v;
    int s6[16], code3[256];
    for (int j = 0; j < 16; ++j) s6[j] = (j * 37 + 5) % 64;  // 5 ... : both signs of s6 - 32, bits 4-5 used
    for (int v = 0; v < 256; ++v) code3[v] = (v * 5 + v / 16) % 8;
    const std::vector<uint8_t> b3 = q3_K_block(0.125f, s6, code3);
    ref_bfp16_dequant_superblock(GGML_TYPE_Q3_K, b3.data(), w);
    for (int v = 0; v < 256; ++v) ASSERT_EQ(w[v], 0.125 * (s6[v / 16] - 32) * (code3[v] - 4)) << "Q3_K value " << v;
}

// Q3_K's offset -132: with d = 1 + 2^-10 and s6 - 32 = -31, s = -31 - 31 * 2^-10 splits into s_hi = -31,
// s_lo = -31 * 2^-10; o = 132 * 31 + 132 * 31 * 2^-10 = 4092 + 3.99609375 (exact in fp32), and
// w = (o + x s_hi) + x s_lo gives s (code - 4) exactly (every step exact: 23 significant bits at most).
TEST(Bfp16Dequant, Q3KOffsetIsFoldedIntoO) {
    int s6[16] = {}, code[256] = {};
    s6[0] = 1;
    for (int v = 0; v < 16; ++v) code[v] = v % 8;
    for (int j = 1; j < 16; ++j) s6[j] = 32;  // scale 0: w = 0
    const float d = 1.0f + 0x1p-10f;
    const std::vector<uint8_t> b = q3_K_block(d, s6, code);
    float w[256];
    ref_bfp16_dequant_superblock(GGML_TYPE_Q3_K, b.data(), w);
    const double s = double(d) * -31.0;
    for (int v = 0; v < 16; ++v) ASSERT_EQ(w[v], s * (code[v] - 4)) << "value " << v;
    EXPECT_EQ(w[7], -93.0908203125f);
    for (int v = 16; v < 256; ++v) ASSERT_EQ(w[v], 0.0f);
}

// Q2_K's min term rounds into o before the code is added, as for Q4_K: s = 2^-16 (d = 2^-16, sc 1),
// dmin m = 1024 * 15 = 15360; o = -128 s - 15360 rounds to -15360 - 2^-9 (the spacing at 2^13 is 2^-10:
// exact), then w = o + 128 s + b s. With b = 0, w = -15360 exactly; with b = 3, -15360 + 3 * 2^-16
// rounds to -15360 (the spacing 2^-10 absorbs it): the rounding of w, stated in the spec.
TEST(Bfp16Dequant, Q2KMinsRoundAsSpecified) {
    int sc[16] = {}, mn[16] = {}, code[256] = {};
    sc[0] = 1;
    mn[0] = 15;
    code[1] = 3;
    const std::vector<uint8_t> b = q2_K_block(0x1p-16f, 1024.0f, sc, mn, code);
    float w[256];
    ref_bfp16_dequant_superblock(GGML_TYPE_Q2_K, b.data(), w);
    EXPECT_EQ(w[0], -15360.0f);
    EXPECT_EQ(w[1], -15360.0f);
    EXPECT_EQ(exact_weights(GGML_TYPE_Q2_K, b.data())[1], -15360.0 + 3 * 0x1p-16);
}

// Scales whose bf16 parts are exact and small: every step of the formula is exact, w = d sc code - dmin m.
TEST(Bfp16Dequant, SimpleKQuantBlocksAreExact) {
    int sc[8], mn[8], code[256];
    for (int j = 0; j < 8; ++j) {
        sc[j] = 2 + 8 * j;   // 2 ... 58: j >= 4 uses both halves of the 6-bit packing
        mn[j] = 63 - 7 * j;
    }
    for (ggml_type t : {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K}) {
        SCOPED_TRACE(ggml_type_name(t));
        const int codes = t == GGML_TYPE_Q5_K ? 32 : 16;
        for (int v = 0; v < 256; ++v) code[v] = (v * 7 + v / 32) % codes;
        const std::vector<uint8_t> b = k4_block(t, 0.5f, 0.25f, sc, mn, code);
        float w[256];
        ref_bfp16_dequant_superblock(t, b.data(), w);
        for (int v = 0; v < 256; ++v) ASSERT_EQ(w[v], 0.5 * sc[v / 32] * code[v] - 0.25 * mn[v / 32]) << "value " << v;
    }
    int sc6[16], code6[256];
    for (int j = 0; j < 16; ++j) sc6[j] = (j % 2 ? -1 : 1) * (3 + 8 * j);  // int8, both signs, up to 123
    for (int v = 0; v < 256; ++v) code6[v] = (v * 5 + v / 16) % 64;
    const std::vector<uint8_t> b6 = q6_K_block(0.125f, sc6, code6);
    float w6[256];
    ref_bfp16_dequant_superblock(GGML_TYPE_Q6_K, b6.data(), w6);
    for (int v = 0; v < 256; ++v) ASSERT_EQ(w6[v], 0.125 * sc6[v / 16] * (code6[v] - 32)) << "Q6_K value " << v;
}

// d = 1 + 2^-10 is a half but not a bf16: d_hi = 1, d_lo = 2^-10, and s = 63 + 63 * 2^-10 (16 significant
// bits) needs both s_hi = 63 and s_lo = 63 * 2^-10; a single bf16 scale would make every w = 63 code.
TEST(Bfp16Dequant, ScaleNeedsItsHiLoSplit) {
    int sc[8] = {63, 0, 0, 0, 0, 0, 0, 0}, mn[8] = {}, code[256] = {};
    for (int v = 0; v < 32; ++v) code[v] = v % 16;
    const float d = 1.0f + 0x1p-10f;
    const float s = d * 63.0f;
    ASSERT_EQ(s, 63.0615234375f);
    ASSERT_EQ(bf16_to_float(float_to_bf16(s)), 63.0f);                              // s_hi
    ASSERT_EQ(bf16_to_float(float_to_bf16(s - 63.0f)), 63.0f * 0x1p-10f);          // s_lo, exact
    const std::vector<uint8_t> b = k4_block(GGML_TYPE_Q4_K, d, 0.0f, sc, mn, code);
    float w[256];
    ref_bfp16_dequant_superblock(GGML_TYPE_Q4_K, b.data(), w);
    for (int v = 0; v < 32; ++v) {
        ASSERT_EQ(w[v], double(s) * code[v]) << "value " << v;  // s_hi + s_lo = s: w exact
        if (code[v] != 0) ASSERT_NE(w[v], 63.0f * code[v]);
    }
    EXPECT_EQ(w[15], 945.9228515625f);
    for (int v = 32; v < 256; ++v) ASSERT_EQ(w[v], 0.0f);
}

// The order of the spec's roundings, seen in one value: with s = 2^-16 and dmin m = 32768, o = -32768 -
// 2^-9 is a tie that rounds to -32768 (128 s is absorbed), then w = o + 128 s = -32768 + 2^-9 exactly,
// while the exact weight d sc 0 - dmin m is -32768 (and no single rounding of it gives anything else).
TEST(Bfp16Dequant, OffsetRoundsBeforeTheCodeIsAdded) {
    int sc[8] = {1, 0, 0, 0, 0, 0, 0, 0}, mn[8] = {32, 0, 0, 0, 0, 0, 0, 0}, code[256] = {};
    code[1] = 1;
    const std::vector<uint8_t> b = k4_block(GGML_TYPE_Q4_K, 0x1p-16f, 1024.0f, sc, mn, code);  // 2^-16: a subnormal half
    float w[256];
    ref_bfp16_dequant_superblock(GGML_TYPE_Q4_K, b.data(), w);
    EXPECT_EQ(exact_weights(GGML_TYPE_Q4_K, b.data())[0], -32768.0);
    EXPECT_EQ(w[0], -32768.0f + 0x1p-9f);
    EXPECT_EQ(w[1], -32768.0f + 0x1p-9f);  // 129 x 2^-16 rounds to one 2^-9 step too
}

// Float weights reach the block conversion exactly: an F16 subnormal, an F16 value that is not a bf16,
// a BF16 and an F32 with all 24 bits; F16/BF16/F32 rows are read as stored.
TEST(Bfp16Dequant, FloatWeightsAreExact) {
    EXPECT_TRUE(bfp16_reference_is_float(GGML_TYPE_F16) && bfp16_reference_is_float(GGML_TYPE_BF16) &&
                bfp16_reference_is_float(GGML_TYPE_F32));
    const uint16_t h[3] = {0x0001, 0x3C01, 0xFC00};  // 2^-24, 1 + 2^-10, -inf
    EXPECT_EQ(ref_bfp16_float_weight(GGML_TYPE_F16, reinterpret_cast<const uint8_t *>(h), 0), 0x1p-24f);
    EXPECT_EQ(ref_bfp16_float_weight(GGML_TYPE_F16, reinterpret_cast<const uint8_t *>(h), 1), 1.0f + 0x1p-10f);
    EXPECT_EQ(ref_bfp16_float_weight(GGML_TYPE_F16, reinterpret_cast<const uint8_t *>(h), 2), -std::numeric_limits<float>::infinity());
    const uint16_t b[2] = {0x3F81, 0xC040};  // 1 + 2^-7, -3
    EXPECT_EQ(ref_bfp16_float_weight(GGML_TYPE_BF16, reinterpret_cast<const uint8_t *>(b), 0), 1.0f + 0x1p-7f);
    EXPECT_EQ(ref_bfp16_float_weight(GGML_TYPE_BF16, reinterpret_cast<const uint8_t *>(b), 1), -3.0f);
    const float f[1] = {1.0f + 0x1p-23f};
    EXPECT_EQ(ref_bfp16_float_weight(GGML_TYPE_F32, reinterpret_cast<const uint8_t *>(f), 0), 1.0f + 0x1p-23f);
}

// Float weights, K = 12 (not a multiple of 8): blocks of 8 consecutive K, the second padded with
// zeros. K block 0 holds 100 and 0.75 (the block's unit is 2^(6 - 6) = 1 at 100: 0.75 rounds to 1),
// K block 1 holds 1.0 beside zeros. Activations all 1 (the second block 1, 1, 1, 1 and padding):
// c = 101 + 1.
TEST(Bfp16Matmul, FloatWeightsBlockAlongKWithZeroPadding) {
    for (ggml_type t : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16}) {
        SCOPED_TRACE(ggml_type_name(t));
        const MatmulCase c{t, 12, 1, 1};
        std::vector<float> wf(12, 0.0f);
        wf[0] = 100.0f;
        wf[3] = 0.75f;
        wf[8] = 1.0f;
        std::vector<uint8_t> w(ggml_row_size(t, 12));
        for (int i = 0; i < 12; ++i) {
            if (t == GGML_TYPE_F32) std::memcpy(&w[4 * i], &wf[i], 4);
            if (t == GGML_TYPE_F16) put_half(&w[2 * i], wf[i]);
            if (t == GGML_TYPE_BF16) { const uint16_t v = float_to_bf16(wf[i]); std::memcpy(&w[2 * i], &v, 2); }
        }
        const std::vector<float> x(12, 1.0f);
        EXPECT_EQ(contract_reference_bfp16(c, w, x)[0], 102.0f);
    }
}

// ---- Legacy blocks ----

// d = 1 + 2^-10 is a half but not a bf16 (d_hi = 1, d_lo = 2^-10): with both parts every w of Q4_0,
// Q5_0 and Q8_0 is the exact d (q - z); one bf16 d would give q - z.
TEST(Bfp16DequantLegacy, ZeroOffsetTypesAreExact) {
    const float d = 1.0f + 0x1p-10f;
    int c4[32], c5[32], c8[32];
    for (int i = 0; i < 32; ++i) {
        c4[i] = i % 16;
        c5[i] = (7 * i) % 32;
        c8[i] = i == 0 ? -128 : i == 1 ? 127 : 8 * i - 128;
    }
    float w[32];
    ref_bfp16_dequant_legacy_block(GGML_TYPE_Q4_0, legacy_block(GGML_TYPE_Q4_0, d, 0.0f, c4).data(), w);
    for (int i = 0; i < 32; ++i) {
        ASSERT_EQ(w[i], double(d) * (c4[i] - 8)) << "Q4_0 value " << i;
        if (c4[i] != 8) ASSERT_NE(w[i], float(c4[i] - 8));
    }
    EXPECT_EQ(w[0], -8.0078125f);  // -8 (1 + 2^-10)
    ref_bfp16_dequant_legacy_block(GGML_TYPE_Q5_0, legacy_block(GGML_TYPE_Q5_0, d, 0.0f, c5).data(), w);
    for (int i = 0; i < 32; ++i) ASSERT_EQ(w[i], double(d) * (c5[i] - 16)) << "Q5_0 value " << i;
    EXPECT_EQ(w[5], -13.0126953125f);  // code 35 % 32 = 3: -13 (1 + 2^-10)
    ref_bfp16_dequant_legacy_block(GGML_TYPE_Q8_0, legacy_block(GGML_TYPE_Q8_0, d, 0.0f, c8).data(), w);
    for (int i = 0; i < 32; ++i) ASSERT_EQ(w[i], double(d) * c8[i]) << "Q8_0 value " << i;
    EXPECT_EQ(w[0], -128.125f);
    EXPECT_EQ(w[1], 127.1240234375f);
}

// Q4_1 / Q5_1 with d and m of nearby exponents: w = d q + m exactly (every partial sum fits 24 bits).
// d = 0.1 and m = -1.3 as halves are not bf16 values: both need their two parts.
TEST(Bfp16DequantLegacy, MinTypesAreExactForNearbyExponents) {
    const float d = half_to_float(float_to_half(0.1f)), m = half_to_float(float_to_half(-1.3f));
    int code[32];
    for (int i = 0; i < 32; ++i) code[i] = (5 * i + 3) % 32;
    int c4[32];
    for (int i = 0; i < 32; ++i) c4[i] = code[i] % 16;
    float w[32];
    ref_bfp16_dequant_legacy_block(GGML_TYPE_Q4_1, legacy_block(GGML_TYPE_Q4_1, d, m, c4).data(), w);
    for (int i = 0; i < 32; ++i) ASSERT_EQ(w[i], double(d) * c4[i] + double(m)) << "Q4_1 value " << i;
    ref_bfp16_dequant_legacy_block(GGML_TYPE_Q5_1, legacy_block(GGML_TYPE_Q5_1, d, m, code).data(), w);
    for (int i = 0; i < 32; ++i) ASSERT_EQ(w[i], double(d) * code[i] + double(m)) << "Q5_1 value " << i;
}

// The order of the roundings with m far above d: d = 2^-16 (a subnormal half), m = 65504 (m_hi =
// 65536, m_lo = -32). o = -128 d + m_hi = 65536 - 2^-9 is a tie that rounds to 65536, then o + m_lo =
// 65504 exactly. Code 0: 65504 + 128 d = 65504 + 2^-9, a tie again (ulp 2^-8), to even: 65504. Code 1:
// 65504 + 129 d, above the half ulp: 65504 + 2^-8, where the exact d + m rounds (once) to 65504.
TEST(Bfp16DequantLegacy, OffsetAndMinRoundBeforeTheCodeIsAdded) {
    int code[32] = {};
    code[1] = 1;
    const std::vector<uint8_t> b = legacy_block(GGML_TYPE_Q4_1, 0x1p-16f, 65504.0f, code);
    float w[32];
    ref_bfp16_dequant_legacy_block(GGML_TYPE_Q4_1, b.data(), w);
    EXPECT_EQ(exact_weights(GGML_TYPE_Q4_1, b.data())[1], 65504.0 + 0x1p-16);
    EXPECT_EQ(static_cast<float>(65504.0 + 0x1p-16), 65504.0f);
    EXPECT_EQ(w[0], 65504.0f);
    EXPECT_EQ(w[1], 65504.0f + 0x1p-8f);
}

// A legacy matmul's 32-value blocks land in the bfp16 blocks of their K positions: K = 64 with the
// second legacy block's weights all 2 (d = 2, code 9 of Q4_0) and the first's 0.
TEST(Bfp16DequantLegacy, BlocksInKOrderInTheMatmul) {
    int zero[32], nine[32];
    for (int i = 0; i < 32; ++i) zero[i] = 8, nine[i] = 9;
    std::vector<uint8_t> w = legacy_block(GGML_TYPE_Q4_0, 1.0f, 0.0f, zero);
    const std::vector<uint8_t> b2 = legacy_block(GGML_TYPE_Q4_0, 2.0f, 0.0f, nine);
    w.insert(w.end(), b2.begin(), b2.end());
    std::vector<float> x(64, 0.0f);
    for (int i = 0; i < 64; ++i) x[i] = i < 32 ? 1000.0f : 0.25f;
    const std::vector<float> got = contract_reference_bfp16(MatmulCase{GGML_TYPE_Q4_0, 64, 1, 1}, w, x);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], 16.0f);  // 32 x 2 x 0.25; the first block's weights are 0
}

// ---- Whole matmuls ----

// Weights all 1 (d = 0.5, sc = 2, code 1), activations 2^21 in the first K block (D = 2^24) and 1/8
// elsewhere (D = 1): each c + 1 is a tie that stays at 2^24, so K order gives 2^24, where the exact
// sum is 2^24 + 31 and adding the small blocks first would give 2^24 + 32.
TEST(Bfp16Matmul, BlocksAreAddedInKOrderOneRoundingEach) {
    int sc[8], mn[8] = {}, code[256];
    for (int j = 0; j < 8; ++j) sc[j] = 2;
    for (int v = 0; v < 256; ++v) code[v] = 1;
    const MatmulCase c{GGML_TYPE_Q4_K, 256, 1, 1};
    const std::vector<uint8_t> w = k4_block(c.wtype, 0.5f, 0.0f, sc, mn, code);
    std::vector<float> x(256, 0.125f);
    for (int i = 0; i < 8; ++i) x[i] = 0x1p21f;
    EXPECT_EQ(contract_reference_bfp16(c, w, x)[0], 0x1p24f);
}

TEST(Bfp16Matmul, TokenWithNanOrInfinityGivesNanRow) {
    for (ggml_type t : {GGML_TYPE_Q4_K, GGML_TYPE_Q6_K}) {
        SCOPED_TRACE(testing::Message() << ggml_type_name(t) << " seed=" << test_seed());
        const MatmulCase c{t, 512, 6, 3};
        const std::vector<uint8_t> w = random_weights(t, c.k, c.m);
        const std::vector<float> clean = random_floats(activation_count(c));
        std::vector<float> x = clean;
        x[0 * c.k + 300] = std::numeric_limits<float>::quiet_NaN();
        x[2 * c.k + 7] = -std::numeric_limits<float>::infinity();
        const std::vector<float> want = contract_reference_bfp16(c, w, clean);
        const std::vector<float> got = contract_reference_bfp16(c, w, x);
        for (int64_t r = 0; r < c.m; ++r) {
            EXPECT_TRUE(std::isnan(got[0 * c.m + r]));
            EXPECT_TRUE(std::isnan(got[2 * c.m + r]));
            EXPECT_EQ(got[1 * c.m + r], want[1 * c.m + r]);  // the other tokens are untouched
        }
    }
}

// F16 / BF16 src1 is rounded to its type first: the same as F32 src1 holding the rounded values.
TEST(Bfp16Matmul, HalfSrc1IsRoundedFirst) {
    MatmulCase c{GGML_TYPE_Q5_K, 256, 4, 2};
    const std::vector<uint8_t> w = random_weights(c.wtype, c.k, c.m);
    const std::vector<float> x = random_floats(activation_count(c));
    for (ggml_type xt : {GGML_TYPE_F16, GGML_TYPE_BF16}) {
        std::vector<float> rounded(x);
        for (auto & v : rounded) v = xt == GGML_TYPE_F16 ? half_to_float(float_to_half(v)) : bf16_to_float(float_to_bf16(v));
        c.xtype = GGML_TYPE_F32;
        const std::vector<float> want = contract_reference_bfp16(c, w, rounded);
        c.xtype = xt;
        EXPECT_EQ(contract_reference_bfp16(c, w, x), want) << ggml_type_name(xt);
    }
}

// Slices broadcast over weight matrices as ggml_mul_mat does: each slice equals the one-matrix case.
TEST(Bfp16Matmul, SlicesUseTheirBroadcastMatrix) {
    const MatmulCase c{GGML_TYPE_Q4_K, 256, 3, 2, /*w_ne2=*/2, /*w_ne3=*/1, /*bcast2=*/2};
    const std::vector<uint8_t> w = random_weights(c.wtype, c.k, c.m * c.w_ne2);
    const std::vector<float> x = random_floats(activation_count(c));
    const std::vector<float> got = contract_reference_bfp16(c, w, x);
    const size_t mat_bytes = ggml_row_size(c.wtype, c.k) * c.m;
    for (int64_t s = 0; s < 4; ++s) {
        const int64_t mat = s / 2;
        const std::vector<uint8_t> wm(w.begin() + mat * mat_bytes, w.begin() + (mat + 1) * mat_bytes);
        const std::vector<float> xs(x.begin() + s * c.n * c.k, x.begin() + (s + 1) * c.n * c.k);
        const std::vector<float> one = contract_reference_bfp16(MatmulCase{c.wtype, c.k, c.m, c.n}, wm, xs);
        for (int64_t i = 0; i < c.n * c.m; ++i) EXPECT_EQ(got[s * c.n * c.m + i], one[i]) << "slice " << s;
    }
}

// Against the fp64 value of ggml's dequantized weights times the fp32 activations. Both operands lose
// their bits below the block's largest value's 2^-6 unit, so for Gaussian data the NMSE is of the
// order 1e-4; the reference must come close to that but not be exact (which would mean it skipped
// the bfp16 roundings). Measured (K = 2048, 64 rows, 16 tokens, 30 seeds): 7.2e-5 ... 9.9e-5 for each
// of Q4_K, Q5_K, Q6_K (mean 8.6e-5 ... 8.8e-5; the test prints its own); the legacy types Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0 (6 seeds): 7.6e-5 ... 9.5e-5 each; the bounds are 3e-4 (3x the largest) and 2e-5
// (a quarter of the smallest).
class Bfp16Accuracy : public ::testing::TestWithParam<ggml_type> {};

TEST_P(Bfp16Accuracy, NmseAgainstFp64DequantizedWeightsIsBfp16Sized) {
    const ggml_type t = GetParam();
    SCOPED_TRACE(testing::Message() << ggml_type_name(t) << " seed=" << test_seed());
    const MatmulCase c{t, 2048, 64, 16};
    const std::vector<uint8_t> w = random_weights(t, c.k, c.m);
    const std::vector<float> x = random_floats(activation_count(c));
    const std::vector<float> got = contract_reference_bfp16(c, w, x);

    const size_t row = ggml_row_size(t, c.k), bs = ggml_type_size(t);
    std::vector<double> wd(static_cast<size_t>(c.m * c.k));
    for (int64_t r = 0; r < c.m; ++r) {
        if (bfp16_reference_is_float(t)) {  // the stored values (F16 / BF16 widen exactly)
            for (int64_t i = 0; i < c.k; ++i) wd[r * c.k + i] = ref_bfp16_float_weight(t, w.data() + r * row, i);
            continue;
        }
        const int bv = bfp16_reference_block_values(t);
        for (int64_t sb = 0; sb < c.k / bv; ++sb) {
            const std::vector<double> e = exact_weights(t, w.data() + r * row + sb * bs);
            std::copy(e.begin(), e.end(), wd.begin() + r * c.k + sb * bv);
        }
    }
    std::vector<double> want(got.size());
    for (int64_t tok = 0; tok < c.n; ++tok) {
        for (int64_t r = 0; r < c.m; ++r) {
            double acc = 0.0;
            for (int64_t i = 0; i < c.k; ++i) acc += wd[r * c.k + i] * x[tok * c.k + i];
            want[tok * c.m + r] = acc;
        }
    }
    const double e = nmse(want, got);
    std::printf("bfp16 reference %s: NMSE vs fp64 dequantized weights %.3g\n", ggml_type_name(t), e);
    RecordProperty(std::string("nmse_") + ggml_type_name(t), testing::PrintToString(e));
    EXPECT_LT(e, 3e-4);
    EXPECT_GT(e, 2e-5);
}

INSTANTIATE_TEST_SUITE_P(KQuants, Bfp16Accuracy,
                         ::testing::Values(GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
                                           GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0,
                                           GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_F32),
                         [](const testing::TestParamInfo<ggml_type> & i) { return std::string(ggml_type_name(i.param)); });

}  // namespace
