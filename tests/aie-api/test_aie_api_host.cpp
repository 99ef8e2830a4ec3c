// The host aie_api against hand-computed AIE2P semantics: element types, vectors, memory, accumulators
// and their conversions, elementwise operations, masks and shuffles.
#include "aie_api_test_support.h"
#include "core-fp32-reference.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>

// ---------------------------------------------------------------------------------------------
// Element types

TEST_F(AieApi, Int4ScalarKeepsTheLowFourBits) {
    EXPECT_EQ(int(int4(7)), 7);
    EXPECT_EQ(int(int4(-8)), -8);
    EXPECT_EQ(int(int4(8)), -8);    // 0b1000
    EXPECT_EQ(int(int4(-9)), 7);    // ...10111 -> 0111
    EXPECT_EQ(int(int4(0x5f)), -1); // 0xf
    EXPECT_EQ(int(uint4(15)), 15);
    EXPECT_EQ(int(uint4(17)), 1);
    EXPECT_EQ(sizeof(int4), 1u);
}

TEST_F(AieApi, Bfloat16ScalarRoundsToNearestEven) {
    // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: the even neighbour is 1.
    EXPECT_EQ(float(bfloat16(1.0f + p2(-8))), 1.0f);
    // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
    EXPECT_EQ(float(bfloat16(1.0f + 3 * p2(-8))), 1.0f + p2(-6));
    // Just above halfway rounds up.
    EXPECT_EQ(float(bfloat16(1.0f + p2(-8) + p2(-20))), 1.0f + p2(-7));
    EXPECT_EQ(float(bfloat16(-(1.0f + p2(-8)))), -1.0f);
    EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
    EXPECT_EQ(bfloat16(-2.0f).bits, 0xc000);
    bfloat16 b = 1.5f;
    b += 0.25f;
    EXPECT_EQ(float(b), 1.75f);
}

TEST_F(AieApi, TypeNamesAreTheToolchainNames) {
    EXPECT_TRUE((std::is_same_v<int8, int8_t>));
    EXPECT_TRUE((std::is_same_v<uint8, uint8_t>));
    EXPECT_TRUE((std::is_same_v<int16, int16_t>));
    EXPECT_TRUE((std::is_same_v<int32, int32_t>));
    EXPECT_TRUE((std::is_same_v<int4, int4_t>));
    EXPECT_TRUE((std::is_same_v<uint4, uint4_t>));
    EXPECT_EQ((aie::vector<int8>::size()), 64u);  // native 512 bits
    EXPECT_EQ((aie::vector<int4>::size()), 128u);
    EXPECT_EQ((aie::vector<float>::size()), 16u);
}

// ---------------------------------------------------------------------------------------------
// Vectors

TEST_F(AieApi, VectorElementAccessExtractInsertGrow) {
    aie::vector<int16, 8> v(int16(1), int16(2), int16(3));
    EXPECT_EQ(v.get(0), 1);
    EXPECT_EQ(v[2], 3);
    EXPECT_EQ(v[3], 0);
    v.set(-7, 3);
    v[4] = 9;
    EXPECT_EQ(v[3], -7);
    EXPECT_EQ(v[4], 9);
    aie::vector<int16, 4> hi = v.extract<4>(1);
    EXPECT_EQ(hi[0], 9);
    EXPECT_EQ(hi[1], 0);
    aie::vector<int16, 8> w;
    w.insert(1, aie::vector<int16, 4>(int16(5), int16(6), int16(7), int16(8)));
    EXPECT_EQ(w[0], 0);
    EXPECT_EQ(w[4], 5);
    EXPECT_EQ(w[7], 8);
    aie::vector<int16, 16> g = v.grow<16>(1);
    EXPECT_EQ(g[8], 1);
    EXPECT_EQ(g[11], -7);
    EXPECT_EQ(g[0], 0);
    aie::vector<int16, 16> r = hi.grow_replicate<16>();
    EXPECT_EQ(r[4], 9);
    EXPECT_EQ(r[12], 9);
}

TEST_F(AieApi, Int4VectorIsPackedLowNibbleFirst) {
    // Element 2i is the low nibble of byte i, element 2i + 1 the high nibble.
    alignas(64) uint8_t bytes[64] = {0x21, 0xf8, 0x7a};
    const auto v = aie::load_v<128>(reinterpret_cast<const int4 *>(bytes));
    EXPECT_EQ(int(v[0]), 1);
    EXPECT_EQ(int(v[1]), 2);
    EXPECT_EQ(int(v[2]), -8);
    EXPECT_EQ(int(v[3]), -1);
    EXPECT_EQ(int(v[4]), -6);  // 0xa
    EXPECT_EQ(int(v[5]), 7);
    EXPECT_EQ(int(v[6]), 0);
    alignas(64) uint8_t out[64];
    std::memset(out, 0xee, sizeof out);
    aie::vector<int4, 128> w = v;
    w[1] = int4(-3);  // 0xd in the high nibble of byte 0
    aie::store_v(reinterpret_cast<int4 *>(out), w);
    EXPECT_EQ(out[0], 0xd1);
    EXPECT_EQ(out[1], 0xf8);
    EXPECT_EQ(out[2], 0x7a);
    EXPECT_EQ(out[63], 0x00);
}

TEST_F(AieApi, LoadStoreRoundTrip) {
    alignas(64) int32 in[32];
    alignas(64) int32 out[32] = {};
    for (int i = 0; i < 32; ++i) in[i] = 1000 * i - 7;
    const auto v = aie::load_v<16>(in + 16);
    EXPECT_EQ(v[0], 16000 - 7);
    EXPECT_EQ(v[15], 31000 - 7);
    aie::store_v(out, v);
    EXPECT_EQ(out[0], 16000 - 7);
    EXPECT_EQ(out[15], 31000 - 7);
    EXPECT_EQ(out[16], 0);
    aie::vector<int32, 16> w;
    w.load(in);
    EXPECT_EQ(w[3], 2993);
}

TEST_F(AieApi, MisalignedVectorAccessFails) {
    alignas(64) int8 buf[192] = {};
    EXPECT_THROW(aie::load_v<64>(buf + 1), aie_host::misaligned_access);
    EXPECT_THROW(aie::load_v<64>(buf + 32), aie_host::misaligned_access);  // 512 bits need 64 bytes
    EXPECT_NO_THROW(aie::load_v<32>(buf + 32));                            // 256 bits need 32
    EXPECT_THROW(aie::load_v<32>(buf + 16), aie_host::misaligned_access);
    EXPECT_NO_THROW(aie::load_v<16>(buf + 16));                            // 128 bits need 16
    EXPECT_THROW(aie::store_v(buf + 8, aie::vector<int8, 64>()), aie_host::misaligned_access);
    EXPECT_NO_THROW(aie::load_v<128>(buf + 64));                           // 1024 bits need 64
}

TEST_F(AieApi, MisalignedLoadReadsTheAlignedAddressUnderHardwarePolicy) {
    alignas(64) int8 buf[128];
    for (int i = 0; i < 128; ++i) buf[i] = int8(i);
    aie_host::set_alignment_policy(aie_host::alignment_policy::hardware);
    const auto v = aie::load_v<64>(buf + 70);  // the NPU drops the low address bits: reads buf + 64
    EXPECT_EQ(v[0], 64);
    EXPECT_EQ(v[63], 127);
}

