// fp32 multiplication as the AIE2P core performs it. The core has no fp32 multiplier: Peano's
// intrinsics for float vectors (llvm-aie clang/lib/Headers/aie2p_vmult.h, commit 07ff079b, the
// namespace aie2p_detail at the end of the file) split each operand into bfloat16 parts and add
// bf16 x bf16 partial products, each exact in fp32, in fp32 accumulators. What they compute:
//
//   split     a = bf16(x)                        to_v32bfloat16 of the operand as an accumulator:
//             acc0 = x - a * 1                   VCONV.bf16.fp32, which rounds per crRnd (llvm-aie
//             b = bf16(acc0)                     AIE2PGenInstrInfo.td, commit 1b54f072: "Uses = [crF2FMask,
//             c = bf16(acc0 - b * 1)             crRnd]", store slot). The header saves no mode, so the
//                                                split rounds in the CURRENT mode (floor after reset).
//             y -> d, e, f likewise. The differences are exact (msc_elem_32 with a vector of ones),
//             and for finite operands x == a + b + c whatever the mode.
//   safe      t = c*f; t = t + c*e; t = t + b*f; t = t + a*f; t = t + b*e; t = t + d*c; t = t + b*d;
//             t = t + a*e; t = t + a*d                      (mul_elem_32_conf per product, then add)
//             mul = t;  mac = acc + t;  msc = acc - t       (add_conf / sub_conf: one more add)
//   fast      16 lanes: a*f, b*e, d*c, b*d, a*e, a*d (six products) in a chain of MACs;
//             32 lanes: all nine products in the order above, in a chain of MACs (mul_elem_32_conf
//             for c*f, then mac_elem_32_conf), i.e. the safe sum with each add fused into its MAC:
//             the same value unless a partial product is not exact in fp32 (below about 2^-126)
//   low       a = bf16(x), b = bf16(x - a); likewise c, d for y: b*c + a*d + a*c
//
// What reaches each of them (aie2p_vmult.h, end of file): mul_elem_16/32/64, mac_elem_*, msc_elem_*,
// negmul_elem_* and their *_conf forms on float vectors all call *_accuracy_safe; fast and low exist
// only under their own names (mul_elem_32_accuracy_fast, ...). aie_api 2026.1 (detail/aie2p/
// mul_acc32_fp.hpp lines 127-190, under __AIE_API_FP32_EMULATION__) sends float x float aie::mul,
// mac, msc and negmul to mul/mac/msc_elem_32_conf per 32 lanes (muls_per_mul = 32; a 16-lane vector
// is grown to 32, so it costs what 32 lanes cost; negmul is mul with sub_mul flipped: -t); aie::mmul
// 4x8x4 float (detail/aie2p/emulated_mmul_intrinsics.hpp mul/mac_4x8_8x4_fp32, __AIE_API_CRVO_9906__
// being undefined for AIE2P) issues eight 16-lane mul/mac_elem_16, also safe.
// AIE-ML's header differs (llvm-aie aiev2_core.h: under AIE2_FP32_EMULATION_SET_RND_MODE it saves the
// mode and splits in floor); the host follows the AIE2P header above.
//
// The host computes every partial product exactly in fp32 (bf16 x bf16 has at most 16 significant
// bits) and each accumulator add with one rounding to nearest even; a MAC rounds once (std::fma).
// Denormals are kept (the core may flush them).
#pragma once

#include <cmath>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <cstdint>

#include "modes.hpp"
#include "op-counts.hpp"
#include "rounding.hpp"

