// Fast twins of the K-quant core kernels (aie/matmul/kernels/mm_kquant.cc): Q4_K, Q5_K, Q6_K at token
// tiles 4 and 32, with the kernels' signatures and bit-identical results (integer sums are exact, the
// fp32 epilogue runs in the contract's order, and its multiplies are the AIE2P fp32 emulation the
// kernel code gets: emulated-fp32.h; docs/kernels.md). They exist only for speed: the
// simulator runs them by default once tests have shown them identical to the kernel code, and
// GGML_XDNA_SIM_EXEC=kernels runs the kernel code itself.
//
// Like the core kernel, a twin works on one row group (16 weight rows) at a time, rows in vector
// lanes, straight from the tile's planes: codes are unpacked, shuffled so each lane holds 4
// consecutive K values of its row, and multiplied with the int8 activations by AVX-512 VNNI, or by
// AVX2 (kquant-twin-avx2.h) on hosts without AVX-512 (a portable scalar path gives the same results
// on other hosts).
#pragma once

#include "host-isa.h"

#include <cstdint>

namespace xdna {

extern "C" {
void twin_mm_q4_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q4_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q5_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q5_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q6_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q6_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
}

// The same, computing only tokens below `valid_tokens`; rows of the other tokens of
// C are left untouched. `type_id`: 0 Q4_K, 1 Q5_K, 2 Q6_K. The simulator uses it to skip the padding
// tokens of a decode tile, which it never reads back.
void kquant_twin_tile(int type_id, int tile_n, const uint8_t * w, const uint8_t * a, float * c, int valid_tokens);

// Whether a vectorised path runs on this host (the scalar path otherwise; all are exact).
bool kquant_twin_vectorised();

// The path that runs: the best this host has, at most the test limit below.
TwinIsa kquant_twin_isa();

// Tests only: run the portable path even where the vectorised one could run.
void kquant_twin_force_scalar(bool on);

// Tests only: run at most path `max` (TwinIsa::avx512 lifts the limit).
void kquant_twin_limit_isa(TwinIsa max);

}  // namespace xdna
