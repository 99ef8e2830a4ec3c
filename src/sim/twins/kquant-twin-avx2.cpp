// The K-quant twins' AVX2 path (kquant-twin-avx2.h). Like the AVX-512 path, it works on one row group
// (16 weight rows) at a time, rows in 32-bit lanes, each lane holding 4 consecutive K values of its
// row, so a sub-block's dot is a sum over lanes' own bytes and never mixes rows. AVX2 has no VNNI and
// no cross-lane byte shuffle, so:
//   - a 4-K chunk of the q4 plane ([4 K][16 rows], two rows per byte) is put in that order by one
//     dword permute (rows 0-7 to the low half, 8-15 to the high half) and one in-half byte shuffle
//     (4x4 transpose); the low nibbles are then the even rows, the high nibbles the odd rows, so a row
//     group is two vectors of 8 rows: even (0, 2, .., 14) and odd (1, 3, .., 15);
//   - the dot of unsigned codes and int8 activations is vpmaddubsw (pairs into int16, exact: at most
//     2 * 63 * 128 in magnitude) summed in int16 while no sum can overflow (Q4_K: 8 chunks, 16
//     products of at most 15 * 128; Q5_K: 4 chunks of 31 * 128; Q6_K: 2 chunks of 63 * 128), then
//     vpmaddwd with the sub-block scale in both halves of a lane: scale * dot in int32, exact;
//   - mins and the Q6_K offset term are vpmaddwd of scale pairs with pairs of the activation tile's
//     int16 sums. All integer sums are the kernel's int32 sums (the same values, or equal modulo
//     2^32 where the kernel's arithmetic wraps: sum of products regrouped).
// The fp32 epilogue is the kernel's, step for step, with the AIE2P fp32 multiply of
// emulated-fp32-avx2.h: its fast form when every operand is in the range where it is exact, its exact
// form otherwise (any row group with an infinite or NaN fp16 scale, any activation scale outside
// [2^-60, 2^60] other than zero).
#include "kquant-twin-avx2.h"

#include "emulated-fp32-avx2.h"
#include "xdna_aie/matmul_tiles.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace xdna {

namespace {

namespace abi = xdna_aie;
using twin::fp32_accuracy;
using twin::Parts8;

#define XDNA_KQ_AVX2 __attribute__((target("avx2,fma,f16c")))

enum class KType { q4_K, q5_K, q6_K };

template <KType T> constexpr const abi::WeightTileFormat & format() {
    return T == KType::q4_K ? abi::fmt::q4_K : T == KType::q5_K ? abi::fmt::q5_K : abi::fmt::q6_K;
}

// Plane indices (matmul_tiles.h): codes first, then the 12 (16 for Q6_K) scale bytes, d, dmin.
template <KType T> constexpr int kScalesPlane = T == KType::q4_K ? 1 : 2;
template <KType T> constexpr int kSubBlocks = T == KType::q6_K ? 16 : 8;
// Chunks summed in int16 before widening (see the file comment).
template <KType T> constexpr int kInt16Chunks = T == KType::q4_K ? 8 : T == KType::q5_K ? 4 : 2;
constexpr int kTileK = 256;
constexpr int kChunks = kTileK / 4;
constexpr int kRowGroups = abi::kTileM / abi::kRowGroup;
constexpr int kMaxTokens = 32;

struct alignas(32) Tables {
    int32_t pair_perm[8];       // dwords [K j][row pairs 0-3 | 4-7] -> low half pairs 0-3, high half 4-7
    uint8_t transpose[32];      // in each half: byte 4i + j <- 4j + i (lane = row pair, byte = K)
    uint8_t half_deinterleave[32];  // 16-bit rows of a half: [r0 r2 r4 r6 r1 r3 r5 r7]
    uint8_t pair_even[32];      // int16 rows of a half -> dword i = (row 2i, row 2i)
    uint8_t pair_odd[32];       // -> (row 2i + 1, row 2i + 1)
    uint8_t h1_gather[32];      // Q5_K: h1 byte of (lane i, K j): 2j + i / 4
    uint8_t h1_bit_even[32];    // its bit for row 2i, 2i + 1
    uint8_t h1_bit_odd[32];
    uint8_t q2_gather[32];      // Q6_K: q2 byte of (lane i, K j): 4j + i / 2
    int32_t q2_shift[8];        // left shift bringing row 2i's two bits to bits 4-5: 4 (i even), 0
};

constexpr Tables make_tables() {
    Tables t{};
    const int perm[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int i = 0; i < 8; ++i) {
        t.pair_perm[i] = perm[i];
        t.q2_shift[i] = i % 2 == 0 ? 4 : 0;
    }
    const int deint[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int h = 0; h < 2; ++h) {
        for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 4; ++j) {
                const int o = 16 * h + 4 * i + j;
                const int lane = 4 * h + i;
                t.transpose[o] = static_cast<uint8_t>(4 * j + i);
                t.h1_gather[o] = static_cast<uint8_t>(2 * j + lane / 4);
                t.h1_bit_even[o] = static_cast<uint8_t>(1u << (2 * (lane % 4)));
                t.h1_bit_odd[o] = static_cast<uint8_t>(1u << (2 * (lane % 4) + 1));
                t.q2_gather[o] = static_cast<uint8_t>(4 * j + lane / 2);
            }
            const int e = 4 * i;  // first byte of dword i in the half
            t.pair_even[16 * h + e + 0] = t.pair_even[16 * h + e + 2] = static_cast<uint8_t>(e);
            t.pair_even[16 * h + e + 1] = t.pair_even[16 * h + e + 3] = static_cast<uint8_t>(e + 1);
            t.pair_odd[16 * h + e + 0] = t.pair_odd[16 * h + e + 2] = static_cast<uint8_t>(e + 2);
            t.pair_odd[16 * h + e + 1] = t.pair_odd[16 * h + e + 3] = static_cast<uint8_t>(e + 3);
        }
        for (int e = 0; e < 8; ++e) {
            t.half_deinterleave[16 * h + 2 * e] = static_cast<uint8_t>(2 * deint[e]);
            t.half_deinterleave[16 * h + 2 * e + 1] = static_cast<uint8_t>(2 * deint[e] + 1);
        }
    }
    return t;
}

