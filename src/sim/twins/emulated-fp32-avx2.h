// The AIE2P fp32 multiply (emulated-fp32.h) on 8 lanes with AVX2, for the twins' AVX2 paths: the
// same bf16 splits and the same partial products in the same order as the 16-lane AVX-512 form and
// the aie_api host function (aie_api/host/fp32-emulation.hpp), so every path gives the same bits.
// Any change to the emulation there must be made here too (tests/kernels compare the paths).
//
// Two forms:
//   exact  the definition, for every input (NaN, infinities, subnormals, overflow).
//   fast   for operands known to be in a safe range (callers check, see fast_operand_ok): the same
//          bits with fewer instructions, because
//          - with floor rounding the first part is <= x, so both residuals x - hi and r1 - mid are
//            >= 0, and the floor of a non-negative finite value is a truncation (one AND);
//          - every partial product of two bf16 parts is exact in fp32 when it neither overflows nor
//            loses bits below 2^-149, so adding it with a fused multiply-add rounds exactly as the
//            separate multiply and add do.
#pragma once

#include "aie_api/host/fp32-emulation.hpp"
#include "emulated-fp32.h"

#include <immintrin.h>

#include <cstdint>

namespace xdna::twin {

#define XDNA_EMUL8_TARGET __attribute__((target("avx2,fma,f16c"), always_inline))

// bf16 with floor rounding (toward minus infinity); NaNs stay quiet NaNs (emulated-fp32.h bf16_floor).
XDNA_EMUL8_TARGET inline __m256 bf16_floor8(__m256 x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i keep = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)), _mm256_set1_epi32(0x7F800000));
    // Negative values with discarded bits step one bf16 ulp away from zero: adding 0xFFFF before the
    // truncation carries into bit 16 exactly when a discarded bit is set.
    const __m256i down = _mm256_add_epi32(u, _mm256_srli_epi32(_mm256_srai_epi32(u, 31), 16));
    const __m256i floor = _mm256_and_si256(down, keep);
    const __m256i quiet = _mm256_or_si256(_mm256_and_si256(u, keep), _mm256_set1_epi32(0x00400000));
    return _mm256_castsi256_ps(_mm256_blendv_epi8(floor, quiet, nan));
}

