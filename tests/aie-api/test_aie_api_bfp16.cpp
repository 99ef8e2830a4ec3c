// bfp16ebs8 in the host aie_api against hand-computed blocks: the block exponent, the mantissa
// rounding per mode, saturation of a value that rounds up, subnormal and zero blocks, the memory
// layout and the load/store FIFOs, and the 8x8x8 bfp16 mmul. Expected values are written out by hand
// or computed here from the format's definition (value = mantissa * 2^(E - 133)); nothing below
// calls the implementation's arithmetic to make an expectation.
#include "aie_api_test_support.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using ver = aie_host::api_version;
constexpr ver kReleases[] = {ver::v2025_1, ver::v2026_1};

using bv64 = aie::block_vector<bfp16ebs8, 64>;

// An fp32 accumulator whose block 0 holds x (the other lanes zero).
aie::accum<accfloat, 64> acc_block0(const std::vector<float> & x) {
    aie::accum<accfloat, 64> a;
    for (size_t i = 0; i < x.size(); ++i) a.set_lane((unsigned)i, x[i]);
    return a;
}

// The reference's own reading of a stored block value.
double ref_value(int exponent, int mantissa) { return std::ldexp((double)mantissa, exponent - 133); }

struct Expect {
    int exponent;
    int m[8];
};

void expect_block(const bv64 & v, unsigned b, const Expect & e, const char * what) {
    EXPECT_EQ(v.exponent(b), e.exponent) << what;
    for (unsigned i = 0; i < 8; ++i) EXPECT_EQ(v.mantissa(b * 8 + i), e.m[i]) << what << " lane " << i;
}

class AieApiBfp16 : public AieApi {};

TEST_F(AieApiBfp16, FormatSizes) {
    EXPECT_EQ(bv64::block_size(), 8u);
    EXPECT_EQ(bv64::blocks(), 8u);
    EXPECT_EQ(bv64::mantissa_bits(), 8u);
    EXPECT_EQ(bv64::exponent_bits(), 8u);
    EXPECT_EQ(bv64::bits(), 576u);  // 64 x 8 mantissa bits + 8 x 8 exponent bits
    EXPECT_EQ(bv64::memory_bytes(), 72u);
    EXPECT_EQ((aie::block_vector<bfp16ebs8, 128>::memory_bytes()), 144u);
}

// E is the largest exponent field of the block; mantissas are the values in units of 2^(E - 133).
TEST_F(AieApiBfp16, ExponentIsTheLargestOfTheBlock) {
    // 3.0 = 1.5 * 2^1: field 128, so one mantissa unit is 2^-5 = 1/32.
    const bv64 v = acc_block0({1.0f, 0.5f, 3.0f, -0.25f, 0.0f, -3.0f, 2.0f, 0.03125f}).to_vector<bfp16ebs8>();
    expect_block(v, 0, {128, {32, 16, 96, -8, 0, -96, 64, 1}}, "block 0");
    EXPECT_EQ(v.exponent(1), 0);  // an all-zero block
    EXPECT_EQ(v.value(2), 3.0);
    EXPECT_EQ(v.value(3), -0.25);
}

// One large value: the block's unit becomes 2^(135 - 133) = 4, so values below 2 round to 0 (or to
// -1 units, -4.0, when floor takes a negative one toward minus infinity).
TEST_F(AieApiBfp16, OneLargeValueTakesTheOthersBits) {
    const std::vector<float> x = {256.0f, 1.0f, 1.5f, 3.0f, -1.0f, 6.0f, -6.0f, 2.0f};
    const bv64 f = acc_block0(x).to_vector<bfp16ebs8>();  // reset mode: floor
    expect_block(f, 0, {135, {64, 0, 0, 0, -1, 1, -2, 0}}, "floor");
    aie::set_rounding(aie::rounding_mode::conv_even);
    const bv64 n = acc_block0(x).to_vector<bfp16ebs8>();
    // 3.0 = 0.75 units -> 1; 6.0 = 1.5 units -> 2 (tie to even); 2.0 = 0.5 units -> 0 (tie to even).
    expect_block(n, 0, {135, {64, 0, 0, 1, 0, 2, -2, 0}}, "conv_even");
    aie::set_rounding(aie::rounding_mode::floor);
}

