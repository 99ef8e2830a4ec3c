// aie::accum<Tag, Elems>: an accumulator register value (aie_api accum.hpp), and the conversions
// between accumulators and vectors (ups / srs).
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <type_traits>

#include "modes.hpp"
#include "op-counts.hpp"
#include "rounding.hpp"
#include "types.hpp"
#include "vector.hpp"

namespace aie {

template <typename Tag, unsigned Elems> class accum;
template <typename T, unsigned Elems> class block_vector;

namespace detail {
// What to_vector<T> returns: a block_vector for a block type, else a vector.
template <typename T, unsigned Elems>
using to_vector_result_t = std::conditional_t<is_block_type_v<T>, block_vector<T, Elems>, vector<T, Elems>>;
// fp32 accumulator <-> bfp16 block vector, defined in block-vector.hpp.
template <typename T, typename Tag, unsigned Elems> block_vector<T, Elems> accum_to_block(const accum<Tag, Elems> & acc);
template <typename Tag, typename T, unsigned Elems> void block_to_accum(accum<Tag, Elems> & acc, const block_vector<T, Elems> & v, int shift);
}  // namespace detail

template <typename Tag, unsigned Elems> class accum {
    using traits = detail::accum_tag_traits<Tag>;
    static_assert(traits::valid, "aie::accum: unsupported accumulator tag");
    template <typename Tag2, unsigned E2> friend class accum;

    template <typename Tag2>
    static constexpr bool same_representation =
        detail::accum_tag_traits<Tag2>::is_float == traits::is_float &&
        detail::accum_tag_traits<Tag2>::native_bits == traits::native_bits;

  public:
    using value_type = Tag;
    // Host lane storage: integer lanes hold the value of an accum_bits() two's complement lane.
    using lane_type = std::conditional_t<traits::is_float, float, int64_t>;

    static constexpr unsigned size() { return Elems; }
    static constexpr unsigned accum_bits() { return traits::native_bits; }
    static constexpr unsigned accum_min_bits() { return traits::min_bits; }
    static constexpr unsigned value_bits() { return traits::native_bits; }
    static constexpr unsigned memory_bits() { return traits::native_bits; }
    static constexpr unsigned bits() { return traits::native_bits * Elems; }
    static constexpr bool is_floating_point() { return traits::is_float; }
    static constexpr bool is_complex() { return false; }
    static constexpr bool is_real() { return true; }

    // Undefined on the core until written; zeros on the host.
    accum() = default;

    // From an accumulator with the same lanes (acc48 and acc64 are both 64-bit lanes on AIE2P).
    template <typename Tag2, std::enable_if_t<same_representation<Tag2> && !std::is_same_v<Tag2, Tag>, int> = 0>
    accum(const accum<Tag2, Elems> & o) : d_(o.d_) {}

    template <typename T> explicit accum(const vector<T, Elems> & v, int shift = 0) { from_vector(v, shift); }
    // From a block vector: the values scaled by 2^shift (block-vector.hpp).
    template <typename T> explicit accum(const block_vector<T, Elems> & v, int shift = 0) { from_vector(v, shift); }
    template <typename T> void from_vector(const block_vector<T, Elems> & v, int shift = 0) {
        detail::block_to_accum(*this, v, shift);
    }

    // ---- vector -> accumulator (ups): value * 2^shift, extended per the vector's signedness ----
    template <typename T> void from_vector(const vector<T, Elems> & v, int shift = 0) {
        from_vector_sign(v, detail::is_signed_v<T>, shift);
    }

    template <typename T> void from_vector_sign(const vector<T, Elems> & v, bool sign, int shift = 0) {
        using namespace aie_host::detail;
        if constexpr (traits::is_float) {
            static_assert(detail::is_floating_point_v<T>, "accfloat accumulators take float or bfloat16 vectors");
            count_move(vreg_ops(uint64_t(detail::type_bits_v<T>) * Elems));
            for (unsigned i = 0; i < Elems; ++i) d_[i] = float(v.raw(i));
        } else {
            static_assert(detail::is_integral_v<T>, "integer accumulators take integer vectors");
            constexpr unsigned tb = detail::type_bits_v<T>;
            // aie_api detail/aie2p/accum.hpp: 4-bit vectors, and 8-bit vectors into 64-bit lanes, are
            // unpacked first.
            if constexpr (tb == 4) count_unpack(chunks(Elems, 64));
            if constexpr (tb == 8 && accum_bits() == 64) count_unpack(chunks(Elems, 32));
            // aie_api detail/aie2p/accum.hpp get_ups: an int32 vector becomes a 32-bit accumulator by a
            // register cast and `shift` is IGNORED: its REQUIRES(shift == 0) is compiled out under Peano
            // (detail/utils.hpp: chess_error is empty in llvm-aie aiebase_chess.h). Same in 2025.1.
            int up = shift;
            if constexpr (tb == 32 && accum_bits() == 32) {
                count_move(vreg_ops(32ull * Elems));
                up = 0;
            } else {
                count_move(chunks(Elems, tb <= 8 ? 64 : (tb == 16 ? 32 : 16)));
            }
            for (unsigned i = 0; i < Elems; ++i) {
                const int64_t x = extend(detail::to_i64(v.raw(i)), tb, sign);
                d_[i] = wrap((int64_t)((uint64_t)x << (unsigned)up));
            }
        }
    }

    template <typename T> accum & operator=(const vector<T, Elems> & v) {
        from_vector(v);
        return *this;
    }

    // ---- accumulator -> vector (srs): shift, round and saturate per the core's modes ----
    // To a block type (bfp16ebs8): the fp32 -> block conversion (block-vector.hpp); `shift` is
    // ignored, as aie_api's conversion lambda ignores it (detail/aie2p/accum.hpp).
    template <typename T> detail::to_vector_result_t<T, Elems> to_vector(int shift = 0) const {
        if constexpr (detail::is_block_type_v<T>) {
            (void)shift;
            return detail::accum_to_block<T>(*this);
        } else {
            return to_vector_sign<T>(detail::is_signed_v<T>, shift);
        }
    }

    template <typename T> vector<T, Elems> to_vector_sign(bool sign, int shift = 0) const {
        using namespace aie_host::detail;
        vector<T, Elems> r;
        if constexpr (traits::is_float) {
            static_assert(detail::is_floating_point_v<T>, "accfloat converts to float or bfloat16");
            if constexpr (std::is_same_v<T, float>) {
                count_move(vreg_ops(32ull * Elems));
                for (unsigned i = 0; i < Elems; ++i) r.raw(i) = d_[i];
            } else {
                // The fp32 -> bf16 conversion follows the core's rounding mode (floor after reset).
                count_store(chunks(Elems, 32));
                const rounding_mode m = get_rounding();
                for (unsigned i = 0; i < Elems; ++i) r.raw(i) = bfloat16::from_bits(detail::float_to_bf16_bits(d_[i], m));
            }
        } else {
            static_assert(detail::is_integral_v<T>, "integer accumulators convert to integer vectors");
            constexpr unsigned tb = detail::type_bits_v<T>;
            if constexpr (tb == 4) {
                // aie_api: to 8 bits, then pack.
                using T8 = typename detail::next_int<T>::type;
                const vector<T8, Elems> v8 = to_vector_sign<T8>(sign, shift);
                count_store(vreg_ops(8ull * Elems));
                const saturation_mode sat = get_saturation();
                for (unsigned i = 0; i < Elems; ++i)
                    r.raw(i) = detail::from_i64_wrap<T>(detail::saturate(detail::to_i64(v8.raw(i)), 4, sign, sat));
                return r;
            } else if constexpr (tb == 32 && accum_bits() == 32) {
                // aie_api detail/aie2p/accum.hpp get_srs: a 32-bit accumulator becomes int32 by a plain
                // register move; `shift` is NOT applied and nothing saturates.
                count_move(vreg_ops(32ull * Elems));
                for (unsigned i = 0; i < Elems; ++i) r.raw(i) = detail::from_i64_wrap<T>(d_[i]);
            } else {
                // One srs per 64 (acc32 -> 8 bit), 32 (-> 16 bit) or 16 (acc64 -> 32 bit) lanes; acc64 to
                // 8 bits goes through 16 bits and a pack (same values, one more instruction).
                constexpr unsigned lanes = tb == 8 ? (accum_bits() == 32 ? 64 : 32) : (tb == 16 ? 32 : 16);
                count_store(chunks(Elems, lanes));
                if constexpr (tb == 8 && accum_bits() == 64) count_store(vreg_ops(16ull * Elems));
                const rounding_mode m = get_rounding();
                const saturation_mode sat = get_saturation();
                for (unsigned i = 0; i < Elems; ++i)
                    r.raw(i) = detail::from_i64_wrap<T>(detail::saturate(detail::round_shift(d_[i], shift, m), tb, sign, sat));
            }
        }
        return r;
    }

    // Float accumulators convert to vector<float> (aie_api accum::to_vector()).
    template <bool F = traits::is_float, std::enable_if_t<F, int> = 0> vector<float, Elems> to_vector() const {
        return to_vector<float>();
    }
    template <typename T, std::enable_if_t<traits::is_float && detail::is_floating_point_v<T> && (Elems <= 32), int> = 0>
    operator vector<T, Elems>() const {
        return to_vector<T>();
    }

    // Sub-accumulators are register halves / quarters: no instruction.
    template <unsigned ElemsOut> accum<Tag, ElemsOut> extract(unsigned idx) const {
        static_assert(ElemsOut <= Elems && Elems % ElemsOut == 0, "extract: ElemsOut must divide Elems");
        assert(idx < Elems / ElemsOut);
        accum<Tag, ElemsOut> r;
        for (unsigned i = 0; i < ElemsOut; ++i) r.d_[i] = d_[idx * ElemsOut + i];
        return r;
    }
    template <unsigned ElemsIn, typename Tag2> accum & insert(unsigned idx, const accum<Tag2, ElemsIn> & a) {
        static_assert(same_representation<Tag2> || std::is_same_v<Tag2, Tag>, "insert: different accumulator lanes");
        static_assert(ElemsIn <= Elems && Elems % ElemsIn == 0, "insert: ElemsIn must divide Elems");
        assert(idx < Elems / ElemsIn);
        for (unsigned i = 0; i < ElemsIn; ++i) d_[idx * ElemsIn + i] = a.d_[i];
        return *this;
    }
    template <unsigned ElemsOut> accum<Tag, ElemsOut> grow(unsigned idx = 0) const {
        static_assert(ElemsOut >= Elems && ElemsOut % Elems == 0, "grow: ElemsOut must be a multiple of Elems");
        accum<Tag, ElemsOut> r;
        r.insert(idx, *this);
        return r;
    }
    template <unsigned ElemsOut> accum<Tag, ElemsOut> grow_extract(unsigned idx) const {
        if constexpr (ElemsOut > Elems) return grow<ElemsOut>();
        else return extract<ElemsOut>(idx);
    }

    // The same bits as another 32-bit accumulator class (aie_api accum::cast_to): acc32 <-> accfloat.
    template <typename Tag2> accum<Tag2, Elems> cast_to() const {
        using t2 = detail::accum_tag_traits<Tag2>;
        static_assert(t2::native_bits == traits::native_bits, "cast_to: lane widths differ");
        accum<Tag2, Elems> r;
        for (unsigned i = 0; i < Elems; ++i) {
            if constexpr (t2::is_float == traits::is_float) r.d_[i] = d_[i];
            else if constexpr (t2::is_float) r.d_[i] = detail::bits_float((uint32_t)d_[i]);
            else r.d_[i] = (int32_t)detail::float_bits(d_[i]);
        }
        return r;
    }

    // ---- Host-only access (not aie_api): lanes without instruction counting. ----
    lane_type lane(unsigned i) const { return d_[i]; }
    void set_lane(unsigned i, lane_type x) {
        if constexpr (traits::is_float) d_[i] = x;
        else d_[i] = wrap(x);
    }
    // An integer lane's value after the accumulator's two's complement wrap.
    static int64_t wrap(int64_t x) {
        if constexpr (traits::native_bits == 32) return (int64_t)(int32_t)(uint32_t)(uint64_t)x;
        else return x;
    }

  private:
    static int64_t extend(int64_t x, unsigned bits, bool sign) {
        // Elements arrive as their signed or unsigned value; reinterpret per `sign` (aie_api *_sign).
        const uint64_t mask = bits >= 64 ? ~0ull : (uint64_t(1) << bits) - 1;
        const uint64_t low = (uint64_t)x & mask;
        if (sign && bits < 64 && ((low >> (bits - 1)) & 1)) return (int64_t)(low | ~mask);
        return (int64_t)low;
    }

    std::array<lane_type, Elems> d_{};
};

// Accumulator filled with zeros (aie_api zeros<AccumTag, Elems>).
template <typename Tag, unsigned Elems, std::enable_if_t<detail::is_accum_tag_v<Tag>, int> = 0> accum<Tag, Elems> zeros() {
    aie_host::detail::count_move(aie_host::detail::acc_ops(uint64_t(accum<Tag, Elems>::bits())));
    return accum<Tag, Elems>();
}

template <typename AccumTag, typename T, unsigned Elems>
accum<AccumTag, Elems> from_vector(const vector<T, Elems> & v, int shift = 0) {
    accum<AccumTag, Elems> a;
    a.from_vector(v, shift);
    return a;
}

template <typename TR, typename Tag, unsigned Elems>
detail::to_vector_result_t<TR, Elems> to_vector(const accum<Tag, Elems> & acc, int shift = 0) {
    return acc.template to_vector<TR>(shift);
}

}  // namespace aie
