#include "legacy-twin.h"

#include "host-isa.h"
#include "xdna_aie/matmul_tiles.h"

// The core's fp32 multiply, as the simulator's aie_api performs it (the 32-lane fast intrinsic the kernel calls).
#include "emulated-fp32.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace xdna {

namespace {

namespace abi = xdna_aie;
using twin::fp32_accuracy;

enum class LType { q4_0, q4_1, q5_0, q5_1, q8_0 };

template <LType T> constexpr const abi::WeightTileFormat & format() {
    return T == LType::q4_0 ? abi::fmt::q4_0
         : T == LType::q4_1 ? abi::fmt::q4_1
         : T == LType::q5_0 ? abi::fmt::q5_0
         : T == LType::q5_1 ? abi::fmt::q5_1
                            : abi::fmt::q8_0;
}
template <LType T> constexpr bool kHasMin = T == LType::q4_1 || T == LType::q5_1;
template <LType T> constexpr bool kHasH1 = T == LType::q5_0 || T == LType::q5_1;
template <LType T> constexpr int kDPlane = kHasH1<T> ? 2 : 1;

// The twin forms X = sum u * a with unsigned codes u (the GGUF code; Q8_0's int8 code + 128) and
// reaches the kernel's integer isum as X - z * A + 8 * S, A the exact sum of the block's activation
// codes and S the kernel's block sum from the sums plane (int16, wrapping like the kernel's):
//   Q4_0 dot(q4) = X - 8A;  Q4_1 dot(q4) + 8S = X - 8A + 8S;  Q5_0 X - 16A;  Q5_1 X;
//   Q8_0 16 dot(hi) + dot(lo) + 8S = X - 128A - 8A + 8S.
template <LType T> constexpr int kZ = T == LType::q5_0 ? 16 : T == LType::q5_1 ? 0 : T == LType::q8_0 ? 136 : 8;
template <LType T> constexpr bool kUsesSum = T == LType::q4_1 || T == LType::q8_0;

constexpr int kTileK = 256;
constexpr int kBlocks = kTileK / 32;
constexpr int kSteps = kTileK / abi::kKStep;
constexpr int kRowGroups = abi::kTileM / abi::kRowGroup;
constexpr int kMaxTokens = 32;


// Per token and block of one tile call: the integer correction of X, fp32 scale, fp32(S).
struct ActInfo {
    int32_t corr[kMaxTokens][kBlocks];
    float scale[kMaxTokens][kBlocks];
    float fsum[kMaxTokens][kBlocks];
};

template <LType T>
void act_info(const abi::ActTileFormat & af, const uint8_t * a, int valid, ActInfo & info) {
    const auto * codes = reinterpret_cast<const int8_t *>(a + af.codes_offset());
    const auto * scales = reinterpret_cast<const float *>(a + af.scales_offset());
    const auto * sums = reinterpret_cast<const int16_t *>(a + af.sums_offset());
    for (int t = 0; t < valid; ++t) {
        for (int b = 0; b < kBlocks; ++b) {
            int32_t exact = 0;
            for (int h = 0; h < 2; ++h) {
                const int8_t * run = codes + af.code_index(t, 32 * b + 16 * h);  // 16 contiguous codes
                for (int k = 0; k < 16; ++k) exact += run[k];
            }
            const auto s = static_cast<int16_t>(sums[af.sum_index(t, 2 * b)] + sums[af.sum_index(t, 2 * b + 1)]);
            info.corr[t][b] = -kZ<T> * exact + (kUsesSum<T> ? 8 * s : 0);
            info.scale[t][b] = scales[af.scale_index(t, b)];
            info.fsum[t][b] = static_cast<float>(s);
        }
    }
}

// ---- portable path: one row at a time ----

template <LType T>
void portable_tile(const uint8_t * w, const uint8_t * a, float * c, int tn, int valid) {
    constexpr abi::WeightTileFormat f = format<T>();
    const abi::ActTileFormat af{tn, kTileK, 32};
    const fp32_accuracy acc = twin::current_accuracy();
    const auto mul = [acc](float x, float y) { return twin::emulated_mul(x, y, acc); };
    ActInfo info;
    act_info<T>(af, a, valid, info);
    const auto * codes = reinterpret_cast<const int8_t *>(a + af.codes_offset());
    const uint8_t * low = w + f.plane_offset(0);
    const uint8_t * h1 = kHasH1<T> ? w + f.plane_offset(1) : nullptr;
    for (int r = 0; r < abi::kTileM; ++r) {
        int32_t u[kTileK];
        for (int k = 0; k < kTileK; ++k) {
            const int e = abi::q_element(kTileK, r, k);
            if (T == LType::q8_0) {
                u[k] = low[e] ^ 0x80;
            } else {
                u[k] = ((low[e / 2] >> (4 * (e % 2))) & 0xF) ^ 8;
                if (kHasH1<T>) u[k] |= ((h1[e / 8] >> (e % 8)) & 1) << 4;
            }
        }
        float d[kBlocks], m[kBlocks];
        for (int b = 0; b < kBlocks; ++b) {
            uint16_t h;
            std::memcpy(&h, w + f.plane_offset(kDPlane<T>) + abi::field_offset(f, f.planes[kDPlane<T>], r, b, 0), 2);
            d[b] = twin::half_to_float(h);
            if (kHasMin<T>) {
                std::memcpy(&h, w + f.plane_offset(kDPlane<T> + 1) + abi::field_offset(f, f.planes[kDPlane<T> + 1], r, b, 0), 2);
                m[b] = twin::half_to_float(h);
            }
        }
        for (int t = 0; t < valid; ++t) {
            float & out = c[t * abi::kTileM + r];
            for (int b = 0; b < kBlocks; ++b) {
                int32_t x = 0;
                for (int k = 32 * b; k < 32 * (b + 1); ++k) x += u[k] * codes[af.code_index(t, k)];
                const float fi = static_cast<float>(x + info.corr[t][b]);
                const float p = mul(d[b], info.scale[t][b]);
                float v = mul(p, fi);
                if (kHasMin<T>) {
                    const float q = mul(m[b], info.scale[t][b]);
                    v = v + mul(q, info.fsum[t][b]);
                }
                out = out + v;
            }
        }
    }
}

// ---- AVX-512 path: a row group (16 rows = 16 lanes) at a time, as the kernel works ----

#if defined(__x86_64__)
#define LEGACY_TWIN_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vnni,f16c")))

struct alignas(64) Shuffles {
    uint8_t nib[64];    // byte e <- source byte e / 2 (two nibbles per byte)
    uint8_t lanes[64];  // [4 K][16 rows] -> [16 rows][4 K]: each int32 lane holds 4 K values of its row
};

constexpr Shuffles make_shuffles() {
    Shuffles s{};
    for (int e = 0; e < 64; ++e) {
        s.nib[e] = static_cast<uint8_t>(e / 2);
        s.lanes[e] = static_cast<uint8_t>(16 * (e % 4) + e / 4);
    }
    return s;
}

constexpr Shuffles kShuffles = make_shuffles();

// Unsigned codes of K values 64 s + 16 * 4j ... of row group rg: lane r holds K = 16 s + 4 j .. + 3 of
// its row (s: mmul K step, j: 0..3).
template <LType T>
LEGACY_TWIN_TARGET inline __m512i chunk_codes(const uint8_t * low, const uint8_t * h1, int rg, int s, int j) {
    const int step = rg * kSteps + s;
    __m512i code;
    if constexpr (T == LType::q8_0) {
        code = _mm512_xor_si512(_mm512_loadu_si512(low + step * 256 + 64 * j), _mm512_set1_epi8(static_cast<char>(0x80)));
    } else {
        const __m512i x = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(low + step * 128 + 32 * j)));
        const __m512i rep = _mm512_permutexvar_epi8(_mm512_load_si512(kShuffles.nib), x);
        const __m512i low4 = _mm512_set1_epi8(0x0F);
        const __m512i lo = _mm512_and_si512(rep, low4);
        const __m512i hn = _mm512_and_si512(_mm512_srli_epi16(rep, 4), low4);
        code = _mm512_xor_si512(_mm512_mask_blend_epi8(0xAAAAAAAAAAAAAAAAull, lo, hn), _mm512_set1_epi8(8));
        if constexpr (kHasH1<T>) {
            uint64_t bits;
            std::memcpy(&bits, h1 + step * 32 + 8 * j, 8);
            code = _mm512_or_si512(code, _mm512_maskz_set1_epi8(bits, 0x10));
        }
    }
    return _mm512_permutexvar_epi8(_mm512_load_si512(kShuffles.lanes), code);
}

