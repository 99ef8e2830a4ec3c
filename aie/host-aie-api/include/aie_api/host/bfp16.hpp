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

// The value a mantissa stands for in a block of exponent `exponent` (exact in double).
inline double bfp16_value(uint8_t exponent, int8_t mantissa) {
    return (double)mantissa * pow2_exact(int(exponent) - bfp16_value_bias);
}

// The product of two blocks as the bfp16 mmul forms it for one output: the eight int8 x int8
// products and their sum are exact (|sum| <= 2^17), scaled by both exponents. Exact in double.
inline double bfp16_block_dot(uint8_t ea, const int8_t * ma, uint8_t eb, const int8_t * mb) {
    int64_t dot = 0;
    for (unsigned k = 0; k < bfp16_block_size; ++k) dot += int64_t(ma[k]) * int64_t(mb[k]);
    return (double)dot * pow2_exact(int(ea) + int(eb) - 2 * bfp16_value_bias);
}

}  // namespace aie::detail