constexpr Tables kTables = make_tables();

XDNA_KQ_AVX2 inline __m256i load_table(const uint8_t * p) { return _mm256_load_si256(reinterpret_cast<const __m256i *>(p)); }
XDNA_KQ_AVX2 inline __m256i load_table(const int32_t * p) { return _mm256_load_si256(reinterpret_cast<const __m256i *>(p)); }

// Unsigned codes of chunk ch of row group g: the even rows' and the odd rows' lanes, each lane 4 K
// values of its row.
template <KType T>
XDNA_KQ_AVX2 inline void unpack_chunk(const uint8_t * q4, const uint8_t * hi, int g, int ch, __m256i & even, __m256i & odd) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x88));  // q4 holds code ^ 8 per nibble
    __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q4 + g * 2048 + 32 * ch));
    x = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(_mm256_xor_si256(x, flip), load_table(kTables.pair_perm)),
                            load_table(kTables.transpose));
    even = _mm256_and_si256(x, low4);
    odd = _mm256_and_si256(_mm256_srli_epi16(x, 4), low4);
    if (T == KType::q5_K) {
        const __m256i bit_e = load_table(kTables.h1_bit_even), bit_o = load_table(kTables.h1_bit_odd);
        const __m256i sixteen = _mm256_set1_epi8(0x10);
        int64_t bits;
        std::memcpy(&bits, hi + g * 512 + 8 * ch, 8);
        const __m256i y = _mm256_shuffle_epi8(_mm256_set1_epi64x(bits), load_table(kTables.h1_gather));
        even = _mm256_or_si256(even, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(y, bit_e), bit_e), sixteen));
        odd = _mm256_or_si256(odd, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(y, bit_o), bit_o), sixteen));
    } else if (T == KType::q6_K) {
        const __m256i shift = load_table(kTables.q2_shift);
        const __m256i bits45 = _mm256_set1_epi8(0x30);
        const __m128i src = _mm_loadu_si128(reinterpret_cast<const __m128i *>(hi + g * 1024 + 16 * ch));
        const __m256i y = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(src), load_table(kTables.q2_gather));
        // Row 2i's bits are at 4 (i % 2), row 2i + 1's two higher: shifting lanes with i even by 4
        // puts every byte's even-row bits at 4-5 and its odd-row bits at 6-7 (bits that cross into
        // a neighbouring byte land outside those and are masked off).
        const __m256i z = _mm256_sllv_epi32(y, shift);
        even = _mm256_or_si256(even, _mm256_and_si256(z, bits45));
        odd = _mm256_or_si256(odd, _mm256_and_si256(_mm256_srli_epi16(z, 2), bits45));
    }
}

