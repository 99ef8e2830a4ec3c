// aie::vector<T, Elems>: a vector register value (aie_api vector.hpp).
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "op-counts.hpp"
#include "types.hpp"

namespace aie {

template <typename T, unsigned Elems = detail::native_vector_length_v<T>> class vector;

namespace detail {

// Reference to one element (aie_api vector_elem_ref.hpp): reading extracts, assigning inserts.
template <typename T, unsigned Elems> class vector_elem_ref {
  public:
    vector_elem_ref(vector<T, Elems> & v, unsigned idx) : v_(v), idx_(idx) {}
    operator T() const { return v_.get(idx_); }
    // The compilers' bfloat16 and int4 are built-in types that convert on to float / int in one step;
    // these keep `float f = v[i]` and `int x = v[i]` compiling.
    template <typename U = T, std::enable_if_t<std::is_same_v<U, bfloat16>, int> = 0> operator float() const { return float(T(*this)); }
    template <typename U = T, std::enable_if_t<std::is_same_v<U, int4_t> || std::is_same_v<U, uint4_t>, int> = 0>
    operator int() const {
        return int(T(*this));
    }
    vector_elem_ref & operator=(T x) {
        v_.set(x, idx_);
        return *this;
    }
    vector_elem_ref & operator=(const vector_elem_ref & o) { return *this = T(o); }

  private:
    vector<T, Elems> & v_;
    unsigned idx_;
};

}  // namespace detail

template <typename T, unsigned Elems> class vector {
    static_assert(detail::is_elem_v<T>, "aie::vector: unsupported element type");
    static_assert(Elems > 0, "aie::vector: empty vector");

  public:
    using value_type = T;

    static constexpr unsigned size() { return Elems; }
    static constexpr unsigned type_bits() { return detail::type_bits_v<T>; }
    static constexpr unsigned bits() { return type_bits() * Elems; }
    static constexpr unsigned bytes() { return bits() / 8; }
    static constexpr bool is_signed() { return detail::is_signed_v<T>; }
    static constexpr bool is_integral() { return detail::is_integral_v<T>; }
    static constexpr bool is_floating_point() { return detail::is_floating_point_v<T>; }
    static constexpr bool is_complex() { return false; }
    static constexpr bool is_real() { return true; }

    // The real register's contents are undefined until written; the host starts from zeros so that
    // a run is reproducible.
    vector() = default;

    // The first elements from the arguments, the rest zero.
    template <typename... Values>
    explicit vector(value_type v, Values &&... values) : d_{v, value_type(std::forward<Values>(values))...} {
        static_assert(1 + sizeof...(Values) <= Elems, "aie::vector: too many initial values");
    }

    value_type get(unsigned idx) const {
        assert(idx < Elems);
        aie_host::detail::count_move(1);
        return d_[idx];
    }
    void set(value_type v, unsigned idx) {
        assert(idx < Elems);
        aie_host::detail::count_move(1);
        d_[idx] = v;
    }
    value_type operator[](unsigned idx) const { return get(idx); }
    detail::vector_elem_ref<T, Elems> operator[](unsigned idx) { return {*this, idx}; }
    detail::vector_elem_ref<T, Elems> elem_ref(unsigned idx) { return {*this, idx}; }

    // Sub-vector `idx` of ElemsOut elements. Sub-vectors are halves or quarters of a register
    // (register aliasing), so they cost no instruction.
    template <unsigned ElemsOut> vector<T, ElemsOut> extract(unsigned idx) const {
        static_assert(ElemsOut <= Elems && Elems % ElemsOut == 0, "extract: ElemsOut must divide Elems");
        assert(idx < Elems / ElemsOut);
        vector<T, ElemsOut> r;
        for (unsigned i = 0; i < ElemsOut; ++i) r.raw(i) = d_[idx * ElemsOut + i];
        return r;
    }

    template <unsigned ElemsIn> vector & insert(unsigned idx, const vector<T, ElemsIn> & v) {
        static_assert(ElemsIn <= Elems && Elems % ElemsIn == 0, "insert: ElemsIn must divide Elems");
        assert(idx < Elems / ElemsIn);
        for (unsigned i = 0; i < ElemsIn; ++i) d_[idx * ElemsIn + i] = v.raw(i);
        return *this;
    }

    // A larger vector holding this one as sub-vector `idx`; aie_api leaves the other elements
    // undefined, the host zeroes them.
    template <unsigned ElemsOut> vector<T, ElemsOut> grow(unsigned idx = 0) const {
        static_assert(ElemsOut >= Elems && ElemsOut % Elems == 0, "grow: ElemsOut must be a multiple of Elems");
        vector<T, ElemsOut> r;
        r.insert(idx, *this);
        return r;
    }

    // A larger vector holding copies of this one.
    template <unsigned ElemsOut> vector<T, ElemsOut> grow_replicate() const {
        static_assert(ElemsOut >= Elems && ElemsOut % Elems == 0, "grow_replicate: ElemsOut must be a multiple of Elems");
        aie_host::detail::count_move(aie_host::detail::vreg_ops(uint64_t(type_bits()) * ElemsOut));
        vector<T, ElemsOut> r;
        for (unsigned k = 0; k < ElemsOut / Elems; ++k) r.insert(k, *this);
        return r;
    }

    template <unsigned ElemsOut> vector<T, ElemsOut> grow_extract(unsigned idx) const {
        if constexpr (ElemsOut > Elems) return grow<ElemsOut>();
        else return extract<ElemsOut>(idx);
    }

    // The same bits seen as elements of another type (aie_api vector::cast_to); no instruction.
    template <typename DstT> auto cast_to() const {
        constexpr unsigned dst_elems = bits() / detail::type_bits_v<DstT>;
        static_assert(dst_elems * detail::type_bits_v<DstT> == bits(), "cast_to: sizes do not match");
        uint8_t buf[(bits() + 7) / 8];
        host_to_bytes(buf);
        return vector<DstT, dst_elems>::host_from_bytes(buf);
    }

    template <typename T2 = typename detail::next_int<T>::type> vector<T2, Elems> unpack() const;
    template <typename T2 = typename detail::next_int<T>::type> vector<T2, Elems> unpack_sign(bool sign) const;
    template <typename T2 = typename detail::prev_int<T>::type> vector<T2, Elems> pack() const;
    template <typename T2 = typename detail::prev_int<T>::type> vector<T2, Elems> pack_sign(bool sign) const;

    template <aie_dm_resource Resource = aie_dm_resource::none, typename T2> void load(const T2 * ptr);
    template <aie_dm_resource Resource = aie_dm_resource::none, typename T2> void store(T2 * ptr) const;

    // ---- Host-only access (not aie_api): element storage without instruction counting. ----
    T & raw(unsigned i) { return d_[i]; }
    const T & raw(unsigned i) const { return d_[i]; }

    // Memory image: elements in order; 4-bit elements two per byte, element 2i in the low nibble
    // (aie_api detail/aie2/vector.hpp inserts an odd element into the high nibble).
    void host_to_bytes(uint8_t * out) const {
        if constexpr (type_bits() == 4) {
            for (unsigned i = 0; i < Elems; i += 2) {
                const unsigned lo = unsigned(int(d_[i])) & 0xfu;
                const unsigned hi = i + 1 < Elems ? unsigned(int(d_[i + 1])) & 0xfu : 0u;
                out[i / 2] = uint8_t(lo | (hi << 4));
            }
        } else {
            std::memcpy(out, d_.data(), bytes());
        }
    }
    static vector host_from_bytes(const uint8_t * in) {
        vector r;
        if constexpr (type_bits() == 4) {
            for (unsigned i = 0; i < Elems; ++i) r.d_[i] = T((in[i / 2] >> (4 * (i % 2))) & 0xf);
        } else {
            std::memcpy(r.d_.data(), in, bytes());
        }
        return r;
    }

  private:
    std::array<T, Elems> d_{};
};

static_assert(sizeof(int4_t) == 1 && sizeof(uint4_t) == 1 && sizeof(bfloat16) == 2,
              "element types must have the size of their memory image");

}  // namespace aie
