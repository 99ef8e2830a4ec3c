// aie::mmul<M, K, N, TypeA, TypeB, AccumTag>: C (M x N) = A (M x K) x B (K x N), all row-major
// (aie_api aie.hpp mmul: "A ... row-major data layout", "B ... row-major", C "row-major order").
//
// The AIE2P shapes provided, with what the core executes (aie_api detail/aie2p/mmul_*.hpp):
//   int8 x int4  4x16x16 -> acc32     one mac_4x16_16x16 instruction (1024 MACs); int4 B used packed
//   int8 x int8  8x8x8   -> acc32     one mac_8x8_8x8 instruction (512 MACs)
//   int8 x int8  4x8x8   -> acc32     the same 8x8x8 instruction, A grown to 8 rows (512 MACs issued)
//   bf16 x bf16  4x8x8   -> accfloat  emulated (emulated_mmul_intrinsics.hpp mac_4x8_8x8_bf16): for
//                                     k = 0..7 one 32-lane bf16 elementwise MAC C += A[:,k] B[k,:];
//                                     bf16 products are exact in fp32, each MAC rounds to nearest even
//   bf16 x bf16  8x8x8   -> accfloat  two 4x8x8 emulations (rows 0..3, rows 4..7)
//   float x float 4x8x4  -> accfloat  emulated (mac_4x8_8x4_fp32): for k = 0..7 one 16-lane fp32
//                                     multiply-add at accuracy safe (fp32-emulation.hpp: bf16 splits
//                                     in the current rounding mode, nine partial products)
// (u)int8 x (u)int4 and (u)int8 x (u)int8 sign combinations follow the operand types.
// aie_api has no float x float 4x8x8 on AIE2P (its float shapes are 4x8x4, 4x1x4, 4x1x8), and its
// bf16 8x8x8 is native only with AIE_API_EMULATE_BFLOAT16_MMUL_WITH_BFP16 (block floating point, which
// drops mantissa bits; that macro is not honoured here). The bfp16ebs8 shapes are in mmul-bfp16.hpp.
#pragma once

#include <type_traits>

#include "accum.hpp"
#include "fp32-emulation.hpp"
#include "op-counts.hpp"
#include "vector.hpp"

namespace aie {
namespace detail {

template <typename T> inline constexpr bool is_i8_v = std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>;
template <typename T> inline constexpr bool is_i4_v = std::is_same_v<T, int4_t> || std::is_same_v<T, uint4_t>;

enum class mmul_impl { int_direct, bf16_emul, f32_emul, none };

template <unsigned M, unsigned K, unsigned N, typename A, typename B, typename Tag> struct mmul_spec {
    static constexpr bool float_ops = std::is_same_v<A, bfloat16> || std::is_same_v<A, float>;
    static constexpr bool tag_ok = float_ops ? std::is_same_v<Tag, accfloat>
                                             : (accum_tag_traits<Tag>::valid && !accum_tag_traits<Tag>::is_float &&
                                                accum_tag_traits<Tag>::native_bits == 32);
    static constexpr bool i8xi4 = M == 4 && K == 16 && N == 16 && is_i8_v<A> && is_i4_v<B>;
    static constexpr bool i8xi8_8 = M == 8 && K == 8 && N == 8 && is_i8_v<A> && is_i8_v<B>;
    static constexpr bool i8xi8_4 = M == 4 && K == 8 && N == 8 && is_i8_v<A> && is_i8_v<B>;
    static constexpr bool bf16_4 = M == 4 && K == 8 && N == 8 && std::is_same_v<A, bfloat16> && std::is_same_v<B, bfloat16>;
    static constexpr bool bf16_8 = M == 8 && K == 8 && N == 8 && std::is_same_v<A, bfloat16> && std::is_same_v<B, bfloat16>;
    static constexpr bool f32_4 = M == 4 && K == 8 && N == 4 && std::is_same_v<A, float> && std::is_same_v<B, float>;
    static constexpr bool valid = tag_ok && (i8xi4 || i8xi8_8 || i8xi8_4 || bf16_4 || bf16_8 || f32_4);
    static constexpr aie_host::mmul_shape shape = i8xi4     ? aie_host::mmul_shape::i8xi4_4x16x16
                                                  : i8xi8_8 ? aie_host::mmul_shape::i8xi8_8x8x8
                                                  : i8xi8_4 ? aie_host::mmul_shape::i8xi8_4x8x8
                                                  : bf16_4  ? aie_host::mmul_shape::bf16_4x8x8
                                                  : bf16_8  ? aie_host::mmul_shape::bf16_8x8x8
                                                            : aie_host::mmul_shape::f32_4x8x4;
    static constexpr mmul_impl impl = !valid ? mmul_impl::none
                                      : float_ops ? (std::is_same_v<A, float> ? mmul_impl::f32_emul : mmul_impl::bf16_emul)
                                                  : mmul_impl::int_direct;
};

}  // namespace detail

template <unsigned M_Elems, unsigned K_Elems, unsigned N_Elems, typename TypeA, typename TypeB = TypeA, typename AccumTag = accauto>
struct mmul {
  private:
    using tag_requested = detail::resolve_accum_tag_t<AccumTag, TypeA, TypeB>;
    using spec = detail::mmul_spec<M_Elems, K_Elems, N_Elems, TypeA, TypeB, tag_requested>;
    static_assert(spec::valid,
                  "aie::mmul: shape/types not provided on AIE2P. Provided: int8 x int4 4x16x16, int8 x int8 4x8x8 and "
                  "8x8x8 (acc32), bfloat16 x bfloat16 4x8x8 and 8x8x8 (accfloat), float x float 4x8x4 (accfloat; "
                  "aie_api has no float 4x8x8 on AIE2P)");

