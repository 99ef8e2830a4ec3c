#include "contracts/bfp16-codec.h"

#include <cstring>

namespace xdna {

namespace {

// Two's complement `v` shifted right by `s` (>= 0), rounded to nearest with ties to even, as the
// conversion rounds each significand in conv_even whatever the distance (a shift of 32 or more leaves 0
// or, for a value of exactly half, its even neighbour 0).
int64_t shift_round_even(int64_t v, int s) {
    if (s == 0) return v;
    if (s > 40) return 0;  // |v| < 2^25: everything is below half an ulp of the result
    const int64_t floor_q = v >> s;  // arithmetic: toward -inf
    const int64_t rem = v - (floor_q << s);
    const int64_t half = int64_t(1) << (s - 1);
    if (rem > half || (rem == half && (floor_q & 1))) return floor_q + 1;
    return floor_q;
}

bool encode_exact(const float * x8, uint8_t * out9);

// The same arithmetic in fp32 for the common block (every value normal or zero, a block exponent from
// 6 to 254): x * 2^(133 - E) is exact (a power-of-two scaling into [-2^7, 2^7]), and rounding it to an
// integer with ties to even is the shift above (round-to-nearest-even is symmetric, so the two's
// complement and the sign-magnitude readings agree). The add-and-subtract of 1.5 * 2^23 rounds to an
// integer in the host's default rounding mode, round to nearest even. False when the block needs the
// exact bit-level path.
bool encode_fast(const float * x8, uint8_t * out9) {
    uint32_t u[8], emax = 0;
    for (int i = 0; i < 8; ++i) {
        std::memcpy(&u[i], &x8[i], 4);
        const uint32_t e = (u[i] >> 23) & 0xffu;
        if (e == 0xffu || (e == 0 && (u[i] & 0x7fffffu) != 0)) return false;  // inf, NaN, subnormal
        emax = e > emax ? e : emax;
    }
    if (emax == 0) {  // all zeros
        std::memset(out9, 0, 9);
        return true;
    }
    if (emax < 6) return false;
    const uint32_t scale_bits = (133u - emax + 127u) << 23;
    float scale;
    std::memcpy(&scale, &scale_bits, 4);
    out9[0] = static_cast<uint8_t>(emax);
    constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
    for (int i = 0; i < 8; ++i) {
        const float y = x8[i] * scale;
        float q = (y + kRound) - kRound;
        q = q > 127.0f ? 127.0f : q;
        out9[1 + i] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(q)));
    }
    return true;
}

}  // namespace

bool bfp16_encode_block(const float * x8, uint8_t * out9) {
    if (encode_fast(x8, out9)) return true;
    return encode_exact(x8, out9);
}

namespace {

bool encode_exact(const float * x8, uint8_t * out9) {
    uint32_t e[8];
    int64_t sig[8];
    uint32_t emax = 0;
    bool finite = true;
    for (int i = 0; i < 8; ++i) {
        uint32_t u;
        std::memcpy(&u, &x8[i], 4);
        e[i] = (u >> 23) & 0xffu;
        if (e[i] == 0xffu) finite = false;
        int64_t s = u & 0x7fffffu;
        if (e[i] != 0) s |= 0x800000;  // the implicit bit; a subnormal weighs as exponent field 0
        sig[i] = (u >> 31) ? -s : s;
        if (e[i] > emax) emax = e[i];
    }
    out9[0] = static_cast<uint8_t>(emax);
    for (int i = 0; i < 8; ++i) {
        int64_t q = shift_round_even(sig[i], static_cast<int>(17 + (emax - e[i])));
        if (q > 127) q = 127;  // only +128: the block's largest value rounded up
        if (q < -128) q = -128;
        out9[1 + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
    }
    return finite;
}

}  // namespace

}  // namespace xdna
