#include "act-quant-twin.h"

#include "emulated-fp32.h"
#include "xdna_aie/matmul_tiles.h"

#include <atomic>
#include <cstring>

namespace xdna {

namespace {

constexpr int kTK = 256;
constexpr int kGroup = xdna_aie::kTokGroup;
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23

std::atomic<TwinIsa> g_limit{TwinIsa::avx512};

bool use_avx512() { return act_quant_twin_isa() == TwinIsa::avx512; }

using aie::detail::bits_float;
int32_t float_bits(float f) { return static_cast<int32_t>(aie::detail::float_bits(f)); }

// 16 codes of one block: rint(x (x) id) clamped to [-127, 127], 0 for NaN, as the kernel's lanes
// (aie::max(r, c): r < c ? c : r; aie::min(r, c): c < r ? c : r; both keep a NaN r; the select then
// makes it 0; the int8 conversion of an integral value in range is exact). Returns their sum.
int32_t codes16_scalar(const float * x, const aie_host::detail::bf16_parts & sid, int8_t * out) {
    int32_t sum = 0;
    for (int i = 0; i < 16; ++i) {
        const float v = aie_host::detail::fp32_mul_safe(twin::split_scalar(x[i]), sid);
        float r = (v + kRoundMagic) - kRoundMagic;
        r = r < -127.0f ? -127.0f : r;
        r = 127.0f < r ? 127.0f : r;
        if (r != r) r = 0.0f;
        out[i] = static_cast<int8_t>(static_cast<int32_t>(r));
        sum += out[i];
    }
    return sum;
}

#if defined(__x86_64__)
// The block's codes and sums, 16 lanes at a time; id split once for the block.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void block_avx512(const float * xb, int ab, float id, const xdna_aie::ActTileFormat & f,
                                                                     int t, int k0, int8_t * codes, int16_t * sums) {
    const twin::Parts sid = twin::split(_mm512_set1_ps(id));
    const __m512 magic = _mm512_set1_ps(kRoundMagic), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    for (int k = 0; k < ab; k += 16) {
        const __m512 v = twin::emulated_mul(twin::split(_mm512_loadu_ps(xb + k)), sid, twin::fp32_accuracy::safe);
        __m512 r = _mm512_sub_ps(_mm512_add_ps(v, magic), magic);
        r = _mm512_max_ps(lo, r);  // -127 > r ? -127 : r, r when unordered
        r = _mm512_min_ps(hi, r);  // 127 < r ? 127 : r, r when unordered
        r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), _mm512_setzero_ps());
        const __m512i c = _mm512_cvttps_epi32(r);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(codes + f.code_index(t, k0 + k)), _mm512_cvtepi32_epi8(c));
        sums[f.sum_index(t, (k0 + k) / 16)] = static_cast<int16_t>(_mm512_reduce_add_epi32(c));
    }
}
#endif

template <int AB, int TN> void quantize_group(const float * x, uint8_t * tile, int32_t group) {
    constexpr xdna_aie::ActTileFormat f{TN, kTK, AB};
    auto * codes = reinterpret_cast<int8_t *>(tile + f.codes_offset());
    auto * scales = reinterpret_cast<float *>(tile + f.scales_offset());
    auto * sums = reinterpret_cast<int16_t *>(tile + f.sums_offset());
    if (group == 0) {
        // The kernel clears the scale and sum planes in 64-byte stores.
        const int n = (f.scales_bytes() + f.sums_bytes() + 63) / 64 * 64;
        std::memset(tile + f.scales_offset(), 0, static_cast<size_t>(n));
    }
    const bool wide = use_avx512();
    for (int tg = 0; tg < kGroup; ++tg) {
        const int t = group * kGroup + tg;
        const float * xt = x + tg * kTK;
        for (int b = 0; b < kTK / AB; ++b) {
            const float * xb = xt + b * AB;
            int32_t amax_bits = 0;  // the largest |x| as a bit pattern, an integer max from 0
            for (int i = 0; i < AB; ++i) {
                const int32_t a = float_bits(xb[i]) & 0x7FFFFFFF;
                amax_bits = a > amax_bits ? a : amax_bits;
            }
            const bool finite = amax_bits < 0x7F800000;
            const float amax = bits_float(static_cast<uint32_t>(finite ? amax_bits : 0));
            float id = amax > 0.0f ? 127.0f / amax : 0.0f;
            if (!(id < 3.4028235e38f)) id = 0.0f;
            scales[f.scale_index(t, b)] = finite ? amax / 127.0f : bits_float(0x7FC00000u);
#if defined(__x86_64__)
            if (wide) {
                block_avx512(xb, AB, id, f, t, b * AB, codes, sums);
                continue;
            }
#endif
            (void) wide;
            const aie_host::detail::bf16_parts sid = twin::split_scalar(id);
            for (int k = 0; k < AB; k += 16) {
                const int kk = b * AB + k;
                sums[f.sum_index(t, kk / 16)] = static_cast<int16_t>(codes16_scalar(xb + k, sid, codes + f.code_index(t, kk)));
            }
        }
    }
}

}  // namespace

TwinIsa act_quant_twin_isa() { return twin_avx512_or_portable(g_limit.load()); }

void act_quant_twin_limit_isa(TwinIsa max) { g_limit = max; }

bool act_quant_twin_pays() { return twin_avx512_pays(); }

extern "C" {
void twin_act_quant_a8_b32_n4(const float * x, uint8_t * tile, int32_t group) { quantize_group<32, 4>(x, tile, group); }
void twin_act_quant_a8_b32_n32(const float * x, uint8_t * tile, int32_t group) { quantize_group<32, 32>(x, tile, group); }
void twin_act_quant_a8_b256_n4(const float * x, uint8_t * tile, int32_t group) { quantize_group<256, 4>(x, tile, group); }
void twin_act_quant_a8_b256_n32(const float * x, uint8_t * tile, int32_t group) { quantize_group<256, 32>(x, tile, group); }
}

}  // namespace xdna
