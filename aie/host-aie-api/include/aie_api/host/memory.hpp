// Vector loads and stores (aie_api aie.hpp "group_memory", iterator.hpp), with the core's alignment
// rule checked.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "op-counts.hpp"
#include "vector.hpp"

namespace aie_host {

// What a vector access at an address the core cannot use does. The NPU ignores the low address bits
// of a vector load or store, so it silently reads or writes the aligned address below (AMD UG1603:
// vector loads and stores must be aligned; aie_api asserts it, aie.hpp load_v). `error` (the default)
// throws misaligned_access so a kernel bug surfaces at its source; `hardware` reproduces what the NPU
// does. Defining AIE_API_DISABLE_ALIGNMENT_ASSERTIONS (aie_api's switch) removes the check: the access
// then uses the address as given.
enum class alignment_policy { error, hardware };

class misaligned_access : public std::logic_error {
  public:
    using std::logic_error::logic_error;
};

inline std::atomic<alignment_policy> & alignment_policy_ref() {
    static std::atomic<alignment_policy> policy{alignment_policy::error};
    return policy;
}
inline void set_alignment_policy(alignment_policy p) { alignment_policy_ref().store(p); }
inline alignment_policy get_alignment_policy() { return alignment_policy_ref().load(); }

namespace detail {

// The address a vector access of `bits` bits at `p` really uses, or an error.
inline uintptr_t vector_access_address(const void * p, unsigned align, const char * what, unsigned bits) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
#ifdef AIE_API_DISABLE_ALIGNMENT_ASSERTIONS
    (void)align;
    (void)what;
    (void)bits;
    return a;
#else
    if (a % align == 0) return a;
    if (get_alignment_policy() == alignment_policy::hardware) return a & ~uintptr_t(align - 1);
    char msg[160];
    std::snprintf(msg, sizeof msg, "%s: %u-bit vector access at %p is not %u-byte aligned", what, bits, p, align);
    throw misaligned_access(msg);
#endif
}

}  // namespace detail
}  // namespace aie_host

