// fp32 -> Q8_0 of one chunk of n values (n a multiple of 32, at least 128: its loop promises the compiler
// 4 trips, one block each; as f32_to_f16.cc, the design keeps it), for the KV-cache writes of every
// llama.cpp layer into a Q8_0 cache (-ctk q8_0 -ctv q8_0): ggml's block_q8_0, 34 bytes per 32 values (an F16
// scale d, then 32 int8 codes), as quantize_row_q8_0_ref (ggml-quants.c) defines it:
//   amax = max |x|, d = amax / 127, id = d ? 1 / d : 0, code = roundf(x * id), the scale fp16(d).
// As the core computes it:
// - amax: the 32 lanes' |x| (a bit mask) and reduce_max.
// - d and id: two scalar divisions (compiler-rt's __divsf3 on the core: IEEE, round to nearest even,
//   what the host computes).
// - x * id: aie_api's float multiply, Peano's `safe` emulation (nine bf16 partial products added in
//   fp32), then to_fixed, which rounds halfway toward zero (aie_api detail/aie2p/elementary.hpp: the
//   magic-number emulation, whatever the rounding mode); a product exactly halfway, which roundf takes
//   away from zero, is moved one step out by comparing the product with its rounded value.
// - fp16(d): the bits of d rounded to nearest even by integer arithmetic (the core has no fp16 type;
//   d >= 0, and below 2^-14 an fp32 add puts it in units of 2^-24), as f32_to_f16.cc does.
// - A block holding an Inf or a NaN gets scale NaN (0x7E00) and codes 0, so every value of it reads as
//   NaN (ggml's CPU backend stores a scale of inf there, whose values read as NaN or +-inf).
// The output: block b at y + 34 b; the codes of a block start 2 bytes in, so they are stored unaligned.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/half_bits.h"
#include "xdna_aie/loop-hints.h"
#include "xdna_aie/set_rows_tiles.h"

namespace {

constexpr int kLanes = 32;
constexpr int kBlockBytes = 34;
using vf = aie::vector<float, kLanes>;
using vi = aie::vector<int32_t, kLanes>;
static_assert(kLanes == 32, "one block_q8_0 per step");

// The fp16 bits of d >= 0 (finite), rounded to nearest even (xdna_aie/half_bits.h, as f32_to_f16).
uint16_t half_of(float d) {
    return static_cast<uint16_t>(xdna_aie::half_magnitude(aie::vector_cast<int32_t>(aie::broadcast<float, kLanes>(d))).get(0));
}

}  // namespace

extern "C" {

void f32_to_q8_0(const float * __restrict x, uint8_t * __restrict y, int32_t n) {
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(4)
    for (int32_t i = 0; i < n; i += kLanes) {
        uint8_t * blk = y + (i / kLanes) * kBlockBytes;
        const vf v = aie::load_v<kLanes>(x + i);
        const vi mag = aie::bit_and(int32_t(0x7FFFFFFF), aie::vector_cast<int32_t>(v));
        if (!aie::ge(mag, int32_t(0x7F800000)).empty()) {
            *reinterpret_cast<uint16_t *>(blk) = 0x7E00;
            aie::store_unaligned_v(reinterpret_cast<int8_t *>(blk + 2), aie::zeros<int8_t, kLanes>(), 2);
            continue;
        }
        const float amax = aie::reduce_max(aie::vector_cast<float>(mag));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const vf p = aie::mul(v, id).template to_vector<float>();
        // roundf: to_fixed rounds halfway toward zero, so a product exactly halfway (|p - its rounding|
        // = 0.5, exact since |p| < 2^23) is first moved half a step out, onto the integer roundf gives.
        const vf back = aie::to_float(aie::to_fixed<int8_t>(p, 0));
        const auto tie = aie::eq(aie::abs(aie::sub(p, back)), 0.5f);
        const vf out = aie::add(p, aie::select(aie::broadcast<float, kLanes>(0.5f), aie::broadcast<float, kLanes>(-0.5f), aie::lt(p, 0.0f)));
        const aie::vector<int8_t, kLanes> code = aie::to_fixed<int8_t>(aie::select(p, out, tie), 0);
        *reinterpret_cast<uint16_t *>(blk) = half_of(d);
        aie::store_unaligned_v(reinterpret_cast<int8_t *>(blk + 2), code, 2);
    }
}

}  // extern "C"