using twin::Parts;
using twin::split;

LEGACY_TWIN_TARGET inline Parts splat(const float (&s)[3]) {
    return {_mm512_set1_ps(s[0]), _mm512_set1_ps(s[1]), _mm512_set1_ps(s[2])};
}

// The emulated product of split operands (emulated-fp32.h).
LEGACY_TWIN_TARGET inline __m512 emul(const Parts & x, const Parts & y, fp32_accuracy acc) { return twin::emulated_mul(x, y, acc); }

template <LType T>
LEGACY_TWIN_TARGET void vector_tile(const uint8_t * w, const uint8_t * a, float * c, int tn, int valid) {
    constexpr abi::WeightTileFormat f = format<T>();
    const abi::ActTileFormat af{tn, kTileK, 32};
    const fp32_accuracy acc = twin::current_accuracy();
    ActInfo info;
    act_info<T>(af, a, valid, info);
    // The scalar operands' splits, once per tile call.
    float sa_parts[kMaxTokens][kBlocks][3], fs_parts[kMaxTokens][kBlocks][3];
    for (int t = 0; t < valid; ++t) {
        for (int b = 0; b < kBlocks; ++b) {
            const auto sp = twin::split_scalar(info.scale[t][b]);
            sa_parts[t][b][0] = sp.hi, sa_parts[t][b][1] = sp.mid, sa_parts[t][b][2] = sp.lo;
            const auto fp = twin::split_scalar(info.fsum[t][b]);
            fs_parts[t][b][0] = fp.hi, fs_parts[t][b][1] = fp.mid, fs_parts[t][b][2] = fp.lo;
        }
    }
    const auto * codes = reinterpret_cast<const int8_t *>(a + af.codes_offset());
    const uint8_t * low = w + f.plane_offset(0);
    const uint8_t * h1 = kHasH1<T> ? w + f.plane_offset(1) : nullptr;
    const uint8_t * dplane = w + f.plane_offset(kDPlane<T>);
    const uint8_t * mplane = kHasMin<T> ? w + f.plane_offset(kDPlane<T> + 1) : nullptr;

    for (int rg = 0; rg < kRowGroups; ++rg) {
        // The row group's codes, unpacked once (4 KB, stays in L1), then streamed past every token.
        __m512i wv[kSteps][4];
        for (int s = 0; s < kSteps; ++s) {
            for (int j = 0; j < 4; ++j) wv[s][j] = chunk_codes<T>(low, h1, rg, s, j);
        }
        Parts d[kBlocks], m[kBlocks];
        for (int b = 0; b < kBlocks; ++b) {
            const int field = (rg * kBlocks + b) * abi::kRowGroup * 2;
            d[b] = split(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(dplane + field))));
            if constexpr (kHasMin<T>) {
                m[b] = split(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(mplane + field))));
            }
        }
        // Four tokens at a time: four independent chains for the out-of-order core to overlap.
        for (int t0 = 0; t0 < valid; t0 += 4) {
            __m512 cv[4];
            for (int u = 0; u < 4; ++u) cv[u] = _mm512_loadu_ps(c + (t0 + u) * abi::kTileM + rg * abi::kRowGroup);
            for (int b = 0; b < kBlocks; ++b) {
                __m512i x[4];
                for (int u = 0; u < 4; ++u) x[u] = _mm512_set1_epi32(info.corr[t0 + u][b]);
                for (int s = 2 * b; s < 2 * b + 2; ++s) {
                    for (int j = 0; j < 4; ++j) {
                        for (int u = 0; u < 4; ++u) {
                            int32_t a4;
                            std::memcpy(&a4, codes + af.code_index(t0 + u, 16 * s + 4 * j), 4);
                            x[u] = _mm512_dpbusd_epi32(x[u], wv[s][j], _mm512_set1_epi32(a4));
                        }
                    }
                }
                for (int u = 0; u < 4; ++u) {
                    const Parts sa = splat(sa_parts[t0 + u][b]);
                    const __m512 p = emul(d[b], sa, acc);
                    __m512 v = emul(split(p), split(_mm512_cvtepi32_ps(x[u])), acc);
                    if constexpr (kHasMin<T>) {
                        const __m512 q = emul(m[b], sa, acc);
                        v = _mm512_add_ps(v, emul(split(q), splat(fs_parts[t0 + u][b]), acc));
                    }
                    cv[u] = _mm512_add_ps(cv[u], v);
                }
            }
            for (int u = 0; u < 4; ++u) _mm512_storeu_ps(c + (t0 + u) * abi::kTileM + rg * abi::kRowGroup, cv[u]);
        }
    }
}
#endif

