// The bfp16 attention block of aie/flash_attn/kernels/flash_attn.cc (fa_block_f16_bfp16) on plain arrays;
// flash-attn-twin.h says why. Each step below names the kernel code it reproduces.
#include "flash-attn-twin.h"

#include "emulated-fp32.h"

#include <aie_api/aie.hpp>

#include <immintrin.h>

#include "xdna_aie/flash_attn_softmax.h"
#include "xdna_aie/flash_attn_tiles.h"

#include <cstring>
#include <vector>

namespace xdna {

namespace {

using aie::detail::bfp16_block;
static_assert(sizeof(bfp16_block) == 9, "a bfp16ebs8 block in memory: the exponent, then eight mantissas");

constexpr int kOp = 8;                  // rows, columns and depth of one bfp16 mmul
constexpr int kTile = kOp * kOp;        // values of one operand
constexpr int kBlocks = kTile / kOp;    // bfp16 blocks of one operand
constexpr int kBlock = xdna_aie::kFaKvBlock;

// An F16 value as widen_finite builds it (A + C - D from its integer parts, three exact bf16 products
// into an fp32 accumulator): the exact value, with exponent field 31 an ordinary exponent (2^16 (1 +
// m/1024): the caller has ruled infinities and NaNs out of the live rows, the stale rows past n_kv
// keep this reading), and +0 for either zero (A + C - D cancels exactly, to +0 in round to nearest).
inline float widen(uint16_t h) {
    // Branch-free, so that the tile loops vectorize.
    const uint32_t em = h & 0x7fffu;
    const float sub = float(em) * 0x1p-24f;  // a subnormal (or zero): em * 2^-24, exact
    uint32_t sub_bits;
    std::memcpy(&sub_bits, &sub, sizeof sub_bits);
    const uint32_t mag = em >= 0x400u ? (em << 13) + (112u << 23) : sub_bits;
    const uint32_t bits = em == 0 ? 0u : mag | (uint32_t(h & 0x8000u) << 16);
    float r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
}

// accum::to_vector<bfp16ebs8> in conv_even (the mode the kernel sets for its products).
inline void to_blocks(const float * x, bfp16_block * out) {
    aie::detail::bfp16_from_fp32_blocks(x, kBlocks, out, aie::rounding_mode::conv_even);
}

// accum(block_vector): each mantissa times its block's power of two, rounded to float once.
inline void block_values(const bfp16_block * b, float * out) { aie::detail::bfp16_blocks_to_fp32(b, kBlocks, 0, out); }

// split_bfp16 (two parts) and split3_bfp16 (three): hi = bfp16(x), then the residual x - hi (one fp32
// subtraction per lane, as aie::sub of two accumulators) split again.
struct Split2 {
    bfp16_block hi[kBlocks], lo[kBlocks];
};
struct Split3 {
    bfp16_block hi[kBlocks], mid[kBlocks], lo[kBlocks];
};
inline void split2(const float * x, Split2 & s) {
    float v[kTile], r[kTile];
    to_blocks(x, s.hi);
    block_values(s.hi, v);
    for (int i = 0; i < kTile; ++i) r[i] = x[i] - v[i];
    to_blocks(r, s.lo);
}
inline void split3(const float * x, Split3 & s) {
    float v[kTile], r[kTile];
    to_blocks(x, s.hi);
    block_values(s.hi, v);
    for (int i = 0; i < kTile; ++i) r[i] = x[i] - v[i];
    Split2 rest;
    split2(r, rest);
    std::memcpy(s.mid, rest.hi, sizeof s.mid);
    std::memcpy(s.lo, rest.lo, sizeof s.lo);
}

// One 8x8x8 bfp16 mmul into a C tile (mmul-bfp16.hpp bfp16_mmul_8x8x8): the products, then one fp32
// add per lane; `first`: the mmul's first operation, a mul (C = the products).
inline void mac(float * c, bool first, const bfp16_block * a, const bfp16_block * bt) {
    float p[kTile];
    aie::detail::bfp16_products(a, bt, p);
    if (first) {
        std::memcpy(c, p, sizeof p);
    } else {
        for (int i = 0; i < kTile; ++i) c[i] = c[i] + p[i];
    }
}

// The same 64 products with each operand laid out for VNNI once where it is read again (a K or V tile by
// every query chunk of its KV head, a q tile by every 8 K rows, a weights tile by every 8 of the head dim):
// bfp16_products_vnni's operations (mmul-bfp16.hpp) on the same values, minus its per-call packing.
// Operands whose exponents leave its range take bfp16_products itself, as there.
#if defined(XDNA_AIE_HOST_BFP16_WIDE)
#define XDNA_FA_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
// Plain words, read and written with unaligned loads and stores: no alignment is asked of their storage.
struct APrep {  // an A operand (q, the weights): mantissas + 128, unsigned; exponents
    int32_t av[16];
    int32_t ea[kBlocks];
    int32_t emin, emax;
};
struct BPrep {  // a B^T operand (K, V^T): K 0-3 and K 4-7 of each row in both halves, 128 x their sums, exponents
    int32_t lo[16], hi[16], bsum128[16], eb[16];
    int32_t emin, emax;
};
XDNA_FA_VNNI inline __m512i words(const int32_t * w) { return _mm512_loadu_si512(w); }
XDNA_FA_VNNI inline void put(int32_t * w, __m512i v) { _mm512_storeu_si512(w, v); }
// An operand's 64 mantissas in block order, its 8 exponents and their least and greatest.
inline void gather(const bfp16_block * b, int8_t * m, int32_t * e, int32_t & emin, int32_t & emax) {
    emin = 255;
    emax = 0;
    for (int i = 0; i < kBlocks; ++i) {
        std::memcpy(m + 8 * i, b[i].mantissa, 8);
        e[i] = b[i].exponent;
        emin = std::min<int32_t>(emin, b[i].exponent);
        emax = std::max<int32_t>(emax, b[i].exponent);
    }
}
XDNA_FA_VNNI void prep_a(const bfp16_block * a, APrep & o) {
    alignas(64) int8_t m[kTile];
    gather(a, m, o.ea, o.emin, o.emax);
    put(o.av, _mm512_xor_si512(_mm512_load_si512(m), _mm512_set1_epi8(int8_t(0x80))));
}
XDNA_FA_VNNI void prep_b(const bfp16_block * bt, BPrep & o) {
    alignas(64) int8_t m[kTile];
    gather(bt, m, o.eb, o.emin, o.emax);
    std::memcpy(o.eb + kBlocks, o.eb, kBlocks * sizeof(int32_t));  // both halves: rows 2r and 2r + 1
    const __m512i bv = _mm512_load_si512(m);
    const __m512i lo = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14), bv);
    const __m512i hi = _mm512_permutexvar_epi32(_mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15), bv);
    const __m512i ones = _mm512_set1_epi8(1);
    put(o.lo, lo);
    put(o.hi, hi);
    put(o.bsum128, _mm512_slli_epi32(_mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, lo), ones, hi), 7));
}
XDNA_FA_VNNI inline void products(const APrep & A, const bfp16_block * a, const BPrep & B, const bfp16_block * bt, float * p) {
    using aie::detail::bfp16_value_bias;
    if (A.emin + B.emin - 2 * bfp16_value_bias < -126 || A.emax + B.emax - 2 * bfp16_value_bias > 110) {
        aie::detail::bfp16_products(a, bt, p);
        return;
    }
    const __m512i bias = _mm512_set1_epi32(127 - 2 * bfp16_value_bias);
    const __m512i av = words(A.av), b_lo = words(B.lo), b_hi = words(B.hi), bsum128 = words(B.bsum128), ebv = words(B.eb);
    for (int r = 0; r < 4; ++r) {
        // Lanes 0-7: output row 2r, lanes 8-15: row 2r + 1.
        const int m0 = 2 * r, m1 = 2 * r + 1;
        const __m512i sel = _mm512_mask_blend_epi32(__mmask16(0xff00), _mm512_set1_epi32(2 * m0), _mm512_set1_epi32(2 * m1));
        const __m512i a_lo = _mm512_permutexvar_epi32(sel, av);
        const __m512i a_hi = _mm512_permutexvar_epi32(_mm512_add_epi32(sel, _mm512_set1_epi32(1)), av);
        const __m512i dots = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), a_lo, b_lo), a_hi, b_hi), bsum128);
        const __m512i eav = _mm512_mask_blend_epi32(__mmask16(0xff00), _mm512_set1_epi32(A.ea[m0]), _mm512_set1_epi32(A.ea[m1]));
        const __m512 scale = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_add_epi32(eav, ebv), bias), 23));
        _mm512_storeu_ps(p + 16 * r, _mm512_mul_ps(_mm512_cvtepi32_ps(dots), scale));
    }
}
// One 8x8x8 bfp16 mmul into a C tile from prepared operands (mac's).
XDNA_FA_VNNI inline void mac(float * c, bool first, const APrep & A, const bfp16_block * a, const BPrep & B, const bfp16_block * bt) {
    float p[kTile];
    products(A, a, B, bt, p);
    if (first) {
        std::memcpy(c, p, sizeof p);
    } else {
        for (int i = 0; i < kTile; ++i) c[i] = c[i] + p[i];
    }
}
bool vnni_products() { return aie::detail::bfp16_vnni_lanes(); }
#endif

