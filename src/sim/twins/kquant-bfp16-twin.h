// Fast twins of the bfp16 prefill core kernels for Q4_K, Q5_K and Q6_K
// (aie/matmul/kernels/mm_kquant_bfp16.cc, token tile 32; Q4_K and Q5_K also token tile 64): the
// kernels' signatures, bit-identical results on every input (tests/kernels: SimExecIdentity and
// test_kquant_bfp16.cpp).
//
// The kernel's arithmetic is repeated in plain fp32 where that is exact: its bf16 products are exact
// in fp32, each accumulator add rounds to nearest even as a host float add does (-ffp-contract=off),
// the bf16 and bfp16 conversions round to nearest even. The block products are integer dots of int8
// mantissas scaled by a power of two, exact in fp32 while the scale stays in the normal range (a
// slower exact path takes the other blocks), formed by AVX-512 VNNI byte dots where the host has them. A dequantized weight tile is kept per thread and reused
// while the same tile bytes come back (every token tile of a prefill batch multiplies the same tile).
#pragma once

#include <cstdint>

namespace xdna {

extern "C" {
void twin_mm_q4_K_bfp16_n32(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q5_K_bfp16_n32(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q6_K_bfp16_n32(const uint8_t * w, const uint8_t * a, float * c);
// Token tile 64, a whole K tile: `a` holds both K halves' A objects (BlockActTileFormat{64, 128}, 9280
// bytes each), half 0 then half 1; the result is the kernel's two calls mm_q*_K_bfp16_n64(w, a, c, 0),
// then (w, a + 9280, c, 1).
void twin_mm_q4_K_bfp16_n64(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q5_K_bfp16_n64(const uint8_t * w, const uint8_t * a, float * c);
}

// The same, computing only tokens below `valid_tokens`; the C rows of the other tokens are left
// untouched. `type_id`: 0 Q4_K, 1 Q5_K, 2 Q6_K.
void kquant_bfp16_twin_tile(int type_id, const uint8_t * w, const uint8_t * a, float * c, int valid_tokens);
// The token tile 64 form (`a` as twin_mm_q4_K_bfp16_n64's); `type_id` 0 Q4_K, 1 Q5_K.
void kquant_bfp16_twin_tile_n64(int type_id, const uint8_t * w, const uint8_t * a, float * c, int valid_tokens);

// The block products run as integer dots with AVX-512 VNNI where the host has it (host-isa.h), else in
// fp32, vectorised as wide as the host allows; both give the same bits. For the tests: false keeps the
// fp32 form even on a VNNI host (the default, true, takes the best).
void kquant_bfp16_twin_allow_vnni(bool allow);

}  // namespace xdna