TEST_F(AieApi, UnalignedLoadReadsTheGivenAddress) {
    alignas(64) int16 buf[64];
    for (int i = 0; i < 64; ++i) buf[i] = int16(i * 3);
    const auto v = aie::load_unaligned_v<32>(buf + 5);
    EXPECT_EQ(v[0], 15);
    EXPECT_EQ(v[31], 108);
    const auto w = aie::load_unaligned_v<32>(buf + 4, 4);  // 8-byte aligned, as promised
    EXPECT_EQ(w[0], 12);
    EXPECT_THROW(aie::load_unaligned_v<32>(buf + 5, 4), aie_host::misaligned_access);
}

TEST_F(AieApi, VectorIteratorsLoadAndStoreConsecutiveVectors) {
    alignas(64) float in[48];
    alignas(64) float out[48] = {};
    for (int i = 0; i < 48; ++i) in[i] = float(i) + 0.5f;
    auto it = aie::begin_vector<16>(static_cast<const float *>(in));
    auto ot = aie::begin_vector<16>(out);
    for (int i = 0; i < 3; ++i) *ot++ = aie::add(aie::vector<float, 16>(*it++), 1.0f);
    EXPECT_EQ(out[0], 1.5f);
    EXPECT_EQ(out[17], 18.5f);
    EXPECT_EQ(out[47], 48.5f);
    auto ct = aie::cbegin_vector<16>(in);
    EXPECT_EQ(ct[2][1], 33.5f);
}

TEST_F(AieApi, ZerosBroadcastConcat) {
    const auto z = aie::zeros<int32, 16>();
    const auto b = aie::broadcast<int32, 16>(-4);
    for (unsigned i = 0; i < 16; ++i) {
        EXPECT_EQ(z[i], 0);
        EXPECT_EQ(b[i], -4);
    }
    const auto c = aie::concat(z, b, z);
    EXPECT_EQ(c.size(), 48u);
    EXPECT_EQ(c[15], 0);
    EXPECT_EQ(c[16], -4);
    EXPECT_EQ(c[32], 0);
    const auto bf = aie::broadcast<bfloat16, 32>(bfloat16(2.5f));
    EXPECT_EQ(float(bf[31]), 2.5f);
}

TEST_F(AieApi, VectorCastReinterpretsLittleEndianBytes) {
    aie::vector<int32, 16> v;
    v[0] = 0x04030201;
    v[1] = -1;
    const auto b = aie::vector_cast<int8>(v);
    EXPECT_EQ(b.size(), 64u);
    EXPECT_EQ(b[0], 1);
    EXPECT_EQ(b[3], 4);
    EXPECT_EQ(b[4], -1);
    const auto n = v.cast_to<int4>();
    EXPECT_EQ(n.size(), 128u);
    EXPECT_EQ(int(n[0]), 1);  // low nibble of 0x01
    EXPECT_EQ(int(n[1]), 0);
    EXPECT_EQ(int(n[2]), 2);
}

// ---------------------------------------------------------------------------------------------
// Accumulators: ups / srs with the core's rounding and saturation modes

TEST_F(AieApi, ModesResetToFloorAndNone) {
    aie::set_rounding(aie::rounding_mode::conv_even);
    aie::set_saturation(aie::saturation_mode::saturate);
    EXPECT_EQ(aie::swap_rounding(aie::rounding_mode::ceil), aie::rounding_mode::conv_even);
    EXPECT_EQ(aie::get_rounding(), aie::rounding_mode::ceil);
    aie_host::reset_core_state();
    EXPECT_EQ(aie::get_rounding(), aie::rounding_mode::floor);
    EXPECT_EQ(aie::get_saturation(), aie::saturation_mode::none);
    EXPECT_EQ(unsigned(aie::rounding_mode::conv_even), 12u);  // the control-register encoding
}

TEST_F(AieApi, SrsShiftTwoInEveryRoundingMode) {
    // Lanes / 4 = 2.5, -2.5, 1.5, -1.5, 2.25, -2.25, 2.75, -2.75.
    const aie::vector<int32, 8> in(10, -10, 6, -6, 9, -9, 11, -11);
    const aie::accum<acc32, 8> acc(in);
    struct Case {
        aie::rounding_mode mode;
        int expect[8];
    };
    using rm = aie::rounding_mode;
    const Case cases[] = {
        {rm::floor, {2, -3, 1, -2, 2, -3, 2, -3}},
        {rm::ceil, {3, -2, 2, -1, 3, -2, 3, -2}},
        {rm::symmetric_floor, {2, -2, 1, -1, 2, -2, 2, -2}},
        {rm::symmetric_ceil, {3, -3, 2, -2, 3, -3, 3, -3}},
        {rm::negative_inf, {2, -3, 1, -2, 2, -2, 3, -3}},
        {rm::positive_inf, {3, -2, 2, -1, 2, -2, 3, -3}},
        {rm::symmetric_zero, {2, -2, 1, -1, 2, -2, 3, -3}},
        {rm::symmetric_inf, {3, -3, 2, -2, 2, -2, 3, -3}},
        {rm::conv_even, {2, -2, 2, -2, 2, -2, 3, -3}},
        {rm::conv_odd, {3, -3, 1, -1, 2, -2, 3, -3}},
    };
    for (const Case & c : cases) {
        aie::set_rounding(c.mode);
        const auto out16 = acc.to_vector<int16>(2);
        const auto out8 = acc.to_vector<int8>(2);
        for (int i = 0; i < 8; ++i) {
            EXPECT_EQ(out16[i], c.expect[i]) << "mode " << unsigned(c.mode) << " lane " << i;
            EXPECT_EQ(out8[i], c.expect[i]) << "mode " << unsigned(c.mode) << " lane " << i;
        }
    }
}

TEST_F(AieApi, SrsSaturationAtInt8Limits) {
    const aie::vector<int32, 8> in(200, -200, 127, -128, 300, -129, 128, -127);
    const aie::accum<acc32, 8> acc(in);
    const int none[8] = {-56, 56, 127, -128, 44, 127, -128, -127};  // low 8 bits
    const int sat[8] = {127, -128, 127, -128, 127, -128, 127, -127};
    const int sym[8] = {127, -127, 127, -127, 127, -127, 127, -127};
    auto check = [&](const int * expect) {
        const auto v = acc.to_vector<int8>();
        for (int i = 0; i < 8; ++i) EXPECT_EQ(v[i], expect[i]) << "lane " << i;
    };
    check(none);
    aie::set_saturation(aie::saturation_mode::saturate);
    check(sat);
    aie::set_saturation(aie::saturation_mode::symmetric);
    check(sym);
    aie::set_saturation(aie::saturation_mode::saturate);
    const auto u = acc.to_vector<uint8>();
    EXPECT_EQ(u[0], 200);
    EXPECT_EQ(u[1], 0);
    EXPECT_EQ(u[4], 255);
}

TEST_F(AieApi, SrsSaturationAtInt16Limits) {
    const aie::vector<int32, 8> in(40000, -40000, 32767, -32768, 65535, -32769);
    const aie::accum<acc32, 8> acc(in);
    auto v = acc.to_vector<int16>();
    EXPECT_EQ(v[0], -25536);  // 40000 - 65536
    EXPECT_EQ(v[1], 25536);
    EXPECT_EQ(v[4], -1);
    EXPECT_EQ(v[5], 32767);
    aie::set_saturation(aie::saturation_mode::saturate);
    v = acc.to_vector<int16>();
    EXPECT_EQ(v[0], 32767);
    EXPECT_EQ(v[1], -32768);
    EXPECT_EQ(v[2], 32767);
    EXPECT_EQ(v[3], -32768);
    aie::set_saturation(aie::saturation_mode::symmetric);
    v = acc.to_vector<int16>();
    EXPECT_EQ(v[1], -32767);
    EXPECT_EQ(v[3], -32767);
    // 64-bit lanes to int16, shift 8, floor: (1 << 30) >> 8 = 4194304 saturates.
    aie::set_saturation(aie::saturation_mode::saturate);
    const aie::accum<acc64, 8> wide(aie::vector<int32, 8>(1 << 30, -(1 << 20)));
    const auto w = wide.to_vector<int16>(8);
    EXPECT_EQ(w[0], 32767);
    EXPECT_EQ(w[1], -4096);
}