// any_nonfinite(p, n, d): the kernel reads 64 values at a time, so it looks at the first n * d values
// rounded up to a multiple of 64 (a stale row past n_kv included when n * d is not one).
bool any_nonfinite(const uint16_t * p, int32_t n, int32_t d) {
    const int32_t end = (n * d + 63) / 64 * 64;
    uint16_t any = 0;
    for (int32_t i = 0; i < end; ++i) any |= uint16_t((p[i] & 0x7c00u) == 0x7c00u);
    return any != 0;
}

// The K and V operands of one block: the K tiles split in three ([ng][kb]: K rows 8 ng.., head dim
// 8 kb..) and the transposed V tiles split in two ([ng][jb]: head dim 8 ng.., V rows 8 jb..). They are a
// function of the rows alone, and at prefill every chunk of query rows of a KV head reads the same
// blocks (128 chunks per KV head at pp512 on a 1B-shaped model): each thread keeps the last blocks'
// operands, found by comparing the bytes they were made from (a kept block that differs stops the
// comparison at its first differing value, so no hash is needed).
struct KvOperands {
    int32_t               d = 0, n_kv = 0;
    uint64_t              used = 0;
    std::vector<uint16_t> k, v;  // K rows [0, 8 kv_groups) and V rows [0, n_kv): what the tiles read
    std::vector<Split3>   kt;
    std::vector<Split2>   vt;
#if defined(XDNA_AIE_HOST_BFP16_WIDE)
    std::vector<BPrep> ktp;  // with VNNI: kt's parts laid out (hi, mid, lo per tile)
    std::vector<BPrep> vtp;  // vt's (hi, lo per tile)
#endif
};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx512f,avx512bw,avx512vl")))
#endif
void make_operands(const uint16_t * k, const uint16_t * v, KvOperands & e) {
    const int32_t d = e.d, n_kv = e.n_kv, kbs = d / kOp, kv_groups = (n_kv + kOp - 1) / kOp;
    e.kt.resize(size_t(kv_groups) * kbs);
    e.vt.resize(size_t(d / kOp) * kv_groups);
    for (int32_t ng = 0; ng < kv_groups; ++ng) {
        for (int32_t kb = 0; kb < kbs; ++kb) {
            float x[kTile];
            for (int m = 0; m < kOp; ++m)
                for (int n = 0; n < kOp; ++n) x[m * kOp + n] = widen(k[(ng * kOp + m) * d + kb * kOp + n]);
            split3(x, e.kt[size_t(ng) * kbs + kb]);
        }
    }
    for (int32_t ng = 0; ng < d / kOp; ++ng) {
        for (int32_t jb = 0; jb < kv_groups; ++jb) {
            float x[kTile];
            const int32_t live = n_kv - jb * kOp;  // V rows of this tile below n_kv; the others are zero
            for (int n = 0; n < kOp; ++n)
                for (int m = 0; m < kOp; ++m) x[n * kOp + m] = m < live ? widen(v[(jb * kOp + m) * d + ng * kOp + n]) : 0.0f;
            split2(x, e.vt[size_t(ng) * kv_groups + jb]);
        }
    }
#if defined(XDNA_AIE_HOST_BFP16_WIDE)
    if (vnni_products()) {
        e.ktp.resize(e.kt.size() * 3);
        for (size_t i = 0; i < e.kt.size(); ++i) {
            prep_b(e.kt[i].hi, e.ktp[3 * i]);
            prep_b(e.kt[i].mid, e.ktp[3 * i + 1]);
            prep_b(e.kt[i].lo, e.ktp[3 * i + 2]);
        }
        e.vtp.resize(e.vt.size() * 2);
        for (size_t i = 0; i < e.vt.size(); ++i) {
            prep_b(e.vt[i].hi, e.vtp[2 * i]);
            prep_b(e.vt[i].lo, e.vtp[2 * i + 1]);
        }
    }
#endif
}

