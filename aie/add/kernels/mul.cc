// MUL of two fp32 rows (the add design's second program: the same rows and chunks as add.cc):
// y[i] = a[i] * b[i] over one chunk of n values (n a multiple of 32, at least
// 64: its loop promises the compiler 2 trips). Each product is aie_api's float
// multiply, which Peano emits as the `safe` fp32 emulation (bf16 parts, nine partial products summed
// with one fp32 rounding each): within an ulp or two of the IEEE product, not always its bits. An
// infinite operand gives NaN (its bf16 parts are inf and inf - inf), where the CPU gives inf.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/add_tiles.h"
#include "xdna_aie/loop-hints.h"

extern "C" {

void mul_f32(const float * __restrict a, const float * __restrict b, float * __restrict y, int32_t n) {
    constexpr int kLanes = xdna_aie::kAddLanes;
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(2)
    for (int32_t i = 0; i < n; i += kLanes) {
        aie::store_v(y + i, aie::mul(aie::load_v<kLanes>(a + i), aie::load_v<kLanes>(b + i)).template to_vector<float>());
    }
}

}  // extern "C"
