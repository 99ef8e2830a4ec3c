// The twins' bf16 parts (src/sim/twins/emulated-fp32.h: bf16_floor, bf16_even, split) against the host
// aie_api's own (aie_host::detail::bf16_part_x16, the definition the kernel code runs), bit for bit:
// every upper half of a float's bits (every sign, exponent and kept significand, infinities and NaNs
// included) with the lower halves that decide the rounding (zero, one, just under, at and just over
// half, all ones) and a few random ones.
#include "emulated-fp32.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

#if defined(__x86_64__)
#define XDNA_TEST_AVX512_FN __attribute__((target("avx512f,avx512bw,avx512vl")))
bool avx512() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"); }

std::vector<uint32_t> sweep() {
    std::mt19937 rng(std::random_device{}());
    std::vector<uint32_t> lows = {0x0000, 0x0001, 0x7FFE, 0x7FFF, 0x8000, 0x8001, 0xFFFE, 0xFFFF};
    for (int i = 0; i < 8; ++i) lows.push_back(rng() & 0xFFFF);
    std::vector<uint32_t> bits;
    bits.reserve(65536 * lows.size());
    for (uint32_t up = 0; up < 65536; ++up)
        for (uint32_t lo : lows) bits.push_back(up << 16 | lo);
    return bits;
}

XDNA_TEST_AVX512_FN uint32_t bits_of(__m512 v, int lane) {
    alignas(64) uint32_t b[16];
    _mm512_store_si512(reinterpret_cast<__m512i *>(b), _mm512_castps_si512(v));
    return b[lane];
}

// Runs `check(x, lane)` on every value of the sweep, 16 lanes at a time; stops at the first mismatch.
template <typename Check> XDNA_TEST_AVX512_FN void over_sweep(Check check) {
    const std::vector<uint32_t> bits = sweep();
    for (size_t i = 0; i < bits.size(); i += 16) {
        const __m512 x = _mm512_castsi512_ps(_mm512_loadu_si512(bits.data() + i));
        for (int lane = 0; lane < 16; ++lane) {
            if (!check(x, lane)) return;
        }
    }
}

XDNA_TEST_AVX512_FN void floor_and_even() {
    over_sweep([](__m512 x, int lane) XDNA_TEST_AVX512_FN {
        const uint32_t in = bits_of(x, lane);
        const uint32_t floor_want = bits_of(aie_host::detail::bf16_part_x16<true>(x), lane);
        const uint32_t even_want = bits_of(aie_host::detail::bf16_part_x16<false>(x), lane);
        EXPECT_EQ(bits_of(xdna::twin::bf16_floor(x), lane), floor_want) << std::hex << "floor of 0x" << in;
        EXPECT_EQ(bits_of(xdna::twin::bf16_even(x), lane), even_want) << std::hex << "conv_even of 0x" << in;
        return !::testing::Test::HasFailure();
    });
}

XDNA_TEST_AVX512_FN void split_in_floor() {
    over_sweep([](__m512 x, int lane) XDNA_TEST_AVX512_FN {
        // The definition: each part the floor bf16 of what the parts before it leave.
        const __m512 a = aie_host::detail::bf16_part_x16<true>(x), r1 = _mm512_sub_ps(x, a);
        const __m512 b = aie_host::detail::bf16_part_x16<true>(r1);
        const __m512 c = aie_host::detail::bf16_part_x16<true>(_mm512_sub_ps(r1, b));
        const xdna::twin::Parts p = xdna::twin::split(x);
        const uint32_t in = bits_of(x, lane);
        EXPECT_EQ(bits_of(p.hi, lane), bits_of(a, lane)) << std::hex << "first part of 0x" << in;
        EXPECT_EQ(bits_of(p.mid, lane), bits_of(b, lane)) << std::hex << "second part of 0x" << in;
        EXPECT_EQ(bits_of(p.lo, lane), bits_of(c, lane)) << std::hex << "third part of 0x" << in;
        return !::testing::Test::HasFailure();
    });
}

TEST(TwinSplits, FloorAndEvenAreTheHostAieApisBf16Parts) {
    if (!avx512()) GTEST_SKIP() << "no AVX-512 on this host: the twins take their other paths";
    floor_and_even();
}

TEST(TwinSplits, SplitIsTheHostAieApisSplitInFloor) {
    if (!avx512()) GTEST_SKIP() << "no AVX-512 on this host: the twins take their other paths";
    split_in_floor();
}
#endif

}  // namespace
