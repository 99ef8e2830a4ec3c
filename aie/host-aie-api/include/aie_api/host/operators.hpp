// Operator spellings of the aie:: functions, visible after `using namespace aie::operators;`
// (aie_api operators.hpp). Each operator is the function it names, counted as that function.
#pragma once

#include <type_traits>

#include "elementwise.hpp"

namespace aie::operators {
namespace detail {
template <typename X> inline constexpr bool is_api_v = aie::detail::is_vector<std::decay_t<X>>::value ||
                                                       aie::detail::is_accum<std::decay_t<X>>::value;
template <typename A, typename B> inline constexpr bool any_api_v = is_api_v<A> || is_api_v<B>;
}  // namespace detail

template <typename T, std::enable_if_t<detail::is_api_v<T>, int> = 0> auto operator-(const T & a) { return aie::neg(a); }
template <typename A, typename B, std::enable_if_t<detail::any_api_v<A, B>, int> = 0> auto operator+(const A & a, const B & b) {
    return aie::add(a, b);
}
template <typename A, typename B, std::enable_if_t<detail::any_api_v<A, B>, int> = 0> auto operator-(const A & a, const B & b) {
    return aie::sub(a, b);
}
template <typename A, typename B, std::enable_if_t<detail::any_api_v<A, B>, int> = 0> auto operator<(const A & a, const B & b) {
    return aie::lt(a, b);
}
template <typename A, typename B, std::enable_if_t<detail::any_api_v<A, B>, int> = 0> auto operator<=(const A & a, const B & b) {
    return aie::le(a, b);
}
template <typename A, typename B, std::enable_if_t<detail::any_api_v<A, B>, int> = 0> auto operator>(const A & a, const B & b) {
    return aie::gt(a, b);
}
template <typename A, typename B, std::enable_if_t<detail::any_api_v<A, B>, int> = 0> auto operator>=(const A & a, const B & b) {
    return aie::ge(a, b);
}
template <typename A, typename B, std::enable_if_t<detail::any_api_v<A, B>, int> = 0> auto operator==(const A & a, const B & b) {
    return aie::eq(a, b);
}
template <typename A, typename B, std::enable_if_t<detail::any_api_v<A, B>, int> = 0> auto operator!=(const A & a, const B & b) {
    return aie::neq(a, b);
}
template <typename T, unsigned N> auto operator<<(const vector<T, N> & a, unsigned s) { return aie::upshift(a, s); }
template <typename T, unsigned N> auto operator>>(const vector<T, N> & a, unsigned s) { return aie::downshift(a, s); }
template <typename A, typename B, std::enable_if_t<detail::is_api_v<A>, int> = 0> A & operator+=(A & a, const B & b) {
    return a = aie::add(a, b);
}
template <typename A, typename B, std::enable_if_t<detail::is_api_v<A>, int> = 0> A & operator-=(A & a, const B & b) {
    return a = aie::sub(a, b);
}
template <typename A, typename B, std::enable_if_t<detail::any_api_v<A, B>, int> = 0> auto operator&(const A & a, const B & b) {
    if constexpr (detail::is_api_v<A>) return aie::bit_and(b, a);
    else return aie::bit_and(a, b);
}
template <typename A, typename B, std::enable_if_t<detail::any_api_v<A, B>, int> = 0> auto operator|(const A & a, const B & b) {
    if constexpr (detail::is_api_v<A>) return aie::bit_or(b, a);
    else return aie::bit_or(a, b);
}
template <typename A, typename B, std::enable_if_t<detail::any_api_v<A, B>, int> = 0> auto operator^(const A & a, const B & b) {
    if constexpr (detail::is_api_v<A>) return aie::bit_xor(b, a);
    else return aie::bit_xor(a, b);
}
template <typename T, unsigned N> auto operator~(const vector<T, N> & a) { return aie::bit_not(a); }

}  // namespace aie::operators