// Where token_group gets a chunk's codes: unpacked once per row group into a buffer that every token
// group reads (prefill), or unpacked as they are used (one token group: decode).
struct StoredCodes {
    const __m256i (*wv)[2];
    XDNA_KQ_AVX2 void get(int ch, __m256i & even, __m256i & odd) const {
        even = wv[ch][0];
        odd = wv[ch][1];
    }
};
template <KType T> struct PackedCodes {
    const uint8_t * q4;
    const uint8_t * hi;
    int g;
    const uint8_t * ahead;  // this row group's 64 lines of what follows the tile, one per chunk
    XDNA_KQ_AVX2 void get(int ch, __m256i & even, __m256i & odd) const {
        _mm_prefetch(reinterpret_cast<const char *>(ahead + 64 * ch), _MM_HINT_T0);
        unpack_chunk<T>(q4, hi, g, ch, even, odd);
    }
};

// 16 rows of int16 -> (row 2i, row 2i) / (row 2i + 1, row 2i + 1) pairs, for vpmaddwd.
struct PairVec {
    __m256i e, o;
};
XDNA_KQ_AVX2 inline PairVec same_pairs(__m256i rows16) {
    return {_mm256_shuffle_epi8(rows16, load_table(kTables.pair_even)), _mm256_shuffle_epi8(rows16, load_table(kTables.pair_odd))};
}
// Two int16 row vectors x, y -> (x[row], y[row]) pairs for the even and the odd rows.
XDNA_KQ_AVX2 inline PairVec cross_pairs(__m256i x, __m256i y) {
    return {_mm256_blend_epi16(x, _mm256_slli_epi32(y, 16), 0xAA), _mm256_blend_epi16(_mm256_srli_epi32(x, 16), y, 0xAA)};
}

// 16 fp16 fields of a row group -> fp32 even rows, odd rows. F16C: exact, NaNs quieted (as the
// AVX-512 path's conversion and the portable path's half_to_float).
XDNA_KQ_AVX2 inline void load_halves(const uint8_t * p, __m256 & even, __m256 & odd, bool & finite) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
    const __m256i exp = _mm256_set1_epi16(0x7C00);
    finite = _mm256_movemask_epi8(_mm256_cmpeq_epi16(_mm256_and_si256(h, exp), exp)) == 0;
    const __m256i d = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(h, load_table(kTables.half_deinterleave)), 0xD8);
    even = _mm256_cvtph_ps(_mm256_castsi256_si128(d));
    odd = _mm256_cvtph_ps(_mm256_extracti128_si256(d, 1));
}

// Per row group: the weight side of the epilogue and the integer scales.
template <KType T> struct RowGroup {
    Parts8 d[2], dmin[2];
    bool fast;  // d and dmin finite: the fast fp32 multiply applies with a safe activation scale
    __m256i sc[kSubBlocks<T>][2];  // (sc, sc) per lane
    __m256i mn[8][2];               // Q4_K/Q5_K: (min, min) per lane; Q6_K: (sc 2jj, sc 2jj+1)
};

