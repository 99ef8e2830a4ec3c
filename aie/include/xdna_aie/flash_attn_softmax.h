// The softmax step of aie/flash_attn's core programs (flash_attn.cc: every fa_block_* program runs it
// on its raw scores) and the pieces it uses: the F16 widening, the masked-block test, e^x for x <= 0,
// the state's parts. Core code against aie_api, shared by flash_attn.cc's programs. The simulator's twin
// of the bfp16 program (src/sim/twins/flash-attn-twin.cpp) reads its pieces (the state's layout,
// the masked-block test) and mirrors the step itself, tested bit for bit against it. The numerics are
// stated in flash_attn.cc.
#pragma once

#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/flash_attn_tiles.h"
#include "xdna_aie/fp32_exp.h"

namespace xdna_aie {
namespace fa {

inline constexpr int kLanes = xdna_aie::kFaLanes;
inline constexpr int kBlock = xdna_aie::kFaKvBlock;
inline constexpr int kMaxChunks = xdna_aie::kFaMaxHead / kLanes;
inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kMinArg = -87.0f;  // e^-87 = 1.6e-38, still a normal float; smaller arguments give 0
inline constexpr float kNegInf = -__builtin_inff();
inline constexpr float kMaxHalfNeg = -65504.0f;  // the most negative finite F16: below it, -inf

using vf = aie::vector<float, kLanes>;
using vi = aie::vector<int32_t, kLanes>;
using acc = aie::accum<accfloat, kLanes>;
using xdna_aie::fp32_mul;

static_assert(kBlock == kLanes, "one score vector per query row and block");

alignas(64) inline constexpr int32_t kLaneIndex[kLanes] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                                            11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                                            22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

// 32 F16 values widened to fp32, exactly.
inline vf f16_to_f32(const aie::vector<uint16_t, kLanes> & h) {
    const vi w = aie::vector_cast<int32_t>(aie::unpack(h));
    const vi em = aie::bit_and(int32_t(0x7fff), w);  // exponent and significand
    // Normal: the exponent rebased by 127 - 15; Inf and NaN (exponent field 31) to 255.
    const vi rebase = aie::select(int32_t(112 << 23), int32_t(224 << 23), aie::ge(em, int32_t(0x7c00)));
    const vf normal = aie::vector_cast<float>(aie::add(aie::upshift(em, 13), rebase));
    const vf subnormal = aie::to_float(em, 24);  // em * 2^-24, exact: em < 2^10 where it is used
    const vf mag = aie::select(normal, subnormal, aie::lt(em, int32_t(0x400)));
    const vi sign = aie::select(int32_t(0), int32_t(INT32_MIN), aie::ge(w, int32_t(0x8000)));
    return aie::vector_cast<float>(aie::bit_or(aie::vector_cast<int32_t>(mag), sign));
}
inline vf f16_to_f32(const uint16_t * p) { return f16_to_f32(aie::load_v<kLanes>(p)); }

inline constexpr uint16_t kHalfNegInf = 0xfc00;

// Whether the mask hides every live position of the block from every row (a causal mask's future, the
// padding of the KV window): such a block changes no state (its weights are all 0), so both programs
// skip it, as the CPU backend skips masked positions.
inline bool all_masked(const uint16_t * mask, int32_t rows, int32_t n_kv) {
    if (mask == nullptr) return false;
    const auto past_end = aie::ge(aie::load_v<kLanes>(kLaneIndex), n_kv);  // 32 lanes, as a mask row
    for (int32_t r = 0; r < rows; ++r) {
        const aie::vector<uint16_t, kLanes> m = aie::select(aie::load_v<kLanes>(mask + r * kBlock), kHalfNegInf, past_end);
        if (!aie::eq(m, kHalfNegInf).full()) return false;
    }
    return true;
}

// e^x for x <= 0; 0 below kMinArg (and for -inf).
inline vf exp_nonpos(const vf & x) {
    const vf z = fp32_mul(aie::max(x, kMinArg), kLog2e);
    return aie::select(xdna_aie::exp2_range(z), 0.0f, aie::lt(x, kMinArg));
}

inline float exp_nonpos(float x) { return exp_nonpos(aie::broadcast<float, kLanes>(x)).get(0); }

// The parts of a state (xdna_aie/flash_attn_tiles.h), for a state written or only read.
template <typename F> inline F * maxima(F * state) { return state; }
template <typename F> inline F * sums(F * state) { return state + xdna_aie::kFaMaxRows; }
template <typename F> inline F * outputs(F * state, int32_t d, int32_t r) { return state + xdna_aie::fa_state_o(d) + r * d; }

// The softmax step of a block for each row, on its raw scores q.k in `scores` (32 per row): times
// `scale`, plus slope * mask, lanes past n_kv -inf; the new maximum; the weights p = e^(score - m)
// written over the scores; s and o rescaled when the maximum rises.
inline void softmax_step(const uint16_t * __restrict mask, const float * __restrict slope, float * __restrict state,
                         float * __restrict scores, int32_t rows, int32_t d, int32_t n_kv, float scale) {
    const int32_t chunks = d / kLanes;
    const auto past_end = aie::ge(aie::load_v<kLanes>(kLaneIndex), n_kv);
    for (int32_t r = 0; r < rows; ++r) {
        vf sv = fp32_mul(aie::load_v<kLanes>(scores + r * kBlock), scale);
        if (mask != nullptr) {
            vf mv = f16_to_f32(mask + r * kBlock);
            // The safe product of an infinity is NaN (its bf16 parts are inf and inf - inf): a masked -inf
            // keeps its value; without ALiBi (slope 1) there is no product to take.
            if (slope[r] != 1.0f) mv = aie::select(fp32_mul(mv, slope[r]), kNegInf, aie::lt(mv, kMaxHalfNeg));
            sv = aie::add(sv, mv);
        }
        sv = aie::select(sv, kNegInf, past_end);
        const float block_max = aie::reduce_max(sv);
        const float m_old = maxima(state)[r];
        const float m_new = block_max > m_old ? block_max : m_old;
        if (m_new == kNegInf) {
            // Every score so far masked: nothing to add (p = 0), the state stays as it was.
            aie::store_v(scores + r * kBlock, aie::zeros<float, kLanes>());
            continue;
        }
        const vf p = exp_nonpos(aie::sub(sv, m_new));
        aie::store_v(scores + r * kBlock, p);
        const float p_sum = aie::reduce_add(p);
        if (m_new > m_old) {
            const float ms = exp_nonpos(m_old - m_new);  // 0 for the first unmasked block
            sums(state)[r] = sums(state)[r] * ms + p_sum;
            float * o = outputs(state, d, r);
            for (int32_t c = 0; c < chunks; ++c) aie::store_v(o + c * kLanes, fp32_mul(aie::load_v<kLanes>(o + c * kLanes), ms));
            maxima(state)[r] = m_new;
        } else {
            sums(state)[r] = sums(state)[r] + p_sum;
        }
    }
}

}  // namespace fa
}  // namespace xdna_aie
