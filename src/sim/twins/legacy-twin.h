// Fast twins of the legacy-quant core kernels (aie/matmul/kernels/mm_legacy.cc): Q4_0, Q4_1, Q5_0,
// Q5_1 and Q8_0 at token tiles 4 and 32, with the kernels' signatures and bit-identical results. The
// integer block dots are exact (AVX-512 VNNI, or a portable path), corrected by the same activation
// sums the kernel uses; the fp32 epilogue runs in the kernel's order with the core's fp32 multiply as
// the simulator's aie_api performs it (the bf16-split emulation of the 32-lane `fast` intrinsic the
// kernel calls: emulated-fp32.h), so a twin matches the kernel code bit for bit, NaNs and infinities
// included.
#pragma once

#include <cstdint>

namespace xdna {

extern "C" {
void twin_mm_q4_0_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q4_0_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q4_1_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q4_1_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q5_0_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q5_0_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q5_1_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q5_1_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q8_0_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void twin_mm_q8_0_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
}

// One entry per kernel: its ABI name, the twin, and the twin's partial form, which computes only the
// tokens below `valid_tokens` (rounded up to 4) and leaves the C rows of the others as they are.
struct LegacyTwin {
    const char * kernel;  // e.g. "mm_q4_0_a8_n4"
    void (*fn)(const uint8_t * w, const uint8_t * a, float * c);
    void (*partial)(const uint8_t * w, const uint8_t * a, float * c, int valid_tokens);
};

// The twin of a kernel by its ABI name; nullptr if it is not a legacy-quant kernel.
const LegacyTwin * legacy_twin(const char * kernel_name);

// All ten entries (for tests and registries).
const LegacyTwin * legacy_twins(int * count);

// Whether the AVX-512 path runs on this host (the portable path otherwise; both are bit-identical).
bool legacy_twin_vectorised();

// Tests only: run the portable path even where the vectorised one could run.
void legacy_twin_force_scalar(bool on);

}  // namespace xdna
