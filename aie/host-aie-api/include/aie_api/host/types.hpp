// Element types and accumulator tags at global scope, spelled as AIE kernels spell them, and the
// traits the rest of the implementation dispatches on.
#pragma once

#include <cstdint>
#include <type_traits>

#include "rounding.hpp"

// aie_api types.hpp: the integer names are the <cstdint> types.
using int8 = int8_t;
using int16 = int16_t;
using int32 = int32_t;
using uint8 = uint8_t;
using uint16 = uint16_t;
using uint32 = uint32_t;

// 4-bit integers. The compilers provide int4_t / uint4_t (Peano: signed/unsigned _BitInt(4),
// llvm-aie aiebase_typedefs.h) and aie_api names them int4 / uint4 (aie_api types.hpp). A scalar
// occupies one byte, so `int4 *` arithmetic moves by BYTES, i.e. by two packed elements: kernels
// offset int4 pointers by N / 2 for N elements. Conversion from a wider integer keeps the low 4 bits,
// as a _BitInt(4) conversion does.
struct int4_t {
    int8_t value = 0;
    constexpr int4_t() = default;
    template <typename A, std::enable_if_t<std::is_arithmetic_v<A>, int> = 0>
    constexpr int4_t(A a) : value(wrap((long long)a)) {}
    constexpr operator int() const { return value; }
    static constexpr int8_t wrap(long long x) { return int8_t((int)((x & 0xf) ^ 0x8) - 0x8); }
};

struct uint4_t {
    uint8_t value = 0;
    constexpr uint4_t() = default;
    template <typename A, std::enable_if_t<std::is_arithmetic_v<A>, int> = 0>
    constexpr uint4_t(A a) : value(uint8_t((long long)a & 0xf)) {}
    constexpr operator int() const { return value; }
};

using int4 = int4_t;
using uint4 = uint4_t;

// bfloat16: the upper half of an fp32. Scalar conversion from float rounds to nearest, ties to even,
// as the compilers' scalar bfloat16 does (Peano: __bf16); VECTOR conversions from accumulators follow
// the core's rounding mode instead (see accum::to_vector). Arithmetic on scalars happens in float.
struct bfloat16 {
    uint16_t bits = 0;
    constexpr bfloat16() = default;
    bfloat16(float f) : bits(aie::detail::float_to_bf16_bits(f, aie::rounding_mode::conv_even)) {}
    template <typename A, std::enable_if_t<std::is_arithmetic_v<A> && !std::is_same_v<A, float>, int> = 0>
    bfloat16(A a) : bfloat16(float(a)) {}
    operator float() const { return aie::detail::bf16_bits_to_float(bits); }
    static constexpr bfloat16 from_bits(uint16_t b) {
        bfloat16 r;
        r.bits = b;
        return r;
    }
    bfloat16 & operator+=(float x) { return *this = bfloat16(float(*this) + x); }
    bfloat16 & operator-=(float x) { return *this = bfloat16(float(*this) - x); }
    bfloat16 & operator*=(float x) { return *this = bfloat16(float(*this) * x); }
    bfloat16 & operator/=(float x) { return *this = bfloat16(float(*this) / x); }
};

// Block floating point: eight values sharing one 8-bit exponent, 8-bit mantissas (aie_api types.hpp
// declares the tag; values live only in aie::block_vector, host/block-vector.hpp). A tag, not a
// scalar type: kernels hold `bfp16ebs8 *` as the byte address of packed blocks.
struct bfp16ebs8 {};

// Accumulator tags (aie_api accum.hpp; the compilers define acc32, acc64, accfloat). A tag names the
// minimum bits; AIE2P stores 16..32-bit tags in 32-bit lanes and 40..64-bit tags in 64-bit lanes
// (aie_api detail/aie2p/accum_native_types.hpp).
struct acc16 {};
struct acc24 {};
struct acc32 {};
struct acc40 {};
struct acc48 {};
struct acc56 {};
struct acc64 {};
struct accfloat {};
// "Use the default accumulator for these operand types" (aie_api types.hpp).
struct accauto {};

