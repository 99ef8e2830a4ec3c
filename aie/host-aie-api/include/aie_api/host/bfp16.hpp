// The arithmetic of AIE2P's block floating point bfp16ebs8, independent of vector types: one block of
// eight values sharing an 8-bit exponent, its conversion from fp32 lanes under a rounding mode, its
// value, and the exact product of two blocks that the bfp16 matrix multiply adds into fp32.
//
// Format (aie_api detail/aie2p/block_vector.hpp: 8 mantissa bits, 8 exponent bits, block size 8;
// aie_doc.hpp "Block Vector": 9 bytes per block): a biased exponent byte E and eight signed (two's
// complement) 8-bit mantissas m. Value of lane i: m_i * 2^(E - 127 - 6), so a mantissa of 64 with
// E = 127 is 1.0 (aie_api detail/aie2p/accum.hpp from_vector builds the identity with mantissa 0x40
// and exponent 127 + shift).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "modes.hpp"
#include "rounding.hpp"

namespace aie::detail {

inline constexpr unsigned bfp16_block_size = 8;
// 2^(E - bfp16_value_bias) is the weight of a mantissa's least significant bit.
inline constexpr int bfp16_value_bias = 127 + 6;

struct bfp16_block {
    uint8_t exponent = 0;
    int8_t mantissa[bfp16_block_size] = {};
};

// Eight fp32 lanes to one block, as the core's fp32 accumulator -> bfp16ebs8 conversion
// (to_v64bfp16ebs8) does per block. The reading (sources in README.md):
// - E is the largest biased exponent field of the eight lanes (not bumped when a value rounds up);
// - each lane's significand, with the implicit bit made explicit for a nonzero exponent field
//   (a subnormal keeps its fraction and weighs as exponent field 0), is negated for a set sign bit
//   and shifted right by 17 + (E - e): the shift rounds the two's complement value per `mode`
//   (floor: toward negative infinity; conv_even: nearest, ties to even), whatever the distance;
// - a result beyond the int8 range (only +128, from rounding up the block's largest value) is
//   clamped to 127, whatever the saturation mode;
// - exponent field 255 (inf, NaN) is not special: it takes part in the maximum like any other.
inline bfp16_block bfp16_from_fp32(const float (&x)[bfp16_block_size], aie::rounding_mode mode) {
    unsigned e[bfp16_block_size];
    int64_t sig[bfp16_block_size];
    unsigned emax = 0;
    for (unsigned i = 0; i < bfp16_block_size; ++i) {
        const uint32_t u = float_bits(x[i]);
        e[i] = (u >> 23) & 0xffu;
        int64_t s = u & 0x7fffffu;
        if (e[i] != 0) s |= 0x800000;
        sig[i] = (u >> 31) ? -s : s;
        if (e[i] > emax) emax = e[i];
    }
    bfp16_block b;
    b.exponent = (uint8_t)emax;
    for (unsigned i = 0; i < bfp16_block_size; ++i) {
        int64_t q = round_shift(sig[i], int(17 + (emax - e[i])), mode);
        if (q > 127) q = 127;
        if (q < -128) q = -128;
        b.mantissa[i] = (int8_t)q;
    }
    return b;
}

// The same conversion for n blocks of x (8 values each) at once in the two modes kernels convert in
// (floor, conv_even): one block per AVX-512 register of eight 64-bit lanes, the shift clamped to 62 and
// rounded as round_shift rounds it. Bit-identical to bfp16_from_fp32 (test_aie_api_bfp16.cpp checks
// it on random, tie, subnormal and special blocks); the simulator converts every bfp16 operand of
// attention and of the prefill contracts through here.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define XDNA_AIE_HOST_BFP16_WIDE 1
// GCC 12 at -O0 warns inside its own AVX-512 intrinsics (their _mm512_undefined_* self-initialisation).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <bool Even>
__attribute__((target("avx512f,avx512bw,avx512vl"))) __attribute__((noinline)) inline void
bfp16_from_fp32_blocks_avx512(const float * x, unsigned n_blocks, bfp16_block * out) {
    const __m512i m8 = _mm512_set1_epi64(0xff), m23 = _mm512_set1_epi64(0x7fffff), implicit = _mm512_set1_epi64(0x800000);
    const __m512i one = _mm512_set1_epi64(1), zero = _mm512_setzero_si512();
    for (unsigned b = 0; b < n_blocks; ++b) {
        const __m512i u = _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + 8 * b)));
        const __m512i e = _mm512_and_si512(_mm512_srli_epi64(u, 23), m8);
        __m512i s = _mm512_and_si512(u, m23);
        s = _mm512_mask_or_epi64(s, _mm512_cmpneq_epu64_mask(e, zero), s, implicit);
        s = _mm512_mask_sub_epi64(s, _mm512_test_epi64_mask(u, _mm512_set1_epi64(0x80000000)), zero, s);
        const uint64_t emax = _mm512_reduce_max_epu64(e);
        __m512i sh = _mm512_add_epi64(_mm512_sub_epi64(_mm512_set1_epi64(int64_t(emax)), e), _mm512_set1_epi64(17));
        sh = _mm512_min_epu64(sh, _mm512_set1_epi64(62));
        __m512i q = _mm512_srav_epi64(s, sh);
        if (Even) {
            const __m512i r = _mm512_and_si512(s, _mm512_sub_epi64(_mm512_sllv_epi64(one, sh), one));
            const __m512i half = _mm512_sllv_epi64(one, _mm512_sub_epi64(sh, one));
            const __mmask8 up = _mm512_cmpgt_epu64_mask(r, half) |
                                (_mm512_cmpeq_epu64_mask(r, half) & _mm512_test_epi64_mask(q, one));
            q = _mm512_mask_add_epi64(q, up, q, one);
        }
        q = _mm512_min_epi64(_mm512_max_epi64(q, _mm512_set1_epi64(-128)), _mm512_set1_epi64(127));
        out[b].exponent = uint8_t(emax);
        _mm_storel_epi64(reinterpret_cast<__m128i *>(out[b].mantissa), _mm512_cvtepi64_epi8(q));
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
inline bool bfp16_wide_lanes() {
    static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    return ok;
}
#endif

