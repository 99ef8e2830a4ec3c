// fp32 -> fp16 of one chunk of n values (n a multiple of 32), for the KV-cache writes of every llama.cpp
// layer (SET_ROWS of K and V into an F16 cache). Round to nearest even, as the CPU backend's F16C
// conversion (vcvtps2ph, imm 0) does: overflow to inf from 65520 up, inf to inf, NaN to the quiet NaN
// 0x7E00, fp16 subnormals rounded to nearest even, the sign kept (-0 stays -0).
//
// The core has no fp16 type (aie_api's float conversions are to and from bfloat16 and the integer
// types), so the conversion is integer arithmetic on the bits, written so that no shift rounds or
// saturates whatever the core's modes:
//   normal (|x| >= 2^-14):  r = a - (112 << 23) + 0xFFF + bit 13 of a, h = r >> 13 (low 13 bits cleared first);
//   subnormal (|x| < 2^-14): h = bits(|x| + 0.5) - bits(0.5): one IEEE fp32 add (the accumulators' round to
//                           nearest even) puts the value in units of 2^-24, the fp16 subnormal step;
// and the pair (x[2i], x[2i+1]) written as one 32-bit word: h0 | h1 << 16 | signs (h1 <= 0x7E00, so
// the upshift fits; the sign of x[2i] moved down by a logical shift of a word whose low bits are 0).
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/set_rows_tiles.h"

namespace {

constexpr int kLanes = 16;
using vf = aie::vector<float, kLanes>;
using vi = aie::vector<int32_t, kLanes>;
constexpr int32_t kSignBit = -0x7FFFFFFF - 1;  // 0x80000000

// The fp16 bits of |x| (at most 0x7E00), from the bits of x.
vi half_magnitude(const vi & bits) {
    const vi a = aie::bit_and(int32_t(0x7FFFFFFF), bits);
    const vi odd = aie::downshift(aie::bit_and(int32_t(0x2000), a), 13);  // the bit that breaks ties to even
    const vi r = aie::add(aie::sub(a, int32_t(0x37FFF001)), odd);         // a - (112 << 23) + 0xFFF + odd
    const vi normal = aie::downshift(aie::bit_and(int32_t(~0x1FFF), r), 13);
    const vf tiny = aie::add(aie::vector_cast<float>(a), 0.5f);
    const vi subnormal = aie::sub(aie::vector_cast<int32_t>(tiny), int32_t(0x3F000000));
    vi h = aie::select(normal, subnormal, aie::lt(a, int32_t(0x38800000)));
    h = aie::select(h, int32_t(0x7C00), aie::ge(a, int32_t(0x477FF000)));
    return aie::select(h, int32_t(0x7E00), aie::gt(a, int32_t(0x7F800000)));
}

}  // namespace

extern "C" {

void f32_to_f16(const float * __restrict x, int32_t * __restrict y, int32_t n) {
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(4)
    for (int32_t i = 0; i < n; i += xdna_aie::kSetRowsLanes) {
        const auto [even, odd] = aie::interleave_unzip(aie::load_v<kLanes>(x + i), aie::load_v<kLanes>(x + i + kLanes), 1);
        const vi be = aie::vector_cast<int32_t>(even), bo = aie::vector_cast<int32_t>(odd);
        const vi sign_even = aie::logical_downshift(aie::bit_and(kSignBit, be), 16);
        const vi sign_odd = aie::bit_and(kSignBit, bo);
        const vi lo = aie::bit_or(half_magnitude(be), sign_even);
        const vi hi = aie::bit_or(aie::upshift(half_magnitude(bo), 16), sign_odd);
        aie::store_v(y + i / 2, aie::bit_or(lo, hi));
    }
}

}  // extern "C"
