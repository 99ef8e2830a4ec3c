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

}  // namespace xdna_test