template <KType T> XDNA_KQ_AVX2 inline void load_row_group(const uint8_t * w, int g, RowGroup<T> & rg) {
    constexpr abi::WeightTileFormat f = format<T>();
    constexpr int sp = kScalesPlane<T>;
    const uint8_t * sbytes = w + f.plane_offset(sp) + g * f.planes[sp].units * 16;
    __m256 de, dodd;
    bool dfin = true, mfin = true;
    load_halves(w + f.plane_offset(sp + 1) + g * 32, de, dodd, dfin);
    __m256 me = _mm256_setzero_ps(), mo = me;
    if (T != KType::q6_K) load_halves(w + f.plane_offset(sp + 2) + g * 32, me, mo, mfin);
    rg.fast = dfin && mfin;
    // Finite fp16 values are below 2^16: the fast split is the split.
    const auto split = [&](__m256 x) __attribute__((target("avx2,fma,f16c"))) { return rg.fast ? twin::split8_fast(x) : twin::split8(x); };
    rg.d[0] = split(de);
    rg.d[1] = split(dodd);
    if (T != KType::q6_K) {
        rg.dmin[0] = split(me);
        rg.dmin[1] = split(mo);
    }
    const auto unit = [&](int u) { return _mm_loadu_si128(reinterpret_cast<const __m128i *>(sbytes + 16 * u)); };
    if (T == KType::q6_K) {
        __m256i s[16];
        for (int j = 0; j < 16; ++j) {
            s[j] = _mm256_cvtepi8_epi16(unit(j));  // int8 scales
            const PairVec p = same_pairs(s[j]);
            rg.sc[j][0] = p.e;
            rg.sc[j][1] = p.o;
        }
        for (int jj = 0; jj < 8; ++jj) {
            const PairVec p = cross_pairs(s[2 * jj], s[2 * jj + 1]);
            rg.mn[jj][0] = p.e;
            rg.mn[jj][1] = p.o;
        }
    } else {
        // ggml's get_scale_min_k4 on 16 rows at once, in bytes (shifts of 16-bit words, then masks).
        __m128i b[12];
        for (int u = 0; u < 12; ++u) b[u] = unit(u);
        const __m128i m63 = _mm_set1_epi8(63), m15 = _mm_set1_epi8(15), top2 = _mm_set1_epi8(0x30);
        for (int j = 0; j < 8; ++j) {
            __m128i sc, mn;
            if (j < 4) {
                sc = _mm_and_si128(b[j], m63);
                mn = _mm_and_si128(b[j + 4], m63);
            } else {
                sc = _mm_or_si128(_mm_and_si128(b[j + 4], m15), _mm_and_si128(_mm_srli_epi16(b[j - 4], 2), top2));
                mn = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(b[j + 4], 4), m15), _mm_and_si128(_mm_srli_epi16(b[j], 2), top2));
            }
            const PairVec ps = same_pairs(_mm256_cvtepu8_epi16(sc));
            const PairVec pm = same_pairs(_mm256_cvtepu8_epi16(mn));
            rg.sc[j][0] = ps.e;
            rg.sc[j][1] = ps.o;
            rg.mn[j][0] = pm.e;
            rg.mn[j][1] = pm.o;
        }
    }
}

// Per token of the tile call: its activation scale's parts, and its int16 sums in pairs
// (sums of K16 blocks 2jj, 2jj + 1), for vpmaddwd.
struct TokenInfo {
    alignas(32) float sa_hi[kMaxTokens];
    alignas(32) float sa_mid[kMaxTokens];
    alignas(32) float sa_lo[kMaxTokens];
    uint32_t fast = 0;  // bit t: token t's scale is zero or in [2^-60, 2^60] (fast_scale_ok)
    // [t / 4][jj][t % 4]: (sum of K16 block 2jj) | (sum of block 2jj + 1) << 16.
    alignas(16) int32_t sum_pairs[kMaxTokens / 4][8][4];
};

template <int TN> XDNA_KQ_AVX2 void token_info(const uint8_t * a, int valid, TokenInfo & ti) {
    constexpr abi::ActTileFormat af{TN, kTileK, kTileK};
    static_assert(af.scale_index(5, 0) == 5 && af.scales_bytes() >= 32, "one scale per token, contiguous, 8 readable");
    static_assert(af.sum_index(6, 3) == (16 + 3) * 4 + 2, "sums [t / 4][k16][t % 4]");
    const auto * scales = reinterpret_cast<const float *>(a + af.scales_offset());
    const auto * sums = reinterpret_cast<const int16_t *>(a + af.sums_offset());
    // The scales' parts, 8 tokens at a time (lanes past `valid` read the plane's padding, unused).
    ti.fast = 0;
    for (int t = 0; t < valid; t += 8) {
        const __m256 x = _mm256_loadu_ps(scales + t);
        const Parts8 p = twin::split8(x);
        _mm256_store_ps(ti.sa_hi + t, p.hi);
        _mm256_store_ps(ti.sa_mid + t, p.mid);
        _mm256_store_ps(ti.sa_lo + t, p.lo);
        // fast_scale_ok on 8 lanes: zero, or a biased exponent in [127 - 60, 127 + 60].
        const __m256i u = _mm256_castps_si256(x);
        const __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
        const __m256i e = _mm256_srli_epi32(mag, 23);
        const __m256i in_range = _mm256_andnot_si256(_mm256_or_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(127 - 60), e),
                                                                     _mm256_cmpgt_epi32(e, _mm256_set1_epi32(127 + 60))),
                                                    _mm256_set1_epi32(-1));
        const __m256i ok = _mm256_or_si256(in_range, _mm256_cmpeq_epi32(mag, _mm256_setzero_si256()));
        ti.fast |= static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(ok))) << t;
    }
    // Sums of blocks 2jj and 2jj + 1 of 4 tokens are 8 consecutive int16: interleave them.
    for (int tg = 0; tg < (valid + 3) / 4; ++tg) {
        for (int jj = 0; jj < 8; ++jj) {
            const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i *>(sums + af.sum_index(4 * tg, 2 * jj)));
            _mm_store_si128(reinterpret_cast<__m128i *>(ti.sum_pairs[tg][jj]), _mm_unpacklo_epi16(x, _mm_srli_si128(x, 8)));
        }
    }
}

