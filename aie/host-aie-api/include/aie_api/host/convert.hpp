// Element type conversions: integer pack / unpack, reinterpretation, fixed <-> floating point
// (aie_api aie.hpp groups "basic_types_conversion" and "fp_conversion").
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "accum.hpp"
#include "modes.hpp"
#include "op-counts.hpp"
#include "rounding.hpp"
#include "vector.hpp"

namespace aie {
namespace detail {

template <typename T2, typename T, unsigned N> vector<T2, N> unpack_impl(const vector<T, N> & v, bool sign) {
    static_assert(type_bits_v<T2> == 2 * type_bits_v<T> && is_integral_v<T2>, "unpack: to the next wider integer");
    using namespace aie_host::detail;
    constexpr unsigned tb = type_bits_v<T>;
    // VUNPACK turns 256 bits into 512 (64 lanes 4 -> 8, 32 lanes 8 -> 16); 16 -> 32 is a sign vector
    // plus an interleave in aie_api (vector.hpp unpack), counted as moves.
    if constexpr (tb == 4) count_unpack(chunks(N, 64));
    else if constexpr (tb == 8) count_unpack(chunks(N, 32));
    else count_move(1 + vreg_ops(uint64_t(type_bits_v<T2>) * N));
    vector<T2, N> r;
    for (unsigned i = 0; i < N; ++i) {
        const uint64_t low = (uint64_t)to_i64(v.raw(i)) & ((uint64_t(1) << tb) - 1);
        const int64_t x = (sign && ((low >> (tb - 1)) & 1)) ? (int64_t)(low | ~((uint64_t(1) << tb) - 1)) : (int64_t)low;
        r.raw(i) = from_i64_wrap<T2>(x);
    }
    return r;
}

// Narrowing by VPACK: it saturates per the core's saturation mode (Peano aiev2 pack() passes crSat),
// so after reset (none) it keeps the low bits.
template <typename T2, typename T, unsigned N> vector<T2, N> pack_impl(const vector<T, N> & v, bool sign) {
    static_assert(2 * type_bits_v<T2> == type_bits_v<T> && is_integral_v<T2>, "pack: to the next narrower integer");
    aie_host::detail::count_store(aie_host::detail::vreg_ops(uint64_t(type_bits_v<T>) * N));
    const saturation_mode sat = get_saturation();
    vector<T2, N> r;
    for (unsigned i = 0; i < N; ++i) r.raw(i) = from_i64_wrap<T2>(saturate(to_i64(v.raw(i)), type_bits_v<T2>, sign, sat));
    return r;
}

}  // namespace detail

template <typename T, unsigned Elems>
template <typename T2>
vector<T2, Elems> vector<T, Elems>::unpack() const {
    return detail::unpack_impl<T2>(*this, detail::is_signed_v<T>);
}
template <typename T, unsigned Elems>
template <typename T2>
vector<T2, Elems> vector<T, Elems>::unpack_sign(bool sign) const {
    return detail::unpack_impl<T2>(*this, sign);
}
template <typename T, unsigned Elems>
template <typename T2>
vector<T2, Elems> vector<T, Elems>::pack() const {
    return detail::pack_impl<T2>(*this, detail::is_signed_v<T>);
}
template <typename T, unsigned Elems>
template <typename T2>
vector<T2, Elems> vector<T, Elems>::pack_sign(bool sign) const {
    return detail::pack_impl<T2>(*this, sign);
}

// To the next wider integer type, sign- or zero-extended (int4 -> int8: element i of the packed
// bytes, low nibble first).
template <typename T, unsigned N, typename T2 = typename detail::next_int<T>::type> vector<T2, N> unpack(const vector<T, N> & v) {
    return v.template unpack<T2>();
}
// To the next narrower integer type (int8 -> int4: saturation per the core's mode).
template <typename T, unsigned N, typename T2 = typename detail::prev_int<T>::type> vector<T2, N> pack(const vector<T, N> & v) {
    return v.template pack<T2>();
}

// Same bits, other element type (aie_api vector_cast).
template <typename DstT, typename T, unsigned N> auto vector_cast(const vector<T, N> & v) { return v.template cast_to<DstT>(); }

// ---------------------------------------------------------------------------------------------
// Fixed <-> floating point

namespace detail {
// x * 2^e as std::ldexp gives it, without its call: a product by an exact power of two (pow2_exact) is
// exact in double unless it leaves double's range, which the callers' values (an int64 or a float,
// |e| <= 64) never do. (The simulator converts every lane this way.)
inline double times_pow2(double x, int e) { return e == 0 ? x : x * pow2_exact(e); }

// x * 2^-shift, the single rounding of the int -> fp32 conversion (to nearest even); the aie_api
// emulation (detail/aie2p/elementary.hpp Fix2Float) sums an exact high and low part in fp32, which
// rounds the same way.
inline float fix_to_float(int64_t x, int shift) { return (float)times_pow2((double)(float)x, -shift); }

// Round x to an integer, halfway cases toward zero (aie_api aie_doc.hpp "Floating-point Conversion":
// vector float -> fixed on XDNA 2 uses rounding_mode::symmetric_zero), then saturate (the emulation
// sets saturation_mode::saturate, detail/aie2p/elementary.hpp Float2Fix).
inline int64_t round_half_to_zero_sat(double x, unsigned bits, bool is_signed) {
    if (std::isnan(x)) return 0;
    const double m = std::fabs(x);
    double q = std::floor(m);
    if (m - q > 0.5) q += 1.0;
    const double lim = 9.2e18;
    q = q > lim ? lim : q;
    const int64_t r = x < 0 ? -(int64_t)q : (int64_t)q;
    return saturate(r, bits, is_signed, saturation_mode::saturate);
}
}  // namespace detail

// Integer vector -> float (or bfloat16) vector: x * 2^-shift. The aie_api emulation per 32 lanes:
// 32-bit inputs 2 filters + 2 ups (move) and 5 accumulator adds (vector); narrower ones 1 ups and 2
// adds; then the conversion out of the accumulator.
template <typename TR = float, typename T, unsigned N> vector<TR, N> to_float(const vector<T, N> & v, int shift = 0) {
    static_assert(detail::is_integral_v<T>, "to_float takes integer vectors");
    static_assert(std::is_same_v<TR, float> || std::is_same_v<TR, bfloat16>, "to_float returns float or bfloat16");
    using namespace aie_host::detail;
    const uint64_t c = chunks(N, 32);
    if constexpr (detail::type_bits_v<T> == 32) {
        count_move(4 * c);
        count_vector(5 * c);
    } else {
        count_move(c);
        count_vector(2 * c);
    }
    if constexpr (std::is_same_v<TR, float>) count_move(vreg_ops(32ull * N));
    else count_store(chunks(N, 32));
    const rounding_mode m = get_rounding();
    vector<TR, N> r;
    for (unsigned i = 0; i < N; ++i) {
        const float f = detail::fix_to_float(detail::to_i64(v.raw(i)), shift);
        if constexpr (std::is_same_v<TR, float>) r.raw(i) = f;
        else r.raw(i) = bfloat16::from_bits(detail::float_to_bf16_bits(f, m));
    }
    return r;
}

// Integer accumulator -> float vector: lane * 2^-shift rounded once (aie_api aie.hpp to_float(Acc));
// the emulation splits each lane with two srs and converts the parts like to_float(vector).
template <typename TR = float, typename Tag, unsigned N> vector<TR, N> to_float(const accum<Tag, N> & acc, int shift = 0) {
    static_assert(std::is_same_v<TR, float>, "to_float(accum) returns float");
    static_assert(!detail::accum_tag_traits<Tag>::is_float, "to_float takes an integer accumulator");
    using namespace aie_host::detail;
    const uint64_t c = chunks(N, 32);
    count_store(2 * c);
    count_move(4 * c + vreg_ops(32ull * N));
    count_vector(5 * c);
    vector<TR, N> r;
    for (unsigned i = 0; i < N; ++i) r.raw(i) = detail::fix_to_float(acc.lane(i), shift);
    return r;
}

// Scalar versions (run on the vector unit on the core; not counted: scalar code is not counted).
template <typename TR = float> TR to_float(int a, int shift = 0) { return TR(detail::fix_to_float(a, shift)); }
template <typename TR = int32> TR to_fixed(float a, int shift = 0) {
    static_assert(detail::is_integral_v<TR>, "to_fixed returns an integer");
    return detail::from_i64_wrap<TR>(detail::round_half_to_zero_sat(detail::times_pow2((double)a, shift), detail::type_bits_v<TR>,
                                                                     detail::is_signed_v<TR>));
}

// float vector -> integer vector: round(x * 2^shift), halfway toward zero, saturated. Emulated per 32
// lanes with magic-number adds in fp32 accumulators (aie_api detail/aie2p/elementary.hpp): 32-bit
// results 7 accumulator ops, 4 srs, 3 moves; narrower results 2 ops, 1 srs, 1 move.
template <typename TR = int32, unsigned N> vector<TR, N> to_fixed(const vector<float, N> & v, int shift = 0) {
    static_assert(detail::is_integral_v<TR>, "to_fixed returns integers");
    using namespace aie_host::detail;
    const uint64_t c = chunks(N, 32);
    if constexpr (detail::type_bits_v<TR> == 32) {
        count_vector(7 * c);
        count_store(4 * c);
        count_move(3 * c);
    } else {
        count_vector(2 * c);
        count_store(c);
        count_move(c);
    }
    vector<TR, N> r;
    for (unsigned i = 0; i < N; ++i)
        r.raw(i) = detail::from_i64_wrap<TR>(detail::round_half_to_zero_sat(detail::times_pow2((double)v.raw(i), shift),
                                                                            detail::type_bits_v<TR>, detail::is_signed_v<TR>));
    return r;
}

// bfloat16 vector -> integer vector: floor(x * 2^shift) whatever the rounding mode (aie_api aie.hpp
// to_fixed(vector<bfloat16>) note), saturated; one conversion per 16 lanes.
template <typename TR = int32, unsigned N> vector<TR, N> to_fixed(const vector<bfloat16, N> & v, int shift = 0) {
    static_assert(detail::is_integral_v<TR>, "to_fixed returns integers");
    aie_host::detail::count_vector(aie_host::detail::chunks(N, 16));
    if constexpr (detail::type_bits_v<TR> < 32) aie_host::detail::count_move(aie_host::detail::chunks(N, 32));
    vector<TR, N> r;
    for (unsigned i = 0; i < N; ++i) {
        const double x = detail::times_pow2((double)float(v.raw(i)), shift);
        const double f = std::isnan(x) ? 0.0 : std::floor(x);
        const double c = f > 9.2e18 ? 9.2e18 : (f < -9.2e18 ? -9.2e18 : f);
        r.raw(i) = detail::from_i64_wrap<TR>(
            detail::saturate((int64_t)c, detail::type_bits_v<TR>, detail::is_signed_v<TR>, saturation_mode::saturate));
    }
    return r;
}

}  // namespace aie
