// aie::mask<Elems>: one bit per vector element, produced by compares and consumed by select
// (aie_api mask.hpp). Bit i of word i / 32 is element i.
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace aie {

template <unsigned Elems> class mask {
    static constexpr unsigned kWords = (Elems + 31) / 32;
    static constexpr uint32_t kLastWordMask = Elems % 32 == 0 ? 0xffffffffu : (uint32_t(1) << (Elems % 32)) - 1;

    template <unsigned E2> friend class mask;

  public:
    static constexpr unsigned size() { return Elems; }

    constexpr explicit mask(bool initial_set = false) : w_{} {
        if (initial_set) {
            for (unsigned i = 0; i < kWords; ++i) w_[i] = 0xffffffffu;
            w_[kWords - 1] &= kLastWordMask;
        }
    }

    // Words from the lowest elements up (aie_api mask::from_uint32 / from_uint64).
    template <typename... W> static constexpr mask from_uint32(uint32_t w, W... words) {
        static_assert(1 + sizeof...(W) == kWords, "from_uint32: one word per 32 elements");
        mask m;
        const uint32_t all[] = {w, uint32_t(words)...};
        for (unsigned i = 0; i < kWords; ++i) m.w_[i] = all[i];
        m.w_[kWords - 1] &= kLastWordMask;
        return m;
    }
    template <typename... W> static constexpr mask from_uint64(uint64_t w, W... words) {
        static_assert(Elems % 64 == 0 && 1 + sizeof...(W) == kWords / 2, "from_uint64: one word per 64 elements");
        mask m;
        const uint64_t all[] = {w, uint64_t(words)...};
        for (unsigned i = 0; i < kWords / 2; ++i) {
            m.w_[2 * i] = uint32_t(all[i]);
            m.w_[2 * i + 1] = uint32_t(all[i] >> 32);
        }
        return m;
    }

    constexpr bool test(unsigned i) const {
        assert(i < Elems);
        return (w_[i / 32] >> (i % 32)) & 1u;
    }
    constexpr void set(unsigned i) {
        assert(i < Elems);
        w_[i / 32] |= uint32_t(1) << (i % 32);
    }
    constexpr void clear(unsigned i) {
        assert(i < Elems);
        w_[i / 32] &= ~(uint32_t(1) << (i % 32));
    }

    // Word at a time: bits past Elems are always 0 (every constructor and operator keeps them clear).
    constexpr unsigned count() const {
        unsigned n = 0;
        for (unsigned i = 0; i < kWords; ++i) n += unsigned(__builtin_popcount(w_[i]));
        return n;
    }
    constexpr bool empty() const {
        for (unsigned i = 0; i < kWords; ++i)
            if (w_[i] != 0) return false;
        return true;
    }
    constexpr bool full() const {
        for (unsigned i = 0; i + 1 < kWords; ++i)
            if (w_[i] != 0xffffffffu) return false;
        return w_[kWords - 1] == kLastWordMask;
    }
    // Leading zeros counted from the highest element down.
    constexpr unsigned clz() const {
        unsigned n = 0;
        for (unsigned i = Elems; i-- > 0 && !test(i);) ++n;
        return n;
    }

    // Host-side helpers of the compares and select (not aie_api): the mask from one byte per element
    // (0 or 1), and the mask as such bytes.
    static mask from_bools(const uint8_t * b) {
        mask m;
        for (unsigned i = 0; i < Elems; i += 32) {
            const unsigned n = Elems - i < 32 ? Elems - i : 32;
            uint32_t w = 0;
#if defined(__SSE2__)
            if (n == 32) {
                // Bit 0 of each byte to bit 7 (a 16-bit shift by 7 moves both bytes' bit 0 there), then
                // the 32 sign bits.
                const __m128i lo = _mm_slli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b + i)), 7);
                const __m128i hi = _mm_slli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b + i + 16)), 7);
                w = uint32_t(_mm_movemask_epi8(lo)) | (uint32_t(_mm_movemask_epi8(hi)) << 16);
            } else