// The kernel's epilogue for 8 rows of one token: d * sa * sumi (- dmin * sa * summ), emulated products.
template <KType T, fp32_accuracy A, bool Fast>
XDNA_KQ_AVX2 inline __m256 epilogue(const Parts8 & d, const Parts8 & dmin, const Parts8 & sa, __m256i sumi, __m256i summ) {
    if (Fast) {
        const __m256 pd = twin::emulated_mul8_fused(d, sa, A);
        __m256 val = twin::emulated_mul8_fused(twin::split8_fast(pd), twin::split8_fast(_mm256_cvtepi32_ps(sumi)), A);
        if (T != KType::q6_K) {
            const __m256 pm = twin::emulated_mul8_fused(dmin, sa, A);
            val = _mm256_sub_ps(val, twin::emulated_mul8_fused(twin::split8_fast(pm), twin::split8_fast(_mm256_cvtepi32_ps(summ)), A));
        }
        return val;
    }
    const __m256 pd = twin::emulated_mul8(d, sa, A);
    __m256 val = twin::emulated_mul8(twin::split8(pd), twin::split8(_mm256_cvtepi32_ps(sumi)), A);
    if (T != KType::q6_K) {
        const __m256 pm = twin::emulated_mul8(dmin, sa, A);
        val = _mm256_sub_ps(val, twin::emulated_mul8(twin::split8(pm), twin::split8(_mm256_cvtepi32_ps(summ)), A));
    }
    return val;
}

// The integer sums of K steps s0 .. s0 + steps_per_flush - 1 (4 chunks each) for tokens t0 ..
// t0 + NU - 1: chunks summed in int16 as far as they cannot overflow, then scaled into sumi.
template <KType T, int NU, typename Codes>
XDNA_KQ_AVX2 inline void dot_pass(const Codes & codes_of, const RowGroup<T> & rg, const int8_t * at, int s0, __m256i (*sumi)[2]) {
    constexpr int cps = kChunks / kSubBlocks<T>;  // chunks per sub-block
    constexpr int flush = kInt16Chunks<T>;
    constexpr int steps_per_flush = flush >= 4 ? flush / 4 : 1;
    constexpr int chunks_per_pass = flush >= 4 ? 4 : flush;  // chunks between int16 flushes, per step
#pragma GCC unroll 2
    for (int half = 0; half < 4; half += chunks_per_pass) {
        __m256i acc[NU][2];
#pragma GCC unroll 2
        for (int s = s0; s < s0 + steps_per_flush; ++s) {
            const int8_t * as = at + 64 * s;
#pragma GCC unroll 4
            for (int q = half; q < half + chunks_per_pass; ++q) {
                __m256i w0, w1;
                codes_of.get(4 * s + q, w0, w1);
#pragma GCC unroll 4
                for (int u = 0; u < NU; ++u) {
                    int32_t a4;
                    std::memcpy(&a4, as + 16 * u + 4 * q, 4);
                    const __m256i av = _mm256_set1_epi32(a4);
                    // Saturating adds that never saturate (the file comment's bounds): the same sums as
                    // wrapping adds, but opaque to the compiler, which would otherwise regroup
                    // the chains into trees and spill the products.
                    const __m256i m0 = _mm256_maddubs_epi16(w0, av), m1 = _mm256_maddubs_epi16(w1, av);
                    if (s == s0 && q == half) {
                        acc[u][0] = m0;
                        acc[u][1] = m1;
                    } else {
                        acc[u][0] = _mm256_adds_epi16(acc[u][0], m0);
                        acc[u][1] = _mm256_adds_epi16(acc[u][1], m1);
                    }
                }
            }
        }
        const int j = (4 * s0 + half) / cps;  // the sub-block of these chunks
        for (int u = 0; u < NU; ++u)
            for (int p = 0; p < 2; ++p) sumi[u][p] = _mm256_add_epi32(sumi[u][p], _mm256_madd_epi16(acc[u][p], rg.sc[j][p]));
    }
}