// Ties, in units of 1/64 (block exponent 127): floor takes the two's complement value toward minus
// infinity, conv_even to the even neighbour. 106.5 -> 106, 94.5 -> 94 and 14.9375 -> 15 are the
// conversions amd/IRON reports measured on the NPU under conv_even (iron/operators/flm/packing.py).
TEST_F(AieApiBfp16, TiesPerRoundingMode) {
    const std::vector<float> x = {64.5f / 64, 65.5f / 64, -64.5f / 64, -65.5f / 64,
                                  106.5f / 64, 94.5f / 64, 14.9375f / 64, 32.5f / 64};
    for (const ver release : kReleases) {
        aie_host::set_api_version(release);
        aie::set_rounding(aie::rounding_mode::floor);
        expect_block(acc_block0(x).to_vector<bfp16ebs8>(), 0, {127, {64, 65, -65, -66, 106, 94, 14, 32}}, "floor");
        aie::set_rounding(aie::rounding_mode::conv_even);
        expect_block(acc_block0(x).to_vector<bfp16ebs8>(), 0, {127, {64, 66, -64, -66, 106, 94, 15, 32}}, "conv_even");
        aie::set_rounding(aie::rounding_mode::positive_inf);
        expect_block(acc_block0(x).to_vector<bfp16ebs8>(), 0, {127, {65, 66, -64, -65, 107, 95, 15, 33}}, "positive_inf");
        aie::set_rounding(aie::rounding_mode::floor);
    }
}

// A block maximum whose significand rounds up to 128 units does not fit the int8 mantissa: it is
// clamped to 127 and the exponent stays (the reading of IRON's packer; a hardware run should check).
TEST_F(AieApiBfp16, RoundingUpPastTheMantissaSaturates) {
    const std::vector<float> x = {127.5f / 64, 127.75f / 64, -127.75f / 64, 0.5f, 0, 0, 0, 0};
    aie::set_rounding(aie::rounding_mode::conv_even);
    expect_block(acc_block0(x).to_vector<bfp16ebs8>(), 0, {127, {127, 127, -128, 32, 0, 0, 0, 0}}, "conv_even");
    aie::set_rounding(aie::rounding_mode::floor);
    expect_block(acc_block0(x).to_vector<bfp16ebs8>(), 0, {127, {127, 127, -128, 32, 0, 0, 0, 0}}, "floor");
    // saturation mode none does not make it wrap
    aie::set_rounding(aie::rounding_mode::conv_even);
    aie::set_saturation(aie::saturation_mode::none);
    EXPECT_EQ(acc_block0(x).to_vector<bfp16ebs8>().mantissa(0), 127);
    aie::set_rounding(aie::rounding_mode::floor);
}

// Zero and subnormal blocks. A subnormal has exponent field 0 and no implicit bit, and is weighed
// as exponent field 0: the largest subnormal (2^-126 - 2^-149) is 63.99... units of 2^-133, so
// stores 63 (floor) or 64 (conv_even), which reads back as 2^-127, half its value. Beside a normal
// value it vanishes.
TEST_F(AieApiBfp16, ZeroAndSubnormalBlocks) {
    const float max_sub = std::ldexp(1.0f, -126) - std::ldexp(1.0f, -149);
    const float sub = std::ldexp(1.0f, -140);  // fraction 2^9: 2^-8 units
    const float neg0 = -0.0f;
    const std::vector<float> x = {max_sub, sub, -max_sub, neg0, 0, 0, 0, 0};
    const bv64 f = acc_block0(x).to_vector<bfp16ebs8>();
    expect_block(f, 0, {0, {63, 0, -64, 0, 0, 0, 0, 0}}, "floor");
    aie::set_rounding(aie::rounding_mode::conv_even);
    const bv64 n = acc_block0(x).to_vector<bfp16ebs8>();
    expect_block(n, 0, {0, {64, 0, -64, 0, 0, 0, 0, 0}}, "conv_even");
    EXPECT_EQ(n.value(0), std::ldexp(1.0, -127));
    expect_block(acc_block0({1.0f, max_sub, -max_sub, 0, 0, 0, 0, 0}).to_vector<bfp16ebs8>(), 0,
                 {127, {64, 0, 0, 0, 0, 0, 0, 0}}, "beside 1.0");
    aie::set_rounding(aie::rounding_mode::floor);
    for (unsigned b = 1; b < 8; ++b) EXPECT_EQ(n.exponent(b), 0);
}

