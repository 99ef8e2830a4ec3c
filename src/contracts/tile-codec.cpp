#include "contracts/tile-codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace xdna {

namespace fmt = xdna_aie::fmt;
using xdna_aie::PlaneKind;
using xdna_aie::WeightTileFormat;

const WeightTileFormat * tile_format(ggml_type type) {
    switch (type) {
        case GGML_TYPE_Q4_0: return &fmt::q4_0;
        case GGML_TYPE_Q4_1: return &fmt::q4_1;
        case GGML_TYPE_Q5_0: return &fmt::q5_0;
        case GGML_TYPE_Q5_1: return &fmt::q5_1;
        case GGML_TYPE_Q8_0: return &fmt::q8_0;
        case GGML_TYPE_Q2_K: return &fmt::q2_K;
        case GGML_TYPE_Q3_K: return &fmt::q3_K;
        case GGML_TYPE_Q4_K: return &fmt::q4_K;
        case GGML_TYPE_Q5_K: return &fmt::q5_K;
        case GGML_TYPE_Q6_K: return &fmt::q6_K;
        case GGML_TYPE_F16: return &fmt::f16;
        case GGML_TYPE_BF16: return &fmt::bf16;
        case GGML_TYPE_F32: return &fmt::f32;
        default: return nullptr;
    }
}

