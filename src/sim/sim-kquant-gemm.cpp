#include "sim-kquant-gemm.h"

#define GGML_COMMON_DECL_CPP
#include "ggml-common.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace xdna {

namespace {

constexpr int kRows = 64;     // contract tile M
constexpr int kTokens = 32;   // token tile this twin serves

// One row of one superblock, decoded. Lane l of 64-value chunk c of a VNNI dot covers values
// 64c + 4l .. 64c + 4l + 3, all in group (64c + 4l) / 16, so scales are laid out per lane.
struct alignas(64) DecodedRow {
    uint8_t q[QK_K];        // unsigned codes
    int32_t lane_sc[64];    // integer scale of each lane's group
    int32_t kcorr[16];      // subtracted integer correction per group: kcorr[g] * bsum[g]
    int32_t mins[16];       // min per group, times dmin in fp32
    float   d, dmin;
};

// Q4_K and Q5_K share their header: fp16 d and dmin, then 8 six-bit scales and mins packed in 12
// bytes (ggml-quants.c get_scale_min_k4); sub-blocks of 32 values.
void decode_k4_header(const void * block, const uint8_t * scales, DecodedRow & r) {
    ggml_fp16_t dm[2];  // (d, dmin) open the block
    std::memcpy(dm, block, sizeof dm);
    r.d = ggml_fp16_to_fp32(dm[0]);
    r.dmin = ggml_fp16_to_fp32(dm[1]);
    int sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            sc[j] = scales[j] & 63;
            mn[j] = scales[j + 4] & 63;
        } else {
            sc[j] = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
            mn[j] = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
        }
    }
    for (int g = 0; g < 16; ++g) {
        r.kcorr[g] = 0;
        r.mins[g] = mn[g / 2];
    }
    for (int lane = 0; lane < 64; ++lane) {
        r.lane_sc[lane] = sc[(4 * lane) / 32];
    }
}

// Q4_K: w = d*sc_j*q - dmin*m_j, q in 0..15 (dequantize_row_q4_K).
void decode_q4_K(const block_q4_K & b, DecodedRow & r) {
    decode_k4_header(&b, b.scales, r);
    for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l) {
            r.q[64 * c + l] = b.qs[32 * c + l] & 0xF;
            r.q[64 * c + 32 + l] = b.qs[32 * c + l] >> 4;
        }
    }
}

// Q5_K: as Q4_K with a fifth bit per value from qh, q in 0..31 (dequantize_row_q5_K).
void decode_q5_K(const block_q5_K & b, DecodedRow & r) {
    decode_k4_header(&b, b.scales, r);
    for (int c = 0; c < 4; ++c) {
        const uint8_t lo_bit = static_cast<uint8_t>(1u << (2 * c)), hi_bit = static_cast<uint8_t>(2u << (2 * c));
        for (int l = 0; l < 32; ++l) {
            r.q[64 * c + l] = (b.qs[32 * c + l] & 0xF) | ((b.qh[l] & lo_bit) ? 16 : 0);
            r.q[64 * c + 32 + l] = (b.qs[32 * c + l] >> 4) | ((b.qh[l] & hi_bit) ? 16 : 0);
        }
    }
}

// Q6_K: w = d*sc_g*(q - 32), q in 0..63, 16 groups of 16 (dequantize_row_q6_K). The -32 becomes an
// integer correction 32*sc_g times the group's activation sum.
void decode_q6_K(const block_q6_K & b, DecodedRow & r) {
    r.d = ggml_fp16_to_fp32(b.d);
    r.dmin = 0.0f;
    for (int n = 0; n < 2; ++n) {
        const uint8_t * ql = b.ql + 64 * n;
        const uint8_t * qh = b.qh + 32 * n;
        uint8_t * q = r.q + 128 * n;
        for (int l = 0; l < 32; ++l) {
            q[l + 0] = (ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4);
            q[l + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
            q[l + 64] = (ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4);
            q[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
        }
    }
    for (int g = 0; g < 16; ++g) {
        r.kcorr[g] = 32 * b.scales[g];
        r.mins[g] = 0;
    }
    for (int lane = 0; lane < 64; ++lane) {
        r.lane_sc[lane] = b.scales[(4 * lane) / 16];
    }
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void dot_tile(const DecodedRow * rows, int n_rows,
                                                                    const block_q8_K * const * acts, int n_tok,
                                                                    float acc[kRows][kTokens]) {
    for (int t = 0; t < n_tok; ++t) {
        const block_q8_K & a = *acts[t];
        const __m512i a0 = _mm512_loadu_si512(a.qs + 0), a1 = _mm512_loadu_si512(a.qs + 64);
        const __m512i a2 = _mm512_loadu_si512(a.qs + 128), a3 = _mm512_loadu_si512(a.qs + 192);
        const __m512i bsum = _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(a.bsums)));
        for (int r = 0; r < n_rows; ++r) {
            const DecodedRow & w = rows[r];
            const __m512i z = _mm512_setzero_si512();
            __m512i s = _mm512_mullo_epi32(_mm512_dpbusd_epi32(z, _mm512_load_si512(w.q + 0), a0), _mm512_load_si512(w.lane_sc + 0));
            s = _mm512_add_epi32(s, _mm512_mullo_epi32(_mm512_dpbusd_epi32(z, _mm512_load_si512(w.q + 64), a1), _mm512_load_si512(w.lane_sc + 16)));
            s = _mm512_add_epi32(s, _mm512_mullo_epi32(_mm512_dpbusd_epi32(z, _mm512_load_si512(w.q + 128), a2), _mm512_load_si512(w.lane_sc + 32)));
            s = _mm512_add_epi32(s, _mm512_mullo_epi32(_mm512_dpbusd_epi32(z, _mm512_load_si512(w.q + 192), a3), _mm512_load_si512(w.lane_sc + 48)));
            s = _mm512_sub_epi32(s, _mm512_mullo_epi32(_mm512_load_si512(w.kcorr), bsum));
            const int32_t isum = _mm512_reduce_add_epi32(s);
            const int32_t msum = _mm512_reduce_add_epi32(_mm512_mullo_epi32(_mm512_load_si512(w.mins), bsum));
            acc[r][t] += a.d * (w.d * static_cast<float>(isum) - w.dmin * static_cast<float>(msum));
        }
    }
}

bool host_has_vnni() {
    static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vnni");
    return ok;
}

}  // namespace