namespace aie {

// Alignment for vector buffers (aie_api aie.hpp; AIE2P: 64 bytes).
static constexpr unsigned vector_decl_align = 64;

// aie_api detail/ld_st.hpp (AIE2P): 128-bit accesses need 16 bytes, 256-bit 32, anything else 64.
template <typename T, unsigned Elems>
static constexpr unsigned vector_ldst_align_v =
    detail::type_bits_v<T> * Elems == 128 ? 16 : (detail::type_bits_v<T> * Elems == 256 ? 32 : 64);

template <unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none, typename T>
vector<std::remove_cv_t<T>, Elems> load_v(const T * ptr) {
    using E = std::remove_cv_t<T>;
    constexpr unsigned bits = detail::type_bits_v<E> * Elems;
    const uintptr_t a = aie_host::detail::vector_access_address(ptr, vector_ldst_align_v<E, Elems>, "aie::load_v", bits);
    aie_host::detail::count_load(aie_host::detail::vreg_ops(bits));
    return vector<E, Elems>::host_from_bytes(reinterpret_cast<const uint8_t *>(a));
}

// The native length (512 bits) when no size is given.
template <aie_dm_resource Resource = aie_dm_resource::none, typename T> auto load_v(const T * ptr) {
    return load_v<detail::native_vector_length_v<std::remove_cv_t<T>>, Resource>(ptr);
}

template <aie_dm_resource Resource = aie_dm_resource::none, typename T1, typename T2, unsigned Elems>
T1 * store_v(T1 * ptr, const vector<T2, Elems> & v) {
    static_assert(std::is_same_v<std::remove_cv_t<T1>, T2>, "aie::store_v: pointer and vector element types differ");
    constexpr unsigned bits = detail::type_bits_v<T2> * Elems;
    const uintptr_t a = aie_host::detail::vector_access_address(ptr, vector_ldst_align_v<T2, Elems>, "aie::store_v", bits);
    aie_host::detail::count_store(aie_host::detail::vreg_ops(bits));
    v.host_to_bytes(reinterpret_cast<uint8_t *>(a));
    return ptr;
}

// Loads from an address aligned only to `aligned_elems` elements. The core reads the aligned
// 512-bit blocks around the data and shifts them together; counted as two loads and one shift per
// 512 bits.
template <unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none, typename T>
vector<std::remove_cv_t<T>, Elems> load_unaligned_v(const T * ptr, unsigned aligned_elems = 1) {
    using E = std::remove_cv_t<T>;
    constexpr unsigned bits = detail::type_bits_v<E> * Elems;
    const unsigned align = (detail::type_bits_v<E> * aligned_elems + 7) / 8;
    aie_host::detail::vector_access_address(ptr, align ? align : 1, "aie::load_unaligned_v", bits);
    const uint64_t n = aie_host::detail::vreg_ops(bits);
    aie_host::detail::count_load(2 * n);
    aie_host::detail::count_move(n);
    return vector<E, Elems>::host_from_bytes(reinterpret_cast<const uint8_t *>(ptr));
}

template <aie_dm_resource Resource = aie_dm_resource::none, typename T>
auto load_unaligned_v(const T * ptr, unsigned aligned_elems = 1) {
    return load_unaligned_v<detail::native_vector_length_v<std::remove_cv_t<T>>, Resource>(ptr, aligned_elems);
}

// Stores to an address aligned only to `aligned_elems` elements: shift plus two stores per 512 bits.
template <unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none, typename T1, typename T2>
T1 * store_unaligned_v(T1 * ptr, const vector<T2, Elems> & v, unsigned aligned_elems = 1) {
    static_assert(std::is_same_v<std::remove_cv_t<T1>, T2>, "aie::store_unaligned_v: pointer and vector element types differ");
    constexpr unsigned bits = detail::type_bits_v<T2> * Elems;
    const unsigned align = (detail::type_bits_v<T2> * aligned_elems + 7) / 8;
    aie_host::detail::vector_access_address(ptr, align ? align : 1, "aie::store_unaligned_v", bits);
    const uint64_t n = aie_host::detail::vreg_ops(bits);
    aie_host::detail::count_store(2 * n);
    aie_host::detail::count_move(n);
    v.host_to_bytes(reinterpret_cast<uint8_t *>(ptr));
    return ptr;
}

// Loads from `ptr` rounded down to a multiple of `bytes` (aie_api load_floor_bytes_v / load_floor_v).
template <unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none, typename T>
vector<std::remove_cv_t<T>, Elems> load_floor_bytes_v(const T * ptr, size_t bytes) {
    const T * p = reinterpret_cast<const T *>(reinterpret_cast<uintptr_t>(ptr) & ~uintptr_t(bytes - 1));
    return load_v<Elems, Resource>(p);
}
template <unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none, typename T>
vector<std::remove_cv_t<T>, Elems> load_floor_v(const T * ptr, unsigned n = Elems) {
    return load_floor_bytes_v<Elems, Resource>(ptr, size_t(n) * detail::type_bits_v<std::remove_cv_t<T>> / 8);
}

template <typename T, unsigned Elems>
template <aie_dm_resource Resource, typename T2>
void vector<T, Elems>::load(const T2 * ptr) {
    *this = load_v<Elems, Resource>(ptr);
}

template <typename T, unsigned Elems>
template <aie_dm_resource Resource, typename T2>
void vector<T, Elems>::store(T2 * ptr) const {
    store_v<Resource>(ptr, *this);
}

namespace detail {

// Byte distance between consecutive vectors of Elems elements (int4: two elements per byte).
template <typename E, unsigned Elems> inline constexpr size_t vector_stride_bytes = size_t(type_bits_v<E>) * Elems / 8;

template <typename T, unsigned Elems> class vector_ref {
    using E = std::remove_cv_t<T>;

  public:
    explicit vector_ref(T * p) : p_(p) {}
    operator vector<E, Elems>() const { return load_v<Elems>(p_); }
    vector_ref & operator=(const vector<E, Elems> & v) {
        store_v(p_, v);
        return *this;
    }

  private:
    T * p_;
};

// Iterator over consecutive vectors in memory (aie_api iterator.hpp vector_iterator): dereferencing
// loads (and, for a non-const element type, assigning stores).
template <typename T, unsigned Elems> class vector_iterator_base {
    using E = std::remove_cv_t<T>;
    static constexpr size_t kStride = vector_stride_bytes<E, Elems>;

  public:
    using value_type = vector<E, Elems>;
    using difference_type = ptrdiff_t;

    vector_iterator_base() = default;
    explicit vector_iterator_base(T * p) : p_(p) {}

    auto operator*() const {
        if constexpr (std::is_const_v<T>) return load_v<Elems>(p_);
        else return vector_ref<T, Elems>(p_);
    }
    auto operator[](difference_type n) const { return *(*this + n); }
    vector_iterator_base & operator++() { return *this += 1; }
    vector_iterator_base operator++(int) {
        vector_iterator_base r = *this;
        *this += 1;
        return r;
    }
    vector_iterator_base & operator--() { return *this -= 1; }
    vector_iterator_base & operator+=(difference_type n) {
        p_ = reinterpret_cast<T *>(reinterpret_cast<std::conditional_t<std::is_const_v<T>, const char, char> *>(p_) +
                                   n * (difference_type)kStride);
        return *this;
    }
    vector_iterator_base & operator-=(difference_type n) { return *this += -n; }
    friend vector_iterator_base operator+(vector_iterator_base it, difference_type n) { return it += n; }
    friend vector_iterator_base operator-(vector_iterator_base it, difference_type n) { return it -= n; }
    friend bool operator==(const vector_iterator_base & a, const vector_iterator_base & b) { return a.p_ == b.p_; }
    friend bool operator!=(const vector_iterator_base & a, const vector_iterator_base & b) { return a.p_ != b.p_; }

  private:
    T * p_ = nullptr;
};

}  // namespace detail

template <typename T, unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none>
using vector_iterator = detail::vector_iterator_base<T, Elems>;
template <typename T, unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none>
using const_vector_iterator = detail::vector_iterator_base<const T, Elems>;

template <unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none, typename T>
detail::vector_iterator_base<T, Elems> begin_vector(T * base) {
    return detail::vector_iterator_base<T, Elems>(base);
}
template <unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none, typename T>
detail::vector_iterator_base<const T, Elems> cbegin_vector(const T * base) {
    return detail::vector_iterator_base<const T, Elems>(base);
}
template <unsigned Elems, aie_dm_resource Resource = aie_dm_resource::none, typename T>
detail::vector_iterator_base<T, Elems> begin_restrict_vector(T * base) {
    return detail::vector_iterator_base<T, Elems>(base);
}

}  // namespace aie
