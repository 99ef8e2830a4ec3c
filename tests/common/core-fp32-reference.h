// The core's fp32 multiply as Peano emits aie::mul on floats, written here from its definition for the
// tests' references (no code shared with the host aie_api that the kernels run on).
#pragma once

#include <cstdint>
#include <cstring>

namespace xdna_test {

// fp32 -> bf16 toward -inf: the split of the core's fp32 multiply in the reset rounding mode (floor).
inline float bf16_down(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7F800000u) == 0x7F800000u) return x;
    if ((u >> 31) && (u & 0xFFFFu)) u += 0x10000u;
    u &= 0xFFFF0000u;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Peano's safe fp32 multiply (llvm-aie aie2p_vmult.h, mul_elem_32_accuracy_safe): x = a + b + c and
// y = d + e + f in bf16 parts; c*f, c*e, b*f, a*f, b*e, c*d, b*d, a*e, a*d, each exact, added in that
// order with one fp32 rounding per add. Not commutative: x is the first operand.
inline float safe_mul(float x, float y) {
    const float a = bf16_down(x), b = bf16_down(x - a), c = bf16_down(x - a - b);
    const float d = bf16_down(y), e = bf16_down(y - d), f = bf16_down(y - d - e);
    const float p[9] = {c * f, c * e, b * f, a * f, b * e, c * d, b * d, a * e, a * d};
    float t = p[0];
    for (int i = 1; i < 9; ++i) t = t + p[i];
    return t;
}

// Operand pairs that pin the order of the nine partial products: for each two neighbours in it but the
// first two (c*f and c*e are both below 2^-30 of the product and add exactly in either order), a pair
// whose safe product (floor split, the reset mode) changes by an ulp when the two are swapped. Random
// operands almost never tell two small terms apart. Found by a search over operands in [0.5, 4);
// `want` is the product in the order above, `swapped` what the swap gives.
struct SafeOrderWitness {
    const char * swap;
    float x, y, want, swapped;
};
inline constexpr SafeOrderWitness kSafeOrderWitnesses[] = {
    {"b*f <-> a*f", 0x1.8c13e6p+0f, -0x1.bc8934p-1f, -0x1.57e364p+0f, -0x1.57e366p+0f},
    {"a*f <-> b*e", -0x1.3e0ffep+0f, -0x1.5660acp+0f, 0x1.a96178p+0f, 0x1.a9617ap+0f},
    {"b*e <-> c*d", -0x1.1f9efp+1f, -0x1.653d2cp-1f, 0x1.915d6p+0f, 0x1.915d5ep+0f},
    {"c*d <-> b*d", 0x1.db41eep+1f, -0x1.19bad2p+1f, -0x1.058318p+3f, -0x1.05831ap+3f},
    {"b*d <-> a*e", -0x1.67e80ap+0f, -0x1.ca86f8p+0f, 0x1.42517p+1f, 0x1.425172p+1f},
    {"a*e <-> a*d", 0x1.c3f126p-1f, -0x1.89db1ap-1f, -0x1.5ba8p-1f, -0x1.5ba802p-1f},
};

}  // namespace xdna_test