namespace aie_host {
namespace detail {

// bf16(x) as the accumulator -> bf16 conversion (VCONV.bf16.fp32) gives it under rounding mode `m`.
inline float bf16_part(float x, aie::rounding_mode m) {
    return aie::detail::bf16_bits_to_float(aie::detail::float_to_bf16_bits(x, m));
}

struct bf16_parts {
    float hi, mid, lo;  // a, b, c: bfloat16 values; hi + mid + lo == x for finite x
};

// The three-part split of the safe and fast emulations, `part` rounding a value to bf16.
template <typename Part> inline bf16_parts split_bf16_by(float x, Part part) {
    bf16_parts p;
    p.hi = part(x);
    const float r1 = x - p.hi;  // msc_elem_32(a, ones, x): exact
    p.mid = part(r1);
    p.lo = part(r1 - p.mid);
    return p;
}
inline bf16_parts split_bf16(float x, aie::rounding_mode m) {
    return split_bf16_by(x, [m](float v) { return bf16_part(v, m); });
}

// safe: the nine products smallest first, each added with its own rounding (mul_elem_32_accuracy_safe).
inline float fp32_mul_safe(const bf16_parts & x, const bf16_parts & y) {
    const float a = x.hi, b = x.mid, c = x.lo, d = y.hi, e = y.mid, f = y.lo;
    float t = c * f;
    t = t + c * e;
    t = t + b * f;
    t = t + a * f;
    t = t + b * e;
    t = t + d * c;
    t = t + b * d;
    t = t + a * e;
    t = t + a * d;
    return t;
}
inline float fp32_mul_safe(float x, float y, aie::rounding_mode m) { return fp32_mul_safe(split_bf16(x, m), split_bf16(y, m)); }
// mac_elem_32_accuracy_safe: add_conf(acc, t); msc: sub_conf(acc, t).
inline float fp32_mac_safe(float acc, float x, float y, aie::rounding_mode m) { return acc + fp32_mul_safe(x, y, m); }
inline float fp32_msc_safe(float acc, float x, float y, aie::rounding_mode m) { return acc - fp32_mul_safe(x, y, m); }

// The safe product of n lane pairs at once, for the two modes kernels run in (floor, the reset mode,
// and conv_even): the same operations as split_bf16 and fp32_mul_safe above, lane by lane, written
// without branches so that the host compiler vectorizes them (the simulator executes every fp32
// product of every kernel through here). Bit-identical to the scalar form (test_aie_api_host.cpp
// checks it on random, special and tie values); any other mode takes the scalar form.
template <bool Floor> inline uint32_t bf16_part_bits(uint32_t u) {
    const uint32_t upper = u >> 16, low = u & 0xffffu;
    const uint32_t up = Floor ? ((u >> 31) & uint32_t(low != 0))
                              : (uint32_t(low > 0x8000u) | (uint32_t(low == 0x8000u) & upper & 1u));
    const bool special = (u & 0x7f800000u) == 0x7f800000u;   // inf stays inf, NaN a quiet NaN
    const uint32_t kept = (u & 0x007fffffu) ? (upper | 0x0040u) : upper;
    return (special ? kept : upper + up) << 16;
}
template <bool Floor> inline float bf16_part_fast(float x) {
    return aie::detail::bits_float(bf16_part_bits<Floor>(aie::detail::float_bits(x)));
}
template <bool Floor> inline void fp32_mul_safe_lanes_in(const float * x, const float * y, float * out, unsigned n) {
    // A plain loop: the compiler vectorizes it for the target it is compiled for (below: up to AVX-512).
    for (unsigned i = 0; i < n; ++i) {
        out[i] = fp32_mul_safe(split_bf16_by(x[i], bf16_part_fast<Floor>), split_bf16_by(y[i], bf16_part_fast<Floor>));
    }
}
// The same loop compiled for wider x86 vectors, chosen at run time (the host aie_api is header-only and
// built for the baseline ISA). Still no fused multiply-add: the file is compiled -ffp-contract=off.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define XDNA_AIE_HOST_WIDE_LANES 1
// bf16_part_bits on 16 lanes, written out in AVX-512 (the compiler's vectorization of the loop above
// keeps every lane's selects as blends of full-width temporaries).
template <bool Floor> __attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline __m512 bf16_part_x16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i upper = _mm512_and_si512(u, _mm512_set1_epi32(int(0xffff0000u)));
    const __m512i low = _mm512_and_si512(u, _mm512_set1_epi32(0xffff));
    __mmask16 up;
    if (Floor) {
        up = _mm512_test_epi32_mask(u, _mm512_set1_epi32(int(0x80000000u))) & _mm512_test_epi32_mask(low, low);
    } else {
        up = _mm512_cmpgt_epu32_mask(low, _mm512_set1_epi32(0x8000)) |
             (_mm512_cmpeq_epu32_mask(low, _mm512_set1_epi32(0x8000)) & _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x10000)));
    }
    __m512i r = _mm512_mask_add_epi32(upper, up, upper, _mm512_set1_epi32(0x10000));
    const __m512i expo = _mm512_set1_epi32(0x7f800000);
    const __mmask16 special = _mm512_cmpeq_epi32_mask(_mm512_and_si512(u, expo), expo);
    const __mmask16 quiet = special & _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x007fffff));
    r = _mm512_mask_mov_epi32(r, special, upper);
    r = _mm512_mask_or_epi32(r, quiet, r, _mm512_set1_epi32(0x00400000));
    return _mm512_castsi512_ps(r);
}
// fp32_mul_safe of 16 lanes from their parts (a, b, c of x; d, e, f of y): the nine products in order.
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline __m512 fp32_safe_sum_x16(__m512 a, __m512 b, __m512 c,
                                                                                                   __m512 d, __m512 e, __m512 f) {
    __m512 t = _mm512_mul_ps(c, f);
    t = _mm512_add_ps(t, _mm512_mul_ps(c, e));
    t = _mm512_add_ps(t, _mm512_mul_ps(b, f));
    t = _mm512_add_ps(t, _mm512_mul_ps(a, f));
    t = _mm512_add_ps(t, _mm512_mul_ps(b, e));
    t = _mm512_add_ps(t, _mm512_mul_ps(d, c));
    t = _mm512_add_ps(t, _mm512_mul_ps(b, d));
    t = _mm512_add_ps(t, _mm512_mul_ps(a, e));
    return _mm512_add_ps(t, _mm512_mul_ps(a, d));
}
template <bool Floor> __attribute__((target("avx512f,avx512bw,avx512vl"))) __attribute__((noinline)) inline void
fp32_mul_safe_lanes_avx512(const float * x, const float * y, float * out, unsigned n) {
    unsigned i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 xv = _mm512_loadu_ps(x + i), yv = _mm512_loadu_ps(y + i);
        const __m512 a = bf16_part_x16<Floor>(xv), r1 = _mm512_sub_ps(xv, a), b = bf16_part_x16<Floor>(r1);
        const __m512 c = bf16_part_x16<Floor>(_mm512_sub_ps(r1, b));
        const __m512 d = bf16_part_x16<Floor>(yv), s1 = _mm512_sub_ps(yv, d), e = bf16_part_x16<Floor>(s1);
        const __m512 f = bf16_part_x16<Floor>(_mm512_sub_ps(s1, e));
        _mm512_storeu_ps(out + i, fp32_safe_sum_x16(a, b, c, d, e, f));
    }
    if (i < n) fp32_mul_safe_lanes_in<Floor>(x + i, y + i, out + i, n - i);
}
template <bool Floor> __attribute__((target("avx2"))) __attribute__((noinline)) inline void
fp32_mul_safe_lanes_avx2(const float * x, const float * y, float * out, unsigned n) {
    fp32_mul_safe_lanes_in<Floor>(x, y, out, n);
}
// 2: AVX-512 F/BW/VL, 1: AVX2, 0: the baseline.
inline int fp32_lanes_isa() {
    static const int isa = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") ? 2
                         : __builtin_cpu_supports("avx2")                                                                          ? 1
                                                                                                                                    : 0;
    return isa;
}
#endif

