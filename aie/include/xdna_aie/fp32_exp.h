// 2^z on fp32 vectors, as the core computes it: the core has no vector exp, so it is emulated with the
// operations it has (aie/glu/README.md and aie/flash_attn/README.md state the numerics):
//   n = rint(z) (the 1.5 * 2^23 add), f = z - n in [-0.5, 0.5], 2^f by a degree-7 Taylor polynomial of
//   e^(f ln 2) in Horner form (every product aie_api's float multiply, Peano's `safe` emulation; every
//   add one fp32 rounding), 2^n by writing n + 127 into the exponent field (an exact integer conversion
//   and shift). z must lie in [-126, 125] (callers clamp), so 2^n stays a normal float.
// Shared by the core programs that need exp (SwiGLU's sigmoid, attention's softmax).
#pragma once

#include <aie_api/aie.hpp>
#include <stdint.h>

namespace xdna_aie {

template <unsigned N> aie::vector<float, N> fp32_mul(const aie::vector<float, N> & a, const aie::vector<float, N> & b) {
    return aie::mul(a, b).template to_vector<float>();
}
template <unsigned N> aie::vector<float, N> fp32_mul(const aie::vector<float, N> & a, float b) {
    return aie::mul(a, b).template to_vector<float>();
}

template <unsigned N> aie::vector<float, N> exp2_range(const aie::vector<float, N> & z) {
    using vf = aie::vector<float, N>;
    using vi = aie::vector<int32_t, N>;
    constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23
    const vf n = aie::sub(aie::add(z, kRoundMagic), kRoundMagic);
    const vf f = aie::sub(z, n);
    const vf t = fp32_mul(f, 0.6931471805599453f);  // f ln 2, |t| <= 0.347
    // e^t = 1 + t + t^2/2 + ... + t^7/5040: the first omitted term is below 1.3e-8 of the result.
    vf p = aie::broadcast<float, N>(1.0f / 5040.0f);
    const float c[7] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f};
    for (int i = 0; i < 7; ++i) p = aie::add(fp32_mul(p, t), c[i]);
    // 2^n: n + 127 in the exponent field (n is integral, so the conversion is exact whatever it rounds).
    const vi e = aie::add(aie::to_fixed<int32_t>(n, 0), int32_t(127));
    const vf scale = aie::vector_cast<float>(aie::upshift(e, 23));
    return fp32_mul(p, scale);
}

}  // namespace xdna_aie
