// Fast twin of aie/flash_attn's bfp16 program (flash_attn.cc, fa_block_f16_bfp16): its signature and its
// bits on every block it takes (tests/kernels/test_flash_attn_twin.cpp). Through the host aie_api the
// kernel spends most of its time outside the arithmetic that defines its results: 64-lane vector and
// block-vector objects built and copied per operation, every operation counted, the F16 widening done
// as the core must (integer parts and three bf16 products per value). The twin computes the same values
// on plain arrays: K and V widened in one step to the exact value those three products make, the bfp16
// splits and the 8x8x8 block products by the host aie_api's own conversion and product functions, the
// accumulator adds in the kernel's order, and the softmax step (xdna_aie/flash_attn_softmax.h) with
// each constant operand of its fp32 products split once. Bit-identical but for NaN payloads, which
// neither program defines. It exists only for speed: GGML_XDNA_SIM_EXEC=kernels runs the kernel code
// itself.
#pragma once

#include <cstdint>

namespace xdna {

// One block as fa_block_f16_bfp16 computes it. Returns false, having changed nothing, for a block the
// kernel runs on its fp32 program (a live K or V row with an infinity or a NaN) and on a host where the
// twin does not pay: the caller then runs the kernel code.
bool twin_fa_block_f16_bfp16(const float * q, const uint8_t * qb, const uint16_t * k, const uint16_t * v, const uint16_t * mask,
                             const float * slope, float * state, float * scores, int32_t rows, int32_t d, int32_t n_kv, float scale);

// Whether the twin beats the kernel code on this host: the host aie_api's AVX-512 block products and
// conversions run here (elsewhere the kernel code is as fast and the simulator runs it).
bool flash_attn_twin_pays();

}  // namespace xdna
