// Clears a C tile (fp32 [TN][64]) before the first K tile of an output tile is accumulated into it.
// Linked into every core program of the matmul design; the mm_* kernels only ever add into C.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/matmul_tiles.h"

namespace {

template <int TN>
void zero_c(float * __restrict c) {
    constexpr int kLanes = 16;  // 512-bit stores
    const aie::vector<float, kLanes> z = aie::zeros<float, kLanes>();
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(16)
    for (int i = 0; i < TN * xdna_aie::kTileM; i += kLanes) {
        aie::store_v(c + i, z);
    }
}

}  // namespace

extern "C" {
void mm_zero_c_n4(float * __restrict c) { zero_c<4>(c); }
void mm_zero_c_n32(float * __restrict c) { zero_c<32>(c); }
void mm_zero_c_n64(float * __restrict c) { zero_c<64>(c); }  // mm_q4_K_bfp16_n64 / mm_q5_K_bfp16_n64
}
