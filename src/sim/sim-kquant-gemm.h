// A faster functional twin for the Q4_K, Q5_K and Q6_K contracts at prefill sizes (token tile 32).
//
// The NPU kernel decodes a weight tile once and reuses it for every token tile; this twin does the
// same on the host: each 256-value superblock row is decoded into unsigned codes, integer per-16
// scales and integer corrections, and every token then costs one int8 dot per 64 values (AVX-512
// VNNI). The arithmetic is the contract's: integer sub-block sums, exact; fp32 superblock scaling.
// Used when the host has AVX-512 VNNI; otherwise the generic per-row path runs.
#pragma once

#include "device.h"

namespace xdna {

// Whether this twin handles the invocation's contract and tile (and the host can run it).
bool kquant_gemm_supported(const MatmulInvocation & inv);

// Compute rows tile `mt` of `inv` for all its token tiles, writing the valid outputs.
void kquant_gemm_row_tile(const MatmulInvocation & inv, int64_t mt);

}  // namespace xdna
