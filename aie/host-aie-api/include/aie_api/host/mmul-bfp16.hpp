// The block floating point matrix multiply of AIE2P (aie_api detail/aie2p/mmul_bfp16_bfp16.hpp):
//   aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8, accauto|accfloat>  one mul_8x8_8x8T / mac_8x8_8x8T_conf
//                                                               instruction, 512 MACs
//   aie::mmul<8, 8, 8, bfloat16, bfp16ebs8, accauto|accfloat>   A (bf16, row-major) into an fp32
//                                                               accumulator, to_v64bfp16ebs8, then
//                                                               the same instruction
// and the intrinsics mul_8x8_8x8T / mac_8x8_8x8T that kernels call by name (mlir-aie
// aie_kernels/aie2p/mm_bfp.cc).
//
// Operands: A is a block vector of 8 blocks, block m = row m of A (its 8 K values share one
// exponent). B is passed TRANSPOSED: block n holds column n of B (its 8 K values), which is the only
// form aie_api offers (mmul::mul / mac take a BlockVectorOp with Operation::Transpose, i.e.
// op_transpose(b); the intrinsic is the "8x8T" form either way). C is row-major, lane m * 8 + n.
//
// Arithmetic, per output (the reading; README.md names what a hardware run should check): the
// eight mantissa products and their sum are exact integers, scaled by 2^(eA_m + eB_n - 266)
// (bfp16.hpp bfp16_block_dot); the scaled sum is added to the fp32 lane with one rounding to nearest
// even, independent of crRnd, as the bf16 MACs' accumulation is modelled (mmul.hpp). A sum outside
// the fp32 normal range is rounded once more on its own (to a subnormal, or to infinity).
#pragma once

#include <cstring>
#include <type_traits>

#include "accum.hpp"
#include "bfp16.hpp"
#include "block-vector.hpp"
#include "mmul.hpp"
#include "op-counts.hpp"

namespace aie {
namespace detail {

// C (+)= A x B for A and B^T given as 64-value block vectors; counts one bfp16 instruction.
// The 64 products of an 8x8x8 bfp16 mmul, p[8m + n] = (float)bfp16_block_dot(a_m, bt_n): the same exact
// integer dots and power-of-two scales in double, one rounding to float, 8 outputs per AVX-512 step.
// Bit-identical to the block-by-block form (test_aie_api_bfp16.cpp).
#ifdef XDNA_AIE_HOST_BFP16_WIDE
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f,avx512bw,avx512vl"))) __attribute__((noinline)) inline void
bfp16_products_avx512(const bfp16_block * a, const bfp16_block * bt, float * p) {
    alignas(64) int8_t bm[64];
    alignas(64) int64_t eb[8];
    for (unsigned n = 0; n < 8; ++n) {
        std::memcpy(bm + 8 * n, bt[n].mantissa, 8);
        eb[n] = bt[n].exponent;
    }
    const __m512i b_lo = _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i *>(bm)));
    const __m512i b_hi = _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i *>(bm + 32)));
    const __m512i ebv = _mm512_load_si512(eb);
    // Element 0 of each 128-bit lane of lo, then of hi: the eight blocks' sums in order.
    const __m512i pick = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
    for (unsigned m = 0; m < 8; ++m) {
        const __m512i a16 = _mm512_broadcast_i32x4(_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(a[m].mantissa))));
        __m512i lo = _mm512_madd_epi16(a16, b_lo), hi = _mm512_madd_epi16(a16, b_hi);  // pairs, exact in int32
        lo = _mm512_add_epi32(lo, _mm512_shuffle_epi32(lo, _MM_PERM_BADC));
        lo = _mm512_add_epi32(lo, _mm512_shuffle_epi32(lo, _MM_PERM_CDAB));
        hi = _mm512_add_epi32(hi, _mm512_shuffle_epi32(hi, _MM_PERM_BADC));
        hi = _mm512_add_epi32(hi, _mm512_shuffle_epi32(hi, _MM_PERM_CDAB));
        const __m256i dots = _mm512_castsi512_si256(_mm512_permutex2var_epi32(lo, pick, hi));
        // 2^(ea + eb - 266) as a double's exponent field: within [757, 1267], a normal double.
        const __m512i k = _mm512_add_epi64(ebv, _mm512_set1_epi64(int64_t(a[m].exponent) - 2 * bfp16_value_bias + 1023));
        const __m512d scale = _mm512_castsi512_pd(_mm512_slli_epi64(k, 52));
        _mm256_storeu_ps(p + 8 * m, _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtepi32_pd(dots), scale)));
    }
}

