#include "kquant-low-twin.h"

#include "host-isa.h"
#include "xdna_aie/matmul_tiles.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define XDNA_LOW_TWIN_X86 1
#endif

namespace xdna {

namespace {

namespace abi = xdna_aie;

constexpr int kTileK = 256;
constexpr int kSubBlocks = 16;
constexpr int kRowGroups = abi::kTileM / abi::kRowGroup;

// Plane offsets, as the kernel reads them (matmul_tiles.h fmt::q2_K / q3_K).
template <bool Q3> struct Planes {
    static constexpr const abi::WeightTileFormat & f = Q3 ? abi::fmt::q3_K : abi::fmt::q2_K;
    static constexpr int q2 = f.plane_offset(0);
    static constexpr int h1 = Q3 ? f.plane_offset(1) : 0;
    static constexpr int scales = f.plane_offset(Q3 ? 2 : 1);
    static constexpr int scale_units = f.planes[Q3 ? 2 : 1].units;
    static constexpr int d = f.plane_offset(Q3 ? 3 : 2);
    static constexpr int dmin = Q3 ? 0 : f.plane_offset(3);
};

inline uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// fp16 -> fp32, exact (the kernel's values; NaN payloads do not matter: a NaN only enters mul_rne).
float half_to_float(uint16_t h) {
    const uint32_t t = static_cast<uint32_t>(h & 0x7FFF) << 13;
    const uint32_t e = h & 0x7C00;
    uint32_t b;
    if (e == 0x7C00) {
        b = t + (224u << 23);
    } else if (e != 0) {
        b = t + (112u << 23);
    } else {
        b = bits_of(float_of(t + (113u << 23)) - 0x1p-14f);
    }
    return float_of(b | (static_cast<uint32_t>(h & 0x8000) << 16));
}

// The kernel's mul_rne, one lane: significands multiplied exactly, rounded to 24 bits (nearest even)
// by a shift of 23 or 24, exponents added; the same special-case rules in the same precedence.
uint32_t rne_shift(uint64_t p, int s) {
    const uint64_t q = p >> s, rem = p & ((uint64_t(1) << s) - 1), half = uint64_t(1) << (s - 1);
    return static_cast<uint32_t>(q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0));
}

float mul_rne(float x, float y) {
    const uint32_t bx = bits_of(x), by = bits_of(y);
    const uint32_t ax = bx & 0x7FFFFFFFu, ay = by & 0x7FFFFFFFu;
    const int32_t ex = static_cast<int32_t>(ax >> 23), ey = static_cast<int32_t>(ay >> 23);
    const uint64_t mx = (bx & 0x7FFFFFu) | 0x800000u, my = (by & 0x7FFFFFu) | 0x800000u;
    const uint64_t prod = mx * my;
    const int32_t r23 = static_cast<int32_t>(rne_shift(prod, 23)), r24 = static_cast<int32_t>(rne_shift(prod, 24));
    const bool big = r23 >= (int32_t(1) << 24);
    const int32_t m = big ? r24 + (int32_t(1) << 23) : r23;
    const int32_t e2 = ex + ey - 128, e = e2 + (big ? 1 : 0);
    const uint32_t sign = (bx ^ by) & 0x80000000u;
    const uint32_t mag = (static_cast<uint32_t>(e2) << 23) + static_cast<uint32_t>(m);
    uint32_t r = sign | mag;
    const bool zero_factor = std::min(ex, ey) == 0, special = std::max(ex, ey) == 255;
    if (zero_factor || static_cast<int32_t>(mag) < (int32_t(1) << 23)) r = sign;
    if (special || e >= 254) r = sign | 0x7F800000u;
    if (special && (zero_factor || std::max(ax, ay) > 0x7F800000u)) r = 0x7FC00000u;
    return float_of(r);
}

// Q2_K mins term of one activation block sum, as the kernel forms it: bsum = 128 * hi + lo with hi
// narrowed to int8 by a wrapping pack (a no-op for every sum a valid activation tile holds).
inline int32_t split_bsum(int16_t s) {
    const int32_t hi = static_cast<int8_t>(static_cast<uint8_t>(static_cast<int32_t>(s) >> 7));
    return 128 * hi + (s & 127);
}

// Sub-block scales of one row (16 values, scale bytes `b` of the row: 16 for Q2_K, 12 for Q3_K) and
// Q2_K mins.
template <bool Q3> void row_scales(const uint8_t * b, int32_t * sc, int32_t * mn) {
    for (int j = 0; j < kSubBlocks; ++j) {
        if (Q3) {
            const int lo = (b[j % 8] >> (4 * (j / 8))) & 15;
            const int hi = (b[8 + j % 4] >> (2 * (j / 4))) & 3;
            sc[j] = (lo | (hi << 4)) - 32;
        } else {
            sc[j] = b[j] & 15;
            mn[j] = b[j] >> 4;
        }
    }
}

// ---- portable path: one row at a time ----

template <bool Q3, int TN> void scalar_tile(const uint8_t * w, const uint8_t * a, float * c, int valid) {
    using P = Planes<Q3>;
    constexpr abi::ActTileFormat af{TN, kTileK, kTileK};
    const auto * codes = reinterpret_cast<const int8_t *>(a + af.codes_offset());
    const auto * scales = reinterpret_cast<const float *>(a + af.scales_offset());
    const auto * sums = reinterpret_cast<const int16_t *>(a + af.sums_offset());
    for (int r = 0; r < abi::kTileM; ++r) {
        const int g = r / abi::kRowGroup, rr = r % abi::kRowGroup;
        int v[kTileK];
        for (int k = 0; k < kTileK; ++k) {
            const int e = abi::q_element(kTileK, r, k);
            v[k] = (w[P::q2 + e / 4] >> (2 * (e % 4))) & 3;
            if (Q3) v[k] -= ((w[P::h1 + e / 8] >> (e % 8)) & 1) ? 0 : 4;
        }
        uint8_t sb[16];
        for (int u = 0; u < P::scale_units; ++u) sb[u] = w[P::scales + (g * P::scale_units + u) * abi::kRowGroup + rr];
        int32_t sc[kSubBlocks], mn[kSubBlocks] = {};
        row_scales<Q3>(sb, sc, mn);
        uint16_t h;
        std::memcpy(&h, w + P::d + 2 * r, 2);
        const float d = half_to_float(h);
        float dmin = 0.0f;
        if (!Q3) {
            std::memcpy(&h, w + P::dmin + 2 * r, 2);
            dmin = half_to_float(h);
        }
        for (int t = 0; t < valid; ++t) {
            int32_t sumi = 0, summ = 0;
            for (int j = 0; j < kSubBlocks; ++j) {
                int32_t dot = 0;
                for (int k = 16 * j; k < 16 * j + 16; ++k) dot += v[k] * codes[af.code_index(t, k)];
                sumi += sc[j] * dot;
                if (!Q3) summ += mn[j] * split_bsum(sums[af.sum_index(t, j)]);
            }
            const float sa = scales[af.scale_index(t, 0)];
            const float x = mul_rne(mul_rne(d, sa), static_cast<float>(sumi));
            float & out = c[t * abi::kTileM + r];
            if (Q3) {
                out = out + x;
            } else {
                const float y = mul_rne(mul_rne(dmin, sa), static_cast<float>(summ));
                out = out + (x - y);
            }
        }
    }
}

// ---- AVX-512 path: a row group (16 rows = 16 int32 lanes) at a time ----

#ifdef XDNA_LOW_TWIN_X86

#define XDNA_LOW_TWIN_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vnni,f16c")))

// Byte o of a lane vector is row o / 4, K o % 4 (the 4 K values of a 4-K chunk of each row).
struct alignas(64) LaneTables {
    uint8_t q2_src[64];    // source byte of the chunk's 16 q2 bytes: 4 K + row / 4
    uint8_t q2_shift[64];  // bit offset of the code inside its qword after the gather
    uint8_t h1_src[64];    // source byte of the chunk's 8 h1 bytes: 2 K + row / 8
    uint8_t h1_shift[64];
};

constexpr LaneTables make_tables() {
    LaneTables t{};
    for (int o = 0; o < 64; ++o) {
        const int r = o / 4, kk = o % 4;
        t.q2_src[o] = static_cast<uint8_t>(4 * kk + r / 4);
        t.q2_shift[o] = static_cast<uint8_t>(8 * (o % 8) + 2 * (r % 4));
        t.h1_src[o] = static_cast<uint8_t>(2 * kk + r / 8);
        t.h1_shift[o] = static_cast<uint8_t>(8 * (o % 8) + r % 8);
    }
    return t;
}

constexpr LaneTables kTables = make_tables();

// Round 8 unsigned 64-bit lanes (< 2^48) right by s bits, to nearest even.
XDNA_LOW_TWIN_TARGET inline __m512i rne_shift64(__m512i p, int s) {
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi64(p, s), _mm512_set1_epi64(1));
    const __m512i bias = _mm512_add_epi64(_mm512_set1_epi64((int64_t(1) << (s - 1)) - 1), lsb);
    return _mm512_srli_epi64(_mm512_add_epi64(p, bias), s);
}