namespace {

// The codes of a GGUF block, one per value (unsigned bit patterns; Q8_0's int8 as its byte), and back.
// Bit positions follow the block layouts of ggml-common.h and the value order of ggml's
// dequantize_row_* functions. `put_codes` writes every code byte of the block (the fields are the
// planes' business), so the two are exact inverses on all 2^bits patterns.
void get_codes(ggml_type type, const uint8_t * b, uint8_t * q) {
    switch (type) {
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q4_1: {
            const uint8_t * qs = b + (type == GGML_TYPE_Q4_0 ? 2 : 4);
            for (int j = 0; j < 16; ++j) {
                q[j] = qs[j] & 0xF;
                q[j + 16] = qs[j] >> 4;
            }
            break;
        }
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1: {
            const uint8_t * qh = b + (type == GGML_TYPE_Q5_0 ? 2 : 4);
            const uint8_t * qs = qh + 4;
            for (int j = 0; j < 16; ++j) {
                q[j] = (qs[j] & 0xF) | (((qh[j / 8] >> (j % 8)) & 1) << 4);
                q[j + 16] = (qs[j] >> 4) | (((qh[(j + 16) / 8] >> ((j + 16) % 8)) & 1) << 4);
            }
            break;
        }
        case GGML_TYPE_Q8_0:
            std::memcpy(q, b + 2, 32);
            break;
        case GGML_TYPE_Q2_K: {
            const uint8_t * qs = b + 16;
            for (int v = 0; v < 256; ++v) {
                const int n = v / 128, j = (v % 128) / 32, l = v % 32;
                q[v] = (qs[32 * n + l] >> (2 * j)) & 3;
            }
            break;
        }
        case GGML_TYPE_Q3_K: {
            const uint8_t * hm = b;
            const uint8_t * qs = b + 32;
            for (int v = 0; v < 256; ++v) {
                const int n = v / 128, j = (v % 128) / 32, l = v % 32;
                const int low = (qs[32 * n + l] >> (2 * j)) & 3;
                const int h = (hm[l] >> (4 * n + j)) & 1;
                q[v] = static_cast<uint8_t>(low | (h << 2));
            }
            break;
        }
        case GGML_TYPE_Q4_K: {
            const uint8_t * qs = b + 16;
            for (int v = 0; v < 256; ++v) {
                const int j = v / 64, h = (v % 64) / 32, l = v % 32;
                q[v] = (qs[32 * j + l] >> (4 * h)) & 0xF;
            }
            break;
        }
        case GGML_TYPE_Q5_K: {
            const uint8_t * qh = b + 16;
            const uint8_t * qs = b + 48;
            for (int v = 0; v < 256; ++v) {
                const int j = v / 64, h = (v % 64) / 32, l = v % 32;
                q[v] = static_cast<uint8_t>(((qs[32 * j + l] >> (4 * h)) & 0xF) | (((qh[l] >> (v / 32)) & 1) << 4));
            }
            break;
        }
        case GGML_TYPE_Q6_K: {
            const uint8_t * ql = b;
            const uint8_t * qh = b + 128;
            for (int v = 0; v < 256; ++v) {
                const int n = v / 128, i = (v % 128) / 32, l = v % 32;
                const int low = (ql[64 * n + l + 32 * (i & 1)] >> (4 * (i >> 1))) & 0xF;
                const int high = (qh[32 * n + l] >> (2 * i)) & 3;
                q[v] = static_cast<uint8_t>(low | (high << 4));
            }
            break;
        }
        default:
            GGML_ABORT("xdna: no tile codec for %s", ggml_type_name(type));
    }
}

void put_codes(ggml_type type, const uint8_t * q, uint8_t * b) {
    switch (type) {
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q4_1: {
            uint8_t * qs = b + (type == GGML_TYPE_Q4_0 ? 2 : 4);
            for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
            break;
        }
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1: {
            uint8_t * qh = b + (type == GGML_TYPE_Q5_0 ? 2 : 4);
            uint8_t * qs = qh + 4;
            std::memset(qh, 0, 4);
            for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
            for (int v = 0; v < 32; ++v) qh[v / 8] |= static_cast<uint8_t>(((q[v] >> 4) & 1) << (v % 8));
            break;
        }
        case GGML_TYPE_Q8_0:
            std::memcpy(b + 2, q, 32);
            break;
        case GGML_TYPE_Q2_K: {
            uint8_t * qs = b + 16;
            std::memset(qs, 0, 64);
            for (int v = 0; v < 256; ++v) {
                const int n = v / 128, j = (v % 128) / 32, l = v % 32;
                qs[32 * n + l] |= static_cast<uint8_t>((q[v] & 3) << (2 * j));
            }
            break;
        }
        case GGML_TYPE_Q3_K: {
            uint8_t * hm = b;
            uint8_t * qs = b + 32;
            std::memset(hm, 0, 32);
            std::memset(qs, 0, 64);
            for (int v = 0; v < 256; ++v) {
                const int n = v / 128, j = (v % 128) / 32, l = v % 32;
                qs[32 * n + l] |= static_cast<uint8_t>((q[v] & 3) << (2 * j));
                hm[l] |= static_cast<uint8_t>(((q[v] >> 2) & 1) << (4 * n + j));
            }
            break;
        }
        case GGML_TYPE_Q4_K: {
            uint8_t * qs = b + 16;
            std::memset(qs, 0, 128);
            for (int v = 0; v < 256; ++v) {
                const int j = v / 64, h = (v % 64) / 32, l = v % 32;
                qs[32 * j + l] |= static_cast<uint8_t>((q[v] & 0xF) << (4 * h));
            }
            break;
        }
        case GGML_TYPE_Q5_K: {
            uint8_t * qh = b + 16;
            uint8_t * qs = b + 48;
            std::memset(qh, 0, 32);
            std::memset(qs, 0, 128);
            for (int v = 0; v < 256; ++v) {
                const int j = v / 64, h = (v % 64) / 32, l = v % 32;
                qs[32 * j + l] |= static_cast<uint8_t>((q[v] & 0xF) << (4 * h));
                qh[l] |= static_cast<uint8_t>(((q[v] >> 4) & 1) << (v / 32));
            }
            break;
        }
        case GGML_TYPE_Q6_K: {
            uint8_t * ql = b;
            uint8_t * qh = b + 128;
            std::memset(ql, 0, 128);
            std::memset(qh, 0, 64);
            for (int v = 0; v < 256; ++v) {
                const int n = v / 128, i = (v % 128) / 32, l = v % 32;
                ql[64 * n + l + 32 * (i & 1)] |= static_cast<uint8_t>((q[v] & 0xF) << (4 * (i >> 1)));
                qh[32 * n + l] |= static_cast<uint8_t>(((q[v] >> 4) & 3) << (2 * i));
            }
            break;
        }
        default:
            GGML_ABORT("xdna: no tile codec for %s", ggml_type_name(type));
    }
}

// Bit fields of the code planes, LSB first (matmul_tiles.h).
inline void put_bits(uint8_t * plane, int e, int bits, int value) {
    const int per_byte = 8 / bits;
    const int shift = (e % per_byte) * bits;
    const uint8_t mask = static_cast<uint8_t>(((1 << bits) - 1) << shift);
    uint8_t & byte = plane[e / per_byte];
    byte = static_cast<uint8_t>((byte & ~mask) | ((value << shift) & mask));
}

inline int get_bits(const uint8_t * plane, int e, int bits) {
    const int per_byte = 8 / bits;
    return (plane[e / per_byte] >> ((e % per_byte) * bits)) & ((1 << bits) - 1);
}

// How a code splits over the code planes of a format: the first plane takes `low_bits` (q4: stored
// XOR 8, i.e. as the signed int4 code - 8), the second the rest.
struct CodeSplit {
    int low_plane, high_plane;  // plane indices (-1: none)
    int low_bits, high_bits;
};

CodeSplit code_split(const WeightTileFormat & f) {
    CodeSplit s{-1, -1, 0, 0};
    for (int i = 0; i < f.n_planes; ++i) {
        const PlaneKind k = f.planes[i].kind;
        const int bits = k == PlaneKind::q4 ? 4 : k == PlaneKind::q2 ? 2 : k == PlaneKind::h1 ? 1 : k == PlaneKind::q8 ? 8 : 0;
        if (bits == 0) continue;
        if (s.low_plane < 0) {
            s.low_plane = i;
            s.low_bits = bits;
        } else {
            s.high_plane = i;
            s.high_bits = bits;
        }
    }
    return s;
}

bool is_float(const WeightTileFormat & f) { return f.planes[0].kind == PlaneKind::v16 || f.planes[0].kind == PlaneKind::v32; }

}  // namespace

