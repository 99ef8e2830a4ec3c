// The AVX2 path of the K-quant twins (kquant-twin.h): the same results, bit for bit, on x86-64 hosts
// without AVX-512. Called by kquant-twin.cpp only when twin_host_has_avx2_isa().
#pragma once

#include <cstdint>

namespace xdna {

// One weight tile x activation tile into C, tokens below `valid` (0 <= valid <= tile_n) only.
// `type_id`: 0 Q4_K, 1 Q5_K, 2 Q6_K; `tile_n` 4 or 32.
void kquant_twin_tile_avx2(int type_id, int tile_n, const uint8_t * w, const uint8_t * a, float * c, int valid);

}  // namespace xdna
