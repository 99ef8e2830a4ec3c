// Fast twin of the SwiGLU core kernel (aie/glu/kernels/swiglu.cc, swiglu_f32): its signature and its
// bits on every input (tests/kernels/test_swiglu.cpp). The kernel spends about 20 emulated fp32 products
// on each value (the exp2 polynomial, four Newton steps of the reciprocal), and through the host aie_api
// each product splits both operands into bf16 parts again. The twin performs the same products in the
// same order, but splits a value once however many products use it (the split is a function of the
// value), and works 16 lanes at a time with AVX-512; other hosts run a scalar path with the same
// results. It exists only for speed: GGML_XDNA_SIM_EXEC=kernels runs the kernel code itself.
#pragma once

#include "host-isa.h"

#include <cstdint>

namespace xdna {

extern "C" void twin_swiglu_f32(const float * x, const float * g, float * y, int32_t n);

// The path that runs on this host (avx512 or portable; the test limit below applied).
TwinIsa swiglu_twin_isa();
// Tests only: run at most path `max`.
void swiglu_twin_limit_isa(TwinIsa max);
// Whether the twin beats the kernel code on this host: its AVX-512 path exists here (the scalar path is
// exact but slower than the kernel code's vectorized products; the simulator then runs the kernel code).
bool swiglu_twin_pays();

}  // namespace xdna
