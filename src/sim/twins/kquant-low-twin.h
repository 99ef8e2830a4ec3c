// Fast twins of the Q2_K / Q3_K core kernels (aie/matmul/kernels/mm_kquant_low.cc) at token tiles 4
// and 32: the kernels' signatures, bit-identical results on every input. The integer sums are exact on
// both sides; the fp32 epilogue repeats the kernel's arithmetic step for step, including its product
// rounding (mul_rne: round to nearest even, subnormal factors read as zero, products below 2^-126 once
// rounded to 24 significant bits flushed to signed zero, NaN products 0x7FC00000), then IEEE adds in
// the contract's order.
//
// The vectorised path (AVX-512 with VBMI and VNNI, chosen at run time) works like the kernel on a row
// group of 16 rows in 16 int32 lanes; the portable path computes one row at a time. Both are exact.
#pragma once

#include <cstdint>

namespace xdna {

extern "C" {
void twin_mm_q2_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q2_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q3_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q3_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
}

// Kernel name (the core program's extern "C" symbol) -> its twin.
struct KquantLowTwin {
    const char * kernel;
    void (*twin)(const uint8_t * w, const uint8_t * a, float * c);
};
extern const KquantLowTwin kKquantLowTwins[4];

// The same, computing only tokens below `valid_tokens` (rounded up to 4); the C rows of the other
// tokens are left untouched. `type_id`: 0 Q2_K, 1 Q3_K.
void kquant_low_twin_tile(int type_id, int tile_n, const uint8_t * w, const uint8_t * a, float * c, int valid_tokens);

// Whether the vectorised path runs on this host.
bool kquant_low_twin_vectorised();

// Tests only: run the portable path even where the vectorised one could run.
void kquant_low_twin_force_scalar(bool on);

}  // namespace xdna
