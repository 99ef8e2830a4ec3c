// ROPE of one fp32 head row, the rotary position embedding of every llama.cpp attention layer:
// for each rotated pair (x0, x1) with angle theta,
//     y0 = x0 * cos(theta) - x1 * sin(theta),   y1 = x0 * sin(theta) + x1 * cos(theta),
// and the dims past n_dims copied. NORM mode pairs (x[2i], x[2i+1]); NEOX mode (x[i], x[i + n_dims/2]).
//
// cs is the row of the design's angle table for this token's position (aie/rope/README.md): cos of the
// n_dims/2 angles, then their sin, already scaled by the YaRN magnitude as ggml's CPU backend scales
// them. The table is built on the host once per rope configuration, as IRON's RoPE operator takes
// "a tensor of precomputed angles (look-up table)" (amd/IRON iron/operators/rope/design.py): the
// core has no vector sin or cos.
//
// Numerics as the core computes them: each product is aie_api's float multiply (Peano's `safe`
// emulation, x first), each sum or difference one fp32 rounding to nearest even. NaN and Inf
// propagate as the emulated products and IEEE adds make them (an infinite x gives NaN).
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/rope_tiles.h"

namespace {

constexpr int kLanes = xdna_aie::kRopeLanes;
using vf = aie::vector<float, kLanes>;

vf mulv(const vf & a, const vf & b) { return aie::mul(a, b).template to_vector<float>(); }

struct Rotated {
    vf y0, y1;
};

Rotated rotate(const vf & x0, const vf & x1, const vf & c, const vf & s) {
    return {aie::sub(mulv(x0, c), mulv(x1, s)), aie::add(mulv(x0, s), mulv(x1, c))};
}

void copy_tail(const float * __restrict x, float * __restrict y, int32_t from, int32_t ne0) {
    for (int32_t i = from; i < ne0; i += kLanes) aie::store_v(y + i, aie::load_v<kLanes>(x + i));
}

}  // namespace

extern "C" {

// n_dims a multiple of 32, ne0 - n_dims a multiple of 16 (xdna_aie::rope_row_fits).
void rope_norm_f32(const float * __restrict x, const float * __restrict cs, float * __restrict y, int32_t n_dims, int32_t ne0) {
    const int32_t half = n_dims / 2;
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
    for (int32_t j = 0; j < n_dims; j += 2 * kLanes) {
        // Lanes 0..15 of the first result are the pairs' x0 (even dims), of the second their x1.
        const auto [x0, x1] = aie::interleave_unzip(aie::load_v<kLanes>(x + j), aie::load_v<kLanes>(x + j + kLanes), 1);
        const Rotated r = rotate(x0, x1, aie::load_v<kLanes>(cs + j / 2), aie::load_v<kLanes>(cs + half + j / 2));
        const auto [lo, hi] = aie::interleave_zip(r.y0, r.y1, 1);
        aie::store_v(y + j, lo);
        aie::store_v(y + j + kLanes, hi);
    }
    copy_tail(x, y, n_dims, ne0);
}

void rope_neox_f32(const float * __restrict x, const float * __restrict cs, float * __restrict y, int32_t n_dims, int32_t ne0) {
    const int32_t half = n_dims / 2;
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
    for (int32_t i = 0; i < half; i += kLanes) {
        const Rotated r = rotate(aie::load_v<kLanes>(x + i), aie::load_v<kLanes>(x + half + i), aie::load_v<kLanes>(cs + i),
                                 aie::load_v<kLanes>(cs + half + i));
        aie::store_v(y + i, r.y0);
        aie::store_v(y + half + i, r.y1);
    }
    copy_tail(x, y, n_dims, ne0);
}

}  // extern "C"