// The same 64 products with AVX-512 VNNI, four outputs' eight-term dots in two vpdpbusd per 16 outputs:
// A's mantissas made unsigned (a + 128: the sign bit flipped), so each dot is sum (a + 128) b - 128 sum b,
// exact in int32 (|dot| <= 2^17). Where every output's power of two 2^(eA + eB - 266) lies in
// [2^-126, 2^110], the dot (exact in float) times it is exact in float, so a float multiply gives the
// double form's rounded value; any other call takes the double form above. Bit-identical to it
// (test_aie_api_bfp16.cpp, over the whole exponent range).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) __attribute__((noinline)) inline void
bfp16_products_vnni(const bfp16_block * a, const bfp16_block * bt, float * p) {
    alignas(64) int8_t am[64], bm[64];
    alignas(64) int32_t ea[16], eb[16];
    int amin = 255, amax = 0, bmin = 255, bmax = 0;
    for (unsigned i = 0; i < 8; ++i) {
        std::memcpy(am + 8 * i, a[i].mantissa, 8);
        std::memcpy(bm + 8 * i, bt[i].mantissa, 8);
        eb[i] = eb[i + 8] = bt[i].exponent;
        ea[i] = a[i].exponent;
        amin = a[i].exponent < amin ? a[i].exponent : amin;
        amax = a[i].exponent > amax ? a[i].exponent : amax;
        bmin = bt[i].exponent < bmin ? bt[i].exponent : bmin;
        bmax = bt[i].exponent > bmax ? bt[i].exponent : bmax;
    }
    if (amin + bmin - 2 * bfp16_value_bias < -126 || amax + bmax - 2 * bfp16_value_bias > 110) {
        bfp16_products_avx512(a, bt, p);
        return;
    }
    const __m512i av = _mm512_xor_si512(_mm512_load_si512(am), _mm512_set1_epi8(int8_t(0x80)));  // a + 128, unsigned
    const __m512i bv = _mm512_load_si512(bm);
    // Dword 2n of the 64 bytes is K 0-3 of row n, dword 2n + 1 its K 4-7; lanes 0-7 and 8-15 both n = 0..7.
    const __m512i b_lo = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14), bv);
    const __m512i b_hi = _mm512_permutexvar_epi32(_mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15), bv);
    const __m512i ones = _mm512_set1_epi8(1);
    const __m512i bsum128 = _mm512_slli_epi32(_mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, b_lo), ones, b_hi), 7);
    const __m512i ebv = _mm512_load_si512(eb);
    const __m512i bias = _mm512_set1_epi32(127 - 2 * bfp16_value_bias);
    for (unsigned r = 0; r < 4; ++r) {
        // Lanes 0-7: output row 2r, lanes 8-15: row 2r + 1.
        const int m0 = int(2 * r), m1 = int(2 * r + 1);
        const __m512i a_lo = _mm512_permutexvar_epi32(_mm512_setr_epi32(2 * m0, 2 * m0, 2 * m0, 2 * m0, 2 * m0, 2 * m0, 2 * m0, 2 * m0, 2 * m1,
                                                                         2 * m1, 2 * m1, 2 * m1, 2 * m1, 2 * m1, 2 * m1, 2 * m1),
                                                       av);
        const __m512i a_hi = _mm512_permutexvar_epi32(_mm512_add_epi32(_mm512_setr_epi32(2 * m0, 2 * m0, 2 * m0, 2 * m0, 2 * m0, 2 * m0, 2 * m0,
                                                                                         2 * m0, 2 * m1, 2 * m1, 2 * m1, 2 * m1, 2 * m1, 2 * m1,
                                                                                         2 * m1, 2 * m1),
                                                                       _mm512_set1_epi32(1)),
                                                      av);
        const __m512i dots = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), a_lo, b_lo), a_hi, b_hi), bsum128);
        const __m512i eav = _mm512_mask_blend_epi32(__mmask16(0xff00), _mm512_set1_epi32(ea[m0]), _mm512_set1_epi32(ea[m1]));
        const __m512 scale = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_add_epi32(eav, ebv), bias), 23));
        _mm512_storeu_ps(p + 16 * r, _mm512_mul_ps(_mm512_cvtepi32_ps(dots), scale));
    }
}
inline bool bfp16_vnni_lanes() {
    static const bool ok = bfp16_wide_lanes() && __builtin_cpu_supports("avx512vnni");
    return ok;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

// The 64 products of 8 A blocks and 8 B^T blocks: the widest form this host runs (the simulator's twins
// call it on their own block arrays).
inline void bfp16_products(const bfp16_block * a, const bfp16_block * bt, float * p) {
#ifdef XDNA_AIE_HOST_BFP16_WIDE
    if (bfp16_vnni_lanes()) {
        bfp16_products_vnni(a, bt, p);
        return;
    }
    if (bfp16_wide_lanes()) {
        bfp16_products_avx512(a, bt, p);
        return;
    }
#endif
    for (unsigned m = 0; m < 8; ++m)
        for (unsigned n = 0; n < 8; ++n) p[m * 8 + n] = (float)bfp16_block_dot(a[m].exponent, a[m].mantissa, bt[n].exponent, bt[n].mantissa);
}

inline void bfp16_products(const block_vector<bfp16ebs8, 64> & a, const block_vector<bfp16ebs8, 64> & bt, float * p) {
    bfp16_block ab[8], bb[8];
    for (unsigned i = 0; i < 8; ++i) {
        ab[i] = a.block(i);
        bb[i] = bt.block(i);
    }
    bfp16_products(ab, bb, p);
}

inline void bfp16_mmul_8x8x8(accum<accfloat, 64> & c, const block_vector<bfp16ebs8, 64> & a,
                             const block_vector<bfp16ebs8, 64> & bt, bool accumulate, aie_host::mmul_shape shape) {
    aie_host::detail::count_vector(1);
    aie_host::detail::count_mmul(shape, 512);
    float p[64];
    bfp16_products(a, bt, p);
    for (unsigned i = 0; i < 64; ++i) c.set_lane(i, accumulate ? c.lane(i) + p[i] : p[i]);
}

template <typename TypeA, typename AccumTag> struct mmul_bfp16_base {
    static_assert(std::is_same_v<AccumTag, accauto> || std::is_same_v<AccumTag, accfloat>,
                  "aie::mmul on bfp16ebs8: the accumulator is accfloat");
    static constexpr unsigned M = 8, K = 8, N = 8;
    static constexpr unsigned size_A = 64, size_B = 64, size_C = 64;
    static constexpr unsigned size() { return size_C; }
    using accum_type = accum<accfloat, 64>;
    using block_b = block_vector<bfp16ebs8, 64>;
    using vector_a = std::conditional_t<std::is_same_v<TypeA, bfloat16>, vector<bfloat16, 64>, block_vector<bfp16ebs8, 64>>;

    mmul_bfp16_base() = default;
    mmul_bfp16_base(const accum_type & acc) : c_(acc), zero_(false) {}

    accum_type to_accum() const { return c_; }
    operator accum_type() const { return c_; }
    template <typename T> detail::to_vector_result_t<T, 64> to_vector(int shift = 0) const { return c_.template to_vector<T>(shift); }

    // C = A x B, B given as op_transpose(B^T).
    void mul(const vector_a & a, const transpose_op<block_b> & b) { run(a, b.parent1(), false); }
    // C += A x B ("zero initialised for the first operation": the first mac is a mul).
    void mac(const vector_a & a, const transpose_op<block_b> & b) { run(a, b.parent1(), !zero_); }

  private:
    void run(const vector_a & a, const block_b & bt, bool accumulate) {
        if constexpr (std::is_same_v<TypeA, bfloat16>) {
            // aie_api: accum<accfloat, 64> acc_a(a); to_v64bfp16ebs8(acc_a), in the current rounding mode.
            const block_vector<bfp16ebs8, 64> ab = accum<accfloat, 64>(a).template to_vector<bfp16ebs8>();
            bfp16_mmul_8x8x8(c_, ab, bt, accumulate, aie_host::mmul_shape::bf16xbfp16_8x8x8);
        } else {
            bfp16_mmul_8x8x8(c_, a, bt, accumulate, aie_host::mmul_shape::bfp16_8x8x8);
        }
        zero_ = false;
    }

    accum_type c_;
    bool zero_ = true;
};

}  // namespace detail

