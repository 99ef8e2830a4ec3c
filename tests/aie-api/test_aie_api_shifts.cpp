// The host aie_api's shifts and mode-dependent conversions against hand-computed AIE2P results, in
// each rounding and saturation mode the kernels use, under both aie_api releases the host copies.
// aie_api implements upshift / downshift / logical_downshift as an ups into an accumulator and an
// srs back (detail/aie2/shift.hpp), so they saturate, and (2025.1) round, per the core's modes; a host
// that shifted bits instead fails every test below (each was run that way once).
#include "aie_api_test_support.h"

#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>

namespace {

using rm = aie::rounding_mode;
using sm = aie::saturation_mode;
using ver = aie_host::api_version;

constexpr ver kReleases[] = {ver::v2025_1, ver::v2026_1};

class AieApiShifts : public AieApi {};  // the fixture also restores the default release

// ---------------------------------------------------------------------------------------------
// upshift = srs(ups(v, s), 0): no rounding, saturation per the mode (none keeps the low bits)

TEST_F(AieApiShifts, UpshiftSaturatesPerTheSaturationMode) {
    const aie::vector<int8, 64> v(int8(100), int8(-100), int8(63), int8(-64), int8(1), int8(-1), int8(127), int8(-128));
    // Exact: 200, -200, 126, -128, 2, -2, 254, -256.
    const int none[8] = {-56, 56, 126, -128, 2, -2, -2, 0};  // low 8 bits
    const int sat[8] = {127, -128, 126, -128, 2, -2, 127, -128};
    const int sym[8] = {127, -127, 126, -127, 2, -2, 127, -127};
    struct Case {
        sm mode;
        const int * expect;
    };
    for (const ver release : kReleases) {
        aie_host::set_api_version(release);
        for (const Case c : {Case{sm::none, none}, Case{sm::saturate, sat}, Case{sm::symmetric, sym}}) {
            aie::set_saturation(c.mode);
            for (const rm r : {rm::floor, rm::conv_even, rm::ceil}) {  // an srs by 0 never rounds
                aie::set_rounding(r);
                const auto u = aie::upshift(v, 1);
                for (int i = 0; i < 8; ++i)
                    EXPECT_EQ(u[i], c.expect[i]) << aie_host::api_version_name(release) << " saturation "
                                                 << aie_host::saturation_mode_name(c.mode) << " lane " << i;
            }
        }
    }
}

TEST_F(AieApiShifts, UpshiftSaturatesUnsignedAndThirtyTwoBitElements) {
    const aie::vector<uint8, 64> u(uint8(200), uint8(100), uint8(128));
    const aie::vector<int32, 16> w(0x40000000, -0x40000001, 0x1000);
    for (const ver release : kReleases) {
        aie_host::set_api_version(release);
        aie::set_saturation(sm::none);
        EXPECT_EQ(aie::upshift(u, 1)[0], 144);  // 400 mod 256
        EXPECT_EQ(aie::upshift(u, 1)[1], 200);
        EXPECT_EQ(aie::upshift(u, 1)[2], 0);
        EXPECT_EQ(aie::upshift(w, 1)[0], INT32_MIN);   // 2^31 wraps
        EXPECT_EQ(aie::upshift(w, 1)[1], 2147483646);  // -2^31 - 2 wraps
        EXPECT_EQ(aie::upshift(w, 1)[2], 0x2000);
        aie::set_saturation(sm::saturate);
        EXPECT_EQ(aie::upshift(u, 1)[0], 255);
        EXPECT_EQ(aie::upshift(u, 1)[2], 255);
        EXPECT_EQ(aie::upshift(w, 1)[0], INT32_MAX);
        EXPECT_EQ(aie::upshift(w, 1)[1], INT32_MIN);
        aie::set_saturation(sm::symmetric);
        EXPECT_EQ(aie::upshift(w, 1)[1], -INT32_MAX);
        EXPECT_EQ(aie::upshift(w, 23)[2], INT32_MAX);  // 2^35 in the 64-bit lane
    }
}

// ---------------------------------------------------------------------------------------------
// downshift = srs(ups(v, 0), s): 2026.1 truncates in every mode (scoped_mode floor), 2025.1 rounds

TEST_F(AieApiShifts, DownshiftTruncatesIn2026AndRoundsPerTheModeIn2025) {
    const aie::vector<int16, 32> v(int16(7), int16(-7), int16(5), int16(-5), int16(6), int16(-6), int16(1), int16(-1));
    // v / 2 = 3.5, -3.5, 2.5, -2.5, 3, -3, 0.5, -0.5.
    struct Case {
        rm mode;
        int expect[8];
    };
    const Case cases[] = {
        {rm::floor, {3, -4, 2, -3, 3, -3, 0, -1}},
        {rm::ceil, {4, -3, 3, -2, 3, -3, 1, 0}},
        {rm::symmetric_floor, {3, -3, 2, -2, 3, -3, 0, 0}},
        {rm::positive_inf, {4, -3, 3, -2, 3, -3, 1, 0}},
        {rm::symmetric_inf, {4, -4, 3, -3, 3, -3, 1, -1}},
        {rm::conv_even, {4, -4, 2, -2, 3, -3, 0, 0}},
        {rm::conv_odd, {3, -3, 3, -3, 3, -3, 1, -1}},
    };
    const int floor[8] = {3, -4, 2, -3, 3, -3, 0, -1};
    for (const ver release : kReleases) {
        aie_host::set_api_version(release);
        for (const Case & c : cases) {
            aie::set_rounding(c.mode);
            const auto d = aie::downshift(v, 1);
            EXPECT_EQ(aie::get_rounding(), c.mode) << "the mode is restored";
            for (int i = 0; i < 8; ++i) {
                const int want = release == ver::v2026_1 ? floor[i] : c.expect[i];
                EXPECT_EQ(d[i], want) << aie_host::api_version_name(release) << " " << aie_host::rounding_mode_name(c.mode)
                                      << " lane " << i;
            }
        }
    }
}

TEST_F(AieApiShifts, DownshiftOfUnsignedElementsIsLogicalAndRoundsIn2025) {
    const aie::vector<uint8, 64> u(uint8(255), uint8(0x80), uint8(0x7f), uint8(0x10));
    aie_host::set_api_version(ver::v2025_1);
    aie::set_rounding(rm::conv_even);
    // 255 / 64 = 3.98 -> 4; 128 / 64 = 2; 127 / 64 = 1.98 -> 2; 16 / 64 = 0.25 -> 0.
    EXPECT_EQ(aie::downshift(u, 6)[0], 4);
    EXPECT_EQ(aie::downshift(u, 6)[1], 2);
    EXPECT_EQ(aie::downshift(u, 6)[2], 2);
    EXPECT_EQ(aie::downshift(u, 6)[3], 0);
    aie_host::set_api_version(ver::v2026_1);
    EXPECT_EQ(aie::downshift(u, 6)[0], 3);
    EXPECT_EQ(aie::downshift(u, 6)[2], 1);
}

// ---------------------------------------------------------------------------------------------
// logical_downshift: the same on the elements read as unsigned

TEST_F(AieApiShifts, LogicalDownshiftReadsTheElementsUnsigned) {
    const aie::vector<int8, 64> v(int8(-1), int8(-128), int8(127), int8(8));
    // As uint8: 255, 128, 127, 8; / 16 = 15.94, 8, 7.94, 0.5.
    for (const ver release : kReleases) {
        aie_host::set_api_version(release);
        aie::set_rounding(rm::floor);
        const auto f = aie::logical_downshift(v, 4);
        EXPECT_EQ(f[0], 15);
        EXPECT_EQ(f[1], 8);
        EXPECT_EQ(f[2], 7);
        EXPECT_EQ(f[3], 0);
        aie::set_rounding(rm::conv_even);
        const auto e = aie::logical_downshift(v, 4);
        const bool rounds = release == ver::v2025_1;
        EXPECT_EQ(e[0], rounds ? 16 : 15);
        EXPECT_EQ(e[2], rounds ? 8 : 7);
        EXPECT_EQ(e[3], 0);  // 0.5: halfway, to even
    }
}

TEST_F(AieApiShifts, LogicalDownshiftOfAnFp32ExponentInConvEven) {
    // The exponent field of 1.9999999f (0x3fffffff): 0x3fffffff >> 23 = 127.99999988, which an srs in
    // conv_even rounds to 128, one binade too high. mm_kquant_low's fp32 product took its exponents
    // this way while running in conv_even: wrong under aie_api 2025.1.
    const aie::vector<uint32, 16> bits(0x3fffffffu, 0x3f800000u, 0x7f7fffffu);
    aie::set_rounding(rm::conv_even);
    aie_host::set_api_version(ver::v2025_1);
    EXPECT_EQ(aie::logical_downshift(bits, 23)[0], 128u);
    EXPECT_EQ(aie::logical_downshift(bits, 23)[1], 127u);
    EXPECT_EQ(aie::logical_downshift(bits, 23)[2], 255u);
    aie_host::set_api_version(ver::v2026_1);
    EXPECT_EQ(aie::logical_downshift(bits, 23)[0], 127u);
    EXPECT_EQ(aie::logical_downshift(bits, 23)[2], 254u);
    aie::set_rounding(rm::floor);
    aie_host::set_api_version(ver::v2025_1);
    EXPECT_EQ(aie::logical_downshift(bits, 23)[0], 127u);
}

// ---------------------------------------------------------------------------------------------
// 4-bit elements: unpack to 8 bits, shift, pack (the pack saturates per the mode too)

TEST_F(AieApiShifts, FourBitShiftsGoThroughEightBitsAndAPack) {
    const aie::vector<int4, 64> v(int4(5), int4(-6), int4(7), int4(-8));
    // Upshift by 1: 10, -12, 14, -16.
    aie::set_saturation(sm::none);
    auto u = aie::upshift(v, 1);
    EXPECT_EQ(int(u[0]), -6);  // 10 = 0b1010
    EXPECT_EQ(int(u[1]), 4);   // -12 = 0b...0100
    EXPECT_EQ(int(u[2]), -2);
    EXPECT_EQ(int(u[3]), 0);
    aie::set_saturation(sm::saturate);
    u = aie::upshift(v, 1);
    EXPECT_EQ(int(u[0]), 7);
    EXPECT_EQ(int(u[1]), -8);
    aie::set_saturation(sm::symmetric);
    EXPECT_EQ(int(aie::upshift(v, 1)[1]), -7);
    aie::set_saturation(sm::none);
    // Downshift by 1 of 5, -6, 7, -8: 2.5, -3, 3.5, -4.
    aie_host::set_api_version(ver::v2025_1);
    aie::set_rounding(rm::conv_even);
    const auto d = aie::downshift(v, 1);
    EXPECT_EQ(int(d[0]), 2);
    EXPECT_EQ(int(d[1]), -3);
    EXPECT_EQ(int(d[2]), 4);
    EXPECT_EQ(int(d[3]), -4);
    aie_host::set_api_version(ver::v2026_1);
    EXPECT_EQ(int(aie::downshift(v, 1)[2]), 3);
    const aie::vector<uint4, 64> l = aie::logical_downshift(aie::vector<uint4, 64>(uint4(15), uint4(9)), 2);
    EXPECT_EQ(int(l[0]), 3);
    EXPECT_EQ(int(l[1]), 2);
}

// ---------------------------------------------------------------------------------------------
// Costs: one ups (move) and one srs (store) per op_elems lanes of shift.hpp get_op_elems, plus the
// three mode-register accesses of 2026.1's scoped_mode in the downshifts

struct ShiftCost {
    uint64_t move, store, unpack;
};

template <typename F> ShiftCost cost_of(F f) {
    aie_host::reset_op_counts();
    f();
    const aie_host::OpCounts & c = aie_host::op_counts();
    return {c.move, c.store, c.unpack};
}

TEST_F(AieApiShifts, ShiftCostsPerRelease) {
    struct Row {
        const char * what;
        ShiftCost v2025, v2026;
        ShiftCost (*run)();
    };
    const Row rows[] = {
        {"uint8 x64 logical_downshift", {2, 2, 0}, {1 + 3, 1, 0},
         [] { return cost_of([] { (void)aie::logical_downshift(aie::vector<uint8, 64>(), 2); }); }},
        {"uint8 x128 logical_downshift", {4, 4, 0}, {2 + 3, 2, 0},
         [] { return cost_of([] { (void)aie::logical_downshift(aie::vector<uint8, 128>(), 4); }); }},
        {"uint8 x32 upshift", {1, 1, 0}, {1, 1, 0}, [] { return cost_of([] { (void)aie::upshift(aie::vector<uint8, 32>(), 4); }); }},
        {"uint8 x128 upshift", {4, 4, 0}, {2, 2, 0}, [] { return cost_of([] { (void)aie::upshift(aie::vector<uint8, 128>(), 4); }); }},
        {"int16 x16 downshift", {1, 1, 0}, {1 + 3, 1, 0},
         [] { return cost_of([] { (void)aie::downshift(aie::vector<int16, 16>(), 7); }); }},
        {"int16 x64 downshift", {2, 2, 0}, {2 + 3, 2, 0},
         [] { return cost_of([] { (void)aie::downshift(aie::vector<int16, 64>(), 7); }); }},
        {"uint32 x8 upshift", {1, 1, 0}, {1, 1, 0}, [] { return cost_of([] { (void)aie::upshift(aie::vector<uint32, 8>(), 13); }); }},
        {"uint32 x16 logical_downshift", {1, 1, 0}, {1 + 3, 1, 0},
         [] { return cost_of([] { (void)aie::logical_downshift(aie::vector<uint32, 16>(), 23); }); }},
        {"int32 x64 upshift", {4, 4, 0}, {4, 4, 0}, [] { return cost_of([] { (void)aie::upshift(aie::vector<int32, 64>(), 3); }); }},
        // 2026.1: two chunks of 128 (unpack 2, 2 ups + 2 srs, pack 2 each); 2025.1: two halves of 128
        // with 32-lane 8-bit shifts (4 + 4 each).
        {"uint4 x256 upshift", {8, 8 + 4, 4}, {4, 4 + 4, 4},
         [] { return cost_of([] { (void)aie::upshift(aie::vector<uint4, 256>(), 1); }); }},
    };
    for (const ver release : kReleases) {
        aie_host::set_api_version(release);
        for (const Row & r : rows) {
            const ShiftCost want = release == ver::v2025_1 ? r.v2025 : r.v2026;
            const ShiftCost got = r.run();
            EXPECT_EQ(got.move, want.move) << r.what << " " << aie_host::api_version_name(release);
            EXPECT_EQ(got.store, want.store) << r.what << " " << aie_host::api_version_name(release);
            EXPECT_EQ(got.unpack, want.unpack) << r.what << " " << aie_host::api_version_name(release);
        }
    }
}

TEST_F(AieApiShifts, ModeRegisterAccessesAreCounted) {
    aie_host::reset_op_counts();
    aie::set_rounding(rm::conv_even);  // one write
    EXPECT_EQ(aie_host::op_counts().move, 1u);
    (void)aie::get_rounding();  // not counted (the host's own conversions read it too)
    EXPECT_EQ(aie_host::op_counts().move, 1u);
    EXPECT_EQ(aie::swap_rounding(rm::floor), rm::conv_even);  // read + write
    EXPECT_EQ(aie_host::op_counts().move, 3u);
    EXPECT_EQ(aie::swap_saturation(sm::saturate), sm::none);
    EXPECT_EQ(aie_host::op_counts().move, 5u);
    {
        aie::scoped_mode keep{rm::ceil};  // read + write, and a write at the end of the scope
        EXPECT_EQ(aie::get_rounding(), rm::ceil);
        EXPECT_EQ(aie_host::op_counts().move, 7u);
    }
    EXPECT_EQ(aie::get_rounding(), rm::floor);
    EXPECT_EQ(aie_host::op_counts().move, 8u);
}

// ---------------------------------------------------------------------------------------------
// Conversions with a shift argument that aie_api ignores on AIE2P

TEST_F(AieApiShifts, Int32VectorIntoAThirtyTwoBitAccumulatorIgnoresTheShift) {
    // aie_api detail/aie2p/accum.hpp: a register cast; the REQUIRES(shift == 0) is compiled out.
    const aie::vector<int32, 16> v(5, -5, 0x10000000);
    const aie::accum<acc32, 16> a(v, 3);
    EXPECT_EQ(a.lane(0), 5);
    EXPECT_EQ(a.lane(1), -5);
    EXPECT_EQ(a.lane(2), 0x10000000);
    const aie::accum<acc64, 16> wide(v, 3);  // a real ups into 64-bit lanes
    EXPECT_EQ(wide.lane(0), 40);
    EXPECT_EQ(wide.lane(2), int64_t(1) << 31);
    // The mmul's C block starts the same way (aie_api detail/mmul.hpp C_block(vector, shift)).
    const aie::mmul<4, 16, 16, int8, int4> m(aie::vector<int32, 64>(7, -7), 3);
    EXPECT_EQ(m.to_vector<int32>()[0], 7);
    EXPECT_EQ(m.to_vector<int32>()[1], -7);
    // int16 elements are upshifted (an ups with shift).
    const aie::accum<acc32, 32> h(aie::vector<int16, 32>(int16(7)), 3);
    EXPECT_EQ(h.lane(0), 56);
}

TEST_F(AieApiShifts, PackInt16ToInt8FollowsTheSaturationMode) {
    const aie::vector<int16, 32> v(int16(300), int16(-300), int16(127), int16(-129), int16(200));
    auto p = aie::pack(v);  // none: the low 8 bits
    EXPECT_EQ(p[0], 44);
    EXPECT_EQ(p[1], -44);
    EXPECT_EQ(p[2], 127);
    EXPECT_EQ(p[3], 127);
    EXPECT_EQ(p[4], -56);
    aie::set_saturation(sm::saturate);
    p = aie::pack(v);
    EXPECT_EQ(p[0], 127);
    EXPECT_EQ(p[1], -128);
    EXPECT_EQ(p[3], -128);
    aie::set_saturation(sm::symmetric);
    EXPECT_EQ(aie::pack(v)[1], -127);
    for (const rm r : {rm::conv_even, rm::ceil}) {  // packs never round
        aie::set_rounding(r);
        EXPECT_EQ(aie::pack(v)[2], 127);
    }
}

TEST_F(AieApiShifts, Acc64ToInt32SrsRoundsPerTheModeInEveryRelease) {
    // The srs the kquant-low fp32 product relies on for its conv_even rounding (to_vector<int32>(23)):
    // not a shift function, so no scoped_mode in either release.
    const aie::accum<acc64, 16> a(aie::vector<int32, 16>(3 << 22, 5 << 22, 7 << 22, -(3 << 22)));  // x / 2^23 = 1.5 ...
    for (const ver release : kReleases) {
        aie_host::set_api_version(release);
        aie::set_rounding(rm::conv_even);
        const auto e = a.to_vector<int32>(23);
        EXPECT_EQ(e[0], 2);
        EXPECT_EQ(e[1], 2);
        EXPECT_EQ(e[2], 4);
        EXPECT_EQ(e[3], -2);
        aie::set_rounding(rm::floor);
        const auto f = a.to_vector<int32>(23);
        EXPECT_EQ(f[0], 1);
        EXPECT_EQ(f[3], -2);
    }
}

// ---------------------------------------------------------------------------------------------
// Every lane of every shift, on random elements of each C++ integer type, in every rounding and
// saturation mode and release, against the definition stated lane by lane (round_shift, saturate and
// upshift_saturate: the arithmetic of an ups and an srs). The host has faster loops for these types
// (elementwise.hpp shift_bits); this is what holds them to the definition.

template <typename T> void check_every_shift_lane(std::mt19937 & rng) {
    constexpr unsigned N = 512 / (8 * sizeof(T));
    constexpr unsigned bits = 8 * sizeof(T);
    aie::vector<T, N> v;
    for (unsigned i = 0; i < N; ++i) v[i] = T(rng());
    v[0] = std::numeric_limits<T>::min();
    v[1] = std::numeric_limits<T>::max();
    v[2] = T(0);
    const rm modes[] = {rm::floor, rm::ceil, rm::symmetric_floor, rm::symmetric_ceil, rm::negative_inf,
                        rm::positive_inf, rm::symmetric_zero, rm::symmetric_inf, rm::conv_even, rm::conv_odd};
    const sm sats[] = {sm::none, sm::saturate, sm::symmetric};
    const auto lane = [](int64_t x, unsigned up, unsigned down, bool sign, rm r, sm s) {
        const int64_t y = up > 0 ? aie::detail::upshift_saturate(x, up, bits, sign, s)
                                 : aie::detail::saturate(aie::detail::round_shift(x, int(down), r), bits, sign, s);
        return T(std::make_unsigned_t<T>(uint64_t(y)));
    };
    for (const ver release : kReleases) {
        aie_host::set_api_version(release);
        for (const rm mode : modes) {
            for (const sm sat : sats) {
                aie::set_rounding(mode);
                aie::set_saturation(sat);
                const rm down_mode = release == ver::v2026_1 ? rm::floor : mode;  // 2026.1's scoped floor
                for (unsigned s = 0; s < bits + 2; ++s) {
                    const auto u = aie::upshift(v, s);
                    const auto d = aie::downshift(v, s);
                    const auto l = aie::logical_downshift(v, s);
                    for (unsigned i = 0; i < N; ++i) {
                        const int64_t as_signed = int64_t(std::make_signed_t<T>(v[i]));
                        const int64_t as_unsigned = int64_t(std::make_unsigned_t<T>(v[i]));
                        const int64_t x = std::is_signed_v<T> ? as_signed : as_unsigned;
                        const auto where = [&] {
                            return ::testing::Message() << aie_host::api_version_name(release) << " "
                                                        << aie_host::rounding_mode_name(mode) << " sat " << int(sat)
                                                        << " shift " << s << " lane " << i << " of " << int64_t(x);
                        };
                        ASSERT_EQ(u[i], lane(x, s, 0, std::is_signed_v<T>, mode, sat)) << "upshift " << where();
                        ASSERT_EQ(d[i], lane(x, 0, s, std::is_signed_v<T>, down_mode, sat)) << "downshift " << where();
                        ASSERT_EQ(l[i], lane(as_unsigned, 0, s, false, down_mode, sat)) << "logical_downshift " << where();
                    }
                }
            }
        }
    }
}

TEST_F(AieApiShifts, EveryLaneOfEveryShiftIsTheDefinition) {
    std::mt19937 rng(20261205);
    check_every_shift_lane<int8_t>(rng);
    check_every_shift_lane<uint8_t>(rng);
    check_every_shift_lane<int16_t>(rng);
    check_every_shift_lane<uint16_t>(rng);
    check_every_shift_lane<int32_t>(rng);
    check_every_shift_lane<uint32_t>(rng);
}

}  // namespace