// The kernel's mul_rne on 16 lanes.
XDNA_LOW_TWIN_TARGET inline __m512 mul_rne16(__m512 x, __m512 y) {
    const __m512i bx = _mm512_castps_si512(x), by = _mm512_castps_si512(y);
    const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512i ax = _mm512_and_si512(bx, abs_mask), ay = _mm512_and_si512(by, abs_mask);
    const __m512i ex = _mm512_srli_epi32(ax, 23), ey = _mm512_srli_epi32(ay, 23);
    const __m512i frac = _mm512_set1_epi32(0x7FFFFF), one = _mm512_set1_epi32(0x800000);
    const __m512i mx = _mm512_or_si512(_mm512_and_si512(bx, frac), one);
    const __m512i my = _mm512_or_si512(_mm512_and_si512(by, frac), one);
    const __m512i pe = _mm512_mul_epu32(mx, my);
    const __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(mx, 32), _mm512_srli_epi64(my, 32));
    const __mmask16 odd = 0xAAAA;
    const __m512i r23 = _mm512_mask_blend_epi32(odd, rne_shift64(pe, 23), _mm512_slli_epi64(rne_shift64(po, 23), 32));
    const __m512i r24 = _mm512_mask_blend_epi32(odd, rne_shift64(pe, 24), _mm512_slli_epi64(rne_shift64(po, 24), 32));
    const __mmask16 big = _mm512_cmpge_epi32_mask(r23, _mm512_set1_epi32(1 << 24));
    const __m512i m = _mm512_mask_blend_epi32(big, r23, _mm512_add_epi32(r24, _mm512_set1_epi32(1 << 23)));
    const __m512i e2 = _mm512_sub_epi32(_mm512_add_epi32(ex, ey), _mm512_set1_epi32(128));
    const __m512i e = _mm512_mask_add_epi32(e2, big, e2, _mm512_set1_epi32(1));
    const __m512i sign = _mm512_and_si512(_mm512_xor_si512(bx, by), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
    const __m512i mag = _mm512_add_epi32(_mm512_slli_epi32(e2, 23), m);
    __m512i r = _mm512_or_si512(sign, mag);
    const __mmask16 zero_factor = _mm512_cmpeq_epi32_mask(_mm512_min_epu32(ex, ey), _mm512_setzero_si512());
    const __mmask16 special = _mm512_cmpeq_epi32_mask(_mm512_max_epu32(ex, ey), _mm512_set1_epi32(255));
    const __mmask16 under = _mm512_cmplt_epi32_mask(mag, _mm512_set1_epi32(1 << 23));
    const __mmask16 over = _mm512_cmpge_epi32_mask(e, _mm512_set1_epi32(254));
    const __mmask16 nan =
        special & (zero_factor | _mm512_cmpgt_epu32_mask(_mm512_max_epu32(ax, ay), _mm512_set1_epi32(0x7F800000)));
    r = _mm512_mask_mov_epi32(r, zero_factor | under, sign);
    r = _mm512_mask_mov_epi32(r, special | over, _mm512_or_si512(sign, _mm512_set1_epi32(0x7F800000)));
    r = _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7FC00000));
    return _mm512_castsi512_ps(r);
}