void encode_block(ggml_type type, const void * block, int row, int b, void * tile) {
    const WeightTileFormat & f = *tile_format(type);
    auto * t = static_cast<uint8_t *>(tile);
    const auto * src = static_cast<const uint8_t *>(block);
    if (is_float(f)) {
        std::memcpy(t + static_cast<size_t>(xdna_aie::f_element(f.tile_k, row, b)) * f.block_bytes, src, f.block_bytes);
        return;
    }
    uint8_t codes[256];
    get_codes(type, src, codes);
    const CodeSplit s = code_split(f);
    uint8_t * low = t + f.plane_offset(s.low_plane);
    uint8_t * high = s.high_plane >= 0 ? t + f.plane_offset(s.high_plane) : nullptr;
    const bool xor8 = f.planes[s.low_plane].kind == PlaneKind::q4;
    for (int i = 0; i < f.block_values; ++i) {
        const int e = xdna_aie::q_element(f.tile_k, row, b * f.block_values + i);
        const int lowv = codes[i] & ((1 << s.low_bits) - 1);
        if (s.low_bits == 8) {
            low[e] = codes[i];
        } else {
            put_bits(low, e, s.low_bits, xor8 ? lowv ^ 8 : lowv);
        }
        if (high != nullptr) put_bits(high, e, s.high_bits, codes[i] >> s.low_bits);
    }
    for (int i = 0; i < f.n_planes; ++i) {
        const xdna_aie::Plane & p = f.planes[i];
        if (p.kind != PlaneKind::field) continue;
        for (int u = 0; u < p.units; ++u) {
            std::memcpy(t + f.plane_offset(i) + xdna_aie::field_offset(f, p, row, b, u), src + p.gguf_offset + u * p.unit_bytes,
                        p.unit_bytes);
        }
    }
}

void decode_block(ggml_type type, const void * tile, int row, int b, void * block) {
    const WeightTileFormat & f = *tile_format(type);
    const auto * t = static_cast<const uint8_t *>(tile);
    auto * dst = static_cast<uint8_t *>(block);
    if (is_float(f)) {
        std::memcpy(dst, t + static_cast<size_t>(xdna_aie::f_element(f.tile_k, row, b)) * f.block_bytes, f.block_bytes);
        return;
    }
    const CodeSplit s = code_split(f);
    const uint8_t * low = t + f.plane_offset(s.low_plane);
    const uint8_t * high = s.high_plane >= 0 ? t + f.plane_offset(s.high_plane) : nullptr;
    const bool xor8 = f.planes[s.low_plane].kind == PlaneKind::q4;
    uint8_t codes[256];
    for (int i = 0; i < f.block_values; ++i) {
        const int e = xdna_aie::q_element(f.tile_k, row, b * f.block_values + i);
        int v = s.low_bits == 8 ? low[e] : get_bits(low, e, s.low_bits) ^ (xor8 ? 8 : 0);
        if (high != nullptr) v |= get_bits(high, e, s.high_bits) << s.low_bits;
        codes[i] = static_cast<uint8_t>(v);
    }
    put_codes(type, codes, dst);
    for (int i = 0; i < f.n_planes; ++i) {
        const xdna_aie::Plane & p = f.planes[i];
        if (p.kind != PlaneKind::field) continue;
        for (int u = 0; u < p.units; ++u) {
            std::memcpy(dst + p.gguf_offset + u * p.unit_bytes, t + f.plane_offset(i) + xdna_aie::field_offset(f, p, row, b, u),
                        p.unit_bytes);
        }
    }
}