template <bool Floor> inline void fp32_mul_safe_lanes_best(const float * x, const float * y, float * out, unsigned n) {
#ifdef XDNA_AIE_HOST_WIDE_LANES
    switch (fp32_lanes_isa()) {
        case 2: fp32_mul_safe_lanes_avx512<Floor>(x, y, out, n); return;
        case 1: fp32_mul_safe_lanes_avx2<Floor>(x, y, out, n); return;
        default: break;
    }
#endif
    fp32_mul_safe_lanes_in<Floor>(x, y, out, n);
}

inline void fp32_mul_safe_lanes(const float * x, const float * y, float * out, unsigned n, aie::rounding_mode m) {
    if (m == aie::rounding_mode::floor) {
        fp32_mul_safe_lanes_best<true>(x, y, out, n);
    } else if (m == aie::rounding_mode::conv_even) {
        fp32_mul_safe_lanes_best<false>(x, y, out, n);
    } else {
        for (unsigned i = 0; i < n; ++i) out[i] = fp32_mul_safe(x[i], y[i], m);
    }
}

// 32-lane fast: the same nine products in a chain of MACs, one rounding each (mul_elem_32_accuracy_fast).
inline float fp32_mul_fast32(const bf16_parts & x, const bf16_parts & y) {
    const float a = x.hi, b = x.mid, c = x.lo, d = y.hi, e = y.mid, f = y.lo;
    float t = c * f;
    t = std::fma(c, e, t);
    t = std::fma(b, f, t);
    t = std::fma(a, f, t);
    t = std::fma(b, e, t);
    t = std::fma(d, c, t);
    t = std::fma(b, d, t);
    t = std::fma(a, e, t);
    t = std::fma(a, d, t);
    return t;
}
inline float fp32_mul_fast32(float x, float y, aie::rounding_mode m) { return fp32_mul_fast32(split_bf16(x, m), split_bf16(y, m)); }

