// aie::mmul on the AIE2P shapes, against plain loops over explicitly constructed matrices.
#include "aie_api_test_support.h"

#include <cfenv>
#include <cmath>
#include <cstdint>

namespace {

// Packs row-major int4 values (-8..7) two per byte, element 2i in the low nibble.
template <int N> void pack_int4(const int (&v)[N], uint8_t * bytes) {
    for (int i = 0; i < N; i += 2) bytes[i / 2] = uint8_t((v[i] & 0xf) | ((v[i + 1] & 0xf) << 4));
}

}  // namespace

TEST_F(AieApi, MmulInt8xInt4Formula) {
    // A[m][k] = m + 1, B[k][n] = n - 8: C[m][n] = 16 (m + 1) (n - 8).
    alignas(64) int8 a[64];
    int b[256];
    alignas(64) uint8_t bp[128];
    for (int m = 0; m < 4; ++m)
        for (int k = 0; k < 16; ++k) a[m * 16 + k] = int8(m + 1);
    for (int k = 0; k < 16; ++k)
        for (int n = 0; n < 16; ++n) b[k * 16 + n] = n - 8;
    pack_int4(b, bp);
    aie::mmul<4, 16, 16, int8, int4> mm;
    mm.mul(aie::load_v<64>(a), aie::load_v<256>(reinterpret_cast<const int4 *>(bp)));
    const auto c = mm.to_vector<int32>();
    EXPECT_EQ(c[0 * 16 + 0], -128);   // 16 * 1 * -8
    EXPECT_EQ(c[0 * 16 + 15], 112);   // 16 * 1 * 7
    EXPECT_EQ(c[3 * 16 + 0], -512);   // 16 * 4 * -8
    EXPECT_EQ(c[2 * 16 + 8], 0);
    EXPECT_EQ(c[3 * 16 + 15], 448);
}

TEST_F(AieApi, MmulInt8xInt4MatchesLoops) {
    int av[64], bv[256];
    for (int m = 0; m < 4; ++m)
        for (int k = 0; k < 16; ++k) av[m * 16 + k] = (m * 37 + k * 11) % 256 - 128;
    for (int k = 0; k < 16; ++k)
        for (int n = 0; n < 16; ++n) bv[k * 16 + n] = (k * 5 + n * 3) % 16 - 8;
    alignas(64) int8 a[64];
    alignas(64) uint8_t bp[128];
    for (int i = 0; i < 64; ++i) a[i] = int8(av[i]);
    pack_int4(bv, bp);
    const auto va = aie::load_v<64>(a);
    const auto vb = aie::load_v<256>(reinterpret_cast<const int4 *>(bp));
    aie::mmul<4, 16, 16, int8, int4> mm;
    mm.mul(va, vb);
    mm.mac(va, vb);  // C = 2 A B
    const aie::accum<acc32, 64> acc = mm.to_accum();
    for (int m = 0; m < 4; ++m)
        for (int n = 0; n < 16; ++n) {
            int s = 0;
            for (int k = 0; k < 16; ++k) s += av[m * 16 + k] * bv[k * 16 + n];
            EXPECT_EQ(acc.lane(m * 16 + n), 2 * s) << m << "," << n;
        }
}

TEST_F(AieApi, MmulUint8xInt4ZeroExtendsA) {
    alignas(64) uint8 a[64];
    int b[256];
    alignas(64) uint8_t bp[128];
    for (int i = 0; i < 64; ++i) a[i] = uint8(200 + i % 16);  // 200..215, negative as int8
    for (int i = 0; i < 256; ++i) b[i] = (i % 16 == 0) ? -1 : 0;  // B[k][0] = -1
    pack_int4(b, bp);
    aie::mmul<4, 16, 16, uint8, int4> mm;
    mm.mul(aie::load_v<64>(a), aie::load_v<256>(reinterpret_cast<const int4 *>(bp)));
    const auto c = mm.to_vector<int32>();
    EXPECT_EQ(c[0], -(200 + 215) * 8);  // -(sum of 200..215)
    EXPECT_EQ(c[1], 0);
}