bool g_force_scalar = false;

template <LType T, int TN>
void tile_partial(const uint8_t * w, const uint8_t * a, float * c, int valid_tokens) {
    int valid = (valid_tokens + 3) / 4 * 4;
    if (valid > TN) valid = TN;
    if (valid < 0) valid = 0;
#if defined(__x86_64__)
    if (legacy_twin_vectorised()) {
        vector_tile<T>(w, a, c, TN, valid);
        return;
    }
#endif
    portable_tile<T>(w, a, c, TN, valid);
}

template <LType T, int TN>
void tile(const uint8_t * w, const uint8_t * a, float * c) {
    tile_partial<T, TN>(w, a, c, TN);
}

#define LEGACY_TWIN_ENTRY(name, T, TN) {"mm_" #name "_a8_n" #TN, tile<LType::T, TN>, tile_partial<LType::T, TN>}

const LegacyTwin kTwins[] = {
    LEGACY_TWIN_ENTRY(q4_0, q4_0, 4), LEGACY_TWIN_ENTRY(q4_0, q4_0, 32), LEGACY_TWIN_ENTRY(q4_1, q4_1, 4),
    LEGACY_TWIN_ENTRY(q4_1, q4_1, 32), LEGACY_TWIN_ENTRY(q5_0, q5_0, 4), LEGACY_TWIN_ENTRY(q5_0, q5_0, 32),
    LEGACY_TWIN_ENTRY(q5_1, q5_1, 4), LEGACY_TWIN_ENTRY(q5_1, q5_1, 32), LEGACY_TWIN_ENTRY(q8_0, q8_0, 4),
    LEGACY_TWIN_ENTRY(q8_0, q8_0, 32),
};
#undef LEGACY_TWIN_ENTRY

}  // namespace

