// Fast twins of the activation-quantization core kernels (aie/act_quant/kernels/act_quant.cc,
// act_quant_a8_b{32,256}_n{4,32}): their signatures and their bits on every input
// (tests/kernels/test_act_quant.cpp). Through the host aie_api every 32 values cost a dozen vector
// operations, each a loop with its operation counting; the twin does the block's one emulated product
// per value (x times 127 / amax, whose split it makes once per block), the rint, clamp and NaN select
// 16 lanes at a time with AVX-512, or value by value on other hosts. It exists only for speed:
// GGML_XDNA_SIM_EXEC=kernels runs the kernel code itself.
#pragma once

#include "host-isa.h"

#include <cstdint>

namespace xdna {

extern "C" {
void twin_act_quant_a8_b32_n4(const float * x, uint8_t * tile, int32_t group);
void twin_act_quant_a8_b32_n32(const float * x, uint8_t * tile, int32_t group);
void twin_act_quant_a8_b256_n4(const float * x, uint8_t * tile, int32_t group);
void twin_act_quant_a8_b256_n32(const float * x, uint8_t * tile, int32_t group);
}

// The path that runs on this host (avx512 or portable; the test limit below applied).
TwinIsa act_quant_twin_isa();
// Tests only: run at most path `max`.
void act_quant_twin_limit_isa(TwinIsa max);
// Whether the twins beat the kernel code on this host: their AVX-512 path exists here (the simulator
// runs the kernel code otherwise).
bool act_quant_twin_pays();

}  // namespace xdna
