#include "kquant-bfp16-twin.h"

#include "host-isa.h"
#include "xdna_aie/matmul_tiles.h"

#include <aie_api/host/bfp16.hpp>
#include <aie_api/host/rounding.hpp>

#include <algorithm>
#include <atomic>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace xdna {

namespace {

using namespace xdna_aie;

constexpr int kTK = 256, kKB = kTK / kBfp16Block, kTN = 32, kRows = kTileM;
// Token tile 64 (Q4_K, Q5_K): A in two K halves, each a BlockActTileFormat{64, 128} object, the halves
// one object apart (the kernel's two calls per K tile).
constexpr int kTN64 = 64, kHalfTK = kTK / 2, kHalfKB = kHalfTK / kBfp16Block;
constexpr int kHalfObject = BlockActTileFormat{kTN64, kHalfTK}.tile_bytes();

// ---- the kernel's dequantization, value by value (mm_kquant_bfp16.cc steps 1-3) -----------------

float half_bits_to_float(uint16_t h) {  // exact, as the kernel's integer widening
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t em = h & 0x7fffu;
    uint32_t bits;
    if (em >= 0x7c00u) {
        bits = (em << 13) + 0x70000000u;
    } else if (em >= 0x0400u) {
        bits = (em << 13) + 0x38000000u;
    } else {
        const float sub = static_cast<float>(em) * 0x1p-24f;
        std::memcpy(&bits, &sub, 4);
    }
    bits |= sign;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

float bf16(float x) {  // an accumulator lane to bf16 in conv_even, back as fp32
    return aie::detail::bf16_bits_to_float(aie::detail::float_to_bf16_bits(x, aie::rounding_mode::conv_even));
}

struct Parts {
    float hi, lo;
};
Parts split(float x) {
    const float hi = bf16(x);
    return {hi, bf16(x - hi * 1.0f)};
}

uint16_t load16(const uint8_t * p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

// The dequantized tile: per K block and row the block exponent, and the mantissas as int16 laid out
// [kb][lane][row] so the block dots run over contiguous rows.
struct DequantTile {
    uint8_t e[kKB][kRows];
    int8_t  m[kKB][kBfp16Block][kRows];
    float   ws[kKB][kBfp16Block][kRows];  // m * 2^(e - 133): exact where the fast path uses it (see there)
    float   pw[kKB][kRows];     // 2^(e - 133), exact in fp32 (a subnormal for small e)
    int     emin[kKB], emax[kKB];  // over the K block's rows with a nonzero mantissa (emax -1: none)
    // For the integer block dots (multiply_vnni): per K block and row the 8 mantissas as two words of
    // 4 bytes, and -128 times their sum (the activation mantissas enter as unsigned bytes, m + 128).
    int32_t wq[kKB][2][kRows];
    int32_t nsum[kKB][kRows];
};

template <int Type> void dequantize(const uint8_t * w, DequantTile & out) {
    constexpr const WeightTileFormat & f = Type == 0 ? fmt::q4_K : Type == 1 ? fmt::q5_K : fmt::q6_K;
    constexpr int pScales = Type == 0 ? 1 : 2, pD = Type == 0 ? 2 : 3, pDmin = Type == 0 ? 3 : Type == 1 ? 4 : -1;
    constexpr int sub = Type == 2 ? 16 : 32;
    constexpr float nb = Type == 2 ? -160.0f : -128.0f;
    const uint8_t * q4 = w + f.plane_offset(0);
    const uint8_t * hi = w + f.plane_offset(1);  // h1 (Q5_K) or q2 (Q6_K)
    for (int r = 0; r < kRows; ++r) {
        // Step 1: fields.
        int sc[16], mn[16] = {};
        if constexpr (Type == 2) {
            for (int j = 0; j < 16; ++j)
                sc[j] = static_cast<int8_t>(w[f.plane_offset(pScales) + field_offset(f, f.planes[pScales], r, 0, j)]);
        } else {
            uint8_t q[12];
            for (int u = 0; u < 12; ++u) q[u] = w[f.plane_offset(pScales) + field_offset(f, f.planes[pScales], r, 0, u)];
            for (int j = 0; j < 8; ++j) {
                if (j < 4) {
                    sc[j] = q[j] & 63;
                    mn[j] = q[j + 4] & 63;
                } else {
                    sc[j] = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
                    mn[j] = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
                }
            }
        }
        const Parts d = split(half_bits_to_float(load16(w + f.plane_offset(pD) + field_offset(f, f.planes[pD], r, 0, 0))));
        Parts dm{0.0f, 0.0f};
        if constexpr (pDmin >= 0)
            dm = split(half_bits_to_float(load16(w + f.plane_offset(pDmin) + field_offset(f, f.planes[pDmin], r, 0, 0))));
        // Step 2: per sub-block s = d_hi sc + d_lo sc, its parts, o.
        float s_hi[16], s_lo[16], o[16];
        for (int j = 0; j < kTK / sub; ++j) {
            const float scf = static_cast<float>(sc[j]);
            const float s = d.hi * scf + d.lo * scf;
            s_hi[j] = bf16(s);
            s_lo[j] = bf16(s - s_hi[j] * 1.0f);
            float oj = s_hi[j] * nb + s_lo[j] * nb;
            if constexpr (pDmin >= 0) {
                const float mf = static_cast<float>(mn[j]);
                oj = oj - dm.hi * mf;
                oj = oj - dm.lo * mf;
            }
            o[j] = oj;
        }
        // Step 3: w = (o + x s_hi) + x s_lo per value, x = 128 + b; then the row's 32 blocks of 8 K in
        // conv_even at once (the host aie_api's wide conversion where it runs: the same blocks).
        float v[kTK];
        for (int k = 0; k < kTK; ++k) {
            const int e = q_element(kTK, r, k);
            int b = ((q4[e / 2] >> (4 * (e % 2))) & 15) ^ 8;
            if constexpr (Type == 1) b |= ((hi[e / 8] >> (e % 8)) & 1) << 4;
            if constexpr (Type == 2) b |= ((hi[e / 4] >> (2 * (e % 4))) & 3) << 4;
            const float x = static_cast<float>(128 + b);
            const int j = k / sub;
            float acc = o[j] + x * s_hi[j];
            acc = acc + x * s_lo[j];
            v[k] = acc;
        }
        aie::detail::bfp16_block blk[kKB];
        aie::detail::bfp16_from_fp32_blocks(v, kKB, blk, aie::rounding_mode::conv_even);
        for (int kb = 0; kb < kKB; ++kb) {
            out.e[kb][r] = blk[kb].exponent;
            for (int i = 0; i < kBfp16Block; ++i) out.m[kb][i][r] = blk[kb].mantissa[i];
        }
    }
    for (int kb = 0; kb < kKB; ++kb) {
        out.emin[kb] = 1 << 20;
        out.emax[kb] = -1;
        for (int r = 0; r < kRows; ++r) {
            out.pw[kb][r] = std::ldexp(1.0f, int(out.e[kb][r]) - aie::detail::bfp16_value_bias);
            bool nz = false;
            for (int i = 0; i < kBfp16Block; ++i) {
                nz |= out.m[kb][i][r] != 0;
                out.ws[kb][i][r] = static_cast<float>(out.m[kb][i][r]) * out.pw[kb][r];
            }
            if (nz) {
                out.emin[kb] = std::min<int>(out.emin[kb], out.e[kb][r]);
                out.emax[kb] = std::max<int>(out.emax[kb], out.e[kb][r]);
            }
            int32_t sum = 0;
            uint8_t bytes[kBfp16Block];
            for (int i = 0; i < kBfp16Block; ++i) {
                sum += out.m[kb][i][r];
                bytes[i] = static_cast<uint8_t>(out.m[kb][i][r]);
            }
            std::memcpy(&out.wq[kb][0][r], bytes, 4);
            std::memcpy(&out.wq[kb][1][r], bytes + 4, 4);
            out.nsum[kb][r] = -128 * sum;
        }
    }
}

// Per thread, the dequantized tiles of the last weight tiles seen, checked against their bytes: the
// token tiles of one row tile come one after another and reuse its K tiles. A tile's slot is its address
// in units of the tile's size: a row tile's K tiles lie one after another, so up to kSlots of them get
// slots of their own (indexing by 64-byte lines put a Q4_K tile, 144 lines, on one of 4 slots: with more
// than 4 K tiles every call missed and dequantized again).
struct CacheSlot {
    const uint8_t *      key = nullptr;
    int                  type = -1;
    std::vector<uint8_t> bytes;
    DequantTile          tile;
};
constexpr int kSlots = 64;

const DequantTile & dequantized(int type, const uint8_t * w) {
    // Slots are made when first used: a thread that sees few tiles touches little memory.
    thread_local std::vector<std::unique_ptr<CacheSlot>> cache(kSlots);
    const size_t n = type == 0 ? fmt::q4_K.tile_bytes() : type == 1 ? fmt::q5_K.tile_bytes() : fmt::q6_K.tile_bytes();
    std::unique_ptr<CacheSlot> & slot = cache[(reinterpret_cast<uintptr_t>(w) / n) % kSlots];
    if (!slot) slot = std::make_unique<CacheSlot>();
    CacheSlot & s = *slot;
    if (s.key == w && s.type == type && s.bytes.size() == n && std::memcmp(s.bytes.data(), w, n) == 0) {
        return s.tile;
    }
    s.key = w;
    s.type = type;
    s.bytes.assign(w, w + n);
    if (type == 0) dequantize<0>(w, s.tile);
    else if (type == 1) dequantize<1>(w, s.tile);
    else dequantize<2>(w, s.tile);
    return s.tile;
}

// ---- the block mmul (step 4): c[t][r] = c + D in K-block order ---------------------------------
// Each form below runs K blocks [kb0, kb0 + TK / 8) of the dequantized tile against an activation
// object BlockActTileFormat{TN, TK} holding just those K blocks: the whole tile (TN 32, TK 256) or one
// K half (TN 64, TK 128).

// Inlined into a baseline and an AVX2 build (multiply_portable / multiply_avx2, picked by run from
// host-isa.h: ifunc-based target_clones would run their resolver before a sanitizer's runtime is up):
// the loops over the 64 rows vectorise 4 or 8 wide. Each lane's operations and their order are the
// same (IEEE products and sums, no contraction: this library builds with -ffp-contract=off), so both
// give the same bits.
template <int TN, int TK>
__attribute__((always_inline)) inline void multiply(const DequantTile & wd, int kb0, const uint8_t * a, float * c, int valid) {
    constexpr BlockActTileFormat af{TN, TK};
    for (int kb = kb0; kb < kb0 + TK / kBfp16Block; ++kb) {
        // The block exponents that take part (a block of zero mantissas adds an exact +0 whatever its
        // exponent), to see whether every scale 2^(eA + eW - 266) and every product is a normal fp32.
        const int wmin = wd.emin[kb], wmax = wd.emax[kb];
        // Four tokens at a time where all four take the fast path (below): each weight vector loaded
        // once for the four.
        int t = 0;
        for (; t + 4 <= valid; t += 4) {
            const uint8_t * b0 = a + af.block_offset(t, kb - kb0);  // tokens t..t+3: consecutive blocks
            bool fast = wmax >= 0 && wmin >= 7 && wmax <= 243;
            float pa[4], am[4][kBfp16Block];
            for (int u = 0; u < 4 && fast; ++u) {
                const uint8_t * blk = b0 + u * kBfp16BlockBytes;
                const int ea = blk[0];
                bool anz = false;
                for (int i = 0; i < kBfp16Block; ++i) {
                    am[u][i] = static_cast<int8_t>(blk[1 + i]);
                    anz |= blk[1 + i] != 0;
                }
                fast = anz && ea + wmin >= 140 && ea + wmax <= 376 && ea >= 7 && ea <= 243;
                const uint32_t bits = uint32_t(ea - aie::detail::bfp16_value_bias + 127) << 23;
                std::memcpy(&pa[u], &bits, 4);
            }
            if (!fast) break;
            float d[4][kRows];
            for (int r = 0; r < kRows; ++r) {
                const float w0 = wd.ws[kb][0][r];
                for (int u = 0; u < 4; ++u) d[u][r] = am[u][0] * w0;
            }
            for (int i = 1; i < kBfp16Block; ++i) {
                const float * w = wd.ws[kb][i];
                for (int r = 0; r < kRows; ++r) {
                    const float wi = w[r];
                    for (int u = 0; u < 4; ++u) d[u][r] = d[u][r] + am[u][i] * wi;
                }
            }
            for (int u = 0; u < 4; ++u) {
                float * cr = c + (t + u) * kRows;
                for (int r = 0; r < kRows; ++r) cr[r] = cr[r] + (d[u][r] * pa[u] + 0.0f);
            }
        }
        for (; t < valid; ++t) {
            const uint8_t * blk = a + af.block_offset(t, kb - kb0);
            const int ea = blk[0];
            int8_t ma[kBfp16Block];
            std::memcpy(ma, blk + 1, kBfp16Block);
            bool anz = false;
            for (int i = 0; i < kBfp16Block; ++i) anz |= ma[i] != 0;
            if (!anz || wmax < 0) {
                // Every D is an exact +0 (the integer dot is 0): c + 0.
                for (int r = 0; r < kRows; ++r) c[t * kRows + r] = c[t * kRows + r] + 0.0f;
                continue;
            }
            float * cr = c + t * kRows;
            if (ea + wmin >= 140 && ea + wmax <= 376 && ea >= 7 && ea <= 243 && wmin >= 7 && wmax <= 243) {
                // Every term a_i * m_i * 2^(ew - 133) is an exact normal fp32 (|a m| <= 2^14), the eight
                // are integer multiples of the same power of two summing to at most 2^17 of it (exact), and
                // times 2^(ea - 133) the result stays normal: the exact sum the core forms, in fp32.
                uint32_t pa_bits = uint32_t(ea - aie::detail::bfp16_value_bias + 127) << 23;  // 2^(ea - 133), normal
                float pa;
                std::memcpy(&pa, &pa_bits, 4);
                float d[kRows];
                const float a0 = ma[0];
                for (int r = 0; r < kRows; ++r) d[r] = a0 * wd.ws[kb][0][r];
                for (int i = 1; i < kBfp16Block; ++i) {
                    const float ai = ma[i];
                    const float * w = wd.ws[kb][i];
                    for (int r = 0; r < kRows; ++r) d[r] = d[r] + ai * w[r];
                }
                // + 0.0f: an all-zero dot is +0 in the core's integer sum, -0 here when its first term is.
                for (int r = 0; r < kRows; ++r) cr[r] = cr[r] + (d[r] * pa + 0.0f);
            } else {
                for (int r = 0; r < kRows; ++r) {
                    int32_t dot = 0;
                    for (int i = 0; i < kBfp16Block; ++i) dot += int32_t(ma[i]) * int32_t(wd.m[kb][i][r]);
                    const float p = static_cast<float>(std::ldexp(static_cast<double>(dot),
                                                                  ea + int(wd.e[kb][r]) - 2 * aie::detail::bfp16_value_bias));
                    cr[r] = cr[r] + p;
                }
            }
        }
    }
}

template <int TN, int TK> void multiply_portable(const DequantTile & wd, int kb0, const uint8_t * a, float * c, int valid) {
    multiply<TN, TK>(wd, kb0, a, c, valid);
}
#if defined(__x86_64__)
template <int TN, int TK>
__attribute__((target("avx2"))) void multiply_avx2(const DequantTile & wd, int kb0, const uint8_t * a, float * c, int valid) {
    multiply<TN, TK>(wd, kb0, a, c, valid);
}
#endif

// The kernel's last step (bfp16_mmul.h nan_flagged_tokens): a token flagged non-finite in the activation
// object gets NaN in all its outputs.
template <int TN, int TK> void nan_flagged_tokens(const uint8_t * a, float * c, int valid) {
    constexpr BlockActTileFormat af{TN, TK};
    for (int t = 0; t < valid; ++t) {
        if (a[af.flags_offset() + t] == 0) continue;
        for (int r = 0; r < kRows; ++r) c[t * kRows + r] = std::numeric_limits<float>::quiet_NaN();
    }
}

#if defined(__x86_64__)
// The same block products as integer dots (AVX-512 VNNI): per K block, token and 16 rows,
// D = sum_i mA_i mW_i = sum_i (mA_i + 128) mW_i - 128 sum_i mW_i by two vpdpbusd (unsigned bytes times
// signed bytes, 4 per 32-bit lane, no saturation), exact (|D| <= 2^17); then D as fp32 (exact), times
// 2^(eW - 133) and 2^(eA - 133) (both exact where the fast path of `multiply` is taken: the same
// exponent conditions), and one fp32 add into c: the value `multiply` forms, in the same K order. Tokens
// outside those conditions take `multiply`'s exact per-row path, one token at a time.
template <int TN, int TK>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void multiply_vnni(const DequantTile & wd, int kb0, const uint8_t * a, float * c, int valid) {
    constexpr BlockActTileFormat af{TN, TK};
    constexpr int kQ = kRows / 16;
    for (int kb = kb0; kb < kb0 + TK / kBfp16Block; ++kb) {
        const int wmin = wd.emin[kb], wmax = wd.emax[kb];
        const bool w_fast = wmax >= 0 && wmin >= 7 && wmax <= 243;
        __m512i wlo[kQ], whi[kQ], ns[kQ];
        __m512 pw[kQ];
        for (int q = 0; q < kQ; ++q) {
            wlo[q] = _mm512_loadu_si512(&wd.wq[kb][0][16 * q]);
            whi[q] = _mm512_loadu_si512(&wd.wq[kb][1][16 * q]);
            ns[q] = _mm512_loadu_si512(&wd.nsum[kb][16 * q]);
            pw[q] = _mm512_loadu_ps(&wd.pw[kb][16 * q]);
        }
        for (int t = 0; t < valid; ++t) {
            const uint8_t * blk = a + af.block_offset(t, kb - kb0);
            const int ea = blk[0];
            uint32_t lo, hi;
            std::memcpy(&lo, blk + 1, 4);
            std::memcpy(&hi, blk + 5, 4);
            float * cr = c + t * kRows;
            if ((lo | hi) == 0 || wmax < 0) {
                // Every D is an exact +0: c + 0.
                for (int q = 0; q < kQ; ++q) _mm512_storeu_ps(cr + 16 * q, _mm512_add_ps(_mm512_loadu_ps(cr + 16 * q), _mm512_setzero_ps()));
                continue;
            }
            if (!(w_fast && ea + wmin >= 140 && ea + wmax <= 376 && ea >= 7 && ea <= 243)) {
                for (int r = 0; r < kRows; ++r) {
                    int32_t dot = 0;
                    for (int i = 0; i < kBfp16Block; ++i) dot += int32_t(static_cast<int8_t>(blk[1 + i])) * int32_t(wd.m[kb][i][r]);
                    const float p = static_cast<float>(std::ldexp(static_cast<double>(dot), ea + int(wd.e[kb][r]) - 2 * aie::detail::bfp16_value_bias));
                    cr[r] = cr[r] + p;
                }
                continue;
            }
            const __m512i alo = _mm512_set1_epi32(static_cast<int32_t>(lo ^ 0x80808080u));  // m + 128 as unsigned bytes
            const __m512i ahi = _mm512_set1_epi32(static_cast<int32_t>(hi ^ 0x80808080u));
            uint32_t pa_bits = uint32_t(ea - aie::detail::bfp16_value_bias + 127) << 23;  // 2^(ea - 133), normal
            float pa_f;
            std::memcpy(&pa_f, &pa_bits, 4);
            const __m512 pa = _mm512_set1_ps(pa_f);
            for (int q = 0; q < kQ; ++q) {
                const __m512i d = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(ns[q], alo, wlo[q]), ahi, whi[q]);
                const __m512 p = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(d), pw[q]), pa);
                _mm512_storeu_ps(cr + 16 * q, _mm512_add_ps(_mm512_loadu_ps(cr + 16 * q), p));
            }
        }
    }
}
#endif

