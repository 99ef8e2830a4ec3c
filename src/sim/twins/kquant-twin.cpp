#include "kquant-twin.h"

#include "emulated-fp32.h"
#include "host-isa.h"
#include "kquant-twin-avx2.h"
#include "xdna_aie/matmul_tiles.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace xdna {

namespace {

namespace abi = xdna_aie;

enum class KType { q4_K, q5_K, q6_K };

template <KType T> constexpr const abi::WeightTileFormat & format() {
    return T == KType::q4_K ? abi::fmt::q4_K : T == KType::q5_K ? abi::fmt::q5_K : abi::fmt::q6_K;
}

// Plane indices (matmul_tiles.h): codes first, then the 12 (16 for Q6_K) scale bytes, d, dmin.
template <KType T> constexpr int kScalesPlane = T == KType::q4_K ? 1 : 2;
template <KType T> constexpr int kSubBlocks = T == KType::q6_K ? 16 : 8;  // per 256-value super-block
constexpr int kTileK = 256;
constexpr int kRowGroups = abi::kTileM / abi::kRowGroup;

// 6-bit scale and min j of a Q4_K/Q5_K super-block from its 12 scale bytes (ggml's get_scale_min_k4).
inline void scale_min_k4(const uint8_t * b, int j, int & sc, int & m) {
    if (j < 4) {
        sc = b[j] & 63;
        m = b[j + 4] & 63;
    } else {
        sc = (b[j + 4] & 0xF) | ((b[j - 4] >> 6) << 4);
        m = (b[j + 4] >> 4) | ((b[j] >> 6) << 4);
    }
}

// ---- portable path: one row at a time, straight from the planes ----

template <KType T, int TN>
void scalar_tile(const uint8_t * w, const uint8_t * a, float * c, int valid) {
    constexpr abi::WeightTileFormat f = format<T>();
    constexpr abi::ActTileFormat af{TN, kTileK, kTileK};
    constexpr int sp = kScalesPlane<T>;
    constexpr int nsub = kSubBlocks<T>;
    constexpr int sub_len = kTileK / nsub;
    const auto * codes = reinterpret_cast<const int8_t *>(a + af.codes_offset());
    const auto * scales = reinterpret_cast<const float *>(a + af.scales_offset());
    const auto * sums = reinterpret_cast<const int16_t *>(a + af.sums_offset());
    const uint8_t * q4 = w + f.plane_offset(0);
    const uint8_t * hi = w + f.plane_offset(1);
    for (int r = 0; r < abi::kTileM; ++r) {
        int q[kTileK];
        for (int k = 0; k < kTileK; ++k) {
            const int e = abi::q_element(kTileK, r, k);
            int v = ((q4[e / 2] >> (4 * (e % 2))) & 0xF) ^ 8;
            if (T == KType::q5_K) v |= ((hi[e / 8] >> (e % 8)) & 1) << 4;
            if (T == KType::q6_K) v |= ((hi[e / 4] >> (2 * (e % 4))) & 3) << 4;
            q[k] = v;
        }
        int sc[16], mn[16] = {};
        uint8_t sbytes[16];
        const abi::Plane & p = f.planes[sp];
        for (int u = 0; u < p.units; ++u) sbytes[u] = w[f.plane_offset(sp) + abi::field_offset(f, p, r, 0, u)];
        for (int j = 0; j < nsub; ++j) {
            if (T == KType::q6_K) {
                sc[j] = static_cast<int8_t>(sbytes[j]);
            } else {
                scale_min_k4(sbytes, j, sc[j], mn[j]);
            }
        }
        uint16_t dh = 0, dminh = 0;
        std::memcpy(&dh, w + f.plane_offset(sp + 1) + abi::field_offset(f, f.planes[sp + 1], r, 0, 0), 2);
        if (T != KType::q6_K) {
            std::memcpy(&dminh, w + f.plane_offset(sp + 2) + abi::field_offset(f, f.planes[sp + 2], r, 0, 0), 2);
        }
        const float d = twin::half_to_float(dh), dmin = twin::half_to_float(dminh);
        for (int t = 0; t < valid; ++t) {
            int32_t sumi = 0, summ = 0;
            for (int j = 0; j < nsub; ++j) {
                int32_t dot = 0, s = 0;
                for (int i = j * sub_len; i < (j + 1) * sub_len; ++i) dot += q[i] * codes[af.code_index(t, i)];
                for (int g = j * sub_len / 16; g < (j + 1) * sub_len / 16; ++g) s += sums[af.sum_index(t, g)];
                if (T == KType::q6_K) {
                    sumi += sc[j] * (dot - 32 * s);
                } else {
                    sumi += sc[j] * dot;
                    summ += mn[j] * s;
                }
            }
            // fp32 products as the core computes them (emulated-fp32.h); the adds are IEEE.
            const twin::fp32_accuracy acc = twin::current_accuracy();
            const float sa = scales[af.scale_index(t, 0)];
            const float pd = twin::emulated_mul(d, sa, acc);
            float & out = c[t * abi::kTileM + r];
            float val = twin::emulated_mul(pd, static_cast<float>(sumi), acc);
            if (T != KType::q6_K) {
                const float pm = twin::emulated_mul(dmin, sa, acc);
                val = val - twin::emulated_mul(pm, static_cast<float>(summ), acc);
            }
            out = out + val;
        }
    }
}

// ---- AVX-512 path: a row group (16 rows = 16 int32 lanes) at a time, as the core kernel works ----

#define XDNA_TWIN_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vnni,f16c")))

struct alignas(64) Shuffles {
    // Output byte p = 4r + j of a chunk (int32 lane r = row, byte j = K offset) takes code e = 16j + r.
    uint8_t nib_pair[2][64];  // from lo/hi nibble vectors of two chunks: byte 8j + r/2 (+32 for the
                              // second chunk), from the high-nibble vector (+64) for odd rows
    uint8_t crumb[64];        // q2 plane: byte e / 4 of the chunk's 16 bytes
    uint8_t crumb_shift[64];  // bit offset of code e's two bits in its qword after `crumb`
    uint8_t lanes[64];        // [4 K][16 rows] -> [16 rows][4 K]
};

constexpr Shuffles make_shuffles() {
    Shuffles s{};
    for (int p = 0; p < 64; ++p) {
        const int r = p / 4, j = p % 4, e = 16 * j + r;
        for (int half = 0; half < 2; ++half) {
            s.nib_pair[half][p] = static_cast<uint8_t>(32 * half + 8 * j + r / 2 + (r % 2 ? 64 : 0));
        }
        s.crumb[p] = static_cast<uint8_t>(e / 4);
        s.crumb_shift[p] = static_cast<uint8_t>(8 * (p % 8) + 2 * (e % 4));
        s.lanes[p] = static_cast<uint8_t>(e);
    }
    return s;
}

constexpr Shuffles kShuffles = make_shuffles();

// Unsigned codes of a row group's 64 chunks (chunk ch = K 4ch .. 4ch+3), one int32 lane per row holding
// that row's 4 codes: the layout VNNI multiplies against 4 consecutive activations.
// `ahead`: the next tile, whose lines [first_line, end_line) are prefetched over the unpacking loop, a
// line or two per step: issued at once, most prefetches would find the miss queues full (as the AVX2
// path measured: kquant-twin-avx2.cpp vector_tile).
template <KType T>
XDNA_TWIN_TARGET inline void unpack_row_group(const uint8_t * q4, const uint8_t * hi, int g, __m512i * wv, const uint8_t * ahead,
                                              int first_line, int end_line) {
    const __m512i idx0 = _mm512_load_si512(kShuffles.nib_pair[0]);
    const __m512i idx1 = _mm512_load_si512(kShuffles.nib_pair[1]);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x88));  // q4 holds code ^ 8 per nibble
    constexpr int kSteps = kTileK / 8;
    for (int ch = 0; ch < kTileK / 4; ch += 2) {
        const int step = ch / 2, lines = end_line - first_line;
        for (int l = first_line + lines * step / kSteps; l < first_line + lines * (step + 1) / kSteps; ++l) {
            _mm_prefetch(reinterpret_cast<const char *>(ahead + 64 * l), _MM_HINT_T0);
        }
        const __m512i x = _mm512_xor_si512(_mm512_loadu_si512(q4 + g * 2048 + 32 * ch), flip);
        const __m512i lo = _mm512_and_si512(x, low4);
        const __m512i hn = _mm512_and_si512(_mm512_srli_epi16(x, 4), low4);
        wv[ch] = _mm512_permutex2var_epi8(lo, idx0, hn);
        wv[ch + 1] = _mm512_permutex2var_epi8(lo, idx1, hn);
    }
    if (T == KType::q5_K) {
        const __m512i lanes = _mm512_load_si512(kShuffles.lanes);
        for (int ch = 0; ch < kTileK / 4; ++ch) {
            uint64_t bits;
            std::memcpy(&bits, hi + g * 512 + 8 * ch, 8);
            wv[ch] = _mm512_or_si512(wv[ch], _mm512_permutexvar_epi8(lanes, _mm512_maskz_set1_epi8(bits, 0x10)));
        }
    } else if (T == KType::q6_K) {
        const __m512i crumb = _mm512_load_si512(kShuffles.crumb);
        const __m512i shift = _mm512_load_si512(kShuffles.crumb_shift);
        const __m512i three = _mm512_set1_epi8(3);
        for (int ch = 0; ch < kTileK / 4; ++ch) {
            const __m512i y = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i *>(hi + g * 1024 + 16 * ch)));
            const __m512i two = _mm512_and_si512(_mm512_multishift_epi64_epi8(shift, _mm512_permutexvar_epi8(crumb, y)), three);
            wv[ch] = _mm512_or_si512(wv[ch], _mm512_slli_epi16(two, 4));
        }
    }
}