// Row group g, tokens t0 .. t0 + NU - 1: integer sums, then the epilogue into C.
template <KType T, int TN, fp32_accuracy A, int NU, typename Codes>
XDNA_KQ_AVX2 inline void token_group(const Codes & codes_of, const RowGroup<T> & rg, const TokenInfo & ti, const int8_t * codes, int g,
                                     int t0, float * c) {
    constexpr abi::ActTileFormat af{TN, kTileK, kTileK};
    __m256i sumi[NU][2], summ[NU][2];
    for (int u = 0; u < NU; ++u) sumi[u][0] = sumi[u][1] = summ[u][0] = summ[u][1] = _mm256_setzero_si256();
    // Token t0 + u's codes of K step s (16 K) start at at + 64 s + 16 u (t0 is a multiple of 4); a
    // K step is 4 chunks.
    const int8_t * at = codes + af.code_index(t0, 0);
    // Decode (codes unpacked as used, one or two tokens) runs the whole K tile unrolled; prefill keeps
    // the loop, whose body holds 4 tokens' sums in registers (unrolled, they would spill).
    constexpr int steps_per_flush = kInt16Chunks<T> >= 4 ? kInt16Chunks<T> / 4 : 1;
    if constexpr (NU <= 2) {
#pragma GCC unroll 16
        for (int s0 = 0; s0 < kChunks / 4; s0 += steps_per_flush) dot_pass<T, NU>(codes_of, rg, at, s0, sumi);
    } else {
        for (int s0 = 0; s0 < kChunks / 4; s0 += steps_per_flush) dot_pass<T, NU>(codes_of, rg, at, s0, sumi);
    }
    // Mins (Q4_K, Q5_K) or the offset term of Q6_K's codes stored + 32: pairs of scales times pairs
    // of the activations' int16 sums.
    for (int u = 0; u < NU; ++u) {
        for (int jj = 0; jj < 8; ++jj) {
            const __m256i s = _mm256_set1_epi32(ti.sum_pairs[t0 / 4][jj][u]);
            for (int p = 0; p < 2; ++p) summ[u][p] = _mm256_add_epi32(summ[u][p], _mm256_madd_epi16(rg.mn[jj][p], s));
        }
        if (T == KType::q6_K) {
            for (int p = 0; p < 2; ++p) sumi[u][p] = _mm256_sub_epi32(sumi[u][p], _mm256_slli_epi32(summ[u][p], 5));
        }
    }
    for (int u = 0; u < NU; ++u) {
        const int t = t0 + u;
        const Parts8 sa{_mm256_set1_ps(ti.sa_hi[t]), _mm256_set1_ps(ti.sa_mid[t]), _mm256_set1_ps(ti.sa_lo[t])};
        __m256 v[2];
        if (rg.fast && ((ti.fast >> t) & 1) != 0) {
            for (int p = 0; p < 2; ++p) v[p] = epilogue<T, A, true>(rg.d[p], rg.dmin[p], sa, sumi[u][p], summ[u][p]);
        } else {
            for (int p = 0; p < 2; ++p) v[p] = epilogue<T, A, false>(rg.d[p], rg.dmin[p], sa, sumi[u][p], summ[u][p]);
        }
        // Even and odd rows back to row order: lanes (0 1 2 3 | 8 9 10 11) and (4 5 6 7 | 12 .. 15).
        const __m256 lo = _mm256_unpacklo_ps(v[0], v[1]), hi = _mm256_unpackhi_ps(v[0], v[1]);
        float * out = c + t * abi::kTileM + g * abi::kRowGroup;
        _mm256_storeu_ps(out, _mm256_add_ps(_mm256_loadu_ps(out), _mm256_permute2f128_ps(lo, hi, 0x20)));
        _mm256_storeu_ps(out + 8, _mm256_add_ps(_mm256_loadu_ps(out + 8), _mm256_permute2f128_ps(lo, hi, 0x31)));
    }
}

