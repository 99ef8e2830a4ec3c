// The arithmetic of the core's conversions, independent of vector types: shift-round-saturate of
// accumulator lanes and rounding of fp32 to bfloat16 under a rounding mode.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "modes.hpp"

namespace aie::detail {

// x / 2^shift rounded per `m` (shift >= 0), or x * 2^-shift for a negative shift. Rounding of a value
// q + r/2^s (0 <= r < 2^s) follows the mode definitions of AMD UG1583 ("Rounding Modes").
inline int64_t round_shift(int64_t x, int shift, aie::rounding_mode m) {
    if (shift <= 0) return (int64_t)((uint64_t)x << (unsigned)(-shift));
    if (shift > 62) shift = 62;  // beyond any accumulator width: only the sign survives
    const int64_t q = x >> shift;  // floor (arithmetic shift)
    const uint64_t r = (uint64_t)x & ((uint64_t(1) << shift) - 1);
    const uint64_t half = uint64_t(1) << (shift - 1);
    const bool neg = x < 0;
    const bool exact = r == 0;
    using rm = aie::rounding_mode;
    switch (m) {
        case rm::floor: return q;
        case rm::ceil: return q + (exact ? 0 : 1);
        case rm::symmetric_floor: return neg ? q + (exact ? 0 : 1) : q;
        case rm::symmetric_ceil: return neg ? q : q + (exact ? 0 : 1);
        default: break;
    }
    if (r > half) return q + 1;
    if (r < half) return q;
    switch (m) {  // exactly halfway
        case rm::negative_inf: return q;
        case rm::positive_inf: return q + 1;
        case rm::symmetric_zero: return neg ? q + 1 : q;
        case rm::symmetric_inf: return neg ? q : q + 1;
        case rm::conv_even: return (q & 1) ? q + 1 : q;
        case rm::conv_odd: return (q & 1) ? q : q + 1;
        default: return q;
    }
}

// Fit x into an integer of `bits` bits. none: keep the low bits (AMD UG1603: "truncated on the MSB
// side"); saturate: clamp to the type's range; symmetric: clamp signed values to +-(2^(bits-1)-1).
inline int64_t saturate(int64_t x, unsigned bits, bool is_signed, aie::saturation_mode m) {
    if (m == aie::saturation_mode::none) {
        if (bits >= 64) return x;
        const uint64_t mask = (uint64_t(1) << bits) - 1;
        const uint64_t low = (uint64_t)x & mask;
        if (is_signed && (low >> (bits - 1)) & 1) return (int64_t)(low | ~mask);
        return (int64_t)low;
    }
    int64_t lo, hi;
    if (is_signed) {
        hi = bits >= 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1;
        lo = bits >= 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
        if (m == aie::saturation_mode::symmetric) lo = -hi;
    } else {
        lo = 0;
        hi = bits >= 63 ? INT64_MAX : (int64_t(1) << bits) - 1;
    }
    return x < lo ? lo : (x > hi ? hi : x);
}

// x * 2^shift fitted into `bits` bits per `m`: an ups by `shift` into an accumulator lane, then an srs
// with shift 0 (aie::upshift, aie_api detail/aie2/shift.hpp). The lane is taken to hold x * 2^shift
// exactly (an accumulator lane has 16 or more spare bits over the element; whether an ups beyond them
// saturates or wraps in the accumulator is not established, and the kernels never get near it), so
// none keeps the low `bits` bits and saturate / symmetric clamp the exact product.
inline int64_t upshift_saturate(int64_t x, unsigned shift, unsigned bits, bool is_signed, aie::saturation_mode m) {
    if (m == aie::saturation_mode::none || x == 0) {
        return saturate(shift >= 64 ? 0 : (int64_t)((uint64_t)x << shift), bits, is_signed, m);
    }
    const bool overflow = shift >= 63 || x > (INT64_MAX >> shift) || x < (INT64_MIN >> shift);
    if (overflow) return saturate(x < 0 ? INT64_MIN : INT64_MAX, bits, is_signed, m);
    return saturate((int64_t)((uint64_t)x << shift), bits, is_signed, m);
}

inline uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

inline float bits_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// fp32 -> bfloat16 (the upper 16 bits of the fp32 pattern) rounded per `m`. The direction modes act
// on the signed value: floor rounds a negative number away from zero. That is how the core's
// accumulator-to-bf16 conversion behaves under the reset mode floor: bf16 results are never above
// the exact value (measured on NPU1, github Xilinx/mlir-aie PR 3587: error <= 0 on every element).
inline uint16_t float_to_bf16_bits(float f, aie::rounding_mode m) {
    const uint32_t u = float_bits(f);
    if ((u & 0x7f800000u) == 0x7f800000u) {  // inf stays inf; NaN stays a (quiet) NaN
        return (u & 0x007fffffu) ? uint16_t((u >> 16) | 0x0040u) : uint16_t(u >> 16);
    }
    const bool neg = (u >> 31) != 0;
    const uint32_t upper = u >> 16;
    const uint32_t low = u & 0xffffu;
    bool up;  // increase the magnitude
    using rm = aie::rounding_mode;
    switch (m) {
        case rm::floor: up = neg && low != 0; break;
        case rm::ceil: up = !neg && low != 0; break;
        case rm::symmetric_floor: up = false; break;
        case rm::symmetric_ceil: up = low != 0; break;
        default:
            if (low != 0x8000u) {
                up = low > 0x8000u;
            } else {
                switch (m) {
                    case rm::negative_inf: up = neg; break;
                    case rm::positive_inf: up = !neg; break;
                    case rm::symmetric_zero: up = false; break;
                    case rm::symmetric_inf: up = true; break;
                    case rm::conv_even: up = (upper & 1u) != 0; break;
                    case rm::conv_odd: up = (upper & 1u) == 0; break;
                    default: up = false; break;
                }
            }
    }
    return uint16_t(upper + (up ? 1u : 0u));  // a carry moves into the exponent, up to infinity
}

inline float bf16_bits_to_float(uint16_t b) { return bits_float(uint32_t(b) << 16); }

// 2^e as a double, exactly: built from its bits in the normal range (every exponent a bfp16 block, a
// product of two blocks or an int <-> float conversion's shift has), std::ldexp outside it. The
// simulator multiplies by it per lane.
inline double pow2_exact(int e) {
    if (e < -1022 || e > 1023) return std::ldexp(1.0, e);
    const uint64_t bits = uint64_t(e + 1023) << 52;
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
}

}  // namespace aie::detail