#endif
            {
                for (unsigned j = 0; j < n; ++j) w |= uint32_t(b[i + j] & 1u) << j;
            }
            m.w_[i / 32] = w;
        }
        return m;
    }
    void to_bools(uint8_t * b) const {
        for (unsigned i = 0; i < Elems; i += 8) {
            const unsigned byte = (w_[i / 32] >> (i % 32)) & 0xffu;
            if (Elems - i >= 8) std::memcpy(b + i, &kSpread[byte], 8);
            else
                for (unsigned j = 0; i + j < Elems; ++j) b[i + j] = uint8_t((byte >> j) & 1u);
        }
    }

    constexpr uint32_t to_uint32(unsigned i) const { return w_[i]; }
    template <unsigned E2 = Elems, std::enable_if_t<(E2 <= 32), int> = 0> constexpr uint32_t to_uint32() const { return w_[0]; }
    constexpr uint64_t to_uint64(unsigned i) const { return uint64_t(w_[2 * i]) | (uint64_t(w_[2 * i + 1]) << 32); }
    template <unsigned E2 = Elems, std::enable_if_t<(E2 == 64), int> = 0> constexpr uint64_t to_uint64() const {
        return to_uint64(0);
    }

    template <unsigned ElemsOut> constexpr mask<ElemsOut> extract(unsigned idx) const {
        static_assert(ElemsOut <= Elems, "extract: larger than the mask");
        mask<ElemsOut> r;
        for (unsigned i = 0; i < ElemsOut; ++i)
            if (test(idx * ElemsOut + i)) r.set(i);
        return r;
    }
    template <unsigned ElemsIn> constexpr mask & insert(unsigned idx, const mask<ElemsIn> & m) {
        static_assert(ElemsIn <= Elems, "insert: larger than the mask");
        for (unsigned i = 0; i < ElemsIn; ++i) {
            if (m.test(i)) set(idx * ElemsIn + i);
            else clear(idx * ElemsIn + i);
        }
        return *this;
    }

    constexpr bool operator==(const mask & o) const {
        for (unsigned i = 0; i < kWords; ++i)
            if (w_[i] != o.w_[i]) return false;
        return true;
    }
    constexpr bool operator!=(const mask & o) const { return !(*this == o); }
    constexpr mask operator&(const mask & o) const {
        mask r;
        for (unsigned i = 0; i < kWords; ++i) r.w_[i] = w_[i] & o.w_[i];
        return r;
    }
    constexpr mask operator|(const mask & o) const {
        mask r;
        for (unsigned i = 0; i < kWords; ++i) r.w_[i] = w_[i] | o.w_[i];
        return r;
    }
    constexpr mask operator^(const mask & o) const {
        mask r;
        for (unsigned i = 0; i < kWords; ++i) r.w_[i] = w_[i] ^ o.w_[i];
        return r;
    }
    constexpr mask operator~() const {
        mask r;
        for (unsigned i = 0; i < kWords; ++i) r.w_[i] = ~w_[i];
        r.w_[kWords - 1] &= kLastWordMask;
        return r;
    }
    constexpr mask & operator&=(const mask & o) { return *this = *this & o; }
    constexpr mask & operator|=(const mask & o) { return *this = *this | o; }
    // Element i moves to i + n (<<) or i - n (>>); vacated elements are 0.
    constexpr mask operator<<(unsigned n) const {
        mask r;
        for (unsigned i = 0; i + n < Elems; ++i)
            if (test(i)) r.set(i + n);
        return r;
    }
    constexpr mask operator>>(unsigned n) const {
        mask r;
        for (unsigned i = n; i < Elems; ++i)
            if (test(i)) r.set(i - n);
        return r;
    }

  private:
    // kSpread[x]: byte j (little-endian) is bit j of x.
    static constexpr std::array<uint64_t, 256> spread_table() {
        std::array<uint64_t, 256> t{};
        for (unsigned x = 0; x < 256; ++x)
            for (unsigned j = 0; j < 8; ++j) t[x] |= uint64_t((x >> j) & 1u) << (8 * j);
        return t;
    }
    static constexpr std::array<uint64_t, 256> kSpread = spread_table();

    std::array<uint32_t, kWords> w_;
};

}  // namespace aie
