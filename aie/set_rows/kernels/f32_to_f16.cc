// fp32 -> fp16 of one chunk of n values (n a multiple of 32, at least 128: its loop promises the
// compiler 4 trips; the design's chunks keep it and it takes rows of 128 values and more:
// src/ops/set_rows/runtime/set-rows-invocation.h), for the KV-cache writes of every llama.cpp layer
// (SET_ROWS of K and V into an F16 cache). Round to nearest even, as the CPU backend's F16C
// conversion (vcvtps2ph, imm 0) does: overflow to inf from 65520 up, inf to inf, NaN to the quiet NaN
// 0x7E00, fp16 subnormals rounded to nearest even, the sign kept (-0 stays -0).
//
// The core has no fp16 type (aie_api's float conversions are to and from bfloat16 and the integer
// types), so the conversion is integer arithmetic on the bits (xdna_aie/half_bits.h, shared with the
// float activation tiles of aie/act_quant), written so that no shift rounds or saturates whatever the
// core's modes:
//   normal (|x| >= 2^-14):  r = a - (112 << 23) + 0xFFF + bit 13 of a, h = r >> 13 (low 13 bits cleared first);
//   subnormal (|x| < 2^-14): h = bits(|x| + 0.5) - bits(0.5): one IEEE fp32 add (the accumulators' round to
//                           nearest even) puts the value in units of 2^-24, the fp16 subnormal step;
// and the pair (x[2i], x[2i+1]) written as one 32-bit word: h0 | h1 << 16 | signs (h1 <= 0x7E00, so
// the upshift fits; the sign of x[2i] moved down by a logical shift of a word whose low bits are 0).
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/half_bits.h"
#include "xdna_aie/loop-hints.h"
#include "xdna_aie/set_rows_tiles.h"

namespace {

constexpr int kLanes = 16;
using vi = aie::vector<int32_t, kLanes>;

}  // namespace

extern "C" {

void f32_to_f16(const float * __restrict x, int32_t * __restrict y, int32_t n) {
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(4)
    for (int32_t i = 0; i < n; i += xdna_aie::kSetRowsLanes) {
        const aie::vector<float, 2 * kLanes> v = aie::concat(aie::load_v<kLanes>(x + i), aie::load_v<kLanes>(x + i + kLanes));
        aie::store_v(y + i / 2, xdna_aie::halves_as_words(v, [](const vi & b) { return xdna_aie::half_magnitude(b); }));
    }
}

}  // extern "C"