// bf16 -> bfp16 as kernels write it: the bf16 vector into an fp32 accumulator, then to_vector.
TEST_F(AieApiBfp16, FromBf16VectorAndCounts) {
    aie::vector<bfloat16, 64> v;
    for (unsigned i = 0; i < 64; ++i) v[i] = bfloat16(float(int(i % 8) - 3) * 0.75f);  // -2.25 .. 3
    aie::set_rounding(aie::rounding_mode::conv_even);
    const aie_host::OpCounts before = aie_host::op_counts();
    aie::accum<accfloat, 64> acc(v);
    const bv64 b = acc.to_vector<bfp16ebs8>();
    const aie_host::OpCounts d = aie_host::op_counts() - before;
    aie::set_rounding(aie::rounding_mode::floor);
    EXPECT_EQ(d.move, 2u);   // 1024 bits of bf16 into the accumulator
    EXPECT_EQ(d.store, 1u);  // one to_v64bfp16ebs8
    EXPECT_EQ(d.vector, 0u);
    // 3.0 sets field 128 (unit 1/32): -2.25 -> -72, -1.5 -> -48, -0.75 -> -24, 0, 24, 48, 72, 96
    for (unsigned blk = 0; blk < 8; ++blk) expect_block(b, blk, {128, {-72, -48, -24, 0, 24, 48, 72, 96}}, "bf16");
    // the free function and the intrinsic name give the same bits
    const bv64 b2 = aie::to_vector<bfp16ebs8>(acc);
    const bv64 b3 = to_v64bfp16ebs8(acc);
    for (unsigned i = 0; i < 64; ++i) {
        EXPECT_EQ(b2.mantissa(i), b.mantissa(i));
        EXPECT_EQ(b3.mantissa(i), b.mantissa(i));
    }
}

// Block vector -> accumulator: exact values, times 2^shift; one identity mmul per 64 lanes.
TEST_F(AieApiBfp16, ToAccumulatorIsExact) {
    uint8_t bytes[72] = {};
    for (unsigned b = 0; b < 8; ++b) {
        bytes[9 * b] = uint8_t(120 + b);
        for (unsigned i = 0; i < 8; ++i) bytes[9 * b + 1 + i] = uint8_t(int8_t(int(i * 37 + b * 11) % 256 - 128));
    }
    const bv64 v = bv64::host_from_bytes(bytes);
    const aie_host::OpCounts before = aie_host::op_counts();
    const aie::accum<accfloat, 64> a(v);
    const aie::accum<accfloat, 64> a2(v, 3);
    const aie_host::OpCounts d = aie_host::op_counts() - before;
    EXPECT_EQ(d.vector, 2u);
    for (unsigned i = 0; i < 64; ++i) {
        const int e = 120 + int(i / 8);
        const int m = int8_t(int((i % 8) * 37 + (i / 8) * 11) % 256 - 128);
        EXPECT_EQ(a.lane(i), (float)ref_value(e, m)) << i;
        EXPECT_EQ(a2.lane(i), (float)ref_value(e + 3, m)) << i;
    }
}

// Memory: exponent byte then eight mantissas per block; the FIFOs move 72 bytes per 64-value vector.
TEST_F(AieApiBfp16, StreamsKeepTheLayoutAndCountFifoLoads) {
    alignas(64) uint8_t in[72 * 9];
    for (unsigned i = 0; i < sizeof in; ++i) in[i] = uint8_t(i * 7 + 1);
    const bfp16ebs8 * src = reinterpret_cast<const bfp16ebs8 *>(in);
    aie::block_vector_input_buffer_stream<bfp16ebs8, 64> is(src);
    const aie_host::OpCounts before = aie_host::op_counts();
    bv64 v[8];
    for (auto & x : v) x = is.pop();
    EXPECT_EQ((aie_host::op_counts() - before).load, 9u);  // 8 pops + 1 fill (ld_fill_ratio 8)
    EXPECT_EQ(v[1].exponent(0), in[72]);
    EXPECT_EQ(v[1].mantissa(0), int8_t(in[73]));
    EXPECT_EQ(v[2].exponent(3), in[144 + 27]);
    EXPECT_EQ(v[2].mantissa(3 * 8 + 7), int8_t(in[144 + 27 + 8]));
    aie::block_vector_input_buffer_stream<bfp16ebs8, 64> s2(src);
    s2.seek(8);
    EXPECT_EQ(s2.pop().exponent(0), in[72 * 8]);

    alignas(64) uint8_t out[72 * 8] = {};
    aie::block_vector_output_buffer_stream<bfp16ebs8, 64> os(reinterpret_cast<bfp16ebs8 *>(out));
    const aie_host::OpCounts b2 = aie_host::op_counts();
    for (auto & x : v) os << x;
    EXPECT_EQ((aie_host::op_counts() - b2).store, 16u);  // push + flush each
    EXPECT_EQ(std::memcmp(out, in, sizeof out), 0);
}