template <KType T, int TN, fp32_accuracy A>
XDNA_KQ_AVX2 void vector_tile(const uint8_t * w, const uint8_t * a, float * c, int valid) {
    constexpr abi::WeightTileFormat f = format<T>();
    constexpr abi::ActTileFormat af{TN, kTileK, kTileK};
    const auto * codes = reinterpret_cast<const int8_t *>(a + af.codes_offset());
    const uint8_t * q4 = w + f.plane_offset(0);
    const uint8_t * hi = w + f.plane_offset(1);
    // The simulator walks K tiles in memory order: fetch the next tile while this one is computed (a
    // hint only: it never faults, past the end of the buffer included). Decode, which streams weights
    // from memory, spreads the prefetches over the tile, one line per chunk: issued all at once, most
    // would find the miss queues full (measured: 5.5 -> 9 GB/s per thread from DRAM).
    static_assert(f.tile_bytes() % 128 == 0, "two lines per step");
    // (The 256 lines of the 4 row groups' chunks reach past the next tile into the one after.)
    static_assert(f.tile_bytes() / 64 <= kRowGroups * kChunks, "a line per chunk covers the next tile");
    const uint8_t * ahead = w + f.tile_bytes();
    if (valid > 4) {
        for (int o = 0; o < f.tile_bytes(); o += 128) {
            _mm_prefetch(reinterpret_cast<const char *>(ahead + o), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char *>(ahead + o + 64), _MM_HINT_T0);
        }
    }

    TokenInfo ti;
    token_info<TN>(a, valid, ti);
    for (int g = 0; g < kRowGroups; ++g) {
        RowGroup<T> rg;
        load_row_group<T>(w, g, rg);
        if (valid <= 4) {
            // One token group: each chunk is unpacked where it is used.
            const PackedCodes<T> packed{q4, hi, g, ahead + 64 * kChunks * g};
            switch (valid) {
                case 1: token_group<T, TN, A, 1>(packed, rg, ti, codes, g, 0, c); break;
                case 2: token_group<T, TN, A, 2>(packed, rg, ti, codes, g, 0, c); break;
                case 3: token_group<T, TN, A, 3>(packed, rg, ti, codes, g, 0, c); break;
                case 4: token_group<T, TN, A, 4>(packed, rg, ti, codes, g, 0, c); break;
                default: break;
            }
            continue;
        }
        // The row group's codes, unpacked once (4 KB, stays in L1), then streamed past every token.
        alignas(32) __m256i wv[kChunks][2];
        for (int ch = 0; ch < kChunks; ++ch) unpack_chunk<T>(q4, hi, g, ch, wv[ch][0], wv[ch][1]);
        const StoredCodes stored{wv};
        for (int t0 = 0; t0 < valid; t0 += 4) {
            switch (std::min(4, valid - t0)) {
                case 1: token_group<T, TN, A, 1>(stored, rg, ti, codes, g, t0, c); break;
                case 2: token_group<T, TN, A, 2>(stored, rg, ti, codes, g, t0, c); break;
                case 3: token_group<T, TN, A, 3>(stored, rg, ti, codes, g, t0, c); break;
                default: token_group<T, TN, A, 4>(stored, rg, ti, codes, g, t0, c); break;
            }
        }
    }
}

template <KType T, int TN> void tile(const uint8_t * w, const uint8_t * a, float * c, int valid) {
    // The mirrored kernel's epilogue calls the 32-lane fast intrinsic (emulated-fp32.h current_accuracy).
    if (twin::current_accuracy() == fp32_accuracy::fast32) {
        vector_tile<T, TN, fp32_accuracy::fast32>(w, a, c, valid);
    } else {
        vector_tile<T, TN, fp32_accuracy::safe>(w, a, c, valid);
    }
}

}  // namespace

void kquant_twin_tile_avx2(int type_id, int tile_n, const uint8_t * w, const uint8_t * a, float * c, int valid) {
    const bool n4 = tile_n == 4;
    switch (type_id) {
        case 0: n4 ? tile<KType::q4_K, 4>(w, a, c, valid) : tile<KType::q4_K, 32>(w, a, c, valid); break;
        case 1: n4 ? tile<KType::q5_K, 4>(w, a, c, valid) : tile<KType::q5_K, 32>(w, a, c, valid); break;
        default: n4 ? tile<KType::q6_K, 4>(w, a, c, valid) : tile<KType::q6_K, 32>(w, a, c, valid); break;
    }
}

}  // namespace xdna
