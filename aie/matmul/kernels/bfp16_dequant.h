// Pieces every bfp16 prefill program that dequantizes packed codes shares (mm_kquant_bfp16.cc,
// mm_kquant_low_bfp16.cc, mm_legacy_bfp16.cc): the per-row operands of a row group repeated over each
// row's 8 K, and the codes as exact bf16 values. Included by each program (a core has no shared library);
// internal linkage in each.
#pragma once

#include <aie_api/aie.hpp>
#include <stdint.h>

namespace {

namespace bfp16_dequant {

// Both row halves of a row group's 16 values, each value repeated over the 8 K of its row's block:
// half h, lane r * 8 + k = v[8 h + r]. Three rounds of zips on all 16 values: 1 + 2 + 4 shuffles by
// output width, where three rounds per half (8 values each) take 2 x (1 + 1 + 2).
template <typename E> struct HalvesOverK {
    aie::vector<E, 64> h[2];
};
template <typename E> inline HalvesOverK<E> rows_over_k(const aie::vector<E, 16> & v) {
    const aie::vector<E, 32> x2 = aie::concat(aie::interleave_zip(v, v, 1));
    const aie::vector<E, 64> x4 = aie::concat(aie::interleave_zip(x2, x2, 2));
    const auto [h0, h1] = aie::interleave_zip(x4, x4, 4);
    return {{h0, h1}};
}

// 64 codes b < 128 as the bf16 values 128 + b: zero-extended to 16 bits, b sits below the bits of
// 0x4300 (2^7), so 0x4300 | b is 128 + b with no conversion instruction.
inline aie::vector<bfloat16, 64> codes_as_bf16(const aie::vector<uint8_t, 64> & b) {
    const aie::vector<uint16_t, 64> wide = aie::unpack(b);
    return aie::vector_cast<bfloat16>(aie::bit_or(uint16_t(0x4300), wide));
}

// The same for codes given as b ^ 8, the form the 4-bit planes store (the integer contracts read a
// nibble XOR 8 as a signed int4): 0x4300 | b = 0x4300 ^ b = (b ^ 8) ^ 0x4308, so one XOR both undoes
// the plane's XOR and builds the bf16 value (where a separate XOR on the 8-bit codes would cost 4
// shuffle-slot instructions per 256 codes).
inline aie::vector<bfloat16, 64> codes_xor8_as_bf16(const aie::vector<uint8_t, 64> & b_xor_8) {
    const aie::vector<uint16_t, 64> wide = aie::unpack(b_xor_8);
    return aie::vector_cast<bfloat16>(aie::bit_xor(uint16_t(0x4308), wide));
}

}  // namespace bfp16_dequant

}  // namespace