// n blocks of x: the wide path where it runs, else block by block.
inline void bfp16_from_fp32_blocks(const float * x, unsigned n_blocks, bfp16_block * out, aie::rounding_mode mode) {
#ifdef XDNA_AIE_HOST_BFP16_WIDE
    if (bfp16_wide_lanes() && (mode == aie::rounding_mode::floor || mode == aie::rounding_mode::conv_even)) {
        if (mode == aie::rounding_mode::floor) bfp16_from_fp32_blocks_avx512<false>(x, n_blocks, out);
        else bfp16_from_fp32_blocks_avx512<true>(x, n_blocks, out);
        return;
    }
#endif
    for (unsigned b = 0; b < n_blocks; ++b) {
        float v[bfp16_block_size];
        std::memcpy(v, x + 8 * b, sizeof v);
        out[b] = bfp16_from_fp32(v, mode);
    }
}

// The value a mantissa stands for in a block of exponent `exponent` (exact in double).
inline double bfp16_value(uint8_t exponent, int8_t mantissa) {
    return (double)mantissa * pow2_exact(int(exponent) - bfp16_value_bias);
}

// n blocks as fp32 values times 2^shift, block by block: mantissa * 2^(exponent - bias + shift), exact
// in double (a power of two well inside its range), rounded to float once. Where that power is a normal
// float every product is one too (|mantissa| >= 1 or 0), so the float product is the same value.
inline void bfp16_blocks_to_fp32(const bfp16_block * b, unsigned n_blocks, int shift, float * out) {
    for (unsigned blk = 0; blk < n_blocks; ++blk) {
        const int e = int(b[blk].exponent) - bfp16_value_bias + shift;
        if (e >= -126 && e <= 120) {
            const uint32_t bits = uint32_t(e + 127) << 23;
            float scale;
            std::memcpy(&scale, &bits, sizeof scale);
            for (unsigned i = 0; i < bfp16_block_size; ++i) out[blk * bfp16_block_size + i] = float(b[blk].mantissa[i]) * scale;
        } else {
            const double scale = pow2_exact(e);
            for (unsigned i = 0; i < bfp16_block_size; ++i) out[blk * bfp16_block_size + i] = (float)((double)b[blk].mantissa[i] * scale);
        }
    }
}

// The product of two blocks as the bfp16 mmul forms it for one output: the eight int8 x int8
// products and their sum are exact (|sum| <= 2^17), scaled by both exponents. Exact in double.
inline double bfp16_block_dot(uint8_t ea, const int8_t * ma, uint8_t eb, const int8_t * mb) {
    int64_t dot = 0;
    for (unsigned k = 0; k < bfp16_block_size; ++k) dot += int64_t(ma[k]) * int64_t(mb[k]);
    return (double)dot * pow2_exact(int(ea) + int(eb) - 2 * bfp16_value_bias);
}

}  // namespace aie::detail