// The 8x8x8 mmul, hand-computed: A row m = (1..8)/8 (exponent 127, mantissas 8, 16, .., 64);
// B = the identity (B^T blocks of exponent 128, mantissa 32 on the diagonal), so C = A; a mac with
// B all 0.5 adds 0.5 * (1 + .. + 8) / 8 = 2.25 to every output.
TEST_F(AieApiBfp16, MmulHandComputed) {
    uint8_t a[72], eye[72], half[72];
    for (unsigned b = 0; b < 8; ++b) {
        a[9 * b] = 127;
        eye[9 * b] = 128;
        half[9 * b] = 127;
        for (unsigned k = 0; k < 8; ++k) {
            a[9 * b + 1 + k] = uint8_t(8 * (k + 1));
            eye[9 * b + 1 + k] = k == b ? 32 : 0;
            half[9 * b + 1 + k] = 32;
        }
    }
    const bv64 A = bv64::host_from_bytes(a), I = bv64::host_from_bytes(eye), H = bv64::host_from_bytes(half);
    aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8> mm;
    const aie_host::OpCounts before = aie_host::op_counts();
    mm.mac(A, aie::op_transpose(I));  // first mac on a fresh mmul: C = A x I
    const aie::accum<accfloat, 64> c1 = mm.to_accum();
    mm.mac(A, aie::op_transpose(H));
    const aie_host::OpCounts d = aie_host::op_counts() - before;
    EXPECT_EQ(d.vector, 2u);
    EXPECT_EQ(d.mmul_macs, 1024u);
    EXPECT_EQ(d.mmul_calls(aie_host::mmul_shape::bfp16_8x8x8), 2u);
    for (unsigned m = 0; m < 8; ++m)
        for (unsigned n = 0; n < 8; ++n) {
            EXPECT_EQ(c1.lane(m * 8 + n), float(n + 1) / 8) << m << "," << n;
            EXPECT_EQ(mm.to_accum().lane(m * 8 + n), float(n + 1) / 8 + 2.25f) << m << "," << n;
        }
    // the intrinsics compute the same
    const aie::accum<accfloat, 64> c2 = mac_8x8_8x8T(A, H, mul_8x8_8x8T(A, I));
    for (unsigned i = 0; i < 64; ++i) EXPECT_EQ(c2.lane(i), mm.to_accum().lane(i));
}

// B is transposed: block n of the operand is column n of B. With varied exponents and mantissas the
// result is checked against the sums of products computed here in long double from the format's
// definition (every product and 8-term sum is exact there and in fp32, by construction: mantissas
// below 16 in magnitude, exponents within 4 of 130).
TEST_F(AieApiBfp16, MmulTransposedBAgainstIndependentSums) {
    uint8_t a[72], bt[72];
    int ea[8], eb[8], ma[8][8], mb[8][8];  // ma[m][k] = A(m, k); mb[n][k] = B(k, n)
    for (unsigned r = 0; r < 8; ++r) {
        ea[r] = 128 + int(r % 5);
        eb[r] = 131 - int(r % 3);
        a[9 * r] = uint8_t(ea[r]);
        bt[9 * r] = uint8_t(eb[r]);
        for (unsigned k = 0; k < 8; ++k) {
            ma[r][k] = int((r * 5 + k * 3) % 31) - 15;
            mb[r][k] = int((r * 7 + k * 11 + 3) % 29) - 14;
            a[9 * r + 1 + k] = uint8_t(int8_t(ma[r][k]));
            bt[9 * r + 1 + k] = uint8_t(int8_t(mb[r][k]));
        }
    }
    aie::accum<accfloat, 64> c0;
    for (unsigned i = 0; i < 64; ++i) c0.set_lane(i, float(int(i) - 32) * 0.5f);
    aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8, accfloat> mm(c0);
    mm.mac(bv64::host_from_bytes(a), aie::op_transpose(bv64::host_from_bytes(bt)));
    for (unsigned m = 0; m < 8; ++m)
        for (unsigned n = 0; n < 8; ++n) {
            long double s = (long double)(int(m * 8 + n) - 32) * 0.5L;
            for (unsigned k = 0; k < 8; ++k) s += (long double)ref_value(ea[m], ma[m][k]) * (long double)ref_value(eb[n], mb[n][k]);
            EXPECT_EQ(mm.to_accum().lane(m * 8 + n), (float)s) << m << "," << n;
        }
}