std::atomic<bool> g_allow_vnni{true};

// The block products of K blocks [kb0, kb0 + TK / 8) by the best form this host runs.
template <int TN, int TK> void multiply_best(const DequantTile & wd, int kb0, const uint8_t * a, float * c, int valid) {
#if defined(__x86_64__)
    if (twin_avx512_pays() && g_allow_vnni.load(std::memory_order_relaxed)) {  // AVX-512 with VNNI (host-isa.h)
        multiply_vnni<TN, TK>(wd, kb0, a, c, valid);
        return;
    }
    static const bool avx2 = twin_host_isa() >= TwinIsa::avx2;  // CPUID once
    if (avx2) {
        multiply_avx2<TN, TK>(wd, kb0, a, c, valid);
        return;
    }
#endif
    multiply_portable<TN, TK>(wd, kb0, a, c, valid);
}

void run(int type, const uint8_t * w, const uint8_t * a, float * c, int valid) {
    multiply_best<kTN, kTK>(dequantized(type, w), 0, a, c, valid);
    nan_flagged_tokens<kTN, kTK>(a, c, valid);
}

// Token tile 64: the kernel's two calls per K tile, half 0 then half 1, each ending with its object's
// NaN flags (a token flagged in half 0 stays NaN through half 1's adds, as on the core). The tile is
// dequantized (or found in the cache) once for both.
void run_n64(int type, const uint8_t * w, const uint8_t * a, float * c, int valid) {
    const DequantTile & wd = dequantized(type, w);
    for (int h = 0; h < 2; ++h) {
        multiply_best<kTN64, kHalfTK>(wd, h * kHalfKB, a + h * kHalfObject, c, valid);
        nan_flagged_tokens<kTN64, kHalfTK>(a + h * kHalfObject, c, valid);
    }
}

}  // namespace

