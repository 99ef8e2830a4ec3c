// The orthonormal Walsh-Hadamard transform of rows of n = 64, 128 or 256 fp32 values: llama.cpp's
// rotation of q, k, v and the attention output around a quantized KV cache (a MUL_MAT by the n x n
// Hadamard matrix with GGML_HINT_SRC0_IS_HADAMARD, llama-impl.h llama_mul_mat_hadamard). Computed as
// ggml's CPU backend computes that hint (ggml-cpu ops.cpp ggml_compute_forward_fwht_f32), in its order:
//   y = x * (1 / sqrtf(n)); then for len = 1, 2, 4, ..., n/2: for each pair (i, i + len) of a block of
//   2 len values, (y[i], y[i+len]) = (y[i] + y[i+len], y[i] - y[i+len]).
// As the core computes it: the scale is aie_api's float multiply (Peano's `safe` emulation: nine bf16
// partial products added in fp32, which can differ from IEEE's rounding of the product by an ulp);
// every butterfly add and subtract one fp32 rounding to nearest even in the accumulators, as the CPU's
// (its subtract is an FMA u + v * -1: one rounding). The stages below 32 pair lanes of a vector:
// interleave_unzip gathers the first and second halves of every block of 2 len lanes across a pair of
// vectors, and interleave_zip puts the sums and differences back; from len 32 up whole vectors pair.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/hadamard_tiles.h"
#include "xdna_aie/loop-hints.h"

namespace {

constexpr int kLanes = xdna_aie::kHadamardLanes;
using vf = aie::vector<float, kLanes>;

vf add(const vf & a, const vf & b) { return aie::add(a, b); }
vf sub(const vf & a, const vf & b) { return aie::sub(a, b); }

}  // namespace

extern "C" {

// `rows` rows of n values, x and y row after row (y may be x); scale: 1 / sqrtf(n), from the host.
void fwht_f32(const float * __restrict x, float * y, int32_t rows, int32_t n, float scale) {
    const int32_t nv = n / kLanes;
    for (int32_t r = 0; r < rows; ++r) {
        vf v[xdna_aie::kHadamardMaxN / kLanes];
        for (int32_t i = 0; i < nv; ++i) v[i] = aie::mul(aie::load_v<kLanes>(x + r * n + i * kLanes), scale).template to_vector<float>();
        // len 1 .. 16: within pairs of vectors (a block of 2 len lanes never straddles a vector).
        for (int32_t len = 1; len < kLanes; len *= 2) {
            for (int32_t i = 0; i < nv; i += 2) {
                const auto [u, w] = aie::interleave_unzip(v[i], v[i + 1], len);
                const auto [lo, hi] = aie::interleave_zip(add(u, w), sub(u, w), len);
                v[i] = lo;
                v[i + 1] = hi;
            }
        }
        // len 32 .. n/2: whole vectors.
        for (int32_t step = 1; step < nv; step *= 2) {
            for (int32_t i = 0; i < nv; i += 2 * step) {
                for (int32_t j = i; j < i + step; ++j) {
                    const vf u = v[j], w = v[j + step];
                    v[j] = add(u, w);
                    v[j + step] = sub(u, w);
                }
            }
        }
        for (int32_t i = 0; i < nv; ++i) aie::store_v(y + r * n + i * kLanes, v[i]);
    }
}

}  // extern "C"
