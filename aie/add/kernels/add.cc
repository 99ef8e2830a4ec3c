// ADD of two fp32 rows, the residual add of every llama.cpp layer: y[i] = a[i] + b[i] over one chunk
// of n values (n a multiple of 32, at least 64: its loop promises the compiler 2 trips). Each add is one fp32 add in the accumulators (aie_api float add:
// both operands into accumulators, one accumulator add per 64 lanes), round to nearest even: the IEEE
// sum, the CPU backend's bits. NaN and Inf propagate as IEEE adds do.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/add_tiles.h"
#include "xdna_aie/loop-hints.h"

extern "C" {

void add_f32(const float * __restrict a, const float * __restrict b, float * __restrict y, int32_t n) {
    constexpr int kLanes = xdna_aie::kAddLanes;
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(2)
    for (int32_t i = 0; i < n; i += kLanes) {
        aie::store_v(y + i, aie::add(aie::load_v<kLanes>(a + i), aie::load_v<kLanes>(b + i)));
    }
}

}  // extern "C"
