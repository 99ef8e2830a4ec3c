// The entry points of the flash_attn core kernels (aie/flash_attn/kernels/flash_attn.cc), compiled for
// the host: what the engine (sim-flash-attn.cpp) and the design's core program in stream mode
// (flash-attn-stream.cpp) call.
#pragma once

#include <cstdint>

extern "C" {
void fa_init_f32(float * state, int32_t rows, int32_t d);
void fa_block_f16(const float * q, const uint16_t * k, const uint16_t * v, const uint16_t * mask, const float * slope,
                  float * state, float * scores, int32_t rows, int32_t d, int32_t n_kv, float scale);
void fa_prepare_q_bfp16(const float * q, uint8_t * qb, int32_t rows, int32_t d);
void fa_block_f16_bfp16(const float * q, const uint8_t * qb, const uint16_t * k, const uint16_t * v, const uint16_t * mask, const float * slope,
                        float * state, float * scores, int32_t rows, int32_t d, int32_t n_kv, float scale);
void fa_block_q8_0(const float * q, const uint8_t * k, const uint8_t * v, const uint16_t * mask, const float * slope, float * state,
                   float * scores, int32_t rows, int32_t d, int32_t n_kv, float scale);
void fa_block_q8_0_bfp16(const float * q, const uint8_t * qb, const uint8_t * k, const uint8_t * v, const uint32_t * k_words,
                         const uint32_t * v_words, const uint16_t * mask, const float * slope, float * state, float * scores,
                         uint8_t * scratch, int32_t rows, int32_t d, int32_t n_kv, float scale);
void fa_merge_f32(float * a, const float * b, int32_t rows, int32_t d);
void fa_finish_f32(const float * state, float * out, int32_t rows, int32_t d, int32_t out_stride);
}