TEST_F(AieApi, Acc32ToInt32IsAPlainMoveAcc64ToInt32Shifts) {
    // aie_api (AIE2P) converts a 32-bit accumulator to int32 by a register move: no shift.
    const aie::accum<acc32, 8> a32(aie::vector<int32, 8>(100, -100));
    const auto v32 = a32.to_vector<int32>(2);
    EXPECT_EQ(v32[0], 100);
    EXPECT_EQ(v32[1], -100);
    aie::set_rounding(aie::rounding_mode::conv_even);
    const aie::accum<acc64, 8> a64(aie::vector<int32, 8>(102, -102));
    const auto v64 = a64.to_vector<int32>(2);
    EXPECT_EQ(v64[0], 26);  // 25.5 -> even 26
    EXPECT_EQ(v64[1], -26);
}

TEST_F(AieApi, FromVectorExtendsAndUpshifts) {
    aie::accum<acc32, 32> a;
    a.from_vector(aie::vector<int16, 32>(int16(3), int16(-3), int16(-32768)), 4);
    EXPECT_EQ(a.lane(0), 48);
    EXPECT_EQ(a.lane(1), -48);
    EXPECT_EQ(a.lane(2), -524288);
    aie::accum<acc32, 64> u(aie::vector<uint8, 64>(uint8(255), uint8(128)));
    EXPECT_EQ(u.lane(0), 255);  // unsigned elements zero-extend
    EXPECT_EQ(u.lane(1), 128);
    aie::accum<acc32, 64> s(aie::vector<int8, 64>(int8(-1), int8(-128)));
    EXPECT_EQ(s.lane(0), -1);
    EXPECT_EQ(s.lane(1), -128);
    aie::accum<acc64, 32> w(aie::vector<int16, 32>(int16(-2)), 40);  // beyond 32 bits
    EXPECT_EQ(w.lane(0), -(int64_t(1) << 41));
}

TEST_F(AieApi, Acc32LanesWrapAtThirtyTwoBits) {
    aie::accum<acc32, 8> a(aie::vector<int32, 8>(0x7fffffff));
    a = aie::add(a, aie::accum<acc32, 8>(aie::vector<int32, 8>(1)));
    EXPECT_EQ(a.lane(0), INT32_MIN);
    aie::accum<acc64, 8> b(aie::vector<int32, 8>(0x7fffffff));
    b = aie::add(b, aie::accum<acc64, 8>(aie::vector<int32, 8>(1)));
    EXPECT_EQ(b.lane(0), int64_t(1) << 31);
}

TEST_F(AieApi, AccfloatToBfloat16FollowsTheRoundingMode) {
    const aie::vector<float, 16> in(1.0f + p2(-8), -(1.0f + p2(-8)), 1.0f + 3 * p2(-8), 1.0f + p2(-9), -(1.0f + p2(-9)));
    aie::accum<accfloat, 16> acc;
    acc.from_vector(in);
    auto v = acc.to_vector<bfloat16>();  // reset mode: floor, toward negative infinity
    EXPECT_EQ(float(v[0]), 1.0f);
    EXPECT_EQ(float(v[1]), -(1.0f + p2(-7)));
    EXPECT_EQ(float(v[2]), 1.0f + p2(-7));
    EXPECT_EQ(float(v[3]), 1.0f);
    EXPECT_EQ(float(v[4]), -(1.0f + p2(-7)));
    aie::set_rounding(aie::rounding_mode::conv_even);
    v = acc.to_vector<bfloat16>();
    EXPECT_EQ(float(v[0]), 1.0f);
    EXPECT_EQ(float(v[1]), -1.0f);
    EXPECT_EQ(float(v[2]), 1.0f + p2(-6));
    EXPECT_EQ(float(v[3]), 1.0f);
    aie::set_rounding(aie::rounding_mode::conv_odd);
    v = acc.to_vector<bfloat16>();
    EXPECT_EQ(float(v[0]), 1.0f + p2(-7));
    EXPECT_EQ(float(v[2]), 1.0f + p2(-7));
    aie::set_rounding(aie::rounding_mode::ceil);
    v = acc.to_vector<bfloat16>();
    EXPECT_EQ(float(v[1]), -1.0f);
    EXPECT_EQ(float(v[3]), 1.0f + p2(-7));
    // float out of an accfloat is exact.
    const aie::vector<float, 16> f = acc.to_vector<float>();
    EXPECT_EQ(f[2], 1.0f + 3 * p2(-8));
}

TEST_F(AieApi, AccumExtractInsertGrowConcat) {
    aie::accum<acc32, 32> a(aie::vector<int16, 32>(int16(1), int16(2)));
    const aie::accum<acc32, 16> lo = a.extract<16>(0);
    EXPECT_EQ(lo.lane(1), 2);
    aie::accum<acc32, 32> b;
    b.insert(1, lo);
    EXPECT_EQ(b.lane(16), 1);
    EXPECT_EQ(b.lane(0), 0);
    const auto g = lo.grow<64>();
    EXPECT_EQ(g.lane(1), 2);
    const auto c = aie::concat(lo, lo);
    EXPECT_EQ(c.lane(17), 2);
    const aie::accum<acc48, 16> w48 = aie::mul(aie::vector<int32, 16>(3), aie::vector<int16, 16>(int16(5)));
    const aie::accum<acc64, 16> w64 = w48;  // acc48 and acc64 share 64-bit lanes
    EXPECT_EQ(w64.lane(0), 15);
}

// ---------------------------------------------------------------------------------------------
// Elementwise multiply

TEST_F(AieApi, ElementwiseMulInt16GivesAcc32) {
    aie::vector<int16, 32> a, b;
    for (int i = 0; i < 32; ++i) {
        a[i] = int16(i - 16);
        b[i] = int16(1000 + i);
    }
    auto acc = aie::mul(a, b);
    static_assert(std::is_same_v<decltype(acc), aie::accum<acc32, 32>>);
    EXPECT_EQ(acc.lane(0), -16 * 1000);
    EXPECT_EQ(acc.lane(31), 15 * 1031);
    acc = aie::mac(acc, a, a);
    EXPECT_EQ(acc.lane(0), -16000 + 256);
    acc = aie::msc(acc, a, b);
    EXPECT_EQ(acc.lane(0), 256);
    const auto p = aie::mul(aie::vector<int16, 32>(int16(32767)), aie::vector<int16, 32>(int16(-32768)));
    EXPECT_EQ(p.lane(0), -1073709056);  // 32767 * -32768 fits 32 bits
}

TEST_F(AieApi, ElementwiseMulInt32ByInt16GivesSixtyFourBitLanes) {
    const aie::vector<int32, 16> a(1 << 30, -(1 << 30), 7);
    const aie::vector<int16, 16> b(int16(1 << 14), int16(1 << 14), int16(-3));
    const auto acc = aie::mul(a, b);
    static_assert(std::is_same_v<decltype(acc), const aie::accum<acc48, 16>>);
    EXPECT_EQ(acc.lane(0), int64_t(1) << 44);
    EXPECT_EQ(acc.lane(1), -(int64_t(1) << 44));
    EXPECT_EQ(acc.lane(2), -21);
    const auto v = acc.to_vector<int32>(20);
    EXPECT_EQ(v[0], 1 << 24);
    const auto e = aie::mul<acc64>(aie::vector<int16, 16>(int16(-4)), aie::vector<int16, 16>(int16(5)));
    EXPECT_EQ(e.lane(0), -20);
}

