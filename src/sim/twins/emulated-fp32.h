// Shared arithmetic of the twins. The AIE2P fp32 multiply, as the twins reproduce it: the core has no
// fp32 multiplier, and Peano's emulation (reproduced by the simulator's aie_api,
// aie_api/host/fp32-emulation.hpp; llvm-aie clang/lib/Headers/aie2p_vmult.h) splits each operand into
// three bf16 parts in the current rounding mode and adds the nine partial products smallest first:
// `safe` (aie::mul) with an add after each product, the 32-lane `fast` intrinsic with a chain of MACs.
// The kernels the twins mirror (mm_kquant.cc, mm_legacy.cc) call the 32-lane fast intrinsic and run in
// floor, the mode a core starts in (they never change it). The twins must give the kernel code's
// bits, so they follow that emulation exactly: 16 lanes at a time with AVX-512, and one value at a time
// through the aie_api host function itself on other hosts.
#pragma once

#include "aie_api/host/fp32-emulation.hpp"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace xdna::twin {

// Which emulation a product is.
enum class fp32_accuracy {
    safe,    // aie::mul / mul_elem_32_accuracy_safe: each product rounded, then added
    fast32,  // mul_elem_32_accuracy_fast: the same products, each added in a MAC (one rounding)
};

// The emulation the mirrored kernels' epilogues call.
inline fp32_accuracy current_accuracy() { return fp32_accuracy::fast32; }

#define XDNA_EMUL_TARGET __attribute__((target("avx512f,avx512bw,avx512vl"), always_inline))

// The bf16 parts in the host aie_api's two rounding modes (aie_host::detail::bf16_part_x16<Floor>), the
// same bits for every input, in fewer operations: the integer sum that rounds a finite value, with one
// masked fix-up for NaN lanes (the kept bits made quiet, as there), where bf16_part_x16 selects among
// its special cases. Tests: tests/kernels/test_twin_splits.cpp, against bf16_part_x16 on every upper
// half of the bits with the lower halves that decide the rounding.
//
// Floor: a negative value with discarded bits steps one bf16 ulp away from zero: adding 0xFFFF before
// the truncation carries into bit 16 exactly when a discarded bit is set (into the exponent, and to an
// infinity, where bf16_part_x16 carries too); an infinity has no discarded bits.
XDNA_EMUL_TARGET inline __m512 bf16_floor(__m512 x) {
    const __m512i u = _mm512_castps_si512(x), keep = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    const __m512i r = _mm512_and_si512(_mm512_add_epi32(u, _mm512_srli_epi32(_mm512_srai_epi32(u, 31), 16)), keep);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_castsi512_ps(_mm512_mask_or_epi32(r, nan, _mm512_and_si512(u, keep), _mm512_set1_epi32(0x00400000)));
}

// conv_even: adding 0x7FFF and the kept part's lowest bit carries into it exactly when the discarded
// bits round up (above half, or half with an odd kept part).
XDNA_EMUL_TARGET inline __m512 bf16_even(__m512 x) {
    const __m512i u = _mm512_castps_si512(x), keep = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), odd), keep);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_castsi512_ps(_mm512_mask_or_epi32(r, nan, _mm512_and_si512(u, keep), _mm512_set1_epi32(0x00400000)));
}

struct Parts {
    __m512 hi, mid, lo;
};

// The split in floor: a = bf16(x), b = bf16(x - a), c = bf16(x - a - b), each difference exact. With
// floor rounding a <= x, so both residuals are >= 0, or +inf or NaN (x a NaN, or after an infinity):
// their floor is the truncation, or a NaN's kept bits, already quiet (a difference is never a
// signalling NaN), so the second and third parts are truncations.
XDNA_EMUL_TARGET inline Parts split(__m512 x) {
    const __m512i keep = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    Parts p;
    p.hi = bf16_floor(x);
    const __m512 r1 = _mm512_sub_ps(x, p.hi);
    p.mid = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(r1), keep));
    const __m512 r2 = _mm512_sub_ps(r1, p.mid);
    p.lo = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(r2), keep));
    return p;
}

// One value's split, as the host aie_api makes it in floor.
inline aie_host::detail::bf16_parts split_scalar(float x) { return aie_host::detail::split_bf16(x, aie::rounding_mode::floor); }

// x * y as the core computes it from the operands' parts, partial products in the emulation's order
// (callers that reuse an operand split it once).
XDNA_EMUL_TARGET inline __m512 emulated_mul(const Parts & x, const Parts & y, fp32_accuracy acc) {
    const __m512 a = x.hi, b = x.mid, c = x.lo, d = y.hi, e = y.mid, f = y.lo;
    __m512 t = _mm512_mul_ps(c, f);
    if (acc == fp32_accuracy::fast32) {
        t = _mm512_fmadd_ps(c, e, t);
        t = _mm512_fmadd_ps(b, f, t);
        t = _mm512_fmadd_ps(a, f, t);
        t = _mm512_fmadd_ps(b, e, t);
        t = _mm512_fmadd_ps(d, c, t);
        t = _mm512_fmadd_ps(b, d, t);
        t = _mm512_fmadd_ps(a, e, t);
        t = _mm512_fmadd_ps(a, d, t);
    } else {
        return aie_host::detail::fp32_safe_sum_x16(a, b, c, d, e, f);
    }
    return t;
}

XDNA_EMUL_TARGET inline __m512 emulated_mul(__m512 x, __m512 y, fp32_accuracy acc) {
    return emulated_mul(split(x), split(y), acc);
}

inline float emulated_mul(float x, float y, fp32_accuracy acc) {
    constexpr aie::rounding_mode floor = aie::rounding_mode::floor;
    return acc == fp32_accuracy::fast32 ? aie_host::detail::fp32_mul_fast32(x, y, floor) : aie_host::detail::fp32_mul_safe(x, y, floor);
}

// IEEE half -> single, exact (as the kernels widen fp16 fields with integer ops; NaNs come out quiet,
// as from _mm512_cvtph_ps, so the portable and vector paths agree).
inline float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (man << 13) | (man != 0 ? 0x00400000u : 0u);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {  // subnormal: normalise
        exp = 113;
        while ((man & 0x400) == 0) {
            man <<= 1;
            --exp;
        }
        bits = sign | (exp << 23) | ((man & 0x3FF) << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

}  // namespace xdna::twin