TEST_F(AieApi, MmulInt8x8x8WithShiftRoundSaturate) {
    int av[64], bv[64];
    for (int i = 0; i < 64; ++i) {
        av[i] = (i * 29) % 256 - 128;
        bv[i] = (i * 13 + 7) % 256 - 128;
    }
    alignas(64) int8 a[64], b[64];
    for (int i = 0; i < 64; ++i) {
        a[i] = int8(av[i]);
        b[i] = int8(bv[i]);
    }
    aie::set_rounding(aie::rounding_mode::conv_even);
    aie::set_saturation(aie::saturation_mode::saturate);
    aie::mmul<8, 8, 8, int8, int8> mm;
    mm.mac(aie::load_v<64>(a), aie::load_v<64>(b));  // first mac on a fresh mmul: zero start
    const auto c8 = mm.to_vector<int8>(9);
    const auto c32 = mm.to_vector<int32>();
    std::fesetround(FE_TONEAREST);
    for (int m = 0; m < 8; ++m)
        for (int n = 0; n < 8; ++n) {
            long s = 0;
            for (int k = 0; k < 8; ++k) s += av[m * 8 + k] * bv[k * 8 + n];
            EXPECT_EQ(c32[m * 8 + n], s);
            const double r = std::nearbyint(double(s) / 512.0);  // halfway to even
            EXPECT_EQ(c8[m * 8 + n], int(r > 127 ? 127 : (r < -128 ? -128 : r))) << m << "," << n;
        }
}

TEST_F(AieApi, MmulInt8x4x8x8) {
    alignas(64) int8 a[32], b[64];
    for (int i = 0; i < 32; ++i) a[i] = int8(i - 16);
    for (int i = 0; i < 64; ++i) b[i] = int8(i % 9 - 4);
    aie::mmul<4, 8, 8, int8, int8> mm;
    mm.mul(aie::load_v<32>(a), aie::load_v<64>(b));
    const auto c = mm.to_vector<int16>();
    for (int m = 0; m < 4; ++m)
        for (int n = 0; n < 8; ++n) {
            int s = 0;
            for (int k = 0; k < 8; ++k) s += (m * 8 + k - 16) * ((k * 8 + n) % 9 - 4);
            EXPECT_EQ(c[m * 8 + n], s);
        }
}

TEST_F(AieApi, MmulBf16x4x8x8ProductsExactAccumulationInKOrder) {
    aie::vector<bfloat16, 32> a;
    aie::vector<bfloat16, 64> b;
    for (int m = 0; m < 4; ++m)
        for (int k = 0; k < 8; ++k) a[m * 8 + k] = bfloat16(float(m + k) * 0.5f + 1.0f);
    for (int k = 0; k < 8; ++k)
        for (int n = 0; n < 8; ++n) b[k * 8 + n] = bfloat16(float(k) - float(n) * 0.25f);
    aie::mmul<4, 8, 8, bfloat16, bfloat16> mm;
    mm.mul(a, b);
    const auto c = mm.to_vector<float>();
    for (int m = 0; m < 4; ++m)
        for (int n = 0; n < 8; ++n) {
            float s = 0.0f;  // small multiples of 1/8: every sum is exact
            for (int k = 0; k < 8; ++k) s += (float(m + k) * 0.5f + 1.0f) * (float(k) - float(n) * 0.25f);
            EXPECT_EQ(c[m * 8 + n], s) << m << "," << n;
        }
    // Order: C += A[:,k] B[k,:] for k = 0..7, one fp32 rounding each: 2^24 + 1 + 1 stays 2^24 (each
    // +1 is a tie broken to even), where adding the ones first would give 2^24 + 2.
    aie::vector<bfloat16, 32> ones;
    for (int k = 0; k < 8; ++k) ones[k] = bfloat16(1.0f);
    aie::vector<bfloat16, 64> col;
    col[0 * 8] = bfloat16(p2(24));
    col[1 * 8] = bfloat16(1.0f);
    col[2 * 8] = bfloat16(1.0f);
    aie::mmul<4, 8, 8, bfloat16, bfloat16> order;
    order.mul(ones, col);
    EXPECT_EQ(order.to_accum().lane(0), p2(24));
}

TEST_F(AieApi, MmulBf16x8x8x8IsTwoFourRowBlocks) {
    aie::vector<bfloat16, 64> a, b;
    for (int i = 0; i < 64; ++i) {
        a[i] = bfloat16(float(i % 7) - 3.0f);
        b[i] = bfloat16(float(i % 5) * 0.5f);
    }
    aie::mmul<8, 8, 8, bfloat16, bfloat16, accfloat> mm(aie::broadcast<float, 64>(1.0f));
    mm.mac(a, b);
    aie::mmul<4, 8, 8, bfloat16, bfloat16> top, bottom;
    top.mul(a.extract<32>(0), b);
    bottom.mul(a.extract<32>(1), b);
    for (int m = 0; m < 8; ++m)
        for (int n = 0; n < 8; ++n) {
            float s = 0.0f;
            for (int k = 0; k < 8; ++k) s += (float((m * 8 + k) % 7) - 3.0f) * (float((k * 8 + n) % 5) * 0.5f);
            EXPECT_EQ(mm.to_accum().lane(m * 8 + n), 1.0f + s) << m << "," << n;
            const auto & half = m < 4 ? top : bottom;
            EXPECT_EQ(half.to_accum().lane((m % 4) * 8 + n), s);
        }
}