const KvOperands & kv_operands(const uint16_t * k, const uint16_t * v, int32_t d, int32_t n_kv) {
    constexpr size_t kEntries = 48;
    thread_local std::vector<KvOperands> cache(kEntries);
    thread_local uint64_t clock = 0;
    const size_t k_n = size_t((n_kv + kOp - 1) / kOp) * kOp * d, v_n = size_t(n_kv) * d;
    KvOperands * victim = &cache[0];
    for (KvOperands & e : cache) {
        if (e.d == d && e.n_kv == n_kv && std::memcmp(e.k.data(), k, k_n * 2) == 0 && std::memcmp(e.v.data(), v, v_n * 2) == 0) {
            e.used = ++clock;
            return e;
        }
        if (e.used < victim->used) victim = &e;
    }
    KvOperands & e = *victim;
    e.d = d;
    e.n_kv = n_kv;
    e.used = ++clock;
    e.k.assign(k, k + k_n);
    e.v.assign(v, v + v_n);
    make_operands(k, v, e);
    return e;
}

// ---- The softmax step (xdna_aie/flash_attn_softmax.h softmax_step), each operand split once --------
// Every fp32 product is the core's `safe` product (fp32-emulation.hpp: both operands split into three
// bf16 parts in conv_even, the nine partial products summed smallest first); the kernel's code splits
// both operands of every product, where a constant operand (scale, log2 e, ln 2, the polynomial's t, ms)
// needs splitting once. The reductions, and the integer steps of 2^n, go through the host aie_api
// itself, so that their order (and a NaN's path) is the kernel's.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define XDNA_FA_TWIN_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
#else
#define XDNA_FA_TWIN_TARGET
#endif