// The 4-K chunk `ch` of row group g: per row (int32 lane) 4 unsigned code bytes; Q3_K: low | h << 2
// (the value plus 4).
template <bool Q3> XDNA_LOW_TWIN_TARGET inline __m512i chunk_codes(const uint8_t * w, int g, int ch) {
    using P = Planes<Q3>;
    const int op = g * kSubBlocks + ch / 4;
    const __m512i src = _mm512_castsi128_si512(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + P::q2 + 64 * op + 16 * (ch % 4))));
    const __m512i gathered = _mm512_permutexvar_epi8(_mm512_load_si512(kTables.q2_src), src);
    __m512i code = _mm512_and_si512(_mm512_multishift_epi64_epi8(_mm512_load_si512(kTables.q2_shift), gathered),
                                    _mm512_set1_epi8(3));
    if (Q3) {
        const __m512i hsrc = _mm512_castsi128_si512(
            _mm_loadl_epi64(reinterpret_cast<const __m128i *>(w + P::h1 + 32 * op + 8 * (ch % 4))));
        const __m512i hg = _mm512_permutexvar_epi8(_mm512_load_si512(kTables.h1_src), hsrc);
        const __m512i hb = _mm512_and_si512(_mm512_multishift_epi64_epi8(_mm512_load_si512(kTables.h1_shift), hg),
                                            _mm512_set1_epi8(1));
        code = _mm512_or_si512(code, _mm512_slli_epi16(hb, 2));
    }
    return code;
}

