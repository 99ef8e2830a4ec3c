// Elementwise arithmetic, compares, selection and reductions on vectors and accumulators (aie_api
// aie.hpp groups "arithmetic", "compare", "reshape", "bit").
#pragma once

#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "accum.hpp"
#include "config.hpp"
#include "fp32-emulation.hpp"
#include "mask.hpp"
#include "op-counts.hpp"
#include "vector.hpp"

namespace aie {
namespace detail {

template <typename X> struct is_vector : std::false_type {};
template <typename T, unsigned N> struct is_vector<vector<T, N>> : std::true_type {};
template <typename X> struct is_accum : std::false_type {};
template <typename Tag, unsigned N> struct is_accum<accum<Tag, N>> : std::true_type {};
template <typename X> struct is_mask : std::false_type {};
template <unsigned N> struct is_mask<mask<N>> : std::true_type {};

// A scalar operand usable with elements of type T (a value, or a vector element reference).
template <typename E, typename T>
inline constexpr bool is_scalar_for_v = !is_vector<std::decay_t<E>>::value && !is_accum<std::decay_t<E>>::value &&
                                        !is_mask<std::decay_t<E>>::value && std::is_convertible_v<E, T>;

// One element of an integer, float or bfloat16 vector op. bfloat16 results are rounded from fp32
// with the core's rounding mode (bf16 arithmetic runs in fp32 accumulators and converts back,
// github Xilinx/mlir-aie PR 3587).
template <typename T> inline T round_float_to(float x) {
    if constexpr (std::is_same_v<T, bfloat16>) return bfloat16::from_bits(float_to_bf16_bits(x, get_rounding()));
    else return x;
}

// Integer add/sub wrap to the element's width; for the C++ integer types that is their unsigned
// arithmetic (the same bits as the int64 form, in a loop the host compiler vectorizes).
template <typename T> inline T elem_add(T a, T b) {
    if constexpr (is_floating_point_v<T>) return round_float_to<T>(float(a) + float(b));
    else if constexpr (std::is_integral_v<T>) return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
    else return from_i64_wrap<T>(to_i64(a) + to_i64(b));
}
template <typename T> inline T elem_sub(T a, T b) {
    if constexpr (is_floating_point_v<T>) return round_float_to<T>(float(a) - float(b));
    else if constexpr (std::is_integral_v<T>) return T(std::make_unsigned_t<T>(a) - std::make_unsigned_t<T>(b));
    else return from_i64_wrap<T>(to_i64(a) - to_i64(b));
}
template <typename T> inline bool elem_lt(T a, T b) {
    if constexpr (is_floating_point_v<T>) return float(a) < float(b);
    else return to_i64(a) < to_i64(b);
}
template <typename T> inline bool elem_eq(T a, T b) {
    if constexpr (is_floating_point_v<T>) return float(a) == float(b);
    else return to_i64(a) == to_i64(b);
}

// Integer add/sub run in the move slot. Float and bfloat16 ones run on the accumulator adders (aie_api
// detail/aie2/add.hpp add_sub_bits_impl_float_common, the AIE2P branch: native_elems = 64): both
// operands enter fp32 accumulators (moves, as accum(vector)), one accumulator add per 64 lanes (vector
// slot), and the result leaves as accum::to_vector does (a move for float, a VCONV.bf16.fp32 in the
// store slot per 32 lanes for bfloat16). A scalar operand is broadcast first (one move).
template <typename T> inline void count_alu(unsigned elems, bool scalar_operand = false) {
    using namespace aie_host::detail;
    if constexpr (is_floating_point_v<T>) {
        count_move(2 * vreg_ops(uint64_t(type_bits_v<T>) * elems) + (scalar_operand ? 1 : 0));
        count_vector(acc_ops(32ull * elems));
        if constexpr (std::is_same_v<T, bfloat16>) count_store(chunks(elems, 32));
        else count_move(vreg_ops(32ull * elems));
    } else {
        count_move(vreg_ops(uint64_t(type_bits_v<T>) * elems));
    }
}
template <typename T> inline void count_move_bits(unsigned elems) {
    aie_host::detail::count_move(aie_host::detail::vreg_ops(uint64_t(type_bits_v<T>) * elems));
}

template <typename T, unsigned N, typename F> inline vector<T, N> map2(const vector<T, N> & a, const vector<T, N> & b, F f) {
    vector<T, N> r;
    for (unsigned i = 0; i < N; ++i) r.raw(i) = f(a.raw(i), b.raw(i));
    return r;
}
template <typename T, unsigned N> inline vector<T, N> splat(T x) {
    vector<T, N> r;
    for (unsigned i = 0; i < N; ++i) r.raw(i) = x;
    return r;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Add / subtract

template <typename T, unsigned N> vector<T, N> add(const vector<T, N> & a, const vector<T, N> & b) {
    detail::count_alu<T>(N);
    return detail::map2(a, b, detail::elem_add<T>);
}
template <typename T, unsigned N, typename E, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> add(const vector<T, N> & v, E a) {
    detail::count_alu<T>(N, true);
    return detail::map2(v, detail::splat<T, N>(T(a)), detail::elem_add<T>);
}
template <typename E, typename T, unsigned N, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> add(E a, const vector<T, N> & v) {
    detail::count_alu<T>(N, true);
    return detail::map2(detail::splat<T, N>(T(a)), v, detail::elem_add<T>);
}
template <typename T, unsigned N> vector<T, N> sub(const vector<T, N> & a, const vector<T, N> & b) {
    detail::count_alu<T>(N);
    return detail::map2(a, b, detail::elem_sub<T>);
}
template <typename T, unsigned N, typename E, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> sub(const vector<T, N> & v, E a) {
    detail::count_alu<T>(N, true);
    return detail::map2(v, detail::splat<T, N>(T(a)), detail::elem_sub<T>);
}
template <typename E, typename T, unsigned N, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> sub(E a, const vector<T, N> & v) {
    detail::count_alu<T>(N, true);
    return detail::map2(detail::splat<T, N>(T(a)), v, detail::elem_sub<T>);
}

// Accumulator add / sub: one accumulator instruction per 2048 bits (vector slot). The result has the
// first operand's type (aie_api aie.hpp add(Acc1, Acc2)).
template <typename Tag1, typename Tag2, unsigned N> accum<Tag1, N> add(const accum<Tag1, N> & a, const accum<Tag2, N> & b) {
    static_assert(detail::accum_tag_traits<Tag1>::is_float == detail::accum_tag_traits<Tag2>::is_float &&
                      detail::accum_tag_traits<Tag1>::native_bits == detail::accum_tag_traits<Tag2>::native_bits,
                  "aie::add: accumulators of different lanes");
    aie_host::detail::count_vector(aie_host::detail::acc_ops(accum<Tag1, N>::bits()));
    accum<Tag1, N> r;
    for (unsigned i = 0; i < N; ++i) r.set_lane(i, a.lane(i) + b.lane(i));
    return r;
}
template <typename Tag1, typename Tag2, unsigned N> accum<Tag1, N> sub(const accum<Tag1, N> & a, const accum<Tag2, N> & b) {
    static_assert(detail::accum_tag_traits<Tag1>::is_float == detail::accum_tag_traits<Tag2>::is_float &&
                      detail::accum_tag_traits<Tag1>::native_bits == detail::accum_tag_traits<Tag2>::native_bits,
                  "aie::sub: accumulators of different lanes");
    aie_host::detail::count_vector(aie_host::detail::acc_ops(accum<Tag1, N>::bits()));
    accum<Tag1, N> r;
    for (unsigned i = 0; i < N; ++i) r.set_lane(i, a.lane(i) - b.lane(i));
    return r;
}
// Accumulator plus a vector: the vector enters an accumulator (ups, no shift), then an accumulator add.
template <typename Tag, unsigned N, typename T> accum<Tag, N> add(const accum<Tag, N> & a, const vector<T, N> & v) {
    return add(a, accum<Tag, N>(v));
}
template <typename Tag, unsigned N, typename T> accum<Tag, N> sub(const accum<Tag, N> & a, const vector<T, N> & v) {
    return sub(a, accum<Tag, N>(v));
}

// ---------------------------------------------------------------------------------------------
// Sign, magnitude, min / max

template <typename T, unsigned N> vector<T, N> neg(const vector<T, N> & v) {
    if constexpr (!detail::is_signed_v<T>) return v;  // aie_api: unsigned vectors come back unchanged
    else {
        detail::count_move_bits<T>(N);
        vector<T, N> r;
        for (unsigned i = 0; i < N; ++i) {
            if constexpr (std::is_same_v<T, bfloat16>) r.raw(i) = bfloat16::from_bits(uint16_t(v.raw(i).bits ^ 0x8000u));
            else if constexpr (std::is_same_v<T, float>) r.raw(i) = -v.raw(i);
            else r.raw(i) = detail::from_i64_wrap<T>(-detail::to_i64(v.raw(i)));
        }
        return r;
    }
}
template <typename Tag, unsigned N> accum<Tag, N> neg(const accum<Tag, N> & a) {
    aie_host::detail::count_vector(aie_host::detail::acc_ops(accum<Tag, N>::bits()));
    accum<Tag, N> r;
    for (unsigned i = 0; i < N; ++i) r.set_lane(i, -a.lane(i));
    return r;
}

// |x|; the most negative integer stays itself (two's complement wrap).
template <typename T, unsigned N> vector<T, N> abs(const vector<T, N> & v) {
    if constexpr (!detail::is_signed_v<T>) return v;
    else {
        detail::count_move_bits<T>(N);
        vector<T, N> r;
        for (unsigned i = 0; i < N; ++i) {
            if constexpr (std::is_same_v<T, bfloat16>) r.raw(i) = bfloat16::from_bits(uint16_t(v.raw(i).bits & 0x7fffu));
            else if constexpr (std::is_same_v<T, float>) r.raw(i) = std::fabs(v.raw(i));
            else {
                const int64_t x = detail::to_i64(v.raw(i));
                r.raw(i) = detail::from_i64_wrap<T>(x < 0 ? -x : x);
            }
        }
        return r;
    }
}

template <typename T, unsigned N> vector<T, N> max(const vector<T, N> & a, const vector<T, N> & b) {
    detail::count_move_bits<T>(N);
    return detail::map2(a, b, [](T x, T y) { return detail::elem_lt(x, y) ? y : x; });
}
template <typename T, unsigned N, typename E, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> max(const vector<T, N> & v, E a) {
    return max(v, detail::splat<T, N>(T(a)));
}
template <typename E, typename T, unsigned N, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> max(E a, const vector<T, N> & v) {
    return max(detail::splat<T, N>(T(a)), v);
}
template <typename T, unsigned N> vector<T, N> min(const vector<T, N> & a, const vector<T, N> & b) {
    detail::count_move_bits<T>(N);
    return detail::map2(a, b, [](T x, T y) { return detail::elem_lt(y, x) ? y : x; });
}
template <typename T, unsigned N, typename E, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> min(const vector<T, N> & v, E a) {
    return min(v, detail::splat<T, N>(T(a)));
}
template <typename E, typename T, unsigned N, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> min(E a, const vector<T, N> & v) {
    return min(detail::splat<T, N>(T(a)), v);
}

// ---------------------------------------------------------------------------------------------
// Reductions: log2(N) rounds of "shift the upper half down, combine" (aie_api
// detail/aie2/add_reduce.hpp), then one element extract.

namespace detail {
template <unsigned N> constexpr unsigned log2u() {
    unsigned l = 0;
    while ((1u << l) < N) ++l;
    return l;
}
}  // namespace detail

template <typename T, unsigned N> T reduce_add(const vector<T, N> & v) {
    static_assert((N & (N - 1)) == 0, "reduce_add: power-of-two sizes");
    constexpr unsigned steps = detail::log2u<N>();
    aie_host::detail::count_move(steps + 1);  // the shifts, the final extract
    if constexpr (detail::is_floating_point_v<T>) {
        // Halving tree in fp32; a bfloat16 result is rounded once, at the end.
        aie_host::detail::count_vector(steps);
        float t[N];
        for (unsigned i = 0; i < N; ++i) t[i] = float(v.raw(i));
        for (unsigned h = N / 2; h >= 1; h /= 2)
            for (unsigned i = 0; i < h; ++i) t[i] = t[i] + t[i + h];
        return detail::round_float_to<T>(t[0]);
    } else {
        aie_host::detail::count_move(steps);
        int64_t s = 0;
        for (unsigned i = 0; i < N; ++i) s += detail::to_i64(v.raw(i));
        return detail::from_i64_wrap<T>(s);
    }
}

template <typename T, unsigned N> T reduce_max(const vector<T, N> & v) {
    aie_host::detail::count_move(2 * detail::log2u<N>() + 1);
    T m = v.raw(0);
    for (unsigned i = 1; i < N; ++i)
        if (detail::elem_lt(m, v.raw(i))) m = v.raw(i);
    return m;
}
template <typename T, unsigned N> T reduce_min(const vector<T, N> & v) {
    aie_host::detail::count_move(2 * detail::log2u<N>() + 1);
    T m = v.raw(0);
    for (unsigned i = 1; i < N; ++i)
        if (detail::elem_lt(v.raw(i), m)) m = v.raw(i);
    return m;
}

// ---------------------------------------------------------------------------------------------
// Bit operations and shifts (integer vectors; move slot)

namespace detail {
template <typename T, unsigned N, typename F> vector<T, N> bitop(const vector<T, N> & a, const vector<T, N> & b, F f) {
    static_assert(is_integral_v<T>, "bit operations take integer vectors");
    count_move_bits<T>(N);
    vector<T, N> r;
    if constexpr (std::is_integral_v<T>) {
        // The C++ integer types: the operation on the elements themselves (the low bits of the int64
        // form are these), in a loop the host compiler vectorizes.
        for (unsigned i = 0; i < N; ++i) r.raw(i) = T(f(a.raw(i), b.raw(i)));
    } else {
        for (unsigned i = 0; i < N; ++i) r.raw(i) = from_i64_wrap<T>(f(to_i64(a.raw(i)), to_i64(b.raw(i))));
    }
    return r;
}
}  // namespace detail

template <typename T, unsigned N> vector<T, N> bit_and(const vector<T, N> & a, const vector<T, N> & b) {
    return detail::bitop(a, b, [](auto x, auto y) { return x & y; });
}
template <typename E, typename T, unsigned N, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> bit_and(E a, const vector<T, N> & v) {
    return bit_and(detail::splat<T, N>(T(a)), v);
}
template <typename T, unsigned N> vector<T, N> bit_or(const vector<T, N> & a, const vector<T, N> & b) {
    return detail::bitop(a, b, [](auto x, auto y) { return x | y; });
}
template <typename E, typename T, unsigned N, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> bit_or(E a, const vector<T, N> & v) {
    return bit_or(detail::splat<T, N>(T(a)), v);
}
template <typename T, unsigned N> vector<T, N> bit_xor(const vector<T, N> & a, const vector<T, N> & b) {
    return detail::bitop(a, b, [](auto x, auto y) { return x ^ y; });
}
template <typename E, typename T, unsigned N, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> bit_xor(E a, const vector<T, N> & v) {
    return bit_xor(detail::splat<T, N>(T(a)), v);
}
template <typename T, unsigned N> vector<T, N> bit_not(const vector<T, N> & v) {
    return detail::bitop(v, v, [](auto x, auto) { return ~x; });
}

// Shifts. aie_api implements all three as an accumulator round trip, not as a bit shift (aie_api
// detail/aie2/shift.hpp shift_bits_impl_common::run): per op_elems lanes, an ups of the elements by
// `upshift` into an accumulator (acc32 for 8- and 16-bit elements, acc64 for 32-bit ones), then an srs
// back by `downshift`. So the result is rounded per the core's rounding mode and fitted into the
// element type per its saturation mode, like any srs:
//   upshift(v, s)            srs(ups(v, s), 0): saturates (none: keeps the low bits, as a bit shift)
//   downshift(v, s)          srs(ups(v, 0), s), arithmetic for signed elements, logical for unsigned
//   logical_downshift(v, s)  the same on the elements reinterpreted as unsigned (aie.hpp)
// aie_api 2026.1 opens a scoped_mode{rounding_mode::floor} in downshift and logical_downshift
// (aie.hpp), so they truncate whatever the mode; 2025.1 does not (its aie.hpp downshift), so they round
// per the current mode: with conv_even set, downshift(7, 1) is 3 in 2026.1 and 4 in 2025.1.
// aie_host::set_api_version picks the release (config.hpp).
// 4-bit elements are unpacked to 8 bits, shifted and packed again (the pack saturates per the mode).
namespace detail {

// Lanes per ups/srs pair (shift.hpp get_op_elems): 2025.1 has one table for AIE2 and AIE2P, 2026.1
// gives AIE2P wider operations for long vectors.
template <typename T, unsigned N> constexpr unsigned shift_op_elems(aie_host::api_version ver) {
    constexpr unsigned tb = type_bits_v<T>;
    if (ver == aie_host::api_version::v2025_1) return tb == 8 ? 32 : tb == 16 ? (N <= 16 ? 16 : 32) : 16;
    return tb == 8 ? (N > 32 ? 64 : 32) : tb == 16 ? (N > 16 ? 32 : 16) : (N > 8 ? 16 : 8);
}

// One ups (move slot, an estimate) and one srs (store slot) per op_elems lanes (at least one pair).
template <typename T, unsigned N> inline void count_shift_ops(aie_host::api_version ver) {
    using namespace aie_host::detail;
    if constexpr (type_bits_v<T> == 4) {
        // 2026.1: chunks of 128 elements; 2025.1: the whole vector below 256 elements, else two halves.
        using T8 = typename next_int<T>::type;
        constexpr unsigned chunk26 = N < 128 ? N : 128, chunk25 = N < 256 ? N : N / 2;
        const bool v26 = ver == aie_host::api_version::v2026_1;
        const unsigned chunk = v26 ? chunk26 : chunk25;
        for (unsigned i = 0; i < N / chunk; ++i) {
            count_unpack(chunks(chunk, 64));
            if (v26) count_shift_ops<T8, chunk26>(ver);
            else count_shift_ops<T8, chunk25>(ver);
            count_store(vreg_ops(8ull * chunk));
        }
    } else {
        const unsigned op = shift_op_elems<T, N>(ver);
        const unsigned iter = N > op ? N / op : 1;
        count_move(iter);
        count_store(iter);
    }
}

// The shared body: `sign` is how the elements are read (logical_downshift reads them unsigned).
template <typename T, unsigned N>
vector<T, N> shift_bits(const vector<T, N> & v, unsigned up, unsigned down, bool sign, bool floor_scope) {
    static_assert(is_integral_v<T>, "shifts take integer vectors");
    assert(up <= 59 && down <= 59 && "aie_api: a shift cannot exceed aie::max_shift (59)");
    const aie_host::api_version ver = aie_host::get_api_version();
    count_shift_ops<T, N>(ver);
    const bool in_floor = floor_scope && ver == aie_host::api_version::v2026_1;
    if (in_floor) aie_host::detail::count_mode_access(3);  // scoped_mode: save, set floor, restore
    const rounding_mode rnd = in_floor ? rounding_mode::floor : get_rounding();
    const saturation_mode sat = get_saturation();
    constexpr unsigned tb = type_bits_v<T>;
    constexpr unsigned wb = tb == 4 ? 8 : tb;  // the width the srs produces
    vector<T, N> r;
    if constexpr (std::is_integral_v<T>) {
        // The C++ integer types, where the general form below reduces to a few integer operations per
        // lane in loops the host compiler vectorizes (the same results; test_aie_api's shift tests
        // compare them with round_shift / saturate lane by lane):
        //   a downshift by s >= 1 rounds q = x >> s (floor) up by one per the mode; the result cannot
        //   leave the element's range (|x| >> s plus one stays inside it), so no saturation applies;
        //   an upshift under saturation `none` keeps the low bits of x << s.
        using S = std::conditional_t<(sizeof(T) < 4), int32_t, int64_t>;  // holds x and x + 2^s exactly
        const auto read = [&](unsigned i) -> S {
            if (sign) return S(std::make_signed_t<T>(v.raw(i)));
            return S(std::make_unsigned_t<T>(v.raw(i)));
        };
        if (up == 0 && down >= 1 && down < tb) {
            const unsigned s = down;
            const S half = S(1) << (s - 1), low = (S(1) << s) - 1;
            using rm = aie::rounding_mode;
            switch (rnd) {
                case rm::floor:
                    for (unsigned i = 0; i < N; ++i) r.raw(i) = T(read(i) >> s);
                    return r;
                case rm::conv_even:
                    for (unsigned i = 0; i < N; ++i) {
                        const S x = read(i), q = x >> s, rem = x & low;
                        r.raw(i) = T(q + S(rem > half || (rem == half && (q & 1))));
                    }
                    return r;
                case rm::positive_inf:
                    for (unsigned i = 0; i < N; ++i) {
                        const S x = read(i);
                        r.raw(i) = T(x >> s) + T((x & low) >= half);
                    }
                    return r;
                default: break;  // the other modes: the general form
            }
        } else if (down == 0 && up < wb && sat == saturation_mode::none) {
            for (unsigned i = 0; i < N; ++i) r.raw(i) = T(std::make_unsigned_t<T>(v.raw(i)) << up);
            return r;
        }
    }
    for (unsigned i = 0; i < N; ++i) {
        const uint64_t low = (uint64_t)to_i64(v.raw(i)) & ((uint64_t(1) << tb) - 1);
        const int64_t x = (sign && ((low >> (tb - 1)) & 1)) ? (int64_t)(low | ~((uint64_t(1) << tb) - 1)) : (int64_t)low;
        int64_t y = up > 0 ? upshift_saturate(x, up, wb, sign, sat) : saturate(round_shift(x, (int)down, rnd), wb, sign, sat);
        if constexpr (tb == 4) y = saturate(y, 4, sign, sat);  // the pack back to 4 bits
        r.raw(i) = from_i64_wrap<T>(y);
    }
    return r;
}

}  // namespace detail

template <typename T, unsigned N> vector<T, N> upshift(const vector<T, N> & v, unsigned shift) {
    return detail::shift_bits(v, shift, 0, detail::is_signed_v<T>, false);
}
template <typename T, unsigned N> vector<T, N> downshift(const vector<T, N> & v, unsigned shift) {
    return detail::shift_bits(v, 0, shift, detail::is_signed_v<T>, true);
}
template <typename T, unsigned N> vector<T, N> logical_downshift(const vector<T, N> & v, unsigned shift) {
    return detail::shift_bits(v, 0, shift, false, true);
}

// ---------------------------------------------------------------------------------------------
// Compares (-> mask) and select

namespace detail {
// One byte per lane first (a loop the host compiler vectorizes), then packed into mask words.
template <typename T, unsigned N, typename F> mask<N> compare(const vector<T, N> & a, const vector<T, N> & b, F f) {
    count_move_bits<T>(N);
    alignas(64) uint8_t bits[N];
    for (unsigned i = 0; i < N; ++i) bits[i] = f(a.raw(i), b.raw(i)) ? 1 : 0;
    return mask<N>::from_bools(bits);
}
}  // namespace detail

#define AIE_HOST_COMPARE(NAME, EXPR)                                                                       \
    template <typename T, unsigned N> mask<N> NAME(const vector<T, N> & a, const vector<T, N> & b) {       \
        return detail::compare(a, b, [](T x, T y) { return EXPR; });                                        \
    }                                                                                                       \
    template <typename T, unsigned N, typename E, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0> \
    mask<N> NAME(const vector<T, N> & v, E s) {                                                             \
        return NAME(v, detail::splat<T, N>(T(s)));                                                          \
    }                                                                                                       \
    template <typename E, typename T, unsigned N, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0> \
    mask<N> NAME(E s, const vector<T, N> & v) {                                                             \
        return NAME(detail::splat<T, N>(T(s)), v);                                                          \
    }
AIE_HOST_COMPARE(lt, detail::elem_lt(x, y))
AIE_HOST_COMPARE(le, !detail::elem_lt(y, x))
AIE_HOST_COMPARE(gt, detail::elem_lt(y, x))
AIE_HOST_COMPARE(ge, !detail::elem_lt(x, y))
AIE_HOST_COMPARE(eq, detail::elem_eq(x, y))
AIE_HOST_COMPARE(neq, !detail::elem_eq(x, y))
#undef AIE_HOST_COMPARE

// Whole-vector equality (aie_api equal / not_equal).
template <typename T, unsigned N> bool equal(const vector<T, N> & a, const vector<T, N> & b) { return eq(a, b).full(); }
template <typename T, unsigned N> bool not_equal(const vector<T, N> & a, const vector<T, N> & b) { return !equal(a, b); }

// out[i] = m[i] ? b[i] : a[i] (aie_api aie.hpp select: a bit set picks the second operand).
template <typename T, unsigned N> vector<T, N> select(const vector<T, N> & a, const vector<T, N> & b, const mask<N> & m) {
    detail::count_move_bits<T>(N);
    alignas(64) uint8_t pick[N];
    m.to_bools(pick);
    vector<T, N> r;
    if constexpr (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4) {
        // On the bit patterns, without a branch per lane (a loop the host compiler vectorizes).
        using U = std::conditional_t<sizeof(T) == 1, uint8_t, std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>>;
        for (unsigned i = 0; i < N; ++i) {
            U x, y;
            std::memcpy(&x, &a.raw(i), sizeof(U));
            std::memcpy(&y, &b.raw(i), sizeof(U));
            const U m = U(U(0) - U(pick[i]));
            const U z = U((x & U(~m)) | (y & m));
            std::memcpy(&r.raw(i), &z, sizeof(U));
        }
    } else {
        for (unsigned i = 0; i < N; ++i) r.raw(i) = pick[i] ? b.raw(i) : a.raw(i);
    }
    return r;
}
template <typename E, typename T, unsigned N, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> select(E a, const vector<T, N> & b, const mask<N> & m) {
    return select(detail::splat<T, N>(T(a)), b, m);
}
template <typename T, unsigned N, typename E, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
vector<T, N> select(const vector<T, N> & a, E b, const mask<N> & m) {
    return select(a, detail::splat<T, N>(T(b)), m);
}
template <typename E1, typename E2, unsigned N,
          std::enable_if_t<!detail::is_vector<E1>::value && !detail::is_vector<E2>::value, int> = 0>
vector<E1, N> select(const E1 & a, const E2 & b, const mask<N> & m) {
    return select(detail::splat<E1, N>(a), detail::splat<E1, N>(E1(b)), m);
}

// ---------------------------------------------------------------------------------------------
// Elementwise multiply (-> accumulator)

namespace detail {

template <typename T1, typename T2> inline constexpr bool valid_mul_types_v =
    (is_integral_v<T1> && is_integral_v<T2>) || (is_floating_point_v<T1> && std::is_same_v<T1, T2>);

// Instructions of one elementwise multiply of N lanes (aie_api detail/aie2p/mul_acc32.hpp,
// mul_acc64.hpp, mul_acc32_fp.hpp): operands narrower than 16 bits are unpacked first; then 64 lanes
// per instruction into 32-bit lanes, 32 into 64-bit lanes (16 for 32 x 32), bf16 32 or 64 lanes;
// float x float one safe emulation per 32 lanes, a 16-lane vector grown to 32 (mul_acc32_fp.hpp
// lines 127-190: muls_per_mul = 32; fp32-emulation.hpp). `with_acc`: a mac or msc.
template <typename T1, typename T2, typename Tag> inline void count_elem_mul(unsigned n, bool with_acc) {
    using namespace aie_host::detail;
    if constexpr (std::is_same_v<T1, float>) {
        count_fp32_emulation(chunks(n, 32), 32, with_acc ? fp32_form::safe_mac : fp32_form::safe_mul);
    } else if constexpr (std::is_same_v<T1, bfloat16>) {
        count_vector(chunks(n, n <= 32 ? 32 : 64));
    } else {
        const auto unpack_operand = [n](unsigned bits) {
            if (bits == 4) count_unpack(chunks(n, 64) + chunks(n, 32));
            else if (bits == 8) count_unpack(chunks(n, 32));
        };
        unpack_operand(type_bits_v<T1>);
        unpack_operand(type_bits_v<T2>);
        constexpr unsigned wide = type_bits_v<T1> > type_bits_v<T2> ? type_bits_v<T1> : type_bits_v<T2>;
        constexpr unsigned narrow = type_bits_v<T1> > type_bits_v<T2> ? type_bits_v<T2> : type_bits_v<T1>;
        if constexpr (accum_tag_traits<Tag>::native_bits == 32) count_vector(chunks(n, 64));
        else if constexpr (wide == 32 && narrow == 32) count_vector(chunks(n, 16));
        else count_vector(chunks(n, 32));
    }
}

// One lane: x * y. float x float is the safe emulation, its operands split in the current rounding
// mode (fp32-emulation.hpp); bf16 x bf16 is exact in fp32.
template <typename Tag, typename T1, typename T2>
inline typename accum<Tag, 1>::lane_type mul_lane(T1 x, T2 y, aie::rounding_mode m) {
    if constexpr (accum_tag_traits<Tag>::is_float) {
        if constexpr (std::is_same_v<T1, float>) return aie_host::detail::fp32_mul_safe(x, y, m);
        else return float(x) * float(y);
    } else {
        return to_i64(x) * to_i64(y);
    }
}

// a * b, plus an incoming accumulator (sign +1: mac), minus it (sign -1: msc), or negated (negmul:
// acc == nullptr, sign -1; for floats -(x * y), the safe product with every partial product negated).
template <typename Tag, typename T1, typename T2, unsigned N>
accum<Tag, N> mul_impl(const vector<T1, N> & a, const vector<T2, N> & b, const accum<Tag, N> * acc, int sign) {
    static_assert(valid_mul_types_v<T1, T2>, "aie::mul: unsupported operand types");
    static_assert(accum_tag_traits<Tag>::is_float == is_floating_point_v<T1>, "aie::mul: accumulator class does not match the operands");
    count_elem_mul<T1, T2, Tag>(N, acc != nullptr);
    const aie::rounding_mode m = get_rounding();
    accum<Tag, N> r;
    if constexpr (std::is_same_v<T1, float> && std::is_same_v<T2, float>) {
        // float x float: the safe emulation of all lanes at once (fp32-emulation.hpp), then the sign
        // and the incoming accumulator as below.
        float x[N], y[N], p[N];
        for (unsigned i = 0; i < N; ++i) {
            x[i] = a.raw(i);
            y[i] = b.raw(i);
        }
        aie_host::detail::fp32_mul_safe_lanes(x, y, p, N, m);
        for (unsigned i = 0; i < N; ++i) {
            if (!acc) r.set_lane(i, sign > 0 ? p[i] : -p[i]);
            else r.set_lane(i, sign > 0 ? acc->lane(i) + p[i] : acc->lane(i) - p[i]);
        }
        return r;
    }
    for (unsigned i = 0; i < N; ++i) {
        const auto p = mul_lane<Tag>(a.raw(i), b.raw(i), m);
        if (!acc) {
            if constexpr (accum_tag_traits<Tag>::is_float) r.set_lane(i, sign > 0 ? p : -p);
            else r.set_lane(i, sign > 0 ? p : (int64_t)(0 - (uint64_t)p));
        } else if constexpr (accum_tag_traits<Tag>::is_float) {
            r.set_lane(i, sign > 0 ? acc->lane(i) + p : acc->lane(i) - p);
        } else {
            const uint64_t s = sign > 0 ? (uint64_t)acc->lane(i) + (uint64_t)p : (uint64_t)acc->lane(i) - (uint64_t)p;
            r.set_lane(i, (int64_t)s);
        }
    }
    return r;
}

template <typename T, unsigned N> inline vector<T, N> broadcast_operand(T x) {
    aie_host::detail::count_move(1);
    return splat<T, N>(x);
}

}  // namespace detail

// mul with an explicit accumulator tag.
template <typename AccumTag, typename T1, unsigned N, typename T2, std::enable_if_t<detail::is_accum_tag_v<AccumTag>, int> = 0>
accum<AccumTag, N> mul(const vector<T1, N> & a, const vector<T2, N> & b) {
    return detail::mul_impl<AccumTag>(a, b, static_cast<const accum<AccumTag, N> *>(nullptr), 1);
}
template <typename AccumTag, typename T, unsigned N, typename E,
          std::enable_if_t<detail::is_accum_tag_v<AccumTag> && detail::is_scalar_for_v<E, T>, int> = 0>
accum<AccumTag, N> mul(const vector<T, N> & v, E a) {
    return mul<AccumTag>(v, detail::broadcast_operand<T, N>(T(a)));
}
template <typename AccumTag, typename E, typename T, unsigned N,
          std::enable_if_t<detail::is_accum_tag_v<AccumTag> && detail::is_scalar_for_v<E, T>, int> = 0>
accum<AccumTag, N> mul(E a, const vector<T, N> & v) {
    return mul<AccumTag>(detail::broadcast_operand<T, N>(T(a)), v);
}

// mul with the default accumulator of the operand types: acc32 up to 16x16 bits, acc48 (64-bit
// lanes) for 32x16, acc64 for 32x32, accfloat for bfloat16 and float.
template <typename T1, unsigned N, typename T2> auto mul(const vector<T1, N> & a, const vector<T2, N> & b) {
    return mul<detail::default_accum_tag_t<T1, T2>>(a, b);
}
template <typename T, unsigned N, typename E, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
auto mul(const vector<T, N> & v, E a) {
    return mul<detail::default_accum_tag_t<T, T>>(v, a);
}
template <typename E, typename T, unsigned N, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
auto mul(E a, const vector<T, N> & v) {
    return mul<detail::default_accum_tag_t<T, T>>(a, v);
}

// acc + a * b.
template <typename Tag, unsigned N, typename T1, typename T2>
accum<Tag, N> mac(const accum<Tag, N> & acc, const vector<T1, N> & a, const vector<T2, N> & b) {
    return detail::mul_impl<Tag>(a, b, &acc, 1);
}
template <typename Tag, unsigned N, typename T, typename E, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
accum<Tag, N> mac(const accum<Tag, N> & acc, const vector<T, N> & v, E a) {
    return detail::mul_impl<Tag>(v, detail::broadcast_operand<T, N>(T(a)), &acc, 1);
}
template <typename Tag, unsigned N, typename E, typename T, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
accum<Tag, N> mac(const accum<Tag, N> & acc, E a, const vector<T, N> & v) {
    return detail::mul_impl<Tag>(detail::broadcast_operand<T, N>(T(a)), v, &acc, 1);
}

// acc - a * b.
template <typename Tag, unsigned N, typename T1, typename T2>
accum<Tag, N> msc(const accum<Tag, N> & acc, const vector<T1, N> & a, const vector<T2, N> & b) {
    return detail::mul_impl<Tag>(a, b, &acc, -1);
}
template <typename Tag, unsigned N, typename T, typename E, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
accum<Tag, N> msc(const accum<Tag, N> & acc, const vector<T, N> & v, E a) {
    return detail::mul_impl<Tag>(v, detail::broadcast_operand<T, N>(T(a)), &acc, -1);
}
template <typename Tag, unsigned N, typename E, typename T, std::enable_if_t<detail::is_scalar_for_v<E, T>, int> = 0>
accum<Tag, N> msc(const accum<Tag, N> & acc, E a, const vector<T, N> & v) {
    return detail::mul_impl<Tag>(detail::broadcast_operand<T, N>(T(a)), v, &acc, -1);
}

// -(a * b).
template <typename T1, unsigned N, typename T2> auto negmul(const vector<T1, N> & a, const vector<T2, N> & b) {
    using Tag = detail::default_accum_tag_t<T1, T2>;
    return detail::mul_impl<Tag>(a, b, static_cast<const accum<Tag, N> *>(nullptr), -1);
}

}  // namespace aie

// ---------------------------------------------------------------------------------------------
// Compiler intrinsics that a kernel may call by name instead of aie::mul (llvm-aie
// clang/lib/Headers/aie2p_vmult.h declares them at global scope). On the core their operands are
// the native v32float, to which aie::vector<float, 32> converts, and their result v32accfloat
// converts to aie::accum<accfloat, 32>; the host takes and returns the aie_api types directly.

// The 32-lane fp32 multiply at accuracy `fast`: the nine partial products of the safe emulation in a
// chain of MACs (aie2p_detail::mul_elem_32_accuracy_fast_inner): 13 vector-slot instructions per
// 32 lanes instead of 21, the safe value unless a partial product underflows (fp32-emulation.hpp).
// Its result is Peano's native v32accfloat, a register type without member functions that aie_api
// does not take in place of an accum: a kernel wraps it (aie::accum<accfloat, 32>(...)) as it must on
// the core, so the host type converts to the accum only explicitly.
struct v32accfloat {
    aie::accum<accfloat, 32> value;
    explicit operator aie::accum<accfloat, 32>() const { return value; }
};
inline v32accfloat mul_elem_32_accuracy_fast(const aie::vector<float, 32> & v1, const aie::vector<float, 32> & v2) {
    aie_host::detail::count_fp32_emulation(1, 32, aie_host::detail::fp32_form::fast32_mul);
    const aie::rounding_mode m = aie::get_rounding();
    aie::accum<accfloat, 32> r;
    for (unsigned i = 0; i < 32; ++i) r.set_lane(i, aie_host::detail::fp32_mul_fast32(v1.raw(i), v2.raw(i), m));
    return {r};
}