// Row group `g`, tokens t0 .. t0 + NU - 1: integer sums, then the epilogue into C.
// d, dmin and each token's activation scale come split into their bf16 parts (a value's split does not
// depend on what it multiplies: made once per row group and once per tile).
template <KType T, int TN, int NU>
XDNA_TWIN_TARGET inline void token_group(const __m512i * wv, const __m512i * sc, const __m512i * mn, const twin::Parts & d,
                                         const twin::Parts & dmin, const int8_t * codes, const twin::Parts * sa,
                                         const int16_t * sums, int g, int t0, float * c) {
    constexpr abi::ActTileFormat af{TN, kTileK, kTileK};
    constexpr int nsub = kSubBlocks<T>;
    constexpr int chunks_per_sub = (kTileK / 4) / nsub;
    __m512i sumi[NU], summ[NU];
    for (int u = 0; u < NU; ++u) {
        sumi[u] = _mm512_setzero_si512();
        summ[u] = _mm512_setzero_si512();
    }
    // Independent VNNI chains: P partial sums per token, so even one token keeps several in flight.
    constexpr int P = NU == 1 ? 4 : NU == 2 ? 2 : 1;
    // Token t0 + u's 4 codes of chunk ch are at[code_index(u, 4 ch)] (t0 a multiple of 4): a sub-block's
    // chunks are whole K steps of 4 tokens' 16 codes, so with its chunk loop unrolled every load is at a
    // constant offset from `at`, which moves on by a sub-block's codes (no index arithmetic per product).
    static_assert(chunks_per_sub % 4 == 0 && af.code_index(0, 4 * chunks_per_sub) == 16 * chunks_per_sub, "whole K steps");
    const int8_t * at = codes + af.code_index(t0, 0);
    for (int j = 0; j < nsub; ++j, at += 16 * chunks_per_sub) {
        __m512i part[NU][P];
        for (int u = 0; u < NU; ++u)
            for (int q = 0; q < P; ++q) part[u][q] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int cc = 0; cc < chunks_per_sub; ++cc) {
            const __m512i w4 = wv[j * chunks_per_sub + cc];
            for (int u = 0; u < NU; ++u) {
                int32_t a4;
                std::memcpy(&a4, at + af.code_index(u, 4 * cc), 4);
                part[u][cc % P] = _mm512_dpbusd_epi32(part[u][cc % P], w4, _mm512_set1_epi32(a4));
            }
        }
        __m512i dot[NU];
        for (int u = 0; u < NU; ++u) {
            dot[u] = part[u][0];
            for (int q = 1; q < P; ++q) dot[u] = _mm512_add_epi32(dot[u], part[u][q]);  // exact: int32
        }
        for (int u = 0; u < NU; ++u) {
            int32_t s = 0;
            for (int k16 = j * chunks_per_sub / 4; k16 < (j + 1) * chunks_per_sub / 4; ++k16) s += sums[af.sum_index(t0 + u, k16)];
            if (T == KType::q6_K) {
                const __m512i dq = _mm512_sub_epi32(dot[u], _mm512_set1_epi32(32 * s));
                sumi[u] = _mm512_add_epi32(sumi[u], _mm512_mullo_epi32(dq, sc[j]));
            } else {
                sumi[u] = _mm512_add_epi32(sumi[u], _mm512_mullo_epi32(dot[u], sc[j]));
                summ[u] = _mm512_add_epi32(summ[u], _mm512_mullo_epi32(mn[j], _mm512_set1_epi32(s)));
            }
        }
    }
    const twin::fp32_accuracy acc = twin::current_accuracy();
    for (int u = 0; u < NU; ++u) {
        const int t = t0 + u;
        const __m512 pd = twin::emulated_mul(d, sa[t], acc);
        __m512 val = twin::emulated_mul(pd, _mm512_cvtepi32_ps(sumi[u]), acc);
        if (T != KType::q6_K) {
            const __m512 pm = twin::emulated_mul(dmin, sa[t], acc);
            val = _mm512_sub_ps(val, twin::emulated_mul(pm, _mm512_cvtepi32_ps(summ[u]), acc));
        }
        float * out = c + t * abi::kTileM + g * abi::kRowGroup;
        _mm512_storeu_ps(out, _mm512_add_ps(_mm512_loadu_ps(out), val));
    }
}