void kquant_bfp16_twin_allow_vnni(bool allow) {
    g_allow_vnni.store(allow, std::memory_order_relaxed);
}

void kquant_bfp16_twin_tile(int type_id, const uint8_t * w, const uint8_t * a, float * c, int valid_tokens) {
    run(type_id, w, a, c, std::min(valid_tokens, kTN));
}

void kquant_bfp16_twin_tile_n64(int type_id, const uint8_t * w, const uint8_t * a, float * c, int valid_tokens) {
    run_n64(type_id, w, a, c, std::min(valid_tokens, kTN64));
}

extern "C" {
void twin_mm_q4_K_bfp16_n32(const uint8_t * w, const uint8_t * a, float * c) { run(0, w, a, c, kTN); }
void twin_mm_q5_K_bfp16_n32(const uint8_t * w, const uint8_t * a, float * c) { run(1, w, a, c, kTN); }
void twin_mm_q6_K_bfp16_n32(const uint8_t * w, const uint8_t * a, float * c) { run(2, w, a, c, kTN); }
void twin_mm_q4_K_bfp16_n64(const uint8_t * w, const uint8_t * a, float * c) { run_n64(0, w, a, c, kTN64); }
void twin_mm_q5_K_bfp16_n64(const uint8_t * w, const uint8_t * a, float * c) { run_n64(1, w, a, c, kTN64); }
}

}  // namespace xdna