namespace aie::detail {

template <typename T> struct elem_traits {
    static constexpr bool valid = false;
    static constexpr unsigned bits = 0;
    static constexpr bool is_signed = false;
    static constexpr bool is_float = false;
};
#define AIE_HOST_ELEM(T, BITS, SIGNED, FLOAT)                \
    template <> struct elem_traits<T> {                      \
        static constexpr bool valid = true;                  \
        static constexpr unsigned bits = BITS;               \
        static constexpr bool is_signed = SIGNED;            \
        static constexpr bool is_float = FLOAT;              \
    };
AIE_HOST_ELEM(int4_t, 4, true, false)
AIE_HOST_ELEM(uint4_t, 4, false, false)
AIE_HOST_ELEM(int8_t, 8, true, false)
AIE_HOST_ELEM(uint8_t, 8, false, false)
AIE_HOST_ELEM(int16_t, 16, true, false)
AIE_HOST_ELEM(uint16_t, 16, false, false)
AIE_HOST_ELEM(int32_t, 32, true, false)
AIE_HOST_ELEM(uint32_t, 32, false, false)
AIE_HOST_ELEM(bfloat16, 16, true, true)
AIE_HOST_ELEM(float, 32, true, true)
#undef AIE_HOST_ELEM

template <typename T> inline constexpr bool is_elem_v = elem_traits<T>::valid;
// Block element types (aie_api detail/aie2p/block_vector_native_types.hpp is_valid_block_type;
// bfp16ebs16 is not provided here).
template <typename T> inline constexpr bool is_block_type_v = std::is_same_v<T, bfp16ebs8>;
template <typename T> inline constexpr unsigned type_bits_v = elem_traits<T>::bits;
template <typename T> inline constexpr bool is_signed_v = elem_traits<T>::is_signed;
template <typename T> inline constexpr bool is_floating_point_v = elem_traits<T>::is_float;
template <typename T> inline constexpr bool is_integral_v = is_elem_v<T> && !elem_traits<T>::is_float;

// aie_api's native vector is 512 bits on AIE2P (aie_api detail/aie2/vector_native_types.hpp).
template <typename T> inline constexpr unsigned native_vector_length_v = type_bits_v<T> ? 512 / type_bits_v<T> : 0;

// Integer value of an element (int4/uint4 included).
template <typename T> constexpr int64_t to_i64(T x) { return (int64_t)(int)x; }
template <> constexpr int64_t to_i64<int32_t>(int32_t x) { return x; }
template <> constexpr int64_t to_i64<uint32_t>(uint32_t x) { return x; }

// An element from an integer, keeping the low bits (two's complement wrap).
template <typename T> constexpr T from_i64_wrap(int64_t x) {
    if constexpr (std::is_same_v<T, int4_t> || std::is_same_v<T, uint4_t>) return T(x);
    else return (T)(std::make_unsigned_t<T>)(uint64_t)x;
}

template <typename T> inline constexpr int64_t min_v = is_signed_v<T> ? -(int64_t(1) << (type_bits_v<T> - 1)) : 0;
template <typename T> inline constexpr int64_t max_v =
    is_signed_v<T> ? (int64_t(1) << (type_bits_v<T> - 1)) - 1 : (int64_t(1) << type_bits_v<T>) - 1;

// aie_api detail/utils.hpp get_next_integer_type / get_prev_integer_type (void: none).
template <typename T> struct next_int { using type = void; };
template <> struct next_int<int4_t> { using type = int8_t; };
template <> struct next_int<uint4_t> { using type = uint8_t; };
template <> struct next_int<int8_t> { using type = int16_t; };
template <> struct next_int<uint8_t> { using type = uint16_t; };
template <> struct next_int<int16_t> { using type = int32_t; };
template <> struct next_int<uint16_t> { using type = uint32_t; };
template <typename T> struct prev_int { using type = void; };
template <> struct prev_int<int8_t> { using type = int4_t; };
template <> struct prev_int<uint8_t> { using type = uint4_t; };
template <> struct prev_int<int16_t> { using type = int8_t; };
template <> struct prev_int<uint16_t> { using type = uint8_t; };
template <> struct prev_int<int32_t> { using type = int16_t; };
template <> struct prev_int<uint32_t> { using type = uint16_t; };

// Accumulator tags: class, minimum bits, lane bits on AIE2P.
template <typename Tag> struct accum_tag_traits { static constexpr bool valid = false; };
#define AIE_HOST_ACC(TAG, FLOAT, MIN_BITS, NATIVE_BITS)       \
    template <> struct accum_tag_traits<TAG> {                \
        static constexpr bool valid = true;                   \
        static constexpr bool is_float = FLOAT;               \
        static constexpr unsigned min_bits = MIN_BITS;        \
        static constexpr unsigned native_bits = NATIVE_BITS;  \
    };
AIE_HOST_ACC(acc16, false, 16, 32)
AIE_HOST_ACC(acc24, false, 24, 32)
AIE_HOST_ACC(acc32, false, 32, 32)
AIE_HOST_ACC(acc40, false, 40, 64)
AIE_HOST_ACC(acc48, false, 48, 64)
AIE_HOST_ACC(acc56, false, 56, 64)
AIE_HOST_ACC(acc64, false, 64, 64)
AIE_HOST_ACC(accfloat, true, 32, 32)
#undef AIE_HOST_ACC

template <typename Tag> inline constexpr bool is_accum_tag_v = accum_tag_traits<Tag>::valid;

// Default accumulator of a multiplication (aie_api detail/accum.hpp default_accum_bits): 32 bits for
// operands up to 16 bits (8x4 and 4x4 included), 48 for 32x16, 64 for 32x32, accfloat for floats.
template <typename A, typename B> constexpr unsigned default_accum_bits() {
    constexpr unsigned a = type_bits_v<A>, b = type_bits_v<B>;
    constexpr unsigned hi = a > b ? a : b, lo = a > b ? b : a;
    if constexpr (is_floating_point_v<A> || is_floating_point_v<B>) return 32;
    else if constexpr (hi <= 16) return 32;
    else if constexpr (hi == 32 && lo <= 16) return 48;
    else return 64;
}

template <typename A, typename B> struct default_accum_tag {
    static constexpr unsigned bits = default_accum_bits<A, B>();
    using type = std::conditional_t<is_floating_point_v<A> || is_floating_point_v<B>, accfloat,
                                    std::conditional_t<bits == 32, acc32, std::conditional_t<bits == 48, acc48, acc64>>>;
};
template <typename A, typename B> using default_accum_tag_t = typename default_accum_tag<A, B>::type;

template <typename Tag, typename A, typename B>
using resolve_accum_tag_t = std::conditional_t<std::is_same_v<Tag, accauto>, default_accum_tag_t<A, B>, Tag>;

}  // namespace aie::detail