template <bool Q3, int TN> XDNA_LOW_TWIN_TARGET void vector_tile(const uint8_t * w, const uint8_t * a, float * c, int valid) {
    using P = Planes<Q3>;
    constexpr abi::ActTileFormat af{TN, kTileK, kTileK};
    const auto * codes = reinterpret_cast<const int8_t *>(a + af.codes_offset());
    const auto * scales = reinterpret_cast<const float *>(a + af.scales_offset());
    const auto * sums = reinterpret_cast<const int16_t *>(a + af.sums_offset());

    // Per token and sub-block: the Q3_K offset term (sum of the 16 codes) or the Q2_K split block sum.
    int32_t tsum[TN][kSubBlocks];
    for (int t = 0; t < valid; ++t) {
        for (int j = 0; j < kSubBlocks; ++j) {
            if (Q3) {
                const int8_t * q = codes + ((t / 4) * kSubBlocks + j) * 64 + 16 * (t % 4);
                int32_t s = 0;
                for (int i = 0; i < 16; ++i) s += q[i];
                tsum[t][j] = 4 * s;
            } else {
                tsum[t][j] = split_bsum(sums[af.sum_index(t, j)]);
            }
        }
    }

    for (int g = 0; g < kRowGroups; ++g) {
        __m512i sc[kSubBlocks], mn[kSubBlocks];
        const uint8_t * sb = w + P::scales + g * P::scale_units * abi::kRowGroup;
        if (Q3) {
            __m512i b[12];
            for (int u = 0; u < 12; ++u) b[u] = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(sb + 16 * u)));
            for (int j = 0; j < kSubBlocks; ++j) {
                const __m512i lo = _mm512_and_si512(_mm512_srli_epi32(b[j % 8], 4 * (j / 8)), _mm512_set1_epi32(15));
                const __m512i hi = _mm512_and_si512(_mm512_srli_epi32(b[8 + j % 4], 2 * (j / 4)), _mm512_set1_epi32(3));
                sc[j] = _mm512_sub_epi32(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 4)), _mm512_set1_epi32(32));
            }
        } else {
            for (int j = 0; j < kSubBlocks; ++j) {
                const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(sb + 16 * j)));
                sc[j] = _mm512_and_si512(b, _mm512_set1_epi32(15));
                mn[j] = _mm512_srli_epi32(b, 4);
            }
        }
        // fp16 -> fp32 by F16C: exact for every non-NaN value; NaNs only feed mul_rne, which
        // returns its canonical NaN whatever the payload.
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + P::d + 32 * g)));
        const __m512 dmin =
            Q3 ? _mm512_setzero_ps()
               : _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + P::dmin + 32 * g)));
        __m512i wv[kTileK / 4];
        for (int ch = 0; ch < kTileK / 4; ++ch) wv[ch] = chunk_codes<Q3>(w, g, ch);

        // Four tokens (one A operand of the kernel, [token][16 K] per sub-block) at a time: four
        // independent VNNI chains whose sums stay in registers.
        for (int t0 = 0; t0 < valid; t0 += 4) {
            const int8_t * at = codes + (t0 / 4) * kSubBlocks * 64;
            __m512i sumi[4], summ[4];
#pragma GCC unroll 4
            for (int u = 0; u < 4; ++u) sumi[u] = summ[u] = _mm512_setzero_si512();
            for (int j = 0; j < kSubBlocks; ++j) {
                const int8_t * aj = at + 64 * j;
                __m512i dot[4];
#pragma GCC unroll 4
                for (int u = 0; u < 4; ++u) dot[u] = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int cc = 0; cc < 4; ++cc) {
                    const __m512i wc = wv[4 * j + cc];
#pragma GCC unroll 4
                    for (int u = 0; u < 4; ++u) {
                        int32_t a4;
                        std::memcpy(&a4, aj + 16 * u + 4 * cc, 4);
                        dot[u] = _mm512_dpbusd_epi32(dot[u], wc, _mm512_set1_epi32(a4));
                    }
                }
#pragma GCC unroll 4
                for (int u = 0; u < 4; ++u) {
                    if (Q3) {
                        const __m512i dv = _mm512_sub_epi32(dot[u], _mm512_set1_epi32(tsum[t0 + u][j]));
                        sumi[u] = _mm512_add_epi32(sumi[u], _mm512_mullo_epi32(dv, sc[j]));
                    } else {
                        sumi[u] = _mm512_add_epi32(sumi[u], _mm512_mullo_epi32(dot[u], sc[j]));
                        summ[u] = _mm512_add_epi32(summ[u], _mm512_mullo_epi32(mn[j], _mm512_set1_epi32(tsum[t0 + u][j])));
                    }
                }
            }
