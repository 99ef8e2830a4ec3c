// SCALE of fp32 rows: y[i] = x[i] * s (+ b when b is not 0) over one chunk of n values (n a multiple of
// 32, at least 128: its loop promises the compiler 4 trips; the design's chunks keep it, and it takes
// rows of more than 96 values: src/ops/scale/runtime/scale-invocation.h), ggml's SCALE with its bias.
// The product is aie_api's float multiply (Peano's `safe` emulation, x first), the bias one fp32 add
// rounding to nearest even. With b = 0 no add is issued, as the CPU then
// only scales (ggml-cpu ops.cpp ggml_compute_forward_scale_f32). A zero x gives +0 for either sign of s
// (the emulated product sums its partial products, and -0 + +0 is +0), where the CPU gives -0 for s < 0.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/scale_tiles.h"

extern "C" {

void scale_f32(const float * __restrict x, float * __restrict y, int32_t n, float s, float b, int32_t with_bias) {
    constexpr int kLanes = xdna_aie::kScaleLanes;
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(4)
    for (int32_t i = 0; i < n; i += kLanes) {
        const aie::vector<float, kLanes> p = aie::mul(aie::load_v<kLanes>(x + i), s).template to_vector<float>();
        aie::store_v(y + i, with_bias ? aie::add(p, b) : p);
    }
}

}  // extern "C"