  public:
    static constexpr unsigned M = M_Elems;
    static constexpr unsigned K = K_Elems;
    static constexpr unsigned N = N_Elems;
    static constexpr unsigned size_A = M * K;
    static constexpr unsigned size_B = K * N;
    static constexpr unsigned size_C = M * N;
    static constexpr unsigned size() { return size_C; }

    // The accumulator holds native lanes: acc32 or accfloat (aie_api detail/mmul.hpp C_block).
    using accum_type = accum<std::conditional_t<spec::float_ops, accfloat, acc32>, size_C>;

    // "Zero initialised for the first operation": the first mac is a mul.
    mmul() = default;
    mmul(const accum_type & acc) : c_(acc), zero_(false) {}
    template <typename T> mmul(const vector<T, size_C> & v, int shift = 0) : c_(v, shift), zero_(false) {}
    mmul & operator=(const accum_type & acc) {
        c_ = acc;
        zero_ = false;
        return *this;
    }

    accum_type to_accum() const { return c_; }
    operator accum_type() const { return c_; }
    template <typename T> vector<T, size_C> to_vector(int shift = 0) const { return c_.template to_vector<T>(shift); }
    template <typename T> vector<T, size_C> to_vector_sign(bool sign, int shift = 0) const {
        return c_.template to_vector_sign<T>(sign, shift);
    }

    // C = A x B.
    void mul(const vector<TypeA, size_A> & a, const vector<TypeB, size_B> & b) { run(a, b, false, false); }
    // C += A x B.
    void mac(const vector<TypeA, size_A> & a, const vector<TypeB, size_B> & b) { run(a, b, !zero_, true); }

  private:
    // `accumulate`: C holds a value to add to; `via_mac`: the mac form was called (on a zero C it still
    // issues the mac intrinsics, with their zeroing flag).
    void run(const vector<TypeA, size_A> & a, const vector<TypeB, size_B> & b, bool accumulate, bool via_mac) {
        using namespace aie_host::detail;
        if constexpr (spec::impl == detail::mmul_impl::int_direct) {
            count_vector(1);
            count_mmul(spec::shape, spec::i8xi4 ? 1024 : 512);
            for (unsigned m = 0; m < M; ++m)
                for (unsigned n = 0; n < N; ++n) {
                    int64_t s = accumulate ? c_.lane(m * N + n) : 0;
                    for (unsigned k = 0; k < K; ++k) s += detail::to_i64(a.raw(m * K + k)) * detail::to_i64(b.raw(k * N + n));
                    c_.set_lane(m * N + n, s);
                }
        } else if constexpr (spec::impl == detail::mmul_impl::bf16_emul) {
            // Per 4-row block: 8 mac_elem_32; moves: the A transpose shuffle, per k an extract,
            // broadcast and shuffle of A's column and a broadcast_elem_128 of B's row (1 + 8 * 4).
            constexpr uint64_t blocks = M / 4;
            count_vector(8 * blocks);
            count_move(33 * blocks);
            count_mmul(spec::shape, 256 * blocks);
            for (unsigned m = 0; m < M; ++m)
                for (unsigned n = 0; n < N; ++n) {
                    float s = accumulate ? c_.lane(m * N + n) : 0.0f;
                    for (unsigned k = 0; k < K; ++k) s = s + float(a.raw(m * K + k)) * float(b.raw(k * N + n));
                    c_.set_lane(m * N + n, s);
                }
        } else {
            // mul/mac_4x8_8x4_fp32 (aie_api detail/aie2p/emulated_mmul_intrinsics.hpp, the branch without
            // __AIE_API_CRVO_9906__, which AIE2P leaves undefined): for k = 0..7 one 16-lane safe fp32
            // emulation C += A[:,k] B[k,:] (mul_elem_16 then seven mac_elem_16; a mac starts with
            // mac_elem_16_conf): 8 products, 7 or 8 of them with an accumulator add. Moves: 2 shuffles
            // splitting A, per k a broadcast and a shuffle of A's column and a broadcast of B's row
            // (2 + 8 * 3), beside the emulations' own (fp32-emulation.hpp).
            const aie::rounding_mode m = aie::get_rounding();
            count_fp32_emulation(via_mac ? 0 : 1, 16, fp32_form::safe_mul);
            count_fp32_emulation(via_mac ? 8 : 7, 16, fp32_form::safe_mac);
            count_move(26);
            count_mmul(spec::shape, 8ull * fp32_partial_products(fp32_form::safe_mac) * 32);
            for (unsigned mi = 0; mi < M; ++mi)
                for (unsigned n = 0; n < N; ++n) {
                    float s = fp32_mul_safe(a.raw(mi * K), b.raw(n), m);
                    if (accumulate) s = c_.lane(mi * N + n) + s;
                    for (unsigned k = 1; k < K; ++k) s = fp32_mac_safe(s, a.raw(mi * K + k), b.raw(k * N + n), m);
                    c_.set_lane(mi * N + n, s);
                }
        }
        zero_ = false;
    }

    accum_type c_;
    bool zero_ = true;
};

}  // namespace aie