#pragma GCC unroll 4
            for (int u = 0; u < 4; ++u) {
                const int t = t0 + u;
                const __m512 sa = _mm512_set1_ps(scales[af.scale_index(t, 0)]);
                __m512 z = mul_rne16(mul_rne16(d, sa), _mm512_cvtepi32_ps(sumi[u]));
                if (!Q3) z = _mm512_sub_ps(z, mul_rne16(mul_rne16(dmin, sa), _mm512_cvtepi32_ps(summ[u])));
                float * out = c + t * abi::kTileM + g * abi::kRowGroup;
                _mm512_storeu_ps(out, _mm512_add_ps(_mm512_loadu_ps(out), z));
            }
        }
    }
}

#endif  // XDNA_LOW_TWIN_X86

bool g_force_scalar = false;

template <bool Q3, int TN> void tile(const uint8_t * w, const uint8_t * a, float * c, int valid = TN) {
    valid = std::min(TN, (valid + 3) / 4 * 4);
#ifdef XDNA_LOW_TWIN_X86
    if (kquant_low_twin_vectorised()) {
        vector_tile<Q3, TN>(w, a, c, valid);
        return;
    }
#endif
    scalar_tile<Q3, TN>(w, a, c, valid);
}

}  // namespace

bool kquant_low_twin_vectorised() {
#ifdef XDNA_LOW_TWIN_X86
    static const bool host_has = twin_host_has_avx512_isa();
    return host_has && !g_force_scalar;
#else
    return false;
#endif
}

void kquant_low_twin_force_scalar(bool on) { g_force_scalar = on; }

void kquant_low_twin_tile(int type_id, int tile_n, const uint8_t * w, const uint8_t * a, float * c, int valid_tokens) {
    const bool n4 = tile_n == 4;
    if (type_id == 0) {
        n4 ? tile<false, 4>(w, a, c, valid_tokens) : tile<false, 32>(w, a, c, valid_tokens);
    } else {
        n4 ? tile<true, 4>(w, a, c, valid_tokens) : tile<true, 32>(w, a, c, valid_tokens);
    }
}

extern "C" {
void twin_mm_q2_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c) { tile<false, 4>(w, a, c); }
void twin_mm_q2_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c) { tile<false, 32>(w, a, c); }
void twin_mm_q3_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c) { tile<true, 4>(w, a, c); }
void twin_mm_q3_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c) { tile<true, 32>(w, a, c); }
}

const KquantLowTwin kKquantLowTwins[4] = {
    {"mm_q2_K_a8_n4", twin_mm_q2_K_a8_n4},
    {"mm_q2_K_a8_n32", twin_mm_q2_K_a8_n32},
    {"mm_q3_K_a8_n4", twin_mm_q3_K_a8_n4},
    {"mm_q3_K_a8_n32", twin_mm_q3_K_a8_n32},
};

}  // namespace xdna