struct Parts16 {
    __m512 a, b, c;
};
XDNA_FA_TWIN_TARGET inline Parts16 parts(__m512 x) {
    Parts16 p;
    p.a = twin::bf16_even(x);
    const __m512 r1 = _mm512_sub_ps(x, p.a);
    p.b = twin::bf16_even(r1);
    p.c = twin::bf16_even(_mm512_sub_ps(r1, p.b));
    return p;
}
XDNA_FA_TWIN_TARGET inline __m512 safe(const Parts16 & x, const Parts16 & y) {
    return aie_host::detail::fp32_safe_sum_x16(x.a, x.b, x.c, y.a, y.b, y.c);
}

// e^x for x <= 0 on 32 lanes (exp_nonpos and xdna_aie::exp2_range, operation for operation).
XDNA_FA_TWIN_TARGET void exp_nonpos32(const float * x, float * out) {
    constexpr float kRoundMagic = 12582912.0f;
    const Parts16 log2e = parts(_mm512_set1_ps(xdna_aie::fa::kLog2e)), ln2 = parts(_mm512_set1_ps(0.6931471805599453f));
    const float coeff[7] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f};
    alignas(64) float n[32], p[32];
    __m512 z[2];
    for (int h = 0; h < 2; ++h) {
        const __m512 xv = _mm512_loadu_ps(x + 16 * h);
        const __m512 lo = _mm512_set1_ps(xdna_aie::fa::kMinArg);
        // aie::max(x, -87): x < -87 ? -87 : x (a NaN lane keeps its NaN).
        const __m512 clamped = _mm512_mask_mov_ps(xv, _mm512_cmp_ps_mask(xv, lo, _CMP_LT_OQ), lo);
        z[h] = safe(parts(clamped), log2e);
        const __m512 nv = _mm512_sub_ps(_mm512_add_ps(z[h], _mm512_set1_ps(kRoundMagic)), _mm512_set1_ps(kRoundMagic));
        _mm512_store_ps(n + 16 * h, nv);
        const Parts16 t = parts(safe(parts(_mm512_sub_ps(z[h], nv)), ln2));
        __m512 pv = _mm512_set1_ps(1.0f / 5040.0f);
        for (int i = 0; i < 7; ++i) pv = _mm512_add_ps(safe(parts(pv), t), _mm512_set1_ps(coeff[i]));
        _mm512_store_ps(p + 16 * h, pv);
    }
    // 2^n: n + 127 written into the exponent field, by the host aie_api's own conversion and shift.
    const aie::vector<float, 32> nvec = aie::load_v<32>(n);
    const aie::vector<float, 32> scale = aie::vector_cast<float>(aie::upshift(aie::add(aie::to_fixed<int32_t>(nvec, 0), int32_t(127)), 23));
    alignas(64) float sc[32];
    aie::store_v(sc, scale);
    for (int h = 0; h < 2; ++h) {
        const __m512 xv = _mm512_loadu_ps(x + 16 * h);
        const __m512 r = safe(parts(_mm512_load_ps(p + 16 * h)), parts(_mm512_load_ps(sc + 16 * h)));
        _mm512_storeu_ps(out + 16 * h, _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(xv, _mm512_set1_ps(xdna_aie::fa::kMinArg), _CMP_LT_OQ),
                                                           _mm512_setzero_ps()));
    }
}