TEST_F(AieApi, ElementwiseMulByScalar) {
    const aie::vector<int16, 32> v(int16(2), int16(-3));
    const auto a = aie::mul(v, int16(7));
    const auto b = aie::mul(int16(7), v);
    EXPECT_EQ(a.lane(0), 14);
    EXPECT_EQ(b.lane(1), -21);
    auto c = aie::mac(a, v, int16(1));
    EXPECT_EQ(c.lane(0), 16);
    c = aie::msc(c, int16(8), v);
    EXPECT_EQ(c.lane(0), 0);
}

TEST_F(AieApi, ElementwiseMulBfloat16IsExactInFp32) {
    const bfloat16 x = 1.0f + p2(-7);
    const aie::vector<bfloat16, 32> v = aie::broadcast<bfloat16, 32>(x);
    auto acc = aie::mul(v, v);
    static_assert(std::is_same_v<decltype(acc), aie::accum<accfloat, 32>>);
    EXPECT_EQ(acc.lane(0), 1.0f + p2(-6) + p2(-14));  // no rounding to bf16 in the accumulator
    acc = aie::mac(acc, v, aie::broadcast<bfloat16, 32>(bfloat16(-1.0f)));
    EXPECT_EQ(acc.lane(5), p2(-7) + p2(-14));
}

// float x float aie::mul is Peano's `safe` emulation (host/fp32-emulation.hpp): operands split into
// three bf16 parts in the current rounding mode, all nine exact partial products added smallest first.
TEST_F(AieApi, ElementwiseMulFloatIsTheSafeEmulation) {
    // x = 1 + 2^-12 splits (floor) into 1, 2^-12, 0; y = 1 + 2^-12 + 2^-22 into 1, 2^-12, 2^-22.
    // Products smallest first: b*f = 2^-34, a*f = 2^-22, b*e = 2^-24, b*d = a*e = 2^-12, a*d = 1; the
    // partial sums are exact up to the last add, 1 + (2^-11 + 2^-22 + 2^-24 + 2^-34), which rounds up
    // (the part below 2^-23 exceeds half an ulp): 1 + 2^-11 + 2^-22 + 2^-23, the IEEE product.
    // The six-product `fast` (the 16-lane intrinsic; the host's default before) drops b*f = 2^-34 and
    // lands on an exact tie that rounds to even, one ulp lower: 1 + 2^-11 + 2^-22.
    const float x = 1.0f + p2(-12), y = 1.0f + p2(-12) + p2(-22);
    const float safe = 1.0f + p2(-11) + p2(-22) + p2(-23), fast6 = 1.0f + p2(-11) + p2(-22);
    ASSERT_EQ(x * y, safe);
    const aie::vector<float, 16> vx = aie::broadcast<float, 16>(x), vy = aie::broadcast<float, 16>(y);
    EXPECT_EQ(aie::mul(vx, vy).lane(0), safe);
    EXPECT_NE(aie::mul(vx, vy).lane(15), fast6);
    EXPECT_EQ(aie::mul(vx, y).lane(7), safe);  // scalar operand: broadcast first
    // mac / msc add the finished product to the incoming accumulator (subtract it): exact here;
    // negmul negates it.
    const aie::accum<accfloat, 16> one(aie::broadcast<float, 16>(1.0f)), minus_one(aie::broadcast<float, 16>(-1.0f));
    EXPECT_EQ(aie::mac(minus_one, vx, vy).lane(3), p2(-11) + p2(-22) + p2(-23));
    EXPECT_EQ(aie::msc(one, vx, vy).lane(3), -(p2(-11) + p2(-22) + p2(-23)));
    EXPECT_EQ(aie::negmul(vx, vy).lane(9), -safe);
    // Not commutative: the partial products are added in an order fixed by operand position (b*f
    // before a*f, c*d after b*e). For x = -1.0313646793365479, y = 1.8317351341247559 (a pair found by
    // random search) x * y gives the IEEE product and y * x one ulp less in magnitude.
    const float u = -1.0313646793365479f, w = 1.8317351341247559f;
    EXPECT_EQ(aie::mul(aie::broadcast<float, 16>(u), aie::broadcast<float, 16>(w)).lane(0), -0x1.e3a1c2p+0f);
    EXPECT_EQ(aie::mul(aie::broadcast<float, 16>(w), aie::broadcast<float, 16>(u)).lane(0), -0x1.e3a1cp+0f);
}

TEST_F(AieApi, ElementwiseMulFloatSplitsInTheCurrentRoundingMode) {
    // x = -(1.75 + 2^-12), y = 1 + 3 * 2^-22 (y splits into 1, 3 * 2^-22, 0 in either mode).
    // floor (reset): a = -(1.75 + 2^-7), b = 2^-7 - 2^-12 = 31 * 2^-12, c = 0. Products: b*e = 93 * 2^-34,
    //   b*d = 31 * 2^-12, a*e = -675 * 2^-29, a*d = -(1.75 + 2^-7). 93 * 2^-34 + 31 * 2^-12 rounds to
    //   31 * 2^-12 + 96 * 2^-34 (ulp 2^-31); + a*e = 126955 * 2^-24 exactly; + a*d = -29364245 * 2^-24,
    //   a tie at ulp 2^-23 that goes to the even -14682122 * 2^-23 = -0x1.c01014p+0.
    // conv_even: a = -1.75, b = -2^-12, c = 0. Products: b*e = -3 * 2^-34, b*d = -2^-12, a*e = -21 * 2^-24,
    //   a*d = -1.75; exact up to the last add, -(1.75 + 2^-12 + 21 * 2^-24 + 3 * 2^-34), which is
    //   14682122.5015 ulps and rounds to -14682123 * 2^-23 = -0x1.c01016p+0 (the IEEE product).
    const float x = -(1.75f + p2(-12)), y = 1.0f + 3.0f * p2(-22);
    const float in_floor = -0x1.c01014p+0f, in_conv_even = -0x1.c01016p+0f;
    ASSERT_EQ(x * y, in_conv_even);
    const aie::vector<float, 32> vx = aie::broadcast<float, 32>(x), vy = aie::broadcast<float, 32>(y);
    EXPECT_EQ(aie::mul(vx, vy).lane(0), in_floor);
    aie::set_rounding(aie::rounding_mode::conv_even);
    EXPECT_EQ(aie::mul(vx, vy).lane(31), in_conv_even);
}

