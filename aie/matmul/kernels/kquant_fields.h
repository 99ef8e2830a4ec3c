// The K-quant weight tile fields both K-quant core programs decode (mm_kquant.cc, the exact integer
// contracts; mm_kquant_bfp16.cc, the bfp16 prefill contracts): per row group of 16 rows the 6-bit or
// int8 sub-block scales and mins as int16 and the fp16 d / dmin widened to fp32. Plain aie_api code,
// included by each program (a core has no shared library); internal linkage in each.
//
// The shifts here must truncate: aie_api 2025.1's downshift rounds per the current rounding mode, so
// a caller runs these in rounding mode floor (the power-up mode, which mm_kquant.cc never leaves and
// mm_kquant_bfp16.cc restores around them).
#pragma once

#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/matmul_tiles.h"

#if defined(__GNUC__) || defined(__clang__)
#define KQ_NOINLINE __attribute__((noinline))
#else
#define KQ_NOINLINE
#endif

namespace {

using namespace xdna_aie;

constexpr int kTK = 256;
constexpr int kKSteps = kTK / kKStep;  // 16 K steps of 16 per tile
constexpr int kRowGroups = kTileM / kRowGroup;

enum class KQ { q4_K, q5_K, q6_K };

template <KQ T> struct Kq;
template <> struct Kq<KQ::q4_K> {
    static constexpr WeightTileFormat f = fmt::q4_K;
    static constexpr int kSubBlocks = 8, kStepsPerSub = 2;  // 8 sub-blocks of 32
    static constexpr bool kHi = false, kMin = true;
    static constexpr int kXShift = 3;  // S += X * (sc << 3), X = activation sum
    static constexpr int pHi = -1, pScales = 1, pD = 2, pDmin = 3;
};
template <> struct Kq<KQ::q5_K> {
    static constexpr WeightTileFormat f = fmt::q5_K;
    static constexpr int kSubBlocks = 8, kStepsPerSub = 2;
    static constexpr bool kHi = true, kMin = true;
    static constexpr int kXShift = 3;  // S += E * (sc << 3), E over 2h + 1
    static constexpr int pHi = 1, pScales = 2, pD = 3, pDmin = 4;
};
template <> struct Kq<KQ::q6_K> {
    static constexpr WeightTileFormat f = fmt::q6_K;
    static constexpr int kSubBlocks = 16, kStepsPerSub = 1;  // 16 sub-blocks of 16
    static constexpr bool kHi = true, kMin = false;
    static constexpr int kXShift = 2;  // S += E * (sc << 2), E over 4h - 6
    static constexpr int pHi = 1, pScales = 2, pD = 3, pDmin = -1;
};


// Decoded fields of one row group (16 rows), row in lane: the integer sub-block scales and mins as
// int16, and fp32 d / dmin.
struct alignas(64) RowScales {
    int16_t sc[16][16];  // [sub-block][row]; Q4_K/Q5_K use sub-blocks 0..7
    int16_t m[8][16];
    float d[16];
    float dmin[16];
};

// Sixteen fp16 values -> fp32, exactly, with integer ops (the core has no fp16 type): normals rebias
// the exponent, inf/NaN keep an all-ones exponent, subnormals (m * 2^-24) convert as fixed point.
// The 16 -> 32-bit widening goes through an accumulator (ups, zero-extending; srs back with shift 0):
// aie_api's unpack stops at 16-bit elements.
inline aie::vector<float, 16> fp16x16_to_float(const uint8_t * p) {
    aie::accum<acc32, 16> wide;
    wide.from_vector(aie::load_v<16>(reinterpret_cast<const uint16_t *>(p)));
    const aie::vector<uint32_t, 16> u = aie::vector_cast<uint32_t>(wide.to_vector<int32_t>());
    const aie::vector<uint32_t, 16> em = aie::bit_and(uint32_t(0x7fff), u);
    const aie::vector<uint32_t, 16> sign = aie::upshift(aie::bit_and(uint32_t(0x8000), u), 16);
    const aie::vector<uint32_t, 16> normal = aie::add(aie::upshift(em, 13), uint32_t(0x38000000));  // exponent + 112
    const aie::vector<uint32_t, 16> special = aie::add(normal, uint32_t(0x38000000));             // 31 -> 255
    const aie::vector<uint32_t, 16> sub = aie::vector_cast<uint32_t>(aie::to_float(em, 24));
    aie::vector<uint32_t, 16> bits = aie::select(normal, special, aie::ge(em, uint32_t(0x7c00)));
    bits = aie::select(bits, sub, aie::lt(em, uint32_t(0x0400)));
    return aie::vector_cast<float>(aie::bit_or(bits, sign));
}

// Q4_K / Q5_K: the 6-bit scales and mins of ggml's get_scale_min_k4, for the 16 rows of a row group
// at once. The field plane holds byte u of the 12 for 16 rows contiguously, so units 0-3, 4-7 and
// 8-11 are three 64-lane vectors [u][row] and sub-blocks j and j + 4 come out lane-aligned:
//   j < 4:  sc = q[j] & 63                        m = q[j + 4] & 63
//   j >= 4: sc = (q[j + 4] & 15) | (q[j - 4] >> 6) << 4    m = (q[j + 4] >> 4) | (q[j] >> 6) << 4
KQ_NOINLINE void decode_scales_k4(const uint8_t * __restrict s, RowScales & rs) {
    const aie::vector<uint8_t, 64> u0 = aie::load_v<64>(s);
    const aie::vector<uint8_t, 64> u1 = aie::load_v<64>(s + 64);
    const aie::vector<uint8_t, 64> u2 = aie::load_v<64>(s + 128);
    const aie::vector<uint8_t, 64> sc_lo = aie::bit_and(uint8_t(63), u0);
    const aie::vector<uint8_t, 64> m_lo = aie::bit_and(uint8_t(63), u1);
    const aie::vector<uint8_t, 64> sc_hi =
        aie::bit_or(aie::bit_and(uint8_t(15), u2), aie::upshift(aie::downshift(u0, 6), 4));
    const aie::vector<uint8_t, 64> m_hi = aie::bit_or(aie::downshift(u2, 4), aie::upshift(aie::downshift(u1, 6), 4));
    aie::store_v(&rs.sc[0][0], aie::vector_cast<int16_t>(aie::unpack(sc_lo)));
    aie::store_v(&rs.sc[4][0], aie::vector_cast<int16_t>(aie::unpack(sc_hi)));
    aie::store_v(&rs.m[0][0], aie::vector_cast<int16_t>(aie::unpack(m_lo)));
    aie::store_v(&rs.m[4][0], aie::vector_cast<int16_t>(aie::unpack(m_hi)));
}

// Q6_K: 16 int8 scales per row, [sub-block][row] in the field plane: sign-extend to int16.
KQ_NOINLINE void decode_scales_q6(const uint8_t * __restrict s, RowScales & rs) {
    for (int q = 0; q < 4; ++q) {
        const aie::vector<int8_t, 64> v = aie::load_v<64>(reinterpret_cast<const int8_t *>(s) + 64 * q);
        aie::store_v(&rs.sc[4 * q][0], aie::unpack(v));
    }
}

template <KQ T> void decode_row_group(const uint8_t * __restrict w, int rg, RowScales & rs) {
    using K = Kq<T>;
    constexpr const WeightTileFormat & f = K::f;
    const uint8_t * scales = w + f.plane_offset(K::pScales) + field_offset(f, f.planes[K::pScales], rg * kRowGroup, 0, 0);
    if constexpr (T == KQ::q6_K) decode_scales_q6(scales, rs);
    else decode_scales_k4(scales, rs);
    aie::store_v(rs.d, fp16x16_to_float(w + f.plane_offset(K::pD) + field_offset(f, f.planes[K::pD], rg * kRowGroup, 0, 0)));
    if constexpr (K::kMin)
        aie::store_v(rs.dmin,
                     fp16x16_to_float(w + f.plane_offset(K::pDmin) + field_offset(f, f.planes[K::pDmin], rg * kRowGroup, 0, 0)));
}

}  // namespace