// 32 F16 values widened as the kernel's f16_to_f32 does (normal values rebased, Inf/NaN kept bit for
// bit, subnormals em * 2^-24, the sign or'ed on: -0 stays -0).
inline void f16_row(const uint16_t * h, float * out) {
    for (int j = 0; j < 32; ++j) {
        const uint32_t w = h[j], em = w & 0x7fffu;
        uint32_t mag;
        if (em < 0x400u) {
            const float sub = float(em) * 0x1p-24f;
            std::memcpy(&mag, &sub, sizeof mag);
        } else {
            mag = (em << 13) + (em >= 0x7c00u ? (224u << 23) : (112u << 23));
        }
        const uint32_t bits = mag | (w >= 0x8000u ? 0x80000000u : 0u);
        std::memcpy(&out[j], &bits, sizeof bits);
    }
}

XDNA_FA_TWIN_TARGET void softmax_twin(const uint16_t * mask, const float * slope, float * state, float * scores, int32_t rows, int32_t d,
                                      int32_t n_kv, float scale) {
    using xdna_aie::fa::kNegInf;
    const Parts16 scale_parts = parts(_mm512_set1_ps(scale));
    float * maxima = xdna_aie::fa::maxima(state);
    float * sums = xdna_aie::fa::sums(state);
    for (int32_t r = 0; r < rows; ++r) {
        alignas(64) float sv[32];
        float * row = scores + r * kBlock;
        for (int h = 0; h < 2; ++h) _mm512_store_ps(sv + 16 * h, safe(parts(_mm512_loadu_ps(row + 16 * h)), scale_parts));
        if (mask != nullptr) {
            alignas(64) float mv[32];
            f16_row(mask + r * kBlock, mv);
            if (slope[r] != 1.0f) {
                const Parts16 sp = parts(_mm512_set1_ps(slope[r]));
                for (int h = 0; h < 2; ++h) {
                    const __m512 m = _mm512_load_ps(mv + 16 * h);
                    const __mmask16 hidden = _mm512_cmp_ps_mask(m, _mm512_set1_ps(xdna_aie::fa::kMaxHalfNeg), _CMP_LT_OQ);
                    _mm512_store_ps(mv + 16 * h, _mm512_mask_mov_ps(safe(parts(m), sp), hidden, _mm512_set1_ps(kNegInf)));
                }
            }
            for (int j = 0; j < 32; ++j) sv[j] = sv[j] + mv[j];
        }
        for (int j = n_kv; j < 32; ++j) sv[j] = kNegInf;
        const float block_max = aie::reduce_max(aie::load_v<32>(sv));
        const float m_old = maxima[r];
        const float m_new = block_max > m_old ? block_max : m_old;
        if (m_new == kNegInf) {
            std::memset(row, 0, 32 * sizeof(float));
            continue;
        }
        alignas(64) float x[32], pr[32];
        for (int j = 0; j < 32; ++j) x[j] = sv[j] - m_new;
        exp_nonpos32(x, pr);
        std::memcpy(row, pr, sizeof pr);
        const float p_sum = aie::reduce_add(aie::load_v<32>(pr));
        if (m_new > m_old) {
            alignas(64) float xs[32], ms32[32];
            for (float & v : xs) v = m_old - m_new;
            exp_nonpos32(xs, ms32);
            const float ms = ms32[0];
            sums[r] = sums[r] * ms + p_sum;
            float * o = xdna_aie::fa::outputs(state, d, r);
            const Parts16 msp = parts(_mm512_set1_ps(ms));
            for (int32_t i = 0; i < d; i += 16) _mm512_storeu_ps(o + i, safe(parts(_mm512_loadu_ps(o + i)), msp));
            maxima[r] = m_new;
        } else {
            sums[r] = sums[r] + p_sum;
        }
    }
}