// aie::mul on float vectors runs all lanes through fp32_mul_safe_lanes (branch-free, for speed); it must
// give the scalar fp32_mul_safe's bits in every mode, on random values over the whole exponent range,
// subnormals, zeros of both signs, infinities, NaNs (as NaN: the host's NaN sign is its own) and values whose bf16 split lands on a tie.
TEST_F(AieApi, ElementwiseMulFloatLanesMatchTheScalarSafeProduct) {
    std::mt19937 g(777);
    std::uniform_int_distribution<uint32_t> bits;
    const float specials[] = {0.0f, -0.0f, __builtin_inff(), -__builtin_inff(), __builtin_nanf(""), 0x1p-149f, -0x1p-140f,
                              0x1.008p+0f, -0x1.018p+3f, 0x1.0080008p+0f, 0x1.fffffep+127f, -0x1.fffffep+127f, 0x1.ff8p+127f};
    const aie::rounding_mode modes[] = {aie::rounding_mode::floor, aie::rounding_mode::conv_even, aie::rounding_mode::symmetric_inf,
                                        aie::rounding_mode::ceil};
    for (const aie::rounding_mode m : modes) {
        aie::set_rounding(m);
        for (int rep = 0; rep < 400; ++rep) {
            aie::vector<float, 32> a, b;
            for (unsigned i = 0; i < 32; ++i) {
                uint32_t ua = bits(g), ub = bits(g);
                if (rep % 3 == 1) ua = (ua & 0xffff0000u) | 0x8000u;  // a tie in the first split
                if (rep % 3 == 2) ub = (ub & 0x807fffffu) | 0x3f000000u;  // near 1
                float fa, fb;
                std::memcpy(&fa, &ua, 4);
                std::memcpy(&fb, &ub, 4);
                a[i] = fa;
                b[i] = fb;
            }
            if (rep < 13) {
                a[rep % 32] = specials[rep];
                for (unsigned i = 0; i < 13; ++i) b[i + 16] = specials[i];
            }
            const auto r = aie::mul(a, b);
            const auto neg = aie::negmul(a, b);
            for (unsigned i = 0; i < 32; ++i) {
                const float want = aie_host::detail::fp32_mul_safe(float(a[i]), float(b[i]), m);
                uint32_t got_bits, want_bits, neg_bits, want_neg;
                const float got = r.lane(i), got_neg = neg.lane(i), wn = -want;
                std::memcpy(&got_bits, &got, 4);
                std::memcpy(&want_bits, &want, 4);
                std::memcpy(&neg_bits, &got_neg, 4);
                std::memcpy(&want_neg, &wn, 4);
                if (std::isnan(want)) {  // which NaN the host's own float ops give is not the core's business
                    ASSERT_TRUE(std::isnan(got) && std::isnan(got_neg));
                    continue;
                }
                ASSERT_EQ(got_bits, want_bits) << float(a[i]) << " * " << float(b[i]) << " mode " << int(m);
                ASSERT_EQ(neg_bits, want_neg) << float(a[i]) << " * " << float(b[i]) << " mode " << int(m);
            }
        }
    }
}

// The order of the nine partial products (aie2p_vmult.h), pinned by constructed operands: each witness
// pair's product changes by an ulp if two neighbouring terms are swapped (tests/common/core-fp32-reference.h).
// Random operands almost never tell two small terms apart, so the lane test above would not notice such
// a swap. Both the vector lanes and the scalar product are checked, against the test reference too.
TEST_F(AieApi, ElementwiseMulFloatAddsThePartialProductsInTheHeadersOrder) {
    for (const xdna_test::SafeOrderWitness & w : xdna_test::kSafeOrderWitnesses) {
        ASSERT_NE(w.want, w.swapped) << w.swap;
        ASSERT_EQ(xdna_test::safe_mul(w.x, w.y), w.want) << w.swap;
        const auto r = aie::mul(aie::broadcast<float, 32>(w.x), aie::broadcast<float, 32>(w.y));
        for (unsigned i = 0; i < 32; ++i) ASSERT_EQ(r.lane(i), w.want) << w.swap << ", lane " << i;
        EXPECT_EQ(aie_host::detail::fp32_mul_safe(w.x, w.y, aie::rounding_mode::floor), w.want) << w.swap;
    }
}

// The 32-lane `fast` intrinsic: the same nine products in a chain of MACs.
TEST_F(AieApi, Fp32FastIntrinsicIsTheSafeProductWithFusedAdds) {
    const float x = 1.0f + p2(-12), y = 1.0f + p2(-12) + p2(-22);
    const aie::accum<accfloat, 32> r(mul_elem_32_accuracy_fast(aie::broadcast<float, 32>(x), aie::broadcast<float, 32>(y)));
    EXPECT_EQ(r.lane(0), 1.0f + p2(-11) + p2(-22) + p2(-23));  // nine products: not the six-product value
    aie::set_rounding(aie::rounding_mode::conv_even);
    const float u = -(1.75f + p2(-12)), v = 1.0f + 3.0f * p2(-22);
    EXPECT_EQ((aie::accum<accfloat, 32>(mul_elem_32_accuracy_fast(aie::broadcast<float, 32>(u), aie::broadcast<float, 32>(v)))).lane(5), -0x1.c01016p+0f);
    aie::set_rounding(aie::rounding_mode::floor);
    EXPECT_EQ((aie::accum<accfloat, 32>(mul_elem_32_accuracy_fast(aie::broadcast<float, 32>(u), aie::broadcast<float, 32>(v)))).lane(5), -0x1.c01014p+0f);
    // Every partial product of normal-range operands is exact in fp32, so a MAC and a multiply
    // followed by an add round alike: the safe value, bit for bit.
    std::mt19937 g(12345);
    std::uniform_real_distribution<float> mant(-2.0f, 2.0f);
    std::uniform_int_distribution<int> ex(-40, 40);
    aie::vector<float, 32> a, b;
    for (int rep = 0; rep < 200; ++rep) {
        for (unsigned i = 0; i < 32; ++i) {
            a[i] = std::ldexp(mant(g), ex(g));
            b[i] = std::ldexp(mant(g), ex(g));
        }
        const aie::accum<accfloat, 32> fast(mul_elem_32_accuracy_fast(a, b));
        const auto safe = aie::mul(a, b);
        for (unsigned i = 0; i < 32; ++i) ASSERT_EQ(fast.lane(i), safe.lane(i)) << a[i] << " * " << b[i];
    }
    // They part only where a partial product falls below the normal range and a separate multiply
    // loses its low bits: here the products below 2^-130 (found by search over 1 + 2^-i + 2^-j values).
    const float tx = 0x1.00402p-70f, ty = 0x1.00402p-60f;
    EXPECT_EQ(aie::mul(aie::broadcast<float, 32>(tx), aie::broadcast<float, 32>(ty)).lane(0), 0x1.00804p-130f);
    EXPECT_EQ((aie::accum<accfloat, 32>(mul_elem_32_accuracy_fast(aie::broadcast<float, 32>(tx), aie::broadcast<float, 32>(ty)))).lane(0), 0x1.00806p-130f);
}

// ---------------------------------------------------------------------------------------------
// Add, sub, neg, abs, min, max, reductions

TEST_F(AieApi, AddSubWrapIntegersAndRoundBfloat16) {
    const auto s = aie::add(aie::broadcast<int8, 64>(100), aie::broadcast<int8, 64>(100));
    EXPECT_EQ(s[0], -56);
    const auto d = aie::sub(aie::broadcast<int32, 16>(INT32_MIN), 1);
    EXPECT_EQ(d[0], INT32_MAX);
    const auto f = aie::add(aie::broadcast<float, 16>(0.5f), aie::broadcast<float, 16>(p2(-30)));
    EXPECT_EQ(f[0], 0.5f);  // fp32 rounding
    const auto g = aie::sub(3.0f, aie::broadcast<float, 16>(0.25f));
    EXPECT_EQ(g[15], 2.75f);
    // bf16 add rounds the fp32 sum with the core's mode: 1 + 2^-8 floors to 1, conv_even too.
    const auto one = aie::broadcast<bfloat16, 32>(bfloat16(1.0f)), e = aie::broadcast<bfloat16, 32>(bfloat16(p2(-8)));
    EXPECT_EQ(float(aie::add(one, e)[0]), 1.0f);
    aie::set_rounding(aie::rounding_mode::ceil);
    EXPECT_EQ(float(aie::add(one, e)[0]), 1.0f + p2(-7));
}