// Tokens at or beyond `valid` are skipped: their C rows are left as they are.
template <KType T, int TN>
XDNA_TWIN_TARGET void vector_tile(const uint8_t * w, const uint8_t * a, float * c, int valid) {
    constexpr abi::WeightTileFormat f = format<T>();
    constexpr abi::ActTileFormat af{TN, kTileK, kTileK};
    constexpr int sp = kScalesPlane<T>;
    const auto * codes = reinterpret_cast<const int8_t *>(a + af.codes_offset());
    const auto * scales = reinterpret_cast<const float *>(a + af.scales_offset());
    const auto * sums = reinterpret_cast<const int16_t *>(a + af.sums_offset());
    const uint8_t * q4 = w + f.plane_offset(0);
    const uint8_t * hi = w + f.plane_offset(1);
    const uint8_t * sbytes = w + f.plane_offset(sp);
    const int units = f.planes[sp].units;
    // The simulator walks K tiles in memory order: fetch the next tile while this one is computed (a
    // hint only: it never faults, past the end of the buffer included), a quarter of its lines over
    // each row group's unpacking.
    const uint8_t * ahead = w + f.tile_bytes();
    constexpr int kLines = (f.tile_bytes() + 63) / 64;

    twin::Parts sa[TN];  // each token's activation scale, split
    for (int t = 0; t < valid; ++t) sa[t] = twin::split(_mm512_set1_ps(scales[af.scale_index(t, 0)]));

    for (int g = 0; g < kRowGroups; ++g) {
        __m512i sc[16], mn[8];
        if (T == KType::q6_K) {
            for (int j = 0; j < 16; ++j) {
                sc[j] = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(sbytes + (g * units + j) * 16)));
            }
        } else {
            __m512i b[12];
            for (int u = 0; u < 12; ++u) {
                b[u] = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(sbytes + (g * units + u) * 16)));
            }
            const __m512i m63 = _mm512_set1_epi32(63), m15 = _mm512_set1_epi32(15);
            for (int j = 0; j < 8; ++j) {
                if (j < 4) {
                    sc[j] = _mm512_and_si512(b[j], m63);
                    mn[j] = _mm512_and_si512(b[j + 4], m63);
                } else {
                    sc[j] = _mm512_or_si512(_mm512_and_si512(b[j + 4], m15), _mm512_slli_epi32(_mm512_srli_epi32(b[j - 4], 6), 4));
                    mn[j] = _mm512_or_si512(_mm512_srli_epi32(b[j + 4], 4), _mm512_slli_epi32(_mm512_srli_epi32(b[j], 6), 4));
                }
            }
        }
        const twin::Parts d = twin::split(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + f.plane_offset(sp + 1) + g * 32))));
        const twin::Parts dmin = twin::split(T == KType::q6_K ? _mm512_setzero_ps()
                                                              : _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(
                                                                    w + f.plane_offset(sp + 2) + g * 32))));
        // The row group's codes, unpacked once (4 KB, stays in L1), then streamed past every token.
        __m512i wv[kTileK / 4];
        unpack_row_group<T>(q4, hi, g, wv, ahead, kLines * g / kRowGroups, kLines * (g + 1) / kRowGroups);
        // Four tokens at a time: four independent VNNI chains, their sums kept in registers.
        for (int t0 = 0; t0 < valid; t0 += 4) {
            switch (std::min(4, valid - t0)) {
                case 1: token_group<T, TN, 1>(wv, sc, mn, d, dmin, codes, sa, sums, g, t0, c); break;
                case 2: token_group<T, TN, 2>(wv, sc, mn, d, dmin, codes, sa, sums, g, t0, c); break;
                case 3: token_group<T, TN, 3>(wv, sc, mn, d, dmin, codes, sa, sums, g, t0, c); break;
                default: token_group<T, TN, 4>(wv, sc, mn, d, dmin, codes, sa, sums, g, t0, c); break;
            }
        }
    }
}

