// FLASH_ATTN_EXT with an F16 KV cache, the attention of every llama.cpp layer under `-fa on|auto`:
//     out[r] = sum_j softmax_j(scale * q[r].k[j] + slope[r] * mask[r][j]) v[j]
// over the KV rows j, as an online softmax (Milakov and Gimelshein; FlashAttention): a core keeps, for
// each of its query rows, the running maximum m, the running sum s of e^(score - m) and the unnormalised
// output o, and takes the K/V rows a block of 32 at a time (aie/flash_attn/README.md).
//
// Numerics as the core computes them:
// - K, V and the mask arrive as F16 and are widened to fp32 exactly with integer operations (the core
//   has no f16 arithmetic): normal values by rebasing the exponent field, subnormals as their integer
//   significand times 2^-24 (an exact int -> float conversion), Inf and NaN kept.
// - q.k: the fp32 products of aie_api's float multiply-accumulate (Peano's `safe` emulation), 32 lanes
//   of the head dim at a time into an fp32 accumulator, then the 32 lanes summed by reduce_add's
//   halving tree; times `scale` (one safe product), plus slope * mask (one safe product, one add; the
//   product skipped for slope 1, and a -inf mask kept -inf, since the safe product of an infinity is NaN).
// - e^x = 2^(x log2 e) by xdna_aie/fp32_exp.h for x >= -87; below (and for -inf, a masked position) 0.
// - The running maximum, the comparisons and s * ms + sum are scalar fp32 code (Peano: compiler-rt's
//   soft-float, IEEE round to nearest even, what the host computes); the rescale of o by ms and the
//   accumulation o += p[j] * v[j] are safe products into fp32 accumulators, one rounding per step.
// - A row whose every score so far is -inf keeps m = -inf, s = 0, o = 0: fa_finish writes zeros, as
//   ggml's CPU backend does (S == 0 -> 0). A NaN score makes the row NaN.
// The kernel does no division but fa_finish's 1/s per row (scalar, compiler-rt's __divsf3).
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/flash_attn_tiles.h"
#include "xdna_aie/fp32_exp.h"
#include "xdna_aie/loop-hints.h"

namespace {

constexpr int kLanes = xdna_aie::kFaLanes;
constexpr int kBlock = xdna_aie::kFaKvBlock;
constexpr int kMaxChunks = xdna_aie::kFaMaxHead / kLanes;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kMinArg = -87.0f;  // e^-87 = 1.6e-38, still a normal float; smaller arguments give 0
constexpr float kNegInf = -__builtin_inff();
constexpr float kMaxHalfNeg = -65504.0f;  // the most negative finite F16: below it, -inf

using vf = aie::vector<float, kLanes>;
using vi = aie::vector<int32_t, kLanes>;
using acc = aie::accum<accfloat, kLanes>;
using xdna_aie::fp32_mul;

static_assert(kBlock == kLanes, "one score vector per query row and block");

alignas(64) const int32_t kLaneIndex[kLanes] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                                16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

// 32 F16 values widened to fp32, exactly.
vf f16_to_f32(const uint16_t * p) {
    const vi w = aie::vector_cast<int32_t>(aie::unpack(aie::load_v<kLanes>(p)));
    const vi em = aie::bit_and(int32_t(0x7fff), w);  // exponent and significand
    // Normal: the exponent rebased by 127 - 15; Inf and NaN (exponent field 31) to 255.
    const vi rebase = aie::select(int32_t(112 << 23), int32_t(224 << 23), aie::ge(em, int32_t(0x7c00)));
    const vf normal = aie::vector_cast<float>(aie::add(aie::upshift(em, 13), rebase));
    const vf subnormal = aie::to_float(em, 24);  // em * 2^-24, exact: em < 2^10 where it is used
    const vf mag = aie::select(normal, subnormal, aie::lt(em, int32_t(0x400)));
    const vi sign = aie::select(int32_t(0), int32_t(INT32_MIN), aie::ge(w, int32_t(0x8000)));
    return aie::vector_cast<float>(aie::bit_or(aie::vector_cast<int32_t>(mag), sign));
}

// e^x for x <= 0; 0 below kMinArg (and for -inf).
vf exp_nonpos(const vf & x) {
    const vf z = fp32_mul(aie::max(x, kMinArg), kLog2e);
    return aie::select(xdna_aie::exp2_range(z), 0.0f, aie::lt(x, kMinArg));
}

float exp_nonpos(float x) { return exp_nonpos(aie::broadcast<float, kLanes>(x)).get(0); }

// The parts of a state (xdna_aie/flash_attn_tiles.h), for a state written or only read.
template <typename F> F * maxima(F * state) { return state; }
template <typename F> F * sums(F * state) { return state + xdna_aie::kFaMaxRows; }
template <typename F> F * outputs(F * state, int32_t d, int32_t r) { return state + xdna_aie::fa_state_o(d) + r * d; }

}  // namespace