TEST_F(AieApi, AccumulatorAddSub) {
    const aie::accum<acc32, 16> a(aie::vector<int32, 16>(5, -5));
    const aie::accum<acc32, 16> b(aie::vector<int32, 16>(3, 3));
    EXPECT_EQ(aie::add(a, b).lane(0), 8);
    EXPECT_EQ(aie::sub(a, b).lane(1), -8);
    EXPECT_EQ(aie::add(a, aie::vector<int16, 16>(int16(-10))).lane(0), -5);
    EXPECT_EQ(aie::neg(a).lane(1), 5);
    const aie::accum<accfloat, 16> f(aie::broadcast<float, 16>(1.5f));
    EXPECT_EQ(aie::add(f, f).lane(7), 3.0f);
}

TEST_F(AieApi, NegAbsMaxMin) {
    const aie::vector<int8, 64> v(int8(-128), int8(-5), int8(7));
    const auto n = aie::neg(v);
    EXPECT_EQ(n[0], -128);  // wraps
    EXPECT_EQ(n[1], 5);
    const auto a = aie::abs(v);
    EXPECT_EQ(a[0], -128);
    EXPECT_EQ(a[1], 5);
    EXPECT_EQ(a[2], 7);
    const aie::vector<float, 16> f(-2.5f, 3.0f);
    EXPECT_EQ(aie::abs(f)[0], 2.5f);
    EXPECT_EQ(float(aie::neg(aie::broadcast<bfloat16, 32>(bfloat16(1.5f)))[0]), -1.5f);
    const auto mx = aie::max(v, aie::broadcast<int8, 64>(0));
    EXPECT_EQ(mx[0], 0);
    EXPECT_EQ(mx[2], 7);
    const auto mn = aie::min(int8(-6), v);
    EXPECT_EQ(mn[1], -6);
    EXPECT_EQ(mn[0], -128);
    EXPECT_EQ(aie::max(f, 0.0f)[0], 0.0f);
}

TEST_F(AieApi, Reductions) {
    aie::vector<int32, 16> v;
    for (int i = 0; i < 16; ++i) v[i] = i * i - 50;  // sum 1240 - 800
    EXPECT_EQ(aie::reduce_add(v), 440);
    EXPECT_EQ(aie::reduce_max(v), 175);
    EXPECT_EQ(aie::reduce_min(v), -50);
    EXPECT_EQ(aie::reduce_add(aie::broadcast<int8, 64>(4)), 0);  // 256 wraps in int8
    aie::vector<float, 16> f;
    for (int i = 0; i < 16; ++i) f[i] = float(i) * 0.5f;
    EXPECT_EQ(aie::reduce_add(f), 60.0f);
    EXPECT_EQ(aie::reduce_max(f), 7.5f);
    // The halving tree: (2^24 + 1) + (1 + 0) ... pairs lane i with lane i + 8 first.
    aie::vector<float, 16> t;
    t[0] = p2(24);
    t[8] = 1.0f;
    t[4] = 1.0f;
    EXPECT_EQ(aie::reduce_add(t), p2(24));  // each +1 meets 2^24 alone and rounds away
}

// ---------------------------------------------------------------------------------------------
// Bit operations and shifts

TEST_F(AieApi, BitOperations) {
    const aie::vector<uint8, 64> a(uint8(0xf0), uint8(0x3c));
    const aie::vector<uint8, 64> b(uint8(0x0f), uint8(0x55));
    EXPECT_EQ(aie::bit_and(a, b)[1], 0x14);
    EXPECT_EQ(aie::bit_or(a, b)[0], 0xff);
    EXPECT_EQ(aie::bit_xor(a, b)[1], 0x69);
    EXPECT_EQ(aie::bit_not(a)[0], 0x0f);
    EXPECT_EQ(aie::bit_and(uint8(0x30), a)[1], 0x30);
    const aie::vector<int16, 32> s(int16(-1));
    EXPECT_EQ(aie::bit_and(s, aie::broadcast<int16, 32>(0x00ff))[0], 0x00ff);
}

TEST_F(AieApi, Shifts) {
    const aie::vector<int16, 32> v(int16(-256), int16(0x4001), int16(5));
    EXPECT_EQ(aie::downshift(v, 4)[0], -16);  // arithmetic
    EXPECT_EQ(aie::downshift(v, 1)[2], 2);
    EXPECT_EQ(aie::upshift(v, 2)[1], 4);     // 0x10004 keeps the low 16 bits
    EXPECT_EQ(aie::logical_downshift(v, 4)[0], 0x0ff0);
    const aie::vector<uint16, 32> u(uint16(0x8000));
    EXPECT_EQ(aie::downshift(u, 15)[0], 1);  // unsigned: logical
}

// ---------------------------------------------------------------------------------------------
// Pack / unpack

TEST_F(AieApi, Int4UnpackCoversTheRange) {
    alignas(64) uint8_t bytes[32];
    for (int i = 0; i < 32; ++i) bytes[i] = uint8_t((2 * i) % 16 | (((2 * i + 1) % 16) << 4));
    const auto packed = aie::load_v<64>(reinterpret_cast<const int4 *>(bytes));
    const aie::vector<int8, 64> u = aie::unpack(packed);
    // Nibble value n in 0..15 is the int4 n - 16 * (n >= 8): 0..7 then -8..-1.
    for (int i = 0; i < 64; ++i) {
        const int n = i % 16;
        EXPECT_EQ(u[i], n < 8 ? n : n - 16) << i;
    }
    const aie::vector<uint8, 64> uu = aie::unpack(packed.cast_to<uint4>());
    EXPECT_EQ(uu[15], 15);
    EXPECT_EQ(uu[8], 8);
    // pack(unpack(x)) == x for in-range values.
    const aie::vector<int4, 64> back = aie::pack(u);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(int(back[i]), int(packed[i]));
}

TEST_F(AieApi, Int8PackSaturatesPerTheCoreMode) {
    const aie::vector<int8, 64> v(int8(8), int8(-9), int8(100), int8(-100), int8(7), int8(-8));
    auto p = aie::pack(v);  // reset mode none: the low 4 bits
    EXPECT_EQ(int(p[0]), -8);
    EXPECT_EQ(int(p[1]), 7);
    EXPECT_EQ(int(p[2]), 4);   // 0x64
    EXPECT_EQ(int(p[3]), -4);  // 0x9c
    EXPECT_EQ(int(p[4]), 7);
    EXPECT_EQ(int(p[5]), -8);
    aie::set_saturation(aie::saturation_mode::saturate);
    p = aie::pack(v);
    EXPECT_EQ(int(p[0]), 7);
    EXPECT_EQ(int(p[1]), -8);
    EXPECT_EQ(int(p[2]), 7);
    EXPECT_EQ(int(p[3]), -8);
    aie::set_saturation(aie::saturation_mode::symmetric);
    EXPECT_EQ(int(aie::pack(v)[3]), -7);
    aie::set_saturation(aie::saturation_mode::saturate);
    const aie::vector<uint4, 64> up = aie::pack(aie::vector<uint8, 64>(uint8(20), uint8(9)));
    EXPECT_EQ(int(up[0]), 15);
    EXPECT_EQ(int(up[1]), 9);
    const aie::vector<int8, 32> p16 = aie::pack(aie::vector<int16, 32>(int16(300), int16(-300)));
    EXPECT_EQ(p16[0], 127);
    EXPECT_EQ(p16[1], -128);
}