template <KType T, int TN>
void tile(const uint8_t * w, const uint8_t * a, float * c, int valid = TN) {
    valid = std::max(0, std::min(TN, valid));
    switch (kquant_twin_isa()) {
        case TwinIsa::avx512: vector_tile<T, TN>(w, a, c, valid); break;
        case TwinIsa::avx2: kquant_twin_tile_avx2(static_cast<int>(T), TN, w, a, c, valid); break;
        default: scalar_tile<T, TN>(w, a, c, valid); break;
    }
}

}  // namespace

void kquant_twin_tile(int type_id, int tile_n, const uint8_t * w, const uint8_t * a, float * c, int valid_tokens) {
    const bool n4 = tile_n == 4;
    switch (type_id) {
        case 0: n4 ? tile<KType::q4_K, 4>(w, a, c, valid_tokens) : tile<KType::q4_K, 32>(w, a, c, valid_tokens); break;
        case 1: n4 ? tile<KType::q5_K, 4>(w, a, c, valid_tokens) : tile<KType::q5_K, 32>(w, a, c, valid_tokens); break;
        default: n4 ? tile<KType::q6_K, 4>(w, a, c, valid_tokens) : tile<KType::q6_K, 32>(w, a, c, valid_tokens); break;
    }
}

namespace {
TwinIsa g_limit = TwinIsa::avx512;
}

void kquant_twin_force_scalar(bool on) { g_limit = on ? TwinIsa::portable : TwinIsa::avx512; }

void kquant_twin_limit_isa(TwinIsa max) { g_limit = max; }

TwinIsa kquant_twin_isa() {
    static const TwinIsa host = twin_host_isa();
    return std::min(host, g_limit);
}

bool kquant_twin_vectorised() { return kquant_twin_isa() != TwinIsa::portable; }

extern "C" {
void twin_mm_q4_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c) { tile<KType::q4_K, 4>(w, a, c); }
void twin_mm_q4_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c) { tile<KType::q4_K, 32>(w, a, c); }
void twin_mm_q5_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c) { tile<KType::q5_K, 4>(w, a, c); }
void twin_mm_q5_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c) { tile<KType::q5_K, 32>(w, a, c); }
void twin_mm_q6_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c) { tile<KType::q6_K, 4>(w, a, c); }
void twin_mm_q6_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c) { tile<KType::q6_K, 32>(w, a, c); }
}

}  // namespace xdna