// ---- instruction counts (op-counts.hpp) -------------------------------------------------------------

// The emulation bodies the host implements, and what one of them issues.
enum class fp32_form {
    safe_mul,    // mul_elem_{16,32}_accuracy_safe (also negmul: the same products with sub_mul set)
    safe_mac,    // mac/msc_elem_{16,32}_accuracy_safe: one add_conf / sub_conf more
    fast32_mul,  // mul_elem_32_accuracy_fast
};

// Vector-slot instructions of one emulated multiply (aie2p_detail, aie2p_vmult.h): 4 msc for the
// residuals, then safe 9 products + 8 adds (+1 add for the incoming accumulator), fast32 1 mul + 8 MACs.
constexpr uint64_t fp32_vector_ops(fp32_form f) { return f == fp32_form::safe_mul ? 21 : f == fp32_form::safe_mac ? 22 : 13; }
// bf16 x bf16 multiplier instructions among them (for OpCounts::mmul_macs).
constexpr uint64_t fp32_partial_products(fp32_form) { return 9; }

// `n` emulated multiplies of `lanes` (16 or 32) lanes each:
//   vector  fp32_vector_ops(form) each (VMSC.f, VMUL.f, VMAC.f, VADD.f: AIE2PGenInstrInfo.td, vec slot)
//   store   6 accumulator -> bf16 conversions (a .. f; VCONV.bf16.fp32 is a store-slot instruction,
//           AIE2PGenInstrInfo.td; the w form for 16 lanes, the x form for 32)
//   move    the two float operands moved into accumulators ((v32accfloat)v1, (v32accfloat)v2: one
//           register move per 512 bits) and the vector of bf16 ones (broadcast_one_to_v32bfloat16);
//           the 16-lane form also inserts each 16-lane part into a zeroed 32-lane bf16 register (6).
//           Slots of these moves and inserts are estimates (move slot), not read from the .td.
inline void count_fp32_emulation(uint64_t n, unsigned lanes, fp32_form form) {
    const uint64_t operand_moves = 2 * vreg_ops(32ull * lanes);
    const uint64_t inserts = lanes <= 16 ? 6 : 0;
    count_vector(n * fp32_vector_ops(form));
    count_store(n * 6);
    count_move(n * (operand_moves + 1 + inserts));
}

}  // namespace detail
}  // namespace aie_host