// The block, compiled for AVX-512 (the twin runs only where the host aie_api's AVX-512 paths do) so that
// the tile loops vectorize; the arithmetic is IEEE fp32 either way (no contraction: -ffp-contract=off).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx512f,avx512bw,avx512vl")))
#endif
bool block(const uint8_t * qb, const uint16_t * k, const uint16_t * v, const uint16_t * mask, const float * slope, float * state,
           float * scores, int32_t rows, int32_t d, int32_t n_kv, float scale) {
    if (xdna_aie::fa::all_masked(mask, rows, n_kv)) return true;
    if (any_nonfinite(k, n_kv, d) || any_nonfinite(v, n_kv, d)) return false;
    const int32_t groups = (rows + kOp - 1) / kOp, kbs = d / kOp, kv_groups = (n_kv + kOp - 1) / kOp;
    const auto * qblocks = reinterpret_cast<const bfp16_block *>(qb);  // fa_prepare_q_bfp16's stream

    // Raw scores q.k (fa_block_f16_bfp16's first loop, mac_scores, store_scores): per 8 K rows an
    // accumulator per 8 query rows; per 8 of the head dim the K tile (block n = K row n) split in three and
    // the six products in the kernel's order.
    const KvOperands & kv = kv_operands(k, v, d, n_kv);
#if defined(XDNA_AIE_HOST_BFP16_WIDE)
    const bool prepared = !kv.ktp.empty();
    // q's parts laid out once for the kv_groups blocks of K rows that read them ([kb][rg][hi, mid, lo]), on
    // the stack: a block call is the per-token path.
    APrep qp[xdna_aie::kFaMaxHead / kOp * 2 * 3];
    if (prepared) {
        for (int32_t i = 0; i < kbs * groups * 3; ++i) prep_a(qblocks + i * kBlocks, qp[i]);
    }
#endif
    for (int32_t ng = 0; ng < kv_groups; ++ng) {
        float c[2][kTile];
        for (int32_t kb = 0; kb < kbs; ++kb) {
            const Split3 & kt = kv.kt[size_t(ng) * kbs + kb];
            for (int32_t rg = 0; rg < groups; ++rg) {
                const bfp16_block * qh = qblocks + ((kb * groups + rg) * 3) * kBlocks;
                const bfp16_block * qm = qh + kBlocks;
                const bfp16_block * ql = qm + kBlocks;
#if defined(XDNA_AIE_HOST_BFP16_WIDE)
                if (prepared) {
                    const APrep * q3 = &qp[size_t(kb * groups + rg) * 3];
                    const BPrep * k3 = &kv.ktp[(size_t(ng) * kbs + kb) * 3];
                    mac(c[rg], kb == 0, q3[0], qh, k3[0], kt.hi);
                    mac(c[rg], false, q3[0], qh, k3[1], kt.mid);
                    mac(c[rg], false, q3[1], qm, k3[0], kt.hi);
                    mac(c[rg], false, q3[0], qh, k3[2], kt.lo);
                    mac(c[rg], false, q3[2], ql, k3[0], kt.hi);
                    mac(c[rg], false, q3[1], qm, k3[1], kt.mid);
                    continue;
                }
#endif
                mac(c[rg], kb == 0, qh, kt.hi);
                mac(c[rg], false, qh, kt.mid);
                mac(c[rg], false, qm, kt.hi);
                mac(c[rg], false, qh, kt.lo);
                mac(c[rg], false, ql, kt.hi);
                mac(c[rg], false, qm, kt.mid);
            }
        }
        for (int32_t rg = 0; rg < groups; ++rg)
            for (int32_t m = 0; m < kOp && m < rows - rg * kOp; ++m)
                std::memcpy(scores + (rg * kOp + m) * kBlock + ng * kOp, c[rg] + m * kOp, kOp * sizeof(float));
    }

    // The softmax step (its reductions and 2^n through the host aie_api, in the mode the kernel runs it in).
    const aie::rounding_mode entry = aie::get_rounding();
    aie::set_rounding(aie::rounding_mode::conv_even);
    softmax_twin(mask, slope, state, scores, rows, d, n_kv, scale);
    aie::set_rounding(entry);

    // o += p v (accumulate_values): the weights split in two per 8 query rows and 8 KV rows; per 8 of the
    // head dim the o tiles as accumulators, per 8 V rows the tile transposed (block n = head-dim column n
    // over the 8 rows; rows past n_kv zero), split in two, three products per 8 query rows.
    Split2 p[2][kBlock / kOp];
    for (int32_t rg = 0; rg < groups; ++rg) {
        for (int32_t jb = 0; jb < kv_groups; ++jb) {
            float x[kTile];
            for (int m = 0; m < kOp; ++m)
                for (int n = 0; n < kOp; ++n) x[m * kOp + n] = m < rows - rg * kOp ? scores[(rg * kOp + m) * kBlock + jb * kOp + n] : 0.0f;
            split2(x, p[rg][jb]);
        }
    }
#if defined(XDNA_AIE_HOST_BFP16_WIDE)
    // The weights' parts laid out once for the d / 8 tiles of V that read them ([rg][jb][hi, lo]).
    APrep pp[2][kBlock / kOp][2];
    if (prepared) {
        for (int32_t rg = 0; rg < groups; ++rg) {
            for (int32_t jb = 0; jb < kv_groups; ++jb) {
                prep_a(p[rg][jb].hi, pp[rg][jb][0]);
                prep_a(p[rg][jb].lo, pp[rg][jb][1]);
            }
        }
    }
#endif
    float * o = xdna_aie::fa::outputs(state, d, 0);
    for (int32_t ng = 0; ng < d / kOp; ++ng) {
        float c[2][kTile];
        for (int32_t rg = 0; rg < groups; ++rg)
            for (int m = 0; m < kOp; ++m)
                for (int n = 0; n < kOp; ++n) c[rg][m * kOp + n] = m < rows - rg * kOp ? o[(rg * kOp + m) * d + ng * kOp + n] : 0.0f;
        for (int32_t jb = 0; jb < kv_groups; ++jb) {
            const Split2 & vt = kv.vt[size_t(ng) * kv_groups + jb];
#if defined(XDNA_AIE_HOST_BFP16_WIDE)
            if (prepared) {
                const BPrep * v2 = &kv.vtp[(size_t(ng) * kv_groups + jb) * 2];
                for (int32_t rg = 0; rg < groups; ++rg) {
                    mac(c[rg], false, pp[rg][jb][0], p[rg][jb].hi, v2[0], vt.hi);
                    mac(c[rg], false, pp[rg][jb][0], p[rg][jb].hi, v2[1], vt.lo);
                    mac(c[rg], false, pp[rg][jb][1], p[rg][jb].lo, v2[0], vt.hi);
                }
                continue;
            }
#endif
            for (int32_t rg = 0; rg < groups; ++rg) {
                mac(c[rg], false, p[rg][jb].hi, vt.hi);
                mac(c[rg], false, p[rg][jb].hi, vt.lo);
                mac(c[rg], false, p[rg][jb].lo, vt.hi);
            }
        }
        for (int32_t rg = 0; rg < groups; ++rg)
            for (int32_t m = 0; m < kOp && m < rows - rg * kOp; ++m)
                std::memcpy(o + (rg * kOp + m) * d + ng * kOp, c[rg] + m * kOp, kOp * sizeof(float));
    }
    return true;
}

}  // namespace

bool twin_fa_block_f16_bfp16(const float * q, const uint8_t * qb, const uint16_t * k, const uint16_t * v, const uint16_t * mask,
                             const float * slope, float * state, float * scores, int32_t rows, int32_t d, int32_t n_kv, float scale) {
    (void)q;  // the fp32 program's operand: blocks the twin does not take run the kernel code
    if (!flash_attn_twin_pays()) return false;
    return block(qb, k, v, mask, slope, state, scores, rows, d, n_kv, scale);
}

bool flash_attn_twin_pays() {
#ifdef XDNA_AIE_HOST_BFP16_WIDE
    return aie::detail::bfp16_wide_lanes();
#else
    return false;
#endif
}

}  // namespace xdna