extern "C" {
void twin_mm_q4_0_a8_n4(const uint8_t * w, const uint8_t * a, float * c) { tile<LType::q4_0, 4>(w, a, c); }
void twin_mm_q4_0_a8_n32(const uint8_t * w, const uint8_t * a, float * c) { tile<LType::q4_0, 32>(w, a, c); }
void twin_mm_q4_1_a8_n4(const uint8_t * w, const uint8_t * a, float * c) { tile<LType::q4_1, 4>(w, a, c); }
void twin_mm_q4_1_a8_n32(const uint8_t * w, const uint8_t * a, float * c) { tile<LType::q4_1, 32>(w, a, c); }
void twin_mm_q5_0_a8_n4(const uint8_t * w, const uint8_t * a, float * c) { tile<LType::q5_0, 4>(w, a, c); }
void twin_mm_q5_0_a8_n32(const uint8_t * w, const uint8_t * a, float * c) { tile<LType::q5_0, 32>(w, a, c); }
void twin_mm_q5_1_a8_n4(const uint8_t * w, const uint8_t * a, float * c) { tile<LType::q5_1, 4>(w, a, c); }
void twin_mm_q5_1_a8_n32(const uint8_t * w, const uint8_t * a, float * c) { tile<LType::q5_1, 32>(w, a, c); }
void twin_mm_q8_0_a8_n4(const uint8_t * w, const uint8_t * a, float * c) { tile<LType::q8_0, 4>(w, a, c); }
void twin_mm_q8_0_a8_n32(const uint8_t * w, const uint8_t * a, float * c) { tile<LType::q8_0, 32>(w, a, c); }
}

const LegacyTwin * legacy_twin(const char * kernel_name) {
    if (kernel_name == nullptr) return nullptr;
    for (const LegacyTwin & t : kTwins) {
        if (std::strcmp(t.kernel, kernel_name) == 0) return &t;
    }
    return nullptr;
}

const LegacyTwin * legacy_twins(int * count) {
    if (count != nullptr) *count = static_cast<int>(sizeof kTwins / sizeof kTwins[0]);
    return kTwins;
}

void legacy_twin_force_scalar(bool on) { g_force_scalar = on; }

bool legacy_twin_vectorised() {
#if defined(__x86_64__)
    static const bool host_has = twin_host_has_avx512_isa();
    return host_has && !g_force_scalar;
#else
    return false;
#endif
}

}  // namespace xdna
