// Which vector paths of the twins this host can run. Every twin family has a portable path (exact
// everywhere) and vector paths chosen at run time:
//   avx512  AVX-512 F/BW/VL/VBMI/VNNI and F16C (the fp16 scale conversions);
//   avx2    AVX2, FMA and F16C (x86-64 hosts without AVX-512, e.g. AMD Zen 2/3).
// F16C is read from CPUID directly: clang before 16 does not accept "f16c" in __builtin_cpu_supports
// (the sanitizer and fuzz builds compile the twins with clang).
#pragma once

namespace xdna {

// Ordered: a path may be limited to any lower one (tests run every path a host has).
enum class TwinIsa { portable = 0, avx2 = 1, avx512 = 2 };

inline const char * twin_isa_name(TwinIsa i) {
    return i == TwinIsa::avx512 ? "avx512" : i == TwinIsa::avx2 ? "avx2" : "portable";
}

}  // namespace xdna

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

inline bool twin_host_has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

inline bool twin_host_has_avx512_isa() {
    return twin_host_has_f16c() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vnni");
}

inline bool twin_host_has_avx2_isa() {
    return twin_host_has_f16c() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// The best path this host runs.
inline xdna::TwinIsa twin_host_isa() {
    return twin_host_has_avx512_isa() ? xdna::TwinIsa::avx512 : twin_host_has_avx2_isa() ? xdna::TwinIsa::avx2 : xdna::TwinIsa::portable;
}
#else
inline xdna::TwinIsa twin_host_isa() { return xdna::TwinIsa::portable; }
#endif

// For twins with an AVX-512 path and a portable one only: the path that runs under the test limit
// `limit`, and whether the twin is worth running at all (its portable path is slower than the kernel
// code's own vectorized arithmetic).
inline bool twin_avx512_pays() {
    static const bool avx512 = twin_host_isa() == xdna::TwinIsa::avx512;  // CPUID once, not per call
    return avx512;
}
inline xdna::TwinIsa twin_avx512_or_portable(xdna::TwinIsa limit) {
    return twin_avx512_pays() && limit == xdna::TwinIsa::avx512 ? xdna::TwinIsa::avx512 : xdna::TwinIsa::portable;
}