void quantize_activation_token(const float * x, int valid_k, int t, const xdna_aie::ActTileFormat & f, void * tile) {
    auto * base = static_cast<uint8_t *>(tile);
    auto * codes = reinterpret_cast<int8_t *>(base + f.codes_offset());
    auto * scales = reinterpret_cast<float *>(base + f.scales_offset());
    auto * sums = reinterpret_cast<int16_t *>(base + f.sums_offset());
    int8_t q[256];
    for (int blk = 0; blk < f.tile_k / f.act_block; ++blk) {
        const int k0 = blk * f.act_block;
        const int n = x == nullptr ? 0 : std::max(0, std::min(f.act_block, valid_k - k0));
        float amax = 0.0f;
        for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[k0 + i]));
        const bool finite = std::isfinite(amax) && !std::isnan(amax);
        // A NaN among the inputs is lost by max(): look for it so it still reaches the output.
        bool any_nan = false;
        for (int i = 0; i < n; ++i) any_nan |= std::isnan(x[k0 + i]);
        float s = amax / 127.0f;
        if (!finite || any_nan) s = std::numeric_limits<float>::quiet_NaN();
        const float id = (finite && !any_nan && amax > 0.0f) ? 127.0f / amax : 0.0f;
        for (int i = 0; i < f.act_block; ++i) {
            int v = 0;
            if (i < n && id != 0.0f) {
                v = static_cast<int>(std::nearbyint(x[k0 + i] * id));
                v = std::min(127, std::max(-127, v));
            }
            q[i] = static_cast<int8_t>(v);
            codes[f.code_index(t, k0 + i)] = q[i];
        }
        scales[f.scale_index(t, blk)] = s;
        for (int g = 0; g < f.act_block / 16; ++g) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += q[16 * g + i];
            sums[f.sum_index(t, k0 / 16 + g)] = static_cast<int16_t>(sum);
        }
    }
}

void clear_activation_tile_padding(const xdna_aie::ActTileFormat & f, void * tile) {
    auto * base = static_cast<uint8_t *>(tile);
    const int codes = f.tile_n * f.tile_k;
    const int scales = f.tile_n * (f.tile_k / f.act_block) * 4;
    const int sums = f.tile_n * (f.tile_k / 16) * 2;
    std::memset(base + f.codes_offset() + codes, 0, f.codes_bytes() - codes);
    std::memset(base + f.scales_offset() + scales, 0, f.scales_bytes() - scales);
    std::memset(base + f.sums_offset() + sums, 0, f.sums_bytes() - sums);
}

void quantize_activation_tile(const float * x, int64_t x_row_stride, int valid_tokens, int valid_k,
                              const xdna_aie::ActTileFormat & f, void * tile) {
    clear_activation_tile_padding(f, tile);
    for (int t = 0; t < f.tile_n; ++t) {
        quantize_activation_token(t < valid_tokens ? x + t * x_row_stride : nullptr, valid_k, t, f, tile);
    }
}

void store_float_activation_token(const float * x, int valid_k, int t, FloatAct kind,
                                  const xdna_aie::FloatActTileFormat & f, void * tile) {
    auto * base = static_cast<uint8_t *>(tile);
    for (int k = 0; k < f.tile_k; ++k) {
        const float v = (x != nullptr && k < valid_k) ? x[k] : 0.0f;
        const size_t off = static_cast<size_t>(f.value_index(t, k)) * f.value_bytes;
        switch (kind) {
            case FloatAct::f16: {
                const ggml_fp16_t h = ggml_fp32_to_fp16(v);
                std::memcpy(base + off, &h, 2);
                break;
            }
            case FloatAct::bf16: {
                const ggml_bf16_t h = ggml_fp32_to_bf16(v);
                std::memcpy(base + off, &h, 2);
                break;
            }
            case FloatAct::f32:
                std::memcpy(base + off, &v, 4);
                break;
        }
    }
}

}  // namespace xdna