TEST_F(AieApi, MmulFloat4x8x4ExactOnSmallIntegers) {
    aie::vector<float, 32> a;
    aie::vector<float, 32> b;
    for (int i = 0; i < 32; ++i) {
        a[i] = float(i % 11) - 5.0f;
        b[i] = float(i % 3) + 2.0f;
    }
    aie::mmul<4, 8, 4, float, float> mm;
    mm.mul(a, b);
    mm.mac(a, b);
    const auto c = mm.to_vector<float>();
    for (int m = 0; m < 4; ++m)
        for (int n = 0; n < 4; ++n) {
            float s = 0.0f;
            for (int k = 0; k < 8; ++k) s += (float((m * 8 + k) % 11) - 5.0f) * (float((k * 4 + n) % 3) + 2.0f);
            EXPECT_EQ(c[m * 4 + n], 2.0f * s) << m << "," << n;
        }
}

TEST_F(AieApi, MmulFloat4x8x4IsTheSafeEmulation) {
    // One nonzero product per C element: C[0][0] = x * y with x = 1 + 2^-12, y = 1 + 2^-12 + 2^-22.
    // The emulation's 16-lane mul/mac_elem_16 are `safe` (nine partial products: test_aie_api_host.cpp
    // ElementwiseMulFloatIsTheSafeEmulation works the sum out): 1 + 2^-11 + 2^-22 + 2^-23, here the
    // IEEE product; the six-product `fast` gives one ulp less, 1 + 2^-11 + 2^-22.
    const float x = 1.0f + p2(-12), y = 1.0f + p2(-12) + p2(-22);
    aie::vector<float, 32> a, b;
    a[0] = x;               // A[0][0]
    b[0] = y;               // B[0][0]
    a[1 * 8 + 3] = 3.0f;    // A[1][3]
    b[3 * 4 + 2] = 0.125f;  // B[3][2]
    aie::mmul<4, 8, 4, float, float> mm;
    mm.mul(a, b);
    EXPECT_EQ(mm.to_accum().lane(0), 1.0f + p2(-11) + p2(-22) + p2(-23));
    EXPECT_NE(mm.to_accum().lane(0), 1.0f + p2(-11) + p2(-22));
    EXPECT_EQ(mm.to_accum().lane(0), x * y);
    EXPECT_EQ(mm.to_accum().lane(1 * 4 + 2), 0.375f);
    // mac adds each k's finished product to C in k order: C = 0.375 + 3 * 0.125 = 0.75.
    mm.mac(a, b);
    EXPECT_EQ(mm.to_accum().lane(1 * 4 + 2), 0.75f);
}

TEST_F(AieApi, MmulConstructedFromVectorOrAccumAndFreshMacIsMul) {
    alignas(64) int8 a[64], b[64];
    for (int i = 0; i < 64; ++i) {
        a[i] = int8(i % 2);
        b[i] = 1;
    }
    using MM = aie::mmul<8, 8, 8, int8, int8>;
    static_assert(MM::size_A == 64 && MM::size_B == 64 && MM::size_C == 64 && MM::M == 8);
    // From a vector of C (the in-place accumulation of mlir-aie's mm.cc): 100 + row sums (4).
    MM c(aie::broadcast<int32, 64>(100));
    c.mac(aie::load_v<64>(a), aie::load_v<64>(b));
    EXPECT_EQ(c.to_accum().lane(0), 104);
    // From an accumulator.
    MM d(c.to_accum());
    d.mac(aie::load_v<64>(a), aie::load_v<64>(b));
    EXPECT_EQ(d.to_accum().lane(63), 108);
    // A default-constructed mmul starts from zero; mul overwrites whatever was there.
    MM e;
    e.mac(aie::load_v<64>(a), aie::load_v<64>(b));
    EXPECT_EQ(e.to_accum().lane(5), 4);
    d.mul(aie::load_v<64>(a), aie::load_v<64>(b));
    EXPECT_EQ(d.to_accum().lane(5), 4);
    // accauto is acc32 for int8 x int8: int8 out through srs.
    static_assert(std::is_same_v<MM::accum_type, aie::accum<acc32, 64>>);
}