// Finite x with |x| < 2^127 (no infinity can come out of the rounding).
XDNA_EMUL8_TARGET inline __m256 bf16_floor8_finite(__m256 x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i down = _mm256_add_epi32(u, _mm256_srli_epi32(_mm256_srai_epi32(u, 31), 16));
    return _mm256_castsi256_ps(_mm256_and_si256(down, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}

// x >= 0 (or +0): the floor is the truncation.
XDNA_EMUL8_TARGET inline __m256 bf16_trunc8(__m256 x) {
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}

struct Parts8 {
    __m256 hi, mid, lo;
};

XDNA_EMUL8_TARGET inline Parts8 split8(__m256 x) {
    Parts8 p;
    p.hi = bf16_floor8(x);
    const __m256 r1 = _mm256_sub_ps(x, p.hi);
    p.mid = bf16_floor8(r1);
    const __m256 r2 = _mm256_sub_ps(r1, p.mid);
    p.lo = bf16_floor8(r2);
    return p;
}

XDNA_EMUL8_TARGET inline Parts8 split8_fast(__m256 x) {
    Parts8 p;
    p.hi = bf16_floor8_finite(x);
    const __m256 r1 = _mm256_sub_ps(x, p.hi);  // exact and >= 0
    p.mid = bf16_trunc8(r1);
    const __m256 r2 = _mm256_sub_ps(r1, p.mid);
    p.lo = bf16_trunc8(r2);
    return p;
}

XDNA_EMUL8_TARGET inline Parts8 splat8(const aie_host::detail::bf16_parts & s) {
    return {_mm256_set1_ps(s.hi), _mm256_set1_ps(s.mid), _mm256_set1_ps(s.lo)};
}

// x * y from the operands' parts, partial products in the emulation's order (emulated-fp32.h):
// safe adds each rounded product, fast32 (the kernels' 32-lane fast intrinsic) chains MACs.
XDNA_EMUL8_TARGET inline __m256 emulated_mul8(const Parts8 & x, const Parts8 & y, fp32_accuracy acc) {
    const __m256 a = x.hi, b = x.mid, c = x.lo, d = y.hi, e = y.mid, f = y.lo;
    __m256 t = _mm256_mul_ps(c, f);
    if (acc == fp32_accuracy::fast32) {
        t = _mm256_fmadd_ps(c, e, t);
        t = _mm256_fmadd_ps(b, f, t);
        t = _mm256_fmadd_ps(a, f, t);
        t = _mm256_fmadd_ps(b, e, t);
        t = _mm256_fmadd_ps(d, c, t);
        t = _mm256_fmadd_ps(b, d, t);
        t = _mm256_fmadd_ps(a, e, t);
        t = _mm256_fmadd_ps(a, d, t);
    } else {
        t = _mm256_add_ps(t, _mm256_mul_ps(c, e));
        t = _mm256_add_ps(t, _mm256_mul_ps(b, f));
        t = _mm256_add_ps(t, _mm256_mul_ps(a, f));
        t = _mm256_add_ps(t, _mm256_mul_ps(b, e));
        t = _mm256_add_ps(t, _mm256_mul_ps(d, c));
        t = _mm256_add_ps(t, _mm256_mul_ps(b, d));
        t = _mm256_add_ps(t, _mm256_mul_ps(a, e));
        t = _mm256_add_ps(t, _mm256_mul_ps(a, d));
    }
    return t;
}

// The same sum with each product fused into the add, for either emulation: identical bits when every
// partial product is exact (the fast form's precondition), where a MAC and a multiply then an add round
// alike.
XDNA_EMUL8_TARGET inline __m256 emulated_mul8_fused(const Parts8 & x, const Parts8 & y, fp32_accuracy) {
    const __m256 a = x.hi, b = x.mid, c = x.lo, d = y.hi, e = y.mid, f = y.lo;
    __m256 t = _mm256_mul_ps(c, f);
    t = _mm256_fmadd_ps(c, e, t);
    t = _mm256_fmadd_ps(b, f, t);
    t = _mm256_fmadd_ps(a, f, t);
    t = _mm256_fmadd_ps(b, e, t);
    t = _mm256_fmadd_ps(d, c, t);
    t = _mm256_fmadd_ps(b, d, t);
    t = _mm256_fmadd_ps(a, e, t);
    t = _mm256_fmadd_ps(a, d, t);
    return t;
}

// The fast form's precondition on a pair of operands with unbiased exponents ex, ey (both normal and
// nonzero; a zero operand splits into zeros and is always safe):
//   - |x|, |y| < 2^127, so no split rounds to an infinity (the floor steps away from zero);
//   - every part of x is a multiple of ulp(x) = 2^(ex - 23) and holds at most 8 significant bits, so
//     a partial product is an integer of at most 16 bits times 2^(ex + ey - 46): exact if
//     ex + ey - 46 >= -149 (no bits below the smallest subnormal) and |product| < 2^(ex + ey + 2)
//     stays below 2^128: ex + ey >= -103 and ex + ey <= 125.
// Callers bound exponents per operand class rather than per lane (e.g. the kernels' fp16 d times an
// activation scale in [2^-60, 2^60]); this helper states the bound on a scalar activation scale.
inline bool fast_scale_ok(float s) {
    uint32_t u;
    __builtin_memcpy(&u, &s, 4);
    const uint32_t e = (u >> 23) & 0xFF;
    return (u & 0x7FFFFFFFu) == 0 || (e >= 127 - 60 && e <= 127 + 60);
}

}  // namespace xdna::twin
