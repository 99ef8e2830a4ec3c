// fp32 multiplication as the AIE2P core performs it: the core has no fp32 multiplier, so the
// compiler's fp32 elementwise multiply intrinsics (mul_elem_16 / mac_elem_16 on float vectors, which
// aie_api uses for float x float, aie_api detail/aie2p/mul_acc32_fp.hpp and
// emulated_mmul_intrinsics.hpp) split each operand into bfloat16 parts and add bf16 x bf16 partial
// products, each exact in fp32, in an fp32 accumulator.
//
// The algorithm, from the compiler's emulation for AIE-ML (github Xilinx/llvm-aie, clang/lib/Headers/
// aiev2_core.h, *_accuracy_{low,fast,safe}); the AIE2P intrinsics are assumed to split the same way
// (their source is not public in the same form):
//   with the rounding mode set to floor, x = a + b + c where a = bf16(x), b = bf16(x - a),
//   c = bf16(x - a - b) (each difference exact in the fp32 accumulator); y = d + e + f likewise.
//   low  splits in two parts only and keeps b*d, a*e, a*d;
//   fast keeps a*f, b*e, c*d, b*d, a*e, a*d (drops b*f, c*e, c*f);
//   safe keeps all nine.
// AMD documents `fast` as the default of the AIE-ML / AIE-ML v2 compiler (UG1603 "Floating-Point
// Operations", --aie.float-accuracy safe|fast|low); the host default is therefore `fast`, and
// aie_host::set_fp32_accuracy() selects another (global, for all threads).
//
// Exactness: every partial product is exact in fp32; each accumulation rounds to nearest even. The
// host adds the partial products in the compiler's order (smallest first) and then the incoming
// accumulator; the core adds the accumulator in the same instruction as the last product, so results
// can differ from the NPU in the last bit of the accumulation, never in which products exist.
// Denormals are kept on the host (the core may flush them).
#pragma once

#include <atomic>
#include <cstdint>

#include "op-counts.hpp"
#include "rounding.hpp"

namespace aie_host {

enum class fp32_accuracy { low, fast, safe };

inline std::atomic<fp32_accuracy> & fp32_accuracy_ref() {
    static std::atomic<fp32_accuracy> a{fp32_accuracy::safe};
    return a;
}
inline void set_fp32_accuracy(fp32_accuracy a) { fp32_accuracy_ref().store(a); }
inline fp32_accuracy get_fp32_accuracy() { return fp32_accuracy_ref().load(); }

namespace detail {

struct bf16_parts {
    float hi, mid, lo;  // each a bfloat16 value; hi + mid + lo == x exactly for finite x
};

inline float bf16_floor(float x) {
    return aie::detail::bf16_bits_to_float(aie::detail::float_to_bf16_bits(x, aie::rounding_mode::floor));
}

inline bf16_parts split_bf16(float x) {
    bf16_parts p;
    p.hi = bf16_floor(x);
    const float r1 = x - p.hi;  // exact: hi holds x's leading bits
    p.mid = bf16_floor(r1);
    const float r2 = r1 - p.mid;
    p.lo = bf16_floor(r2);
    return p;
}

// The emulated product x * y (without an incoming accumulator), summed in the compiler's order.
inline float emulated_fp32_product(float x, float y, fp32_accuracy acc) {
    const bf16_parts u = split_bf16(x), v = split_bf16(y);
    const float a = u.hi, b = u.mid, c = u.lo;
    const float d = v.hi, e = v.mid, f = v.lo;
    float t;
    switch (acc) {
        case fp32_accuracy::low:  // two parts each: b*d, a*e, a*d
            t = b * d;
            t += a * e;
            t += a * d;
            break;
        case fp32_accuracy::fast:  // a*f, b*e, c*d, b*d, a*e, a*d
            t = a * f;
            t += b * e;
            t += c * d;
            t += b * d;
            t += a * e;
            t += a * d;
            break;
        case fp32_accuracy::safe:
        default:  // all nine: c*f, c*e, b*f, a*f, b*e, c*d, b*d, a*e, a*d
            t = c * f;
            t += c * e;
            t += b * f;
            t += a * f;
            t += b * e;
            t += c * d;
            t += b * d;
            t += a * e;
            t += a * d;
            break;
    }
    return t;
}

inline float emulated_fp32_mac(float acc, float x, float y, fp32_accuracy a) { return acc + emulated_fp32_product(x, y, a); }

// bf16 partial-product instructions of one emulated 16-lane fp32 multiply.
constexpr unsigned fp32_products(fp32_accuracy a) { return a == fp32_accuracy::low ? 3 : (a == fp32_accuracy::fast ? 6 : 9); }

// Instructions of `n` emulated 16-lane fp32 multiplies (the compiler's emulation, aiev2_core.h):
//   vector: the residuals x - a, (x - a) - b (msc, 2 per operand; 1 in low) and the partial products;
//   store:  the accumulator -> bf16 conversions that make the parts (6; 4 in low);
//   move:   inserting each part into a zeroed bf16 register, and the two float -> accumulator moves.
inline void count_fp32_multiplies(uint64_t n, fp32_accuracy a) {
    const uint64_t parts = a == fp32_accuracy::low ? 4 : 6;
    const uint64_t residuals = a == fp32_accuracy::low ? 2 : 4;
    count_vector(n * (residuals + fp32_products(a)));
    count_store(n * parts);
    count_move(n * (parts + 2));
}

}  // namespace detail
}  // namespace aie_host