TEST_F(AieApi, Int8UnpackExtendsBySignedness) {
    const aie::vector<int8, 32> s(int8(-1), int8(127));
    const aie::vector<int16, 32> ws = aie::unpack(s);
    EXPECT_EQ(ws[0], -1);
    EXPECT_EQ(ws[1], 127);
    const aie::vector<uint16, 32> wu = aie::unpack(aie::vector<uint8, 32>(uint8(255)));
    EXPECT_EQ(wu[0], 255);
    const aie::vector<int16, 32> forced = s.unpack_sign<int16>(false);
    EXPECT_EQ(forced[0], 255);
}

// ---------------------------------------------------------------------------------------------
// Masks, compares, select

TEST_F(AieApi, MaskWordsAndBits) {
    auto m = aie::mask<64>::from_uint32(0x80000001u, 0x3u);
    EXPECT_TRUE(m.test(0));
    EXPECT_FALSE(m.test(1));
    EXPECT_TRUE(m.test(31));
    EXPECT_TRUE(m.test(32));
    EXPECT_TRUE(m.test(33));
    EXPECT_FALSE(m.test(34));
    EXPECT_EQ(m.count(), 4u);
    m.set(63);
    m.clear(0);
    EXPECT_EQ(m.to_uint64(), 0x8000000380000000ull);
    const auto n = aie::mask<64>::from_uint64(0xffull);
    EXPECT_EQ((m & n).count(), 0u);
    EXPECT_EQ((m | n).count(), 12u);
    EXPECT_EQ((~n).count(), 56u);
    EXPECT_TRUE(aie::mask<16>(true).full());
    EXPECT_TRUE(aie::mask<16>().empty());
    EXPECT_EQ((aie::mask<16>::from_uint32(0x1u) << 3).to_uint32(), 0x8u);
    EXPECT_EQ(aie::mask<16>::from_uint32(0x00f0u).clz(), 8u);
}

TEST_F(AieApi, ComparesAndSelect) {
    const aie::vector<int16, 16> a(int16(1), int16(5), int16(-3), int16(5));
    const aie::vector<int16, 16> b(int16(2), int16(5), int16(-4), int16(9));
    EXPECT_EQ(aie::lt(a, b).to_uint32(), 0x9u);                // lanes 0 and 3
    EXPECT_EQ(aie::eq(a, b).to_uint32(), 0xfff2u);             // lane 1 and the zero lanes 4..15
    EXPECT_EQ(aie::ge(a, b).to_uint32(), 0xfff6u);
    EXPECT_EQ(aie::gt(a, int16(0)).to_uint32(), 0xbu);
    EXPECT_EQ(aie::le(int16(5), a).to_uint32(), 0xau);
    EXPECT_EQ(aie::neq(a, b).count(), 3u);
    // A set bit picks the second operand.
    const auto s = aie::select(a, b, aie::mask<16>::from_uint32(0x5u));
    EXPECT_EQ(s[0], 2);
    EXPECT_EQ(s[1], 5);
    EXPECT_EQ(s[2], -4);
    EXPECT_EQ(s[3], 5);
    const auto t = aie::select(int16(0), a, aie::lt(a, int16(0)));
    EXPECT_EQ(t[2], -3);
    EXPECT_EQ(t[0], 0);
    const auto u = aie::select(7, 9, aie::mask<16>::from_uint32(0x2u));
    EXPECT_EQ(u[0], 7);
    EXPECT_EQ(u[1], 9);
    const aie::vector<float, 16> f(1.0f, -2.0f);
    EXPECT_EQ(aie::lt(f, 0.0f).to_uint32(), 0x2u);
}

// Every lane of the compares, select, bit operations and integer add/sub on random vectors (NaNs among
// the floats; 16, 32 and 64 lanes) against the scalar C++ expression, and the mask's word-at-a-time
// count / empty / full against its bits: the host packs compares into mask words and selects without
// a branch per lane (elementwise.hpp, mask.hpp), and this holds those loops to the lane definitions.
template <typename T, unsigned N> void check_lanes(std::mt19937 & rng) {
    aie::vector<T, N> a, b;
    for (unsigned i = 0; i < N; ++i) {
        if constexpr (std::is_floating_point_v<T>) {
            std::uniform_int_distribution<int> pick(0, 9);
            a[i] = pick(rng) == 0 ? NAN : T(int(rng() % 7) - 3);
            b[i] = pick(rng) == 0 ? NAN : T(int(rng() % 7) - 3);
        } else {
            a[i] = T(rng() % 5);  // small values: equal lanes are common
            b[i] = T(rng() % 5);
            if (i % 3 == 0) a[i] = T(rng());
        }
    }
    const auto lt = aie::lt(a, b), ge = aie::ge(a, b), eq = aie::eq(a, b), gt = aie::gt(a, b), le = aie::le(a, b), ne = aie::neq(a, b);
    const auto sel = aie::select(a, b, lt);
    unsigned n_lt = 0;
    for (unsigned i = 0; i < N; ++i) {
        const T x = a[i], y = b[i];
        ASSERT_EQ(lt.test(i), x < y) << i;
        ASSERT_EQ(ge.test(i), !(x < y)) << i;  // aie_api: ge is "not lt" (a NaN lane is ge)
        ASSERT_EQ(gt.test(i), y < x) << i;
        ASSERT_EQ(le.test(i), !(y < x)) << i;
        ASSERT_EQ(eq.test(i), x == y) << i;
        ASSERT_EQ(ne.test(i), !(x == y)) << i;
        const T want = x < y ? y : x;
        if constexpr (std::is_floating_point_v<T>) {
            const T got = sel.get(i);
            ASSERT_EQ(std::memcmp(&got, &want, sizeof(T)), 0) << i;
        } else {
            ASSERT_EQ(T(sel[i]), want) << i;
        }
        n_lt += x < y ? 1 : 0;
    }
    EXPECT_EQ(lt.count(), n_lt);
    EXPECT_EQ(lt.empty(), n_lt == 0);
    EXPECT_EQ(lt.full(), n_lt == N);
    EXPECT_TRUE((lt | ge).full());
    EXPECT_TRUE((lt & ge).empty());
    if constexpr (!std::is_floating_point_v<T>) {
        const auto band = aie::bit_and(a, b), bor = aie::bit_or(a, b), bxor = aie::bit_xor(a, b), bnot = aie::bit_not(a);
        const auto sum = aie::add(a, b), dif = aie::sub(a, b);
        for (unsigned i = 0; i < N; ++i) {
            const T x = a[i], y = b[i];
            ASSERT_EQ(T(band[i]), T(x & y)) << i;
            ASSERT_EQ(T(bor[i]), T(x | y)) << i;
            ASSERT_EQ(T(bxor[i]), T(x ^ y)) << i;
            ASSERT_EQ(T(bnot[i]), T(~x)) << i;
            ASSERT_EQ(T(sum[i]), T(uint64_t(x) + uint64_t(y))) << i;  // wraps
            ASSERT_EQ(T(dif[i]), T(uint64_t(x) - uint64_t(y))) << i;
        }
    }
}

TEST_F(AieApi, EveryLaneOfComparesSelectAndBitOperations) {
    std::mt19937 rng(1205);
    for (int round = 0; round < 20; ++round) {
        check_lanes<int8_t, 64>(rng);
        check_lanes<uint8_t, 64>(rng);
        check_lanes<int16_t, 32>(rng);
        check_lanes<uint16_t, 64>(rng);
        check_lanes<int32_t, 16>(rng);
        check_lanes<uint32_t, 32>(rng);
        check_lanes<float, 16>(rng);
        check_lanes<float, 32>(rng);
    }
    // Masks narrower than a word: the bits past the last element stay clear.
    EXPECT_TRUE((~aie::mask<8>()).full());
    EXPECT_EQ((~aie::mask<8>()).count(), 8u);
    EXPECT_TRUE(aie::mask<8>::from_uint32(0xffu).full());
}

