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

}  // namespace

bool bfp16_encode_block(const float * x8, uint8_t * out9) {
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

}  // namespace xdna
