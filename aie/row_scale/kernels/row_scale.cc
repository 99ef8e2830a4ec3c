// The MUL of fp32 rows by one value per row: y[i] = x[i] * w over one chunk of n values of a row (n a
// multiple of 32, at least 64: its loop promises the compiler 2 trips; the design's chunks keep it),
// ggml's MUL with b of one value per row (MoE's expert outputs by their routing weights). The product
// is aie_api's float multiply (Peano's `safe` emulation, x first), as SCALE's (aie/scale/kernels/scale.cc):
// it can round differently from the CPU's IEEE product by an ulp, and a zero x gives +0 for either sign
// of w (the emulated product sums its partial products, and -0 + +0 is +0), where the CPU gives -0 for
// w < 0.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/row_scale_tiles.h"

extern "C" {

void row_scale_f32(const float * __restrict x, float * __restrict y, int32_t n, float w) {
    constexpr int kLanes = xdna_aie::kRowScaleLanes;
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(2)
    for (int32_t i = 0; i < n; i += kLanes) {
        aie::store_v(y + i, aie::mul(aie::load_v<kLanes>(x + i), w).template to_vector<float>());
    }
}

}  // extern "C"