extern "C" {

// The state of `rows` query rows before their first block: m = -inf, s = 0, o = 0.
void fa_init_f32(float * __restrict state, int32_t rows, int32_t d) {
    for (int32_t r = 0; r < rows; ++r) {
        maxima(state)[r] = kNegInf;
        sums(state)[r] = 0.0f;
    }
    const vf zero = aie::zeros<float, kLanes>();
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(2)
    for (int32_t i = 0; i < rows * d; i += kLanes) aie::store_v(outputs(state, d, 0) + i, zero);
}

// One block of n_kv <= 32 K/V rows (d F16 values each, row after row) for `rows` <= 16 query rows
// (q: d fp32 each). mask: 32 F16 per query row, or nullptr (no mask); slope: one per query row (ALiBi;
// 1 without). scores: 32 floats per query row of scratch.
void fa_block_f16(const float * __restrict q, const uint16_t * __restrict k, const uint16_t * __restrict v,
                  const uint16_t * __restrict mask, const float * __restrict slope, float * __restrict state,
                  float * __restrict scores, int32_t rows, int32_t d, int32_t n_kv, float scale) {
    const int32_t chunks = d / kLanes;
    vf wide[kMaxChunks];

    // Raw scores q.k, K row by K row: each row widened once for every query row.
    for (int32_t j = 0; j < n_kv; ++j) {
        for (int32_t c = 0; c < chunks; ++c) wide[c] = f16_to_f32(k + j * d + c * kLanes);
        AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
        for (int32_t r = 0; r < rows; ++r) {
            acc a = aie::mul(aie::load_v<kLanes>(q + r * d), wide[0]);
            for (int32_t c = 1; c < chunks; ++c) a = aie::mac(a, aie::load_v<kLanes>(q + r * d + c * kLanes), wide[c]);
            scores[r * kBlock + j] = aie::reduce_add(a.template to_vector<float>());
        }
    }

    // The softmax step of each row: new maximum, weights p = e^(score - m), rescale of s and o.
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

    // o += p[j] v[j], V row by V row: each row widened once for every query row.
    for (int32_t j = 0; j < n_kv; ++j) {
        for (int32_t c = 0; c < chunks; ++c) wide[c] = f16_to_f32(v + j * d + c * kLanes);
        AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
        for (int32_t r = 0; r < rows; ++r) {
            const float pj = scores[r * kBlock + j];
            float * o = outputs(state, d, r);
            for (int32_t c = 0; c < chunks; ++c) {
                const acc a = aie::mac(acc(aie::load_v<kLanes>(o + c * kLanes)), wide[c], pj);
                aie::store_v(o + c * kLanes, a.template to_vector<float>());
            }
        }
    }
}

// a <- the state of the same rows over a's K/V rows and b's together (a core that split the context
// with another): m = max(ma, mb), s = sa e^(ma - m) + sb e^(mb - m), o likewise.
void fa_merge_f32(float * __restrict a, const float * __restrict b, int32_t rows, int32_t d) {
    const int32_t chunks = d / kLanes;
    for (int32_t r = 0; r < rows; ++r) {
        const float ma = maxima(a)[r], mb = maxima(b)[r];
        const float m = mb > ma ? mb : ma;
        if (m == kNegInf) continue;  // both fully masked: a stays empty
        const float ca = exp_nonpos(ma - m), cb = exp_nonpos(mb - m);
        sums(a)[r] = sums(a)[r] * ca + sums(b)[r] * cb;
        float * oa = outputs(a, d, r);
        const float * ob = outputs(b, d, r);
        for (int32_t c = 0; c < chunks; ++c) {
            const acc x = aie::mac(aie::mul(aie::load_v<kLanes>(oa + c * kLanes), ca), aie::load_v<kLanes>(ob + c * kLanes), cb);
            aie::store_v(oa + c * kLanes, x.template to_vector<float>());
        }
        maxima(a)[r] = m;
    }
}

// out[r] = o[r] / s[r] (0 where s = 0: every score masked), d fp32 per row, rows out_stride floats apart.
void fa_finish_f32(const float * __restrict state, float * __restrict out, int32_t rows, int32_t d, int32_t out_stride) {
    const int32_t chunks = d / kLanes;
    for (int32_t r = 0; r < rows; ++r) {
        const float s = sums(state)[r];
        const float inv = s == 0.0f ? 0.0f : 1.0f / s;
        const float * o = outputs(state, d, r);
        for (int32_t c = 0; c < chunks; ++c) aie::store_v(out + r * out_stride + c * kLanes, fp32_mul(aie::load_v<kLanes>(o + c * kLanes), inv));
    }
}

}  // extern "C"