// The mixed form: A in bf16 is converted in the current rounding mode, then multiplied.
TEST_F(AieApiBfp16, MmulBf16TimesBfp16ConvertsA) {
    aie::vector<bfloat16, 64> a;
    for (unsigned i = 0; i < 64; ++i) a[i] = bfloat16(i % 8 == 0 ? 256.0f : 6.0f);  // 6.0 = 1.5 units of 4
    uint8_t ones[72];
    for (unsigned b = 0; b < 8; ++b) {
        ones[9 * b] = 127;
        for (unsigned k = 0; k < 8; ++k) ones[9 * b + 1 + k] = 64;  // B all 1.0
    }
    const bv64 B = bv64::host_from_bytes(ones);
    aie::mmul<8, 8, 8, bfloat16, bfp16ebs8> f, n;
    f.mul(a, aie::op_transpose(B));  // floor: 6.0 -> 1 unit = 4.0
    aie::set_rounding(aie::rounding_mode::conv_even);
    n.mul(a, aie::op_transpose(B));  // conv_even: 1.5 units -> 2 = 8.0
    aie::set_rounding(aie::rounding_mode::floor);
    for (unsigned i = 0; i < 64; ++i) {
        EXPECT_EQ(f.to_accum().lane(i), 256.0f + 7 * 4.0f);
        EXPECT_EQ(n.to_accum().lane(i), 256.0f + 7 * 8.0f);
    }
}

// The bf16 multiply-add a dequantization uses (w = d * q - m into fp32): products exact, one fp32
// rounding per add; 64 lanes per vector-slot instruction, plus the scalar's broadcast.
TEST_F(AieApiBfp16, Bf16MacForDequantization) {
    aie::vector<bfloat16, 64> q;
    aie::vector<float, 64> neg_min;
    for (unsigned i = 0; i < 64; ++i) {
        q[i] = bfloat16(float(i % 16));
        neg_min[i] = -0.1875f;
    }
    const bfloat16 d = bfloat16(0.01171875f);  // 3/256, exact in bf16
    const aie::accum<accfloat, 64> m0(neg_min);
    const aie_host::OpCounts before = aie_host::op_counts();
    const aie::accum<accfloat, 64> w = aie::mac(m0, q, d);
    const aie_host::OpCounts c = aie_host::op_counts() - before;
    EXPECT_EQ(c.vector, 1u);
    EXPECT_EQ(c.move, 1u);
    for (unsigned i = 0; i < 64; ++i) EXPECT_EQ(w.lane(i), float(i % 16) * 3.0f / 256 - 0.1875f) << i;
}

}  // namespace

