// SwiGLU of fp32 rows, the FFN's gate of every llama.cpp layer: y[i] = silu(x[i]) * g[g_at + i] with
// silu(x) = x / (1 + exp(-x)), over one chunk of n values (n a multiple of 32,
// at least 32: its loop promises the compiler 1 trip, so that the design's smallest tile, 32 values,
// takes a row of 128 as a group of 4 chunks). g is the object the core holds of the up
// projection: the whole group of chunks, broadcast to the column's core rows (aie/glu/dataflow.json), so
// g_at is the offset of this core's chunk in it (core row k: k x n). An IRON kernel call passes an acquired
// object's base pointer only, so the kernel takes the offset.
//
// Numerics as the core computes them (aie/glu/README.md): every product is aie_api's float multiply
// (Peano's `safe` emulation, split in the reset mode, floor), every add one fp32 rounding to nearest
// even in the accumulators. The core has no fp32 exp or divide on vectors, so both are emulated here:
//   exp(-x) = 2^z, z = clamp(-x * log2(e), -126, 125), n = rint(z) (the 1.5 * 2^23 add), f = z - n in
//             [-0.5, 0.5], 2^f by a degree-7 Taylor polynomial of e^(f ln 2) in Horner form, 2^n by
//             writing n + 127 into the exponent field (an exact integer conversion and shift);
//   1 / d    = the integer seed 0x7EF311C3 - bits(d) and four Newton steps r <- r * (2 - d * r).
// The clamp keeps 1 + 2^z and its reciprocal normal: for x below -86.6 silu(x) comes out as about
// x * 2^-125 (the CPU: about x * e^x), both below 1e-35. A NaN or infinite x gives NaN (the emulated
// multiply of an infinity is NaN: its bf16 parts are inf and inf - inf); the CPU gives NaN for NaN and
// -inf, and +inf * g for +inf.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/fp32_exp.h"
#include "xdna_aie/glu_tiles.h"
#include "xdna_aie/loop-hints.h"

namespace {

constexpr int kLanes = xdna_aie::kGluLanes;
using vf = aie::vector<float, kLanes>;
using vi = aie::vector<int32_t, kLanes>;

vf mulv(const vf & a, const vf & b) { return aie::mul(a, b).template to_vector<float>(); }
vf mulv(const vf & a, float b) { return aie::mul(a, b).template to_vector<float>(); }

using xdna_aie::exp2_range;  // 2^z for z in [-126, 125] (xdna_aie/fp32_exp.h)

// 1/d for d in [1, 2^126): the seed stays a positive normal float.
vf reciprocal(const vf & d) {
    vf r = aie::vector_cast<float>(aie::sub(int32_t(0x7EF311C3), aie::vector_cast<int32_t>(d)));
    for (int it = 0; it < 4; ++it) r = mulv(r, aie::sub(2.0f, mulv(d, r)));
    return r;
}

}  // namespace

extern "C" {

void swiglu_f32(const float * __restrict x, const float * __restrict g_group, float * __restrict y, int32_t n, int32_t g_at) {
    constexpr float kLog2e = 1.4426950408889634f;
    const float * __restrict g = g_group + g_at;
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
    for (int32_t i = 0; i < n; i += kLanes) {
        const vf xv = aie::load_v<kLanes>(x + i);
        const vf z = aie::min(aie::max(mulv(xv, -kLog2e), -126.0f), 125.0f);
        const vf d = aie::add(exp2_range(z), 1.0f);
        const vf silu = mulv(xv, reciprocal(d));
        aie::store_v(y + i, mulv(silu, aie::load_v<kLanes>(g + i)));
    }
}

}  // extern "C"
