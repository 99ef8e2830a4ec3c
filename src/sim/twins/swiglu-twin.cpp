#include "swiglu-twin.h"

#include "emulated-fp32.h"

#include <atomic>

namespace xdna {

namespace {

// The kernel's constants, written as it writes them (aie/glu/kernels/swiglu.cc, xdna_aie/fp32_exp.h).
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23
constexpr float kHorner0 = 1.0f / 5040.0f;
constexpr float kHorner[7] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f};
constexpr int32_t kReciprocalSeed = 0x7EF311C3;

std::atomic<TwinIsa> g_limit{TwinIsa::avx512};

float bits_float(int32_t i) { return aie::detail::bits_float(static_cast<uint32_t>(i)); }
int32_t float_bits(float f) { return static_cast<int32_t>(aie::detail::float_bits(f)); }

using aie_host::detail::bf16_parts;
float mul(const bf16_parts & a, const bf16_parts & b) { return aie_host::detail::fp32_mul_safe(a, b); }
bf16_parts split(float v) { return twin::split_scalar(v); }

// One value, operation for operation as the kernel's lanes (aie::max(v, c): v < c ? c : v;
// aie::min(v, c): c < v ? c : v; to_fixed of an integral float is exact; a NaN gives NaN whatever
// its exponent field, so the conversion's value for it does not matter).
float swiglu_scalar(float x, float g) {
    static const bf16_parts neg_log2e = split(-kLog2e), ln2 = split(kLn2);
    const bf16_parts sx = split(x);
    float z = mul(sx, neg_log2e);
    z = z < -126.0f ? -126.0f : z;
    z = 125.0f < z ? 125.0f : z;
    const float n = (z + kRoundMagic) - kRoundMagic;
    const bf16_parts st = split(mul(split(z - n), ln2));
    float p = kHorner0;
    for (const float c : kHorner) p = mul(split(p), st) + c;
    const int32_t e = (n == n ? static_cast<int32_t>(n) : 0) + 127;
    const float d = mul(split(p), split(bits_float(static_cast<int32_t>(static_cast<uint32_t>(e) << 23)))) + 1.0f;
    const bf16_parts sd = split(d);
    float r = bits_float(static_cast<int32_t>(static_cast<uint32_t>(kReciprocalSeed) - static_cast<uint32_t>(float_bits(d))));
    for (int it = 0; it < 4; ++it) {
        const bf16_parts sr = split(r);
        r = mul(sr, split(2.0f - mul(sd, sr)));
    }
    return mul(split(mul(sx, split(r))), split(g));
}

#if defined(__x86_64__)
XDNA_EMUL_TARGET inline __m512 smul(const twin::Parts & a, const twin::Parts & b) {
    return twin::emulated_mul(a, b, twin::fp32_accuracy::safe);
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void swiglu_avx512(const float * x, const float * g, float * y, int32_t n) {
    const twin::Parts neg_log2e = twin::split(_mm512_set1_ps(-kLog2e)), ln2 = twin::split(_mm512_set1_ps(kLn2));
    const __m512 lo = _mm512_set1_ps(-126.0f), hi = _mm512_set1_ps(125.0f), magic = _mm512_set1_ps(kRoundMagic);
    const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
    for (int32_t i = 0; i < n; i += 16) {
        const twin::Parts sx = twin::split(_mm512_loadu_ps(x + i));
        __m512 z = smul(sx, neg_log2e);
        z = _mm512_max_ps(lo, z);  // lo > z ? lo : z, and z when unordered: aie::max(z, -126)
        z = _mm512_min_ps(hi, z);  // hi < z ? hi : z, and z when unordered: aie::min(z, 125)
        const __m512 nr = _mm512_sub_ps(_mm512_add_ps(z, magic), magic);
        const twin::Parts st = twin::split(smul(twin::split(_mm512_sub_ps(z, nr)), ln2));
        __m512 p = _mm512_set1_ps(kHorner0);
        for (const float c : kHorner) p = _mm512_add_ps(smul(twin::split(p), st), _mm512_set1_ps(c));
        const __m512i e = _mm512_add_epi32(_mm512_cvttps_epi32(nr), _mm512_set1_epi32(127));
        const __m512 scale = _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
        const __m512 d = _mm512_add_ps(smul(twin::split(p), twin::split(scale)), one);
        const twin::Parts sd = twin::split(d);
        __m512 r = _mm512_castsi512_ps(_mm512_sub_epi32(_mm512_set1_epi32(kReciprocalSeed), _mm512_castps_si512(d)));
        for (int it = 0; it < 4; ++it) {
            const twin::Parts sr = twin::split(r);
            r = smul(sr, twin::split(_mm512_sub_ps(two, smul(sd, sr))));
        }
        const __m512 silu = smul(sx, twin::split(r));
        _mm512_storeu_ps(y + i, smul(twin::split(silu), twin::split(_mm512_loadu_ps(g + i))));
    }
}
#endif

}  // namespace

TwinIsa swiglu_twin_isa() { return twin_avx512_or_portable(g_limit.load()); }

void swiglu_twin_limit_isa(TwinIsa max) { g_limit = max; }

bool swiglu_twin_pays() { return twin_avx512_pays(); }

extern "C" void twin_swiglu_f32(const float * x, const float * g, float * y, int32_t n) {
#if defined(__x86_64__)
    if (swiglu_twin_isa() == TwinIsa::avx512 && n % 16 == 0) {
        swiglu_avx512(x, g, y, n);
        return;
    }
#endif
    for (int32_t i = 0; i < n; ++i) y[i] = swiglu_scalar(x[i], g[i]);
}

}  // namespace xdna
