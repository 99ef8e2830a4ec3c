// Whether the host runs the twins' AVX-512 paths: AVX-512 F/BW/VL/VBMI/VNNI and F16C (the fp16 scale
// conversions). F16C is read from CPUID directly: clang before 16 does not accept "f16c" in
// __builtin_cpu_supports (the sanitizer and fuzz builds compile the twins with clang).
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

inline bool twin_host_has_avx512_isa() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    return f16c && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vnni");
}
#endif
