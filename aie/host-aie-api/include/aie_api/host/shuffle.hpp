// Vector initialisation and element rearrangement (aie_api aie.hpp groups "init" and "reshape").
// All of them run in the move slot, one shuffle per 512 bits of output, except concat, which only
// pairs registers.
#pragma once

#include <cassert>
#include <tuple>
#include <type_traits>
#include <utility>

#include "accum.hpp"
#include "op-counts.hpp"
#include "vector.hpp"

namespace aie {
namespace detail {
template <typename T, unsigned N> inline void count_shuffle(uint64_t out_elems = N) {
    aie_host::detail::count_move(aie_host::detail::vreg_ops(uint64_t(type_bits_v<T>) * out_elems));
}
}  // namespace detail

// Every element = a.
template <typename E, unsigned Elems = detail::native_vector_length_v<E>> vector<E, Elems> broadcast(E a) {
    static_assert(detail::is_elem_v<E>, "aie::broadcast: unsupported element type");
    detail::count_shuffle<E, Elems>();
    vector<E, Elems> r;
    for (unsigned i = 0; i < Elems; ++i) r.raw(i) = a;
    return r;
}

template <typename T, unsigned Elems = detail::native_vector_length_v<T>, std::enable_if_t<detail::is_elem_v<T>, int> = 0>
vector<T, Elems> zeros() {
    detail::count_shuffle<T, Elems>();
    return vector<T, Elems>();
}

// Vectors side by side (register pairing, no instruction).
template <typename T, unsigned N, typename... Vs> auto concat(const vector<T, N> & v, const Vs &... vs) {
    static_assert((std::is_same_v<Vs, vector<T, N>> && ...), "aie::concat: vectors of one type and size");
    vector<T, N *(1 + sizeof...(Vs))> r;
    unsigned k = 0;
    r.insert(k++, v);
    (r.insert(k++, vs), ...);
    return r;
}
template <typename Tag, unsigned N, typename... As> auto concat(const accum<Tag, N> & a, const As &... as) {
    static_assert((std::is_same_v<As, accum<Tag, N>> && ...), "aie::concat: accumulators of one type and size");
    accum<Tag, N *(1 + sizeof...(As))> r;
    unsigned k = 0;
    r.insert(k++, a);
    (r.insert(k++, as), ...);
    return r;
}
// The two halves an interleave returns, joined (aie_api aie.hpp concat(TupleLike)).
template <typename V> auto concat(const std::pair<V, V> & p) { return concat(p.first, p.second); }

// Picks chunks alternately from v and w: {v[0:c], w[0:c], v[c:2c], w[c:2c], ...}; the first N
// elements are the first result, the next N the second (aie_api aie.hpp interleave_zip).
template <typename T, unsigned N>
std::pair<vector<T, N>, vector<T, N>> interleave_zip(const vector<T, N> & v, const vector<T, N> & w, unsigned chunk_size) {
    assert(chunk_size > 0 && chunk_size <= N && (chunk_size & (chunk_size - 1)) == 0);
    detail::count_shuffle<T, N>(2 * N);
    T out[2 * N];
    unsigned o = 0;
    for (unsigned base = 0; base < N; base += chunk_size) {
        for (unsigned i = 0; i < chunk_size; ++i) out[o++] = v.raw(base + i);
        for (unsigned i = 0; i < chunk_size; ++i) out[o++] = w.raw(base + i);
    }
    std::pair<vector<T, N>, vector<T, N>> r;
    for (unsigned i = 0; i < N; ++i) {
        r.first.raw(i) = out[i];
        r.second.raw(i) = out[N + i];
    }
    return r;
}

// The inverse: the first result holds the even chunks of v then of w, the second the odd chunks
// (aie_api aie.hpp interleave_unzip).
template <typename T, unsigned N>
std::pair<vector<T, N>, vector<T, N>> interleave_unzip(const vector<T, N> & v, const vector<T, N> & w, unsigned chunk_size) {
    assert(chunk_size > 0 && chunk_size <= N && (chunk_size & (chunk_size - 1)) == 0);
    detail::count_shuffle<T, N>(2 * N);
    std::pair<vector<T, N>, vector<T, N>> r;
    unsigned e = 0, o = 0;
    for (const vector<T, N> * src : {&v, &w}) {
        for (unsigned base = 0; base < N; base += chunk_size) {
            const bool even = (base / chunk_size) % 2 == 0;
            for (unsigned i = 0; i < chunk_size; ++i) {
                if (even) r.first.raw(e++) = src->raw(base + i);
                else r.second.raw(o++) = src->raw(base + i);
            }
        }
    }
    return r;
}

// {v[0:c], v[2c:3c], ...} and {v[c:2c], v[3c:4c], ...} (aie_api aie.hpp filter_even / filter_odd).
template <typename T, unsigned N> vector<T, N / 2> filter_even(const vector<T, N> & v, unsigned chunk_size = 1) {
    assert(chunk_size > 0 && chunk_size <= N / 2);
    detail::count_shuffle<T, N>(N / 2);
    vector<T, N / 2> r;
    unsigned o = 0;
    for (unsigned base = 0; base < N; base += 2 * chunk_size)
        for (unsigned i = 0; i < chunk_size; ++i) r.raw(o++) = v.raw(base + i);
    return r;
}
template <typename T, unsigned N> vector<T, N / 2> filter_odd(const vector<T, N> & v, unsigned chunk_size = 1) {
    assert(chunk_size > 0 && chunk_size <= N / 2);
    detail::count_shuffle<T, N>(N / 2);
    vector<T, N / 2> r;
    unsigned o = 0;
    for (unsigned base = chunk_size; base < N; base += 2 * chunk_size)
        for (unsigned i = 0; i < chunk_size; ++i) r.raw(o++) = v.raw(base + i);
    return r;
}

// out[i] = v[i + n]; the top n elements are undefined on the core (zero on the host).
template <typename T, unsigned N> vector<T, N> shuffle_down(const vector<T, N> & v, unsigned n) {
    assert(n <= N);
    detail::count_shuffle<T, N>();
    vector<T, N> r;
    for (unsigned i = 0; i + n < N; ++i) r.raw(i) = v.raw(i + n);
    return r;
}
// out[i] = v[(i + n) % N].
template <typename T, unsigned N> vector<T, N> shuffle_down_rotate(const vector<T, N> & v, unsigned n) {
    detail::count_shuffle<T, N>();
    vector<T, N> r;
    for (unsigned i = 0; i < N; ++i) r.raw(i) = v.raw((i + n) % N);
    return r;
}
// out[i] = v[i + n], then fill[0 .. n).
template <typename T, unsigned N> vector<T, N> shuffle_down_fill(const vector<T, N> & v, const vector<T, N> & fill, unsigned n) {
    assert(n <= N);
    detail::count_shuffle<T, N>();
    vector<T, N> r;
    for (unsigned i = 0; i < N; ++i) r.raw(i) = i + n < N ? v.raw(i + n) : fill.raw(i + n - N);
    return r;
}
// out[i] = v[i + n], then copies of v[N - 1].
template <typename T, unsigned N> vector<T, N> shuffle_down_replicate(const vector<T, N> & v, unsigned n) {
    detail::count_shuffle<T, N>();
    vector<T, N> r;
    for (unsigned i = 0; i < N; ++i) r.raw(i) = i + n < N ? v.raw(i + n) : v.raw(N - 1);
    return r;
}
// out[i + n] = v[i]; the low n elements are undefined on the core (zero on the host).
template <typename T, unsigned N> vector<T, N> shuffle_up(const vector<T, N> & v, unsigned n) {
    assert(n <= N);
    detail::count_shuffle<T, N>();
    vector<T, N> r;
    for (unsigned i = 0; i + n < N; ++i) r.raw(i + n) = v.raw(i);
    return r;
}
// out[i] = v[(i - n) mod N].
template <typename T, unsigned N> vector<T, N> shuffle_up_rotate(const vector<T, N> & v, unsigned n) {
    detail::count_shuffle<T, N>();
    vector<T, N> r;
    for (unsigned i = 0; i < N; ++i) r.raw((i + n) % N) = v.raw(i);
    return r;
}
// out[i + n] = v[i], the low n from the top of fill: out[i] = fill[i + N - n].
template <typename T, unsigned N> vector<T, N> shuffle_up_fill(const vector<T, N> & v, const vector<T, N> & fill, unsigned n) {
    assert(n <= N);
    detail::count_shuffle<T, N>();
    vector<T, N> r;
    for (unsigned i = 0; i < N; ++i) r.raw(i) = i >= n ? v.raw(i - n) : fill.raw(i + N - n);
    return r;
}
// out[i + n] = v[i], the low n copies of v[0].
template <typename T, unsigned N> vector<T, N> shuffle_up_replicate(const vector<T, N> & v, unsigned n) {
    detail::count_shuffle<T, N>();
    vector<T, N> r;
    for (unsigned i = 0; i < N; ++i) r.raw(i) = i >= n ? v.raw(i - n) : v.raw(0);
    return r;
}

template <typename T, unsigned N> vector<T, N> reverse(const vector<T, N> & v) {
    detail::count_shuffle<T, N>();
    vector<T, N> r;
    for (unsigned i = 0; i < N; ++i) r.raw(i) = v.raw(N - 1 - i);
    return r;
}

// v read as a row-major rows x cols matrix, returned as its transpose (cols x rows, row-major).
template <typename T, unsigned N> vector<T, N> transpose(const vector<T, N> & v, unsigned rows, unsigned cols) {
    assert(rows * cols == N && rows > 0 && cols > 0);
    detail::count_shuffle<T, N>();
    vector<T, N> r;
    for (unsigned i = 0; i < rows; ++i)
        for (unsigned j = 0; j < cols; ++j) r.raw(j * rows + i) = v.raw(i * cols + j);
    return r;
}

}  // namespace aie
