// RMS_NORM, optionally fused with the MUL by the norm weight that follows it in every llama.cpp layer:
//     y[i] = (x[i] * s) * w[i],  s = rsqrt(sum_i x[i]^2 * inv_cols + eps)
// over one row of `cols` fp32 values, in chunks that stream through the core (aie/rms_norm/README.md):
// pass 1 (rms_norm_sumsq_f32) adds the squares of each chunk into 32 fp32 partial sums, the row's
// scale is made once (rms_norm_scale_f32), pass 2 (rms_norm_apply_*_f32) scales each chunk again.
// A chunk is n values, n a multiple of 32: the chunk loops promise the compiler 1 trip of 32 lanes, no
// more, because the design calls them on 32 values (a head-dim-32 model's q and k norms, the last chunk
// of a row of 1024 k + 32: kRmsNormMinCall in src/ops/rms_norm/runtime/rms-norm-invocation.h).
//
// Numerics as the core computes them (docs/kernels.md, "The layer's glue on the NPU"): every fp32 product is aie_api's
// float multiply, which Peano emits as the `safe` bf16 emulation (nine partial products, split in the
// current rounding mode: the reset mode, floor, since this kernel sets none); every add one fp32
// rounding to nearest even in the accumulators. 1/sqrt is not an instruction the kernel relies on:
// the seed is the integer estimate 0x5f3759df - (bits >> 1), refined by three Newton steps
// y <- y * (1.5 - ((0.5 * v) * y) * y) in the same emulated multiplies (rsqrt_newton3).
#include <aie_api/aie.hpp>
#include <stdint.h>

#include <limits>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/rms_norm_tiles.h"

namespace {

constexpr int kLanes = xdna_aie::kRmsNormLanes;  // 32 fp32 lanes: one emulated multiply covers them
using vf = aie::vector<float, kLanes>;
using af = aie::accum<accfloat, kLanes>;

// 1/sqrt(v) in every lane (all lanes hold the same value here): the integer seed and three Newton
// steps. Relative error of the seed at most 0.18 %; each step squares it (about 5e-6, 7e-11, then the
// fp32 roundings): within 2.25 ulp of 1/sqrt(v) for 2^-100 <= v < 2^128 (worst 2.18, tests/kernels/test_rms_norm.cpp).
// Below 2^-100 the bf16 parts of v fall below the normal range and the emulated products lose bits
// (about 0.6 % at 2^-120): the planner takes eps >= 2^-100 only, and v >= eps. The core's scalar INVSQRT (aie_api's aie::invsqrt on
// float, llvm-aie aie2p_nlf.h) is not used: its accuracy is not published, so no host could match it.
vf rsqrt_newton3(const vf & v) {
    const aie::vector<int32_t, kLanes> bits = aie::vector_cast<int32_t>(v);
    // downshift of a positive int32 by 1: floor in the reset rounding mode under both aie_api releases.
    const aie::vector<int32_t, kLanes> seed = aie::sub(int32_t(0x5f3759df), aie::downshift(bits, 1));
    vf y = aie::vector_cast<float>(seed);
    const vf half_v = aie::mul(v, 0.5f).template to_vector<float>();
    for (int it = 0; it < 3; ++it) {
        // (0.5 v y) y rather than 0.5 v (y y): y y leaves the normal range for v near 2^127.
        const vf hy = aie::mul(half_v, y).template to_vector<float>();
        const vf t = aie::mul(hy, y).template to_vector<float>();
        const vf u = aie::sub(1.5f, t);
        y = aie::mul(y, u).template to_vector<float>();
    }
    return y;
}

}  // namespace

extern "C" {

// partial[0..32) += x[i]^2 lane by lane (lane l takes x[l], x[l + 32], ...); n a multiple of 32.
// The square is |x| * |x|: the emulated product of a negative value with itself has partial products of
// both signs, which overflow to inf - inf = NaN where the true square overflows to +inf; of |x| they are
// all positive. An infinite x splits into inf + NaN parts (the emulation's x - a), so its square is set
// to +inf: the sum is then +inf as on the CPU, and the scale 0 (rms_norm_scale_f32).
void rms_norm_sumsq_f32(const float * __restrict x, float * __restrict partial, int32_t n) {
    const float inf = std::numeric_limits<float>::infinity();
    af acc;
    acc.from_vector(aie::load_v<kLanes>(partial));
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
    for (int32_t i = 0; i < n; i += kLanes) {
        const vf a = aie::abs(aie::load_v<kLanes>(x + i));
        const vf sq = aie::select(aie::mul(a, a).template to_vector<float>(), inf, aie::eq(a, inf));
        acc = aie::add(acc, sq);
    }
    aie::store_v(partial, acc.template to_vector<float>());
}

// scale[0..32) = rsqrt(sum(partial) * inv_cols + eps) in every lane; partial is cleared for the next row.
// A sum that overflowed to +inf gives scale 0 (1/sqrt(inf), as on the CPU: the row's finite values
// become 0, its infinite ones NaN); a NaN sum gives NaN (the Newton steps keep it).
void rms_norm_scale_f32(float * __restrict partial, float * __restrict scale, float inv_cols, float eps) {
    const vf sum = aie::broadcast<float, kLanes>(aie::reduce_add(aie::load_v<kLanes>(partial)));
    // (The emulated multiply would turn an infinite sum into NaN: its parts are inf and inf - inf.)
    const vf mean = aie::mul(sum, inv_cols).template to_vector<float>();
    const vf v = aie::add(mean, eps);
    const float inf = std::numeric_limits<float>::infinity();
    aie::store_v(scale, aie::select(rsqrt_newton3(v), 0.0f, aie::eq(sum, inf)));
    aie::store_v(partial, aie::zeros<float, kLanes>());
}

// y = (x * s) * w over one chunk of n values (n a multiple of 32).
void rms_norm_apply_mul_f32(const float * __restrict x, const float * __restrict w, const float * __restrict scale,
                            float * __restrict y, int32_t n) {
    const vf s = aie::load_v<kLanes>(scale);
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
    for (int32_t i = 0; i < n; i += kLanes) {
        const vf xs = aie::mul(aie::load_v<kLanes>(x + i), s).template to_vector<float>();
        aie::store_v(y + i, aie::mul(xs, aie::load_v<kLanes>(w + i)).template to_vector<float>());
    }
}

// y = x * s over one chunk of n values, as above (RMS_NORM alone, no weight).
void rms_norm_apply_f32(const float * __restrict x, const float * __restrict scale, float * __restrict y, int32_t n) {
    const vf s = aie::load_v<kLanes>(scale);
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
    for (int32_t i = 0; i < n; i += kLanes) {
        aie::store_v(y + i, aie::mul(aie::load_v<kLanes>(x + i), s).template to_vector<float>());
    }
}

}  // extern "C"