// The wide conversion path (AVX-512, what the simulator runs on such hosts) gives the block-by-block
// conversion's bytes in both modes it serves, on random blocks with spread exponents, exact ties,
// values that round up past the mantissa, subnormals, zeros, infinities and NaNs.
TEST_F(AieApiBfp16, WidePathEqualsTheBlockByBlockConversion) {
#ifdef XDNA_AIE_HOST_BFP16_WIDE
    if (!aie::detail::bfp16_wide_lanes()) GTEST_SKIP() << "no AVX-512 on this host";
    std::mt19937 rng(12345);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_int_distribution<int> spread(-40, 40), pick(0, 9);
    constexpr unsigned kBlocks = 4096;
    std::vector<float> x(8 * kBlocks);
    const float specials[] = {0.0f, -0.0f, 1e-45f, -3e-39f, std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 3.4e38f};
    for (unsigned i = 0; i < x.size(); ++i) {
        const int kind = pick(rng);
        if (kind == 0) x[i] = specials[i % 8];
        else if (kind == 1) x[i] = std::ldexp(float(int(unit(rng) * 64) * 2 + 1), spread(rng) - 1);  // halfway after the shift
        else if (kind == 2) x[i] = std::ldexp(unit(rng), -140 + spread(rng) / 4);                   // subnormal range
        else x[i] = std::ldexp(unit(rng), spread(rng));
    }
    for (const aie::rounding_mode mode : {aie::rounding_mode::floor, aie::rounding_mode::conv_even}) {
        std::vector<aie::detail::bfp16_block> wide(kBlocks);
        if (mode == aie::rounding_mode::floor) aie::detail::bfp16_from_fp32_blocks_avx512<false>(x.data(), kBlocks, wide.data());
        else aie::detail::bfp16_from_fp32_blocks_avx512<true>(x.data(), kBlocks, wide.data());
        for (unsigned b = 0; b < kBlocks; ++b) {
            float v[8];
            std::memcpy(v, &x[8 * b], sizeof v);
            const aie::detail::bfp16_block want = aie::detail::bfp16_from_fp32(v, mode);
            ASSERT_EQ(wide[b].exponent, want.exponent) << "block " << b;
            for (unsigned i = 0; i < 8; ++i) ASSERT_EQ(wide[b].mantissa[i], want.mantissa[i]) << "block " << b << " lane " << i << " value " << v[i];
        }
    }
#else
    GTEST_SKIP() << "no wide path on this host";
#endif
}

// The wide mmul products equal the block-by-block exact dot rounded once to float, over the whole
// exponent range (products that overflow to infinity, and underflow into subnormals and zero).
TEST_F(AieApiBfp16, WideMmulProductsEqualTheBlockDots) {
#ifdef XDNA_AIE_HOST_BFP16_WIDE
    if (!aie::detail::bfp16_wide_lanes()) GTEST_SKIP() << "no AVX-512 on this host";
    std::mt19937 rng(777);
    std::uniform_int_distribution<int> byte(0, 255), mant(-128, 127);
    for (int trial = 0; trial < 2000; ++trial) {
        aie::detail::bfp16_block a[8], b[8];
        for (unsigned i = 0; i < 8; ++i) {
            // Random over the whole range, or around ordinary values, or at the edges of the VNNI form's
            // float window (sums of 140 and 376: 2^-126 and 2^110).
            const int edge = trial % 7 == 1 ? 70 + byte(rng) % 2 : trial % 7 == 2 ? 187 + byte(rng) % 3 : -1;
            a[i].exponent = uint8_t(edge >= 0 ? edge : trial % 3 == 0 ? byte(rng) : 100 + byte(rng) % 60);
            b[i].exponent = uint8_t(edge >= 0 ? edge : trial % 3 == 0 ? byte(rng) : 100 + byte(rng) % 60);
            for (unsigned k = 0; k < 8; ++k) {
                a[i].mantissa[k] = int8_t(trial % 5 == 0 ? -128 : mant(rng));
                b[i].mantissa[k] = int8_t(mant(rng));
            }
        }
        // Both wide forms: AVX-512 (double scale) and, where the host has it, AVX-512 VNNI (float scale
        // inside [2^-126, 2^110], else the double form).
        for (const bool vnni : {false, true}) {
            if (vnni && !aie::detail::bfp16_vnni_lanes()) continue;
            float p[64];
            if (vnni) aie::detail::bfp16_products_vnni(a, b, p);
            else aie::detail::bfp16_products_avx512(a, b, p);
            for (unsigned m = 0; m < 8; ++m) {
                for (unsigned n = 0; n < 8; ++n) {
                    int64_t dot = 0;
                    for (unsigned k = 0; k < 8; ++k) dot += int64_t(a[m].mantissa[k]) * b[n].mantissa[k];
                    const float want = float(std::ldexp(double(dot), int(a[m].exponent) + int(b[n].exponent) - 266));
                    uint32_t wb, gb;
                    std::memcpy(&wb, &want, 4);
                    std::memcpy(&gb, &p[8 * m + n], 4);
                    ASSERT_EQ(gb, wb) << (vnni ? "vnni" : "avx512") << " trial " << trial << " m " << m << " n " << n << ": " << p[8 * m + n]
                                      << " vs " << want;
                }
            }
        }
    }
#else
    GTEST_SKIP() << "no wide path on this host";
#endif
}