bool kquant_gemm_supported(const MatmulInvocation & inv) {
    const ggml_type t = inv.contract->weight_type;
    return (t == GGML_TYPE_Q4_K || t == GGML_TYPE_Q5_K || t == GGML_TYPE_Q6_K) && inv.contract->act_type == GGML_TYPE_Q8_K &&
           inv.tile.m == kRows && inv.tile.n == kTokens && inv.tile.k == QK_K && host_has_vnni();
}

void kquant_gemm_row_tile(const MatmulInvocation & inv, int64_t mt) {
    const ggml_type type = inv.contract->weight_type;
    const int rows = static_cast<int>(std::min<int64_t>(kRows, inv.m - mt * kRows));
    const size_t seg_bytes = inv.weight_tile_bytes / kRows;
    const auto * w_base = static_cast<const char *>(inv.weights.host());
    const auto * a_base = static_cast<const char *>(inv.activations.host());

    thread_local std::vector<DecodedRow> decoded;
    thread_local std::vector<float> acc_store;
    decoded.resize(static_cast<size_t>(inv.k_tiles) * kRows);
    acc_store.assign(static_cast<size_t>(inv.n_tiles) * kRows * kTokens, 0.0f);

    // Decode the row tile once (all of K), then stream every token tile past it.
    for (int64_t kt = 0; kt < inv.k_tiles; ++kt) {
        const char * w_tile = w_base + (mt * inv.k_tiles + kt) * inv.weight_tile_bytes;
        for (int r = 0; r < rows; ++r) {
            DecodedRow & d = decoded[kt * kRows + r];
            if (type == GGML_TYPE_Q4_K) {
                decode_q4_K(*reinterpret_cast<const block_q4_K *>(w_tile + r * seg_bytes), d);
            } else if (type == GGML_TYPE_Q5_K) {
                decode_q5_K(*reinterpret_cast<const block_q5_K *>(w_tile + r * seg_bytes), d);
            } else {
                decode_q6_K(*reinterpret_cast<const block_q6_K *>(w_tile + r * seg_bytes), d);
            }
        }
    }
    for (int64_t nt = 0; nt < inv.n_tiles; ++nt) {
        const int cols = static_cast<int>(std::min<int64_t>(kTokens, inv.n - nt * kTokens));
        if (cols <= 0) {
            break;
        }
        auto & acc = *reinterpret_cast<float (*)[kRows][kTokens]>(acc_store.data() + nt * kRows * kTokens);
        const block_q8_K * acts[kTokens];
        for (int64_t kt = 0; kt < inv.k_tiles; ++kt) {
            for (int c = 0; c < cols; ++c) {
                acts[c] = reinterpret_cast<const block_q8_K *>(a_base + (nt * kTokens + c) * inv.act_row_bytes) + kt;
            }
            dot_tile(&decoded[kt * kRows], rows, acts, cols, acc);
        }
        auto * out = static_cast<float *>(inv.out.host());
        for (int c = 0; c < cols; ++c) {
            float * o = out + (nt * kTokens + c) * inv.out_row_stride + mt * kRows;
            for (int r = 0; r < rows; ++r) {
                o[r] = acc[r][c];
            }
        }
    }
}

}  // namespace xdna