template <typename AccumTag>
struct mmul<8, 8, 8, bfp16ebs8, bfp16ebs8, AccumTag> : detail::mmul_bfp16_base<bfp16ebs8, AccumTag> {
    using detail::mmul_bfp16_base<bfp16ebs8, AccumTag>::mmul_bfp16_base;
};

template <typename AccumTag>
struct mmul<8, 8, 8, bfloat16, bfp16ebs8, AccumTag> : detail::mmul_bfp16_base<bfloat16, AccumTag> {
    using detail::mmul_bfp16_base<bfloat16, AccumTag>::mmul_bfp16_base;
};

}  // namespace aie

// The intrinsics by name (llvm-aie aie2p headers; aie_api calls them from mmul_bfp16_bfp16.hpp). On
// the core they take v64bfp16ebs8 / v64accfloat, to which the aie_api types convert; the host takes
// the aie_api types. b is B transposed (block n = column n of B).
inline aie::accum<accfloat, 64> mul_8x8_8x8T(const aie::block_vector<bfp16ebs8, 64> & a, const aie::block_vector<bfp16ebs8, 64> & b) {
    aie::accum<accfloat, 64> c;
    aie::detail::bfp16_mmul_8x8x8(c, a, b, false, aie_host::mmul_shape::bfp16_8x8x8);
    return c;
}
inline aie::accum<accfloat, 64> mac_8x8_8x8T(const aie::block_vector<bfp16ebs8, 64> & a, const aie::block_vector<bfp16ebs8, 64> & b,
                                             const aie::accum<accfloat, 64> & acc) {
    aie::accum<accfloat, 64> c = acc;
    aie::detail::bfp16_mmul_8x8x8(c, a, b, true, aie_host::mmul_shape::bfp16_8x8x8);
    return c;
}