// ---------------------------------------------------------------------------------------------
// Shuffles

TEST_F(AieApi, InterleaveZipAndUnzip) {
    aie::vector<int16, 8> v, w;
    for (int i = 0; i < 8; ++i) {
        v[i] = int16(i);
        w[i] = int16(10 + i);
    }
    auto [lo, hi] = aie::interleave_zip(v, w, 1);
    const int lo1[8] = {0, 10, 1, 11, 2, 12, 3, 13}, hi1[8] = {4, 14, 5, 15, 6, 16, 7, 17};
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(lo[i], lo1[i]);
        EXPECT_EQ(hi[i], hi1[i]);
    }
    auto [lo2, hi2] = aie::interleave_zip(v, w, 2);
    const int z2[8] = {0, 1, 10, 11, 2, 3, 12, 13};
    for (int i = 0; i < 8; ++i) EXPECT_EQ(lo2[i], z2[i]);
    EXPECT_EQ(hi2[0], 4);
    EXPECT_EQ(hi2[2], 14);
    auto [ev, od] = aie::interleave_unzip(lo, hi, 1);  // undoes zip
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(ev[i], v[i]);
        EXPECT_EQ(od[i], w[i]);
    }
    auto [e4, o4] = aie::interleave_unzip(v, w, 2);
    const int ue[8] = {0, 1, 4, 5, 10, 11, 14, 15}, uo[8] = {2, 3, 6, 7, 12, 13, 16, 17};
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(e4[i], ue[i]);
        EXPECT_EQ(o4[i], uo[i]);
    }
    const auto both = aie::concat(aie::interleave_zip(v, w, 4));
    EXPECT_EQ(both[4], 10);
    EXPECT_EQ(both[15], 17);
}

TEST_F(AieApi, FilterEvenOdd) {
    aie::vector<int32, 16> v;
    for (int i = 0; i < 16; ++i) v[i] = i;
    const auto e1 = aie::filter_even(v);
    const auto o1 = aie::filter_odd(v);
    const auto e2 = aie::filter_even(v, 2);
    const auto o4 = aie::filter_odd(v, 4);
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(e1[i], 2 * i);
        EXPECT_EQ(o1[i], 2 * i + 1);
    }
    const int ee[8] = {0, 1, 4, 5, 8, 9, 12, 13}, oo[8] = {4, 5, 6, 7, 12, 13, 14, 15};
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(e2[i], ee[i]);
        EXPECT_EQ(o4[i], oo[i]);
    }
}

TEST_F(AieApi, ShuffleDownUpRotateReverseTranspose) {
    aie::vector<int32, 8> v(1, 2, 3, 4, 5, 6, 7, 8);
    const auto d = aie::shuffle_down(v, 3);
    EXPECT_EQ(d[0], 4);
    EXPECT_EQ(d[4], 8);
    const auto u = aie::shuffle_up(v, 2);
    EXPECT_EQ(u[2], 1);
    EXPECT_EQ(u[7], 6);
    EXPECT_EQ(aie::shuffle_down_rotate(v, 3)[7], 3);
    EXPECT_EQ(aie::shuffle_up_rotate(v, 3)[0], 6);
    EXPECT_EQ(aie::shuffle_down_fill(v, aie::broadcast<int32, 8>(-1), 2)[6], -1);
    EXPECT_EQ(aie::shuffle_up_fill(v, aie::vector<int32, 8>(0, 0, 0, 0, 0, 0, 90, 91), 2)[0], 90);
    EXPECT_EQ(aie::shuffle_down_replicate(v, 2)[7], 8);
    EXPECT_EQ(aie::reverse(v)[0], 8);
    // 2 x 4 row-major -> 4 x 2 row-major.
    const auto t = aie::transpose(v, 2, 4);
    const int tt[8] = {1, 5, 2, 6, 3, 7, 4, 8};
    for (int i = 0; i < 8; ++i) EXPECT_EQ(t[i], tt[i]);
}

// ---------------------------------------------------------------------------------------------
// Fixed <-> floating point

TEST_F(AieApi, ToFloatScalesAndRoundsOnce) {
    const aie::vector<int32, 16> v(3, -5, (1 << 24) + 1, 7);
    const auto f = aie::to_float(v, 1);
    EXPECT_EQ(f[0], 1.5f);
    EXPECT_EQ(f[1], -2.5f);
    EXPECT_EQ(f[2], p2(23));  // 2^24 + 1 is not an fp32: nearest even 2^24, then / 2
    EXPECT_EQ(aie::to_float<float>(v)[3], 7.0f);
    EXPECT_EQ(aie::to_float(aie::vector<int16, 32>(int16(-3)), 2)[0], -0.75f);
    aie::set_rounding(aie::rounding_mode::conv_even);
    const auto b = aie::to_float<bfloat16>(aie::vector<int32, 16>(257));  // 1 + 2^-8 of 256: tie
    EXPECT_EQ(float(b[0]), 256.0f);
    EXPECT_EQ(aie::to_float(5, 1), 2.5f);
    const aie::accum<acc64, 16> acc(aie::vector<int32, 16>(-6));
    EXPECT_EQ(aie::to_float(acc, 2)[0], -1.5f);
}

TEST_F(AieApi, ToFixedRoundsHalfTowardZeroAndSaturates) {
    const aie::vector<float, 16> v(2.5f, -2.5f, 2.75f, -2.75f, 1e10f, -1e10f, 0.625f, 3.5f);
    const auto i = aie::to_fixed(v);
    EXPECT_EQ(i[0], 2);
    EXPECT_EQ(i[1], -2);
    EXPECT_EQ(i[2], 3);
    EXPECT_EQ(i[3], -3);
    EXPECT_EQ(i[4], INT32_MAX);
    EXPECT_EQ(i[5], INT32_MIN);
    EXPECT_EQ(i[7], 3);
    EXPECT_EQ(aie::to_fixed(v, 2)[6], 2);  // 0.625 * 4 = 2.5
    const auto s = aie::to_fixed<int16>(v, 12);
    EXPECT_EQ(s[0], 10240);
    EXPECT_EQ(s[2], 11264);
    EXPECT_EQ(s[4], 32767);
    EXPECT_EQ(aie::to_fixed(2.5f), 2);
    // bfloat16 -> fixed floors.
    const auto b = aie::to_fixed(aie::vector<bfloat16, 16>(bfloat16(-1.5f), bfloat16(1.5f)));
    EXPECT_EQ(b[0], -2);
    EXPECT_EQ(b[1], 1);
}

TEST_F(AieApi, FloatToBfloat16ThroughAnAccumulator) {
    aie::set_rounding(aie::rounding_mode::conv_even);
    const aie::vector<float, 32> f = aie::broadcast<float, 32>(1.0f + 3 * p2(-8));
    const aie::accum<accfloat, 32> acc(f);
    const aie::vector<bfloat16, 32> b = acc.to_vector<bfloat16>();
    EXPECT_EQ(float(b[0]), 1.0f + p2(-6));
    const aie::vector<float, 32> back = aie::accum<accfloat, 32>(b).to_vector<float>();
    EXPECT_EQ(back[31], 1.0f + p2(-6));
    const aie::vector<float, 32> conv = acc;  // implicit conversion of a float accumulator
    EXPECT_EQ(conv[0], 1.0f + 3 * p2(-8));
}
