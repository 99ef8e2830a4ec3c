// fp32 -> fp16 and fp32 -> bf16 bit patterns as ggml's CPU backend makes them, by integer arithmetic on
// the core (it has no fp16 type, and its own fp32 -> bf16 conversion's NaN is not documented), written
// so that no shift rounds or saturates whatever the core's modes (aie_api shifts go through an
// accumulator: a bit shifted out would round in the current mode, so the low bits are cleared first).
// Shared by the KV-cache writes (aie/set_rows) and the activation tiles of the float contracts
// (aie/act_quant).
#pragma once

#include <aie_api/aie.hpp>
#include <stdint.h>

namespace xdna_aie {

// The fp16 bits of |x| from the bits of x, round to nearest even, as the CPU backend's F16C conversion
// (vcvtps2ph, imm 0): overflow to inf from 65520 up, inf to inf, NaN to the quiet NaN 0x7E00, fp16
// subnormals rounded to nearest even. At most 0x7E00.
//   normal (|x| >= 2^-14):  r = a - (112 << 23) + 0xFFF + bit 13 of a, h = r >> 13 (low 13 bits cleared first);
//   subnormal (|x| < 2^-14): h = bits(|x| + 0.5) - bits(0.5): one IEEE fp32 add (the accumulators' round to
//                           nearest even) puts the value in units of 2^-24, the fp16 subnormal step.
template <unsigned N> inline aie::vector<int32_t, N> half_magnitude(const aie::vector<int32_t, N> & bits) {
    using vi = aie::vector<int32_t, N>;
    const vi a = aie::bit_and(int32_t(0x7FFFFFFF), bits);
    const vi odd = aie::downshift(aie::bit_and(int32_t(0x2000), a), 13);  // the bit that breaks ties to even
    const vi r = aie::add(aie::sub(a, int32_t(0x37FFF001)), odd);         // a - (112 << 23) + 0xFFF + odd
    const vi normal = aie::downshift(aie::bit_and(int32_t(~0x1FFF), r), 13);
    const aie::vector<float, N> tiny = aie::add(aie::vector_cast<float>(a), 0.5f);
    const vi subnormal = aie::sub(aie::vector_cast<int32_t>(tiny), int32_t(0x3F000000));
    vi h = aie::select(normal, subnormal, aie::lt(a, int32_t(0x38800000)));
    h = aie::select(h, int32_t(0x7C00), aie::ge(a, int32_t(0x477FF000)));
    return aie::select(h, int32_t(0x7E00), aie::gt(a, int32_t(0x7F800000)));
}

// The bf16 bits of |x| from the bits of x, as ggml_fp32_to_bf16 (ggml-impl.h): a NaN keeps its top
// bits and is made quiet ((bits >> 16) | 64), anything else rounds to nearest even
// ((bits + 0x7FFF + bit 16) >> 16; the largest finite values round to inf). At most 0x7FFF.
template <unsigned N> inline aie::vector<int32_t, N> bf16_magnitude(const aie::vector<int32_t, N> & bits) {
    using vi = aie::vector<int32_t, N>;
    const vi a = aie::bit_and(int32_t(0x7FFFFFFF), bits);
    const vi odd = aie::downshift(aie::bit_and(int32_t(0x10000), a), 16);
    const vi r = aie::add(aie::add(a, int32_t(0x7FFF)), odd);  // at most 0x7F807FFF for a finite a: no overflow
    const vi rounded = aie::downshift(aie::bit_and(int32_t(~0xFFFF), r), 16);
    const vi nan = aie::bit_or(int32_t(64), aie::downshift(aie::bit_and(int32_t(~0xFFFF), a), 16));
    return aie::select(rounded, nan, aie::gt(a, int32_t(0x7F800000)));
}

// Pairs (x[2i], x[2i + 1]) of N values as N/2 32-bit words of their 16-bit patterns, little-endian
// (x[2i] in the low half), from the magnitudes `Mag` computes and the signs: the upshift of a magnitude
// (at most 0x7FFF) fits, and x[2i]'s sign moves down by a logical shift of a word whose low bits are 0.
template <unsigned N, typename Mag>
inline aie::vector<int32_t, N / 2> halves_as_words(const aie::vector<float, N> & x, Mag magnitude) {
    using vh = aie::vector<int32_t, N / 2>;
    constexpr int32_t kSign = -0x7FFFFFFF - 1;
    const auto [even, odd] = aie::interleave_unzip(x.template extract<N / 2>(0), x.template extract<N / 2>(1), 1);
    const vh be = aie::vector_cast<int32_t>(even), bo = aie::vector_cast<int32_t>(odd);
    const vh lo = aie::bit_or(magnitude(be), aie::logical_downshift(aie::bit_and(kSign, be), 16));
    const vh hi = aie::bit_or(aie::upshift(magnitude(bo), 16), aie::bit_and(kSign, bo));
    return aie::bit_or(lo, hi);
}

}  // namespace xdna_aie
