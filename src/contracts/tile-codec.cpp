#include "contracts/tile-codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#if defined(__SSE2__) && !defined(XDNA_CODEC_SCALAR)
#include <emmintrin.h>
#define XDNA_CODEC_SSE2 1
#else
#define XDNA_CODEC_SSE2 0
#endif

namespace xdna {

namespace fmt = xdna_aie::fmt;
using xdna_aie::PlaneKind;
using xdna_aie::WeightTileFormat;
using xdna_aie::Plane;
using xdna_aie::kKStep;
using xdna_aie::kRowGroup;

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

// The codec is instantiated per weight type with its WeightTileFormat as a constant, so the plane
// offsets, bit widths and element order below fold to shifts, masks and fixed strides.
constexpr const WeightTileFormat & format_of(ggml_type type) {
    switch (type) {
        case GGML_TYPE_Q4_0: return fmt::q4_0;
        case GGML_TYPE_Q4_1: return fmt::q4_1;
        case GGML_TYPE_Q5_0: return fmt::q5_0;
        case GGML_TYPE_Q5_1: return fmt::q5_1;
        case GGML_TYPE_Q8_0: return fmt::q8_0;
        case GGML_TYPE_Q2_K: return fmt::q2_K;
        case GGML_TYPE_Q3_K: return fmt::q3_K;
        case GGML_TYPE_Q4_K: return fmt::q4_K;
        case GGML_TYPE_Q5_K: return fmt::q5_K;
        case GGML_TYPE_Q6_K: return fmt::q6_K;
        case GGML_TYPE_F16: return fmt::f16;
        case GGML_TYPE_BF16: return fmt::bf16;
        default: return fmt::f32;
    }
}

constexpr bool is_float(const WeightTileFormat & f) {
    return f.planes[0].kind == PlaneKind::v16 || f.planes[0].kind == PlaneKind::v32;
}

constexpr int code_bits(PlaneKind k) {
    return k == PlaneKind::q4 ? 4 : k == PlaneKind::q2 ? 2 : k == PlaneKind::h1 ? 1 : k == PlaneKind::q8 ? 8 : 0;
}

// How a code splits over the code planes of a format: the first plane takes `low_bits` (q4: stored
// XOR 8, i.e. as the signed int4 code - 8), the second the rest.
struct CodeSplit {
    int low_plane, high_plane;  // plane indices (-1: none)
    int low_bits, high_bits;
};

constexpr CodeSplit code_split(const WeightTileFormat & f) {
    CodeSplit s{-1, -1, 0, 0};
    for (int i = 0; i < f.n_planes; ++i) {
        const int bits = code_bits(f.planes[i].kind);
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

// The codes of a GGUF block, one per value (unsigned bit patterns; Q8_0's int8 as its byte), and back.
// Bit positions follow the block layouts of ggml-common.h and the value order of ggml's
// dequantize_row_* functions. `put_codes` writes every code byte of the block (the fields are the
// planes' business), so the two are exact inverses on all 2^bits patterns.
template <ggml_type T>
inline void get_codes(const uint8_t * b, uint8_t * q) {
    if constexpr (T == GGML_TYPE_Q4_0 || T == GGML_TYPE_Q4_1) {
        const uint8_t * qs = b + (T == GGML_TYPE_Q4_0 ? 2 : 4);
        for (int j = 0; j < 16; ++j) {
            q[j] = qs[j] & 0xF;
            q[j + 16] = qs[j] >> 4;
        }
    } else if constexpr (T == GGML_TYPE_Q5_0 || T == GGML_TYPE_Q5_1) {
        const uint8_t * qh = b + (T == GGML_TYPE_Q5_0 ? 2 : 4);
        const uint8_t * qs = qh + 4;
        // Bit v of qh[0..3] (byte v / 8, bit v % 8) is the fifth bit of value v.
        const uint32_t h = uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
        for (int j = 0; j < 16; ++j) {
            q[j] = static_cast<uint8_t>((qs[j] & 0xF) | ((h >> j) & 1) << 4);
            q[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | ((h >> (j + 16)) & 1) << 4);
        }
    } else if constexpr (T == GGML_TYPE_Q8_0) {
        std::memcpy(q, b + 2, 32);
    } else if constexpr (T == GGML_TYPE_Q2_K || T == GGML_TYPE_Q3_K) {
        // v = 128 n + 32 j + l: bits 2j of qs[32 n + l]; Q3_K: bit 4n + j of hmask[l] is the third bit.
        const uint8_t * hm = b;
        const uint8_t * qs = b + (T == GGML_TYPE_Q2_K ? 16 : 32);
        for (int n = 0; n < 2; ++n)
            for (int j = 0; j < 4; ++j)
                for (int l = 0; l < 32; ++l) {
                    int c = (qs[32 * n + l] >> (2 * j)) & 3;
                    if constexpr (T == GGML_TYPE_Q3_K) c |= ((hm[l] >> (4 * n + j)) & 1) << 2;
                    q[128 * n + 32 * j + l] = static_cast<uint8_t>(c);
                }
    } else if constexpr (T == GGML_TYPE_Q4_K || T == GGML_TYPE_Q5_K) {
        // v = 64 j + 32 h + l: nibble h of qs[32 j + l]; Q5_K: bit v / 32 of qh[l] is the fifth bit.
        const uint8_t * qh = b + 16;
        const uint8_t * qs = b + (T == GGML_TYPE_Q4_K ? 16 : 48);
        for (int j = 0; j < 4; ++j)
            for (int h = 0; h < 2; ++h)
                for (int l = 0; l < 32; ++l) {
                    int c = (qs[32 * j + l] >> (4 * h)) & 0xF;
                    if constexpr (T == GGML_TYPE_Q5_K) c |= ((qh[l] >> (2 * j + h)) & 1) << 4;
                    q[64 * j + 32 * h + l] = static_cast<uint8_t>(c);
                }
    } else if constexpr (T == GGML_TYPE_Q6_K) {
        // v = 128 n + 32 i + l: nibble i / 2 of ql[64 n + 32 (i % 2) + l], bits 2i of qh[32 n + l].
        const uint8_t * ql = b;
        const uint8_t * qh = b + 128;
        for (int n = 0; n < 2; ++n)
            for (int i = 0; i < 4; ++i)
                for (int l = 0; l < 32; ++l) {
                    const int low = (ql[64 * n + l + 32 * (i & 1)] >> (4 * (i >> 1))) & 0xF;
                    const int high = (qh[32 * n + l] >> (2 * i)) & 3;
                    q[128 * n + 32 * i + l] = static_cast<uint8_t>(low | (high << 4));
                }
    } else {
        static_assert(T == GGML_TYPE_Q4_0, "no codes for this type");
    }
}

template <ggml_type T>
inline void put_codes(const uint8_t * q, uint8_t * b) {
    if constexpr (T == GGML_TYPE_Q4_0 || T == GGML_TYPE_Q4_1) {
        uint8_t * qs = b + (T == GGML_TYPE_Q4_0 ? 2 : 4);
        for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
    } else if constexpr (T == GGML_TYPE_Q5_0 || T == GGML_TYPE_Q5_1) {
        uint8_t * qh = b + (T == GGML_TYPE_Q5_0 ? 2 : 4);
        uint8_t * qs = qh + 4;
        for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
        for (int by = 0; by < 4; ++by) {
            int h = 0;
            for (int i = 0; i < 8; ++i) h |= ((q[8 * by + i] >> 4) & 1) << i;
            qh[by] = static_cast<uint8_t>(h);
        }
    } else if constexpr (T == GGML_TYPE_Q8_0) {
        std::memcpy(b + 2, q, 32);
    } else if constexpr (T == GGML_TYPE_Q2_K || T == GGML_TYPE_Q3_K) {
        uint8_t * hm = b;
        uint8_t * qs = b + (T == GGML_TYPE_Q2_K ? 16 : 32);
        for (int n = 0; n < 2; ++n)
            for (int l = 0; l < 32; ++l) {
                int c = 0;
                for (int j = 0; j < 4; ++j) c |= (q[128 * n + 32 * j + l] & 3) << (2 * j);
                qs[32 * n + l] = static_cast<uint8_t>(c);
            }
        if constexpr (T == GGML_TYPE_Q3_K) {
            for (int l = 0; l < 32; ++l) {
                int h = 0;
                for (int n = 0; n < 2; ++n)
                    for (int j = 0; j < 4; ++j) h |= ((q[128 * n + 32 * j + l] >> 2) & 1) << (4 * n + j);
                hm[l] = static_cast<uint8_t>(h);
            }
        }
    } else if constexpr (T == GGML_TYPE_Q4_K || T == GGML_TYPE_Q5_K) {
        uint8_t * qh = b + 16;
        uint8_t * qs = b + (T == GGML_TYPE_Q4_K ? 16 : 48);
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l)
                qs[32 * j + l] = static_cast<uint8_t>((q[64 * j + l] & 0xF) | ((q[64 * j + 32 + l] & 0xF) << 4));
        if constexpr (T == GGML_TYPE_Q5_K) {
            for (int l = 0; l < 32; ++l) {
                int h = 0;
                for (int m = 0; m < 8; ++m) h |= ((q[32 * m + l] >> 4) & 1) << m;
                qh[l] = static_cast<uint8_t>(h);
            }
        }
    } else if constexpr (T == GGML_TYPE_Q6_K) {
        uint8_t * ql = b;
        uint8_t * qh = b + 128;
        for (int n = 0; n < 2; ++n)
            for (int l = 0; l < 32; ++l) {
                const uint8_t * v = q + 128 * n + l;  // v[32 i]: value 128 n + 32 i + l
                ql[64 * n + l] = static_cast<uint8_t>((v[0] & 0xF) | ((v[64] & 0xF) << 4));
                ql[64 * n + 32 + l] = static_cast<uint8_t>((v[32] & 0xF) | ((v[96] & 0xF) << 4));
                qh[32 * n + l] = static_cast<uint8_t>(((v[0] >> 4) & 3) | (((v[32] >> 4) & 3) << 2) |
                                                      (((v[64] >> 4) & 3) << 4) | (((v[96] >> 4) & 3) << 6));
            }
    } else {
        static_assert(T == GGML_TYPE_Q4_0, "no codes for this type");
    }
}

// Code planes (matmul_tiles.h): e(row, k) = R(row) + S(k) with R = (row / 16) * 16 * TK + row % 16 and
// S = 256 * (k / 16) + 16 * (k % 16) = 16 k. A plane of B bits per element (ppb = 8 / B elements per
// byte, LSB first) holds element e in byte R / ppb + k * 16 / ppb at bit (row % ppb) * B. So the plane
// of a row group is one slot of `stride` = 16 / ppb bytes per k, and a row's value for k is byte
// (row % 16) / ppb of slot k, at a fixed bit position.
// `scatter` writes NV values (B bits each, k = k0 .. k0 + NV - 1) of tile row `row`, leaving the other
// rows' bits alone; `gather` reads them. Both touch only the slots of those k.
#if XDNA_CODEC_SSE2
// SSE2, 16 values (16 slots, `stride` registers) at a time: the values are spread to one per slot by
// unpacking with zeros, shifted to the row's byte of the slot, and merged into the plane with a mask
// that keeps the other rows' bits; gathering shifts and masks them out and packs them back.
template <int Stride>
inline void spread16(__m128i v, __m128i * r) {
    const __m128i z = _mm_setzero_si128();
    if constexpr (Stride == 2) {
        r[0] = _mm_unpacklo_epi8(v, z);
        r[1] = _mm_unpackhi_epi8(v, z);
    } else {
        __m128i h[Stride / 2];
        spread16<Stride / 2>(v, h);
        for (int m = 0; m < Stride / 2; ++m) {
            if constexpr (Stride == 4) {
                r[2 * m] = _mm_unpacklo_epi16(h[m], z);
                r[2 * m + 1] = _mm_unpackhi_epi16(h[m], z);
            } else {
                r[2 * m] = _mm_unpacklo_epi32(h[m], z);
                r[2 * m + 1] = _mm_unpackhi_epi32(h[m], z);
            }
        }
    }
}

// Registers holding one value per slot (the low byte of each 16/32/64-bit lane, the other bytes
// zero) -> 16 consecutive bytes.
template <int Stride>
inline __m128i pack16(const __m128i * r) {
    if constexpr (Stride == 2) {
        return _mm_packus_epi16(r[0], r[1]);
    } else if constexpr (Stride == 4) {
        return _mm_packus_epi16(_mm_packs_epi32(r[0], r[1]), _mm_packs_epi32(r[2], r[3]));
    } else {
        __m128i q[4];
        for (int m = 0; m < 4; ++m) {  // 64-bit lanes -> 32-bit lanes
            const __m128i a = _mm_shuffle_epi32(r[2 * m], _MM_SHUFFLE(3, 1, 2, 0));
            const __m128i b = _mm_shuffle_epi32(r[2 * m + 1], _MM_SHUFFLE(3, 1, 2, 0));
            q[m] = _mm_unpacklo_epi64(a, b);
        }
        return pack16<4>(q);
    }
}

// Shifts of the slot-wide lanes by a bit count held in `count`.
template <int Stride>
inline __m128i slot_shl(__m128i v, __m128i count) {
    return Stride == 2 ? _mm_sll_epi16(v, count) : Stride == 4 ? _mm_sll_epi32(v, count) : _mm_sll_epi64(v, count);
}
template <int Stride>
inline __m128i slot_shr(__m128i v, __m128i count) {
    return Stride == 2 ? _mm_srl_epi16(v, count) : Stride == 4 ? _mm_srl_epi32(v, count) : _mm_srl_epi64(v, count);
}

// `b` in byte `at` of every slot, `other` in the other bytes.
template <int Stride>
inline __m128i slot_bytes(int at, uint8_t b, uint8_t other) {
    uint64_t pattern = 0x0101010101010101ull * other;
    for (int i = at; i < 8; i += Stride) {
        pattern = (pattern & ~(0xFFull << (8 * i))) | uint64_t(b) << (8 * i);
    }
    return _mm_set1_epi64x(static_cast<int64_t>(pattern));
}
#endif

template <int B, int TK, int NV>
inline void scatter(uint8_t * plane, int row, int k0, const uint8_t * v) {
    static_assert(TK % kKStep == 0 && NV % kKStep == 0, "whole k steps");
    constexpr int ppb = 8 / B;
    constexpr int stride = kKStep / ppb;
    const int at = (row % kRowGroup) / ppb;  // the row's byte in a slot
    const int shift = (row % ppb) * B;
    const uint8_t field = static_cast<uint8_t>(((1 << B) - 1) << shift);
    uint8_t * slots = plane + (row / kRowGroup) * kRowGroup * TK / ppb + k0 * stride;
#if XDNA_CODEC_SSE2
    if constexpr (B < 8) {
        const __m128i keep = slot_bytes<stride>(at, static_cast<uint8_t>(~field), 0xFF);
        const __m128i in_field = _mm_set1_epi8(static_cast<char>(field));
        const __m128i bits = _mm_cvtsi32_si128(shift), bytes = _mm_cvtsi32_si128(8 * at);
        for (int i = 0; i < NV; i += 16, slots += 16 * stride) {
            __m128i r[stride];
            const __m128i vals = _mm_loadu_si128(reinterpret_cast<const __m128i *>(v + i));
            spread16<stride>(_mm_and_si128(_mm_sll_epi16(vals, bits), in_field), r);
            for (int m = 0; m < stride; ++m) {
                __m128i * d = reinterpret_cast<__m128i *>(slots + 16 * m);
                _mm_storeu_si128(d, _mm_or_si128(_mm_and_si128(_mm_loadu_si128(d), keep), slot_shl<stride>(r[m], bytes)));
            }
        }
        return;
    }
#endif
    uint8_t * p = slots + at;
    for (int i = 0; i < NV; ++i) {
        if constexpr (B == 8) {
            p[i * stride] = v[i];
        } else {
            p[i * stride] = static_cast<uint8_t>((p[i * stride] & ~field) | ((v[i] << shift) & field));
        }
    }
}

template <int B, int TK, int NV>
inline void gather(const uint8_t * plane, int row, int k0, uint8_t * v) {
    static_assert(TK % kKStep == 0 && NV % kKStep == 0, "whole k steps");
    constexpr int ppb = 8 / B;
    constexpr int stride = kKStep / ppb;
    const int at = (row % kRowGroup) / ppb;
    const int shift = (row % ppb) * B;
    const uint8_t * slots = plane + (row / kRowGroup) * kRowGroup * TK / ppb + k0 * stride;
#if XDNA_CODEC_SSE2
    if constexpr (B < 8) {
        const __m128i sel = slot_bytes<stride>(0, (1 << B) - 1, 0);
        const __m128i count = _mm_cvtsi32_si128(8 * at + shift);
        for (int i = 0; i < NV; i += 16, slots += 16 * stride) {
            __m128i r[stride];
            for (int m = 0; m < stride; ++m) {
                const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(slots + 16 * m));
                r[m] = _mm_and_si128(slot_shr<stride>(d, count), sel);
            }
            _mm_storeu_si128(reinterpret_cast<__m128i *>(v + i), pack16<stride>(r));
        }
        return;
    }
#endif
    const uint8_t * p = slots + at;
    for (int i = 0; i < NV; ++i) v[i] = static_cast<uint8_t>((p[i * stride] >> shift) & ((1 << B) - 1));
}

// Field plane I of (row, block b): unit u at field_offset(f, p, row, b, u) = first + u * 16 * unit_bytes.
template <ggml_type T, int I, bool Encode>
inline void copy_field(uint8_t * tile, int row, int b, uint8_t * block) {
    constexpr const WeightTileFormat & F = format_of(T);
    constexpr Plane P = F.planes[I];
    if constexpr (I < F.n_planes && P.kind == PlaneKind::field) {
        uint8_t * first = tile + F.plane_offset(I) +
                          (((row / kRowGroup) * F.blocks_per_row() + b) * P.units * kRowGroup + row % kRowGroup) * P.unit_bytes;
        for (int u = 0; u < P.units; ++u) {
            uint8_t * in_tile = first + u * kRowGroup * P.unit_bytes;
            uint8_t * in_block = block + P.gguf_offset + u * P.unit_bytes;
            if constexpr (Encode) {
                std::memcpy(in_tile, in_block, P.unit_bytes);
            } else {
                std::memcpy(in_block, in_tile, P.unit_bytes);
            }
        }
    }
}

template <ggml_type T, bool Encode, size_t... I>
inline void copy_fields(uint8_t * tile, int row, int b, uint8_t * block, std::index_sequence<I...>) {
    (copy_field<T, static_cast<int>(I), Encode>(tile, row, b, block), ...);
}

template <ggml_type T>
inline void encode_one(const uint8_t * src, int row, int b, uint8_t * t) {
    constexpr const WeightTileFormat & F = format_of(T);
    if constexpr (is_float(F)) {
        std::memcpy(t + static_cast<size_t>(xdna_aie::f_element(F.tile_k, row, b)) * F.block_bytes, src, F.block_bytes);
    } else {
        constexpr CodeSplit S = code_split(F);
        constexpr int NV = F.block_values;
        constexpr int TK = F.tile_k;
        constexpr bool xor8 = F.planes[S.low_plane].kind == PlaneKind::q4;
        constexpr int low_mask = (1 << S.low_bits) - 1;
        uint8_t q[NV];
        get_codes<T>(src, q);
        if constexpr (S.high_plane >= 0) {
            uint8_t h[NV];
            for (int i = 0; i < NV; ++i) h[i] = static_cast<uint8_t>(q[i] >> S.low_bits);
            scatter<S.high_bits, TK, NV>(t + F.plane_offset(S.high_plane), row, b * NV, h);
        }
        if constexpr (S.low_bits < 8) {
            for (int i = 0; i < NV; ++i) q[i] = static_cast<uint8_t>((q[i] & low_mask) ^ (xor8 ? 8 : 0));
        }
        scatter<S.low_bits, TK, NV>(t + F.plane_offset(S.low_plane), row, b * NV, q);
        copy_fields<T, true>(t, row, b, const_cast<uint8_t *>(src), std::make_index_sequence<xdna_aie::kMaxPlanes>{});
    }
}

template <ggml_type T>
inline void decode_one(const uint8_t * t, int row, int b, uint8_t * dst) {
    constexpr const WeightTileFormat & F = format_of(T);
    if constexpr (is_float(F)) {
        std::memcpy(dst, t + static_cast<size_t>(xdna_aie::f_element(F.tile_k, row, b)) * F.block_bytes, F.block_bytes);
    } else {
        constexpr CodeSplit S = code_split(F);
        constexpr int NV = F.block_values;
        constexpr int TK = F.tile_k;
        constexpr bool xor8 = F.planes[S.low_plane].kind == PlaneKind::q4;
        uint8_t q[NV];
        gather<S.low_bits, TK, NV>(t + F.plane_offset(S.low_plane), row, b * NV, q);
        if constexpr (xor8) {
            for (int i = 0; i < NV; ++i) q[i] ^= 8;
        }
        if constexpr (S.high_plane >= 0) {
            uint8_t h[NV];
            gather<S.high_bits, TK, NV>(t + F.plane_offset(S.high_plane), row, b * NV, h);
            for (int i = 0; i < NV; ++i) q[i] = static_cast<uint8_t>(q[i] | (h[i] << S.low_bits));
        }
        put_codes<T>(q, dst);
        copy_fields<T, false>(const_cast<uint8_t *>(t), row, b, dst, std::make_index_sequence<xdna_aie::kMaxPlanes>{});
    }
}

template <ggml_type T>
void encode_run(const uint8_t * src, int row, int b, int n, uint8_t * tile) {
    constexpr int BB = format_of(T).block_bytes;
    for (int i = 0; i < n; ++i) encode_one<T>(src + static_cast<size_t>(i) * BB, row, b + i, tile);
}

template <ggml_type T>
void decode_run(const uint8_t * tile, int row, int b, int n, uint8_t * dst) {
    constexpr int BB = format_of(T).block_bytes;
    for (int i = 0; i < n; ++i) decode_one<T>(tile, row, b + i, dst + static_cast<size_t>(i) * BB);
}

template <template <ggml_type> class Op, typename... Args>
void dispatch(ggml_type type, Args... args) {
    switch (type) {
        case GGML_TYPE_Q4_0: return Op<GGML_TYPE_Q4_0>::run(args...);
        case GGML_TYPE_Q4_1: return Op<GGML_TYPE_Q4_1>::run(args...);
        case GGML_TYPE_Q5_0: return Op<GGML_TYPE_Q5_0>::run(args...);
        case GGML_TYPE_Q5_1: return Op<GGML_TYPE_Q5_1>::run(args...);
        case GGML_TYPE_Q8_0: return Op<GGML_TYPE_Q8_0>::run(args...);
        case GGML_TYPE_Q2_K: return Op<GGML_TYPE_Q2_K>::run(args...);
        case GGML_TYPE_Q3_K: return Op<GGML_TYPE_Q3_K>::run(args...);
        case GGML_TYPE_Q4_K: return Op<GGML_TYPE_Q4_K>::run(args...);
        case GGML_TYPE_Q5_K: return Op<GGML_TYPE_Q5_K>::run(args...);
        case GGML_TYPE_Q6_K: return Op<GGML_TYPE_Q6_K>::run(args...);
        case GGML_TYPE_F16: return Op<GGML_TYPE_F16>::run(args...);
        case GGML_TYPE_BF16: return Op<GGML_TYPE_BF16>::run(args...);
        case GGML_TYPE_F32: return Op<GGML_TYPE_F32>::run(args...);
        default: GGML_ABORT("xdna: no tile codec for %s", ggml_type_name(type));
    }
}

template <ggml_type T>
struct EncodeRun {
    static void run(const uint8_t * src, int row, int b, int n, uint8_t * tile) { encode_run<T>(src, row, b, n, tile); }
};
template <ggml_type T>
struct DecodeRun {
    static void run(const uint8_t * tile, int row, int b, int n, uint8_t * dst) { decode_run<T>(tile, row, b, n, dst); }
};

// Activation quantization (the spec in tile-codec.h): per block, amax = max |x| over the valid values,
// s = amax / 127, id = amax > 0 ? 127 / amax : 0, code = clamp(rint(x * id), +-127) rounded half to
// even; a NaN or an infinity among the valid values makes s NaN and every code 0.
//
// rint: for |v| <= 2^22, (v + 1.5 * 2^23) - 1.5 * 2^23 is v rounded to an integer in the current
// (round-to-nearest-even) mode; the operations must not be contracted or reassociated (the contracts
// are compiled with -ffp-contract=off, and never with -ffast-math). |x * id| <= 127 (1 + 2^-24)^2 here.
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23

[[maybe_unused]] inline uint32_t float_bits(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
}

// The largest bit pattern of |x| over x[0 .. n), n a multiple of 16. For non-NaN values the order of
// |x|'s bits is the order of |x|, and a NaN or an infinity gives bits >= those of +inf.
inline uint32_t amax_bits(const float * x, int n) {
#if XDNA_CODEC_SSE2
    const __m128i abs_mask = _mm_set1_epi32(0x7FFFFFFF);
    __m128i m[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()};
    for (int i = 0; i < n; i += 16) {
        for (int k = 0; k < 4; ++k) {  // |x| bits are non-negative as int32: a signed max
            const __m128i v = _mm_and_si128(_mm_castps_si128(_mm_loadu_ps(x + i + 4 * k)), abs_mask);
            const __m128i gt = _mm_cmpgt_epi32(v, m[k]);
            m[k] = _mm_or_si128(_mm_and_si128(gt, v), _mm_andnot_si128(gt, m[k]));
        }
    }
    alignas(16) uint32_t lanes[16];
    for (int k = 0; k < 4; ++k) _mm_store_si128(reinterpret_cast<__m128i *>(lanes + 4 * k), m[k]);
    uint32_t r = 0;
    for (uint32_t l : lanes) r = std::max(r, l);
    return r;
#else
    uint32_t r = 0;
    for (int i = 0; i < n; ++i) r = std::max(r, float_bits(x[i]) & 0x7FFFFFFFu);
    return r;
#endif
}

// Codes of 16 finite values x * id (id finite, > 0) into c[0 .. 16); returns their sum.
// rint(x * id) (see kRoundMagic), then the clamp to +-127 (which |x * id| <= 127 (1 + 2^-24)^2 never
// exceeds; clamping before or after the rounding is the same, the bounds being integers).
inline int quantize16(const float * x, float id, int8_t * c) {
#if XDNA_CODEC_SSE2
    const __m128 vid = _mm_set1_ps(id), magic = _mm_set1_ps(kRoundMagic);
    const __m128 lo = _mm_set1_ps(-127.0f), hi = _mm_set1_ps(127.0f);
    __m128i q[4];
    for (int k = 0; k < 4; ++k) {
        __m128 v = _mm_mul_ps(_mm_loadu_ps(x + 4 * k), vid);
        v = _mm_sub_ps(_mm_add_ps(v, magic), magic);
        v = _mm_min_ps(_mm_max_ps(v, lo), hi);
        q[k] = _mm_cvttps_epi32(v);  // exact: v is an integer
    }
    const __m128i a = _mm_packs_epi32(q[0], q[1]), b = _mm_packs_epi32(q[2], q[3]);  // int16, no saturation
    _mm_storeu_si128(reinterpret_cast<__m128i *>(c), _mm_packs_epi16(a, b));
    __m128i t = _mm_madd_epi16(_mm_add_epi16(a, b), _mm_set1_epi16(1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    return _mm_cvtsi128_si32(t);
#else
    int sum = 0;
    for (int j = 0; j < 16; ++j) {
        float v = x[j] * id;
        v = (v + kRoundMagic) - kRoundMagic;
        const int q = std::min(127, std::max(-127, static_cast<int>(v)));
        c[j] = static_cast<int8_t>(q);
        sum += q;
    }
    return sum;
#endif
}

// One token of an activation tile, blocks of AB values (AB > 0: the block size as a constant; 0: the
// format's, at run time). The blocks are taken 8 at a time: first the max |x| of each, then their
// scales and inverse scales (independent divisions), then the codes.
template <int AB>
void quantize_token(const float * x, int valid_k, int t, const xdna_aie::ActTileFormat & f, uint8_t * base) {
    constexpr int kMaxBlock = 256;
    constexpr int kChunk = 8;
    const int ab = AB > 0 ? AB : f.act_block;
    GGML_ASSERT(ab % 16 == 0 && ab <= kMaxBlock && f.tile_k % ab == 0);
    auto * codes = reinterpret_cast<int8_t *>(base + f.codes_offset());
    auto * scales = reinterpret_cast<float *>(base + f.scales_offset());
    auto * sums = reinterpret_cast<int16_t *>(base + f.sums_offset());
    const int n_blocks = f.tile_k / ab;
    alignas(64) float part[kMaxBlock];  // the one block that valid_k cuts, zero-padded
    for (int b0 = 0; b0 < n_blocks; b0 += kChunk) {
        const int nb = std::min(kChunk, n_blocks - b0);
        const float * xs[kChunk];
        int n[kChunk];
        float amax[kChunk];
        bool finite[kChunk];
        for (int i = 0; i < nb; ++i) {
            const int k0 = (b0 + i) * ab;
            n[i] = x == nullptr ? 0 : std::max(0, std::min(ab, valid_k - k0));
            xs[i] = n[i] > 0 ? x + k0 : nullptr;
            if (n[i] > 0 && n[i] < ab) {  // values beyond valid_k: zeros (they change no max and quantize to 0)
                std::memcpy(part, xs[i], sizeof(float) * n[i]);
                std::memset(part + n[i], 0, sizeof(float) * (ab - n[i]));
                xs[i] = part;
            }
            const uint32_t bits = n[i] > 0 ? amax_bits(xs[i], ab) : 0;
            finite[i] = bits < 0x7F800000u;
            const uint32_t used = finite[i] ? bits : 0;
            std::memcpy(&amax[i], &used, 4);
        }
        float s[kChunk], id[kChunk];
        for (int i = 0; i < nb; ++i) {
            const float inv = 127.0f / (amax[i] > 0.0f ? amax[i] : 1.0f);
            s[i] = finite[i] ? amax[i] / 127.0f : std::numeric_limits<float>::quiet_NaN();
            id[i] = amax[i] > 0.0f ? inv : 0.0f;  // 0 too for a NaN or an infinity (amax set to 0)
        }
        for (int i = 0; i < nb; ++i) {
            const int k0 = (b0 + i) * ab;
            scales[f.scale_index(t, b0 + i)] = s[i];
            // Consecutive groups of 16 of a token: codes 64 bytes apart, sums 4 apart (matmul_tiles.h).
            int8_t * c = codes + f.code_index(t, k0);
            int16_t * sm = sums + f.sum_index(t, k0 / 16);
            for (int g = 0; g < ab / 16; ++g) {
                int acc = 0;
                if (id[i] == 0.0f || std::isinf(id[i])) {
                    // All zero, or amax below 127 / FLT_MAX (127 / amax overflows): the block's values are
                    // below 4e-37 and quantize to zero codes (docs/kernels.md, "Activations").
                    std::memset(c + 64 * g, 0, 16);
                } else {
                    acc = quantize16(xs[i] + 16 * g, id[i], c + 64 * g);
                }
                sm[4 * g] = static_cast<int16_t>(acc);
            }
        }
    }
}

}  // namespace

void encode_blocks(ggml_type type, const void * blocks, int row, int b, int n, void * tile) {
    dispatch<EncodeRun>(type, static_cast<const uint8_t *>(blocks), row, b, n, static_cast<uint8_t *>(tile));
}

void decode_blocks(ggml_type type, const void * tile, int row, int b, int n, void * blocks) {
    dispatch<DecodeRun>(type, static_cast<const uint8_t *>(tile), row, b, n, static_cast<uint8_t *>(blocks));
}

void encode_block(ggml_type type, const void * block, int row, int b, void * tile) {
    encode_blocks(type, block, row, b, 1, tile);
}

void decode_block(ggml_type type, const void * tile, int row, int b, void * block) {
    decode_blocks(type, tile, row, b, 1, block);
}

void quantize_activation_token(const float * x, int valid_k, int t, const xdna_aie::ActTileFormat & f, void * tile) {
    auto * base = static_cast<uint8_t *>(tile);
    switch (f.act_block) {
        case 32: return quantize_token<32>(x, valid_k, t, f, base);
        case 256: return quantize_token<256>(x, valid_k, t, f, base);
        default: return quantize_token<0>(x, valid_k, t, f, base);
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
