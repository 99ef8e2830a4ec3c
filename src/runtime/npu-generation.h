// NPU generations the backend distinguishes. Kernels are compiled for one array architecture, so the
// manifest says which generations each kernel runs on and discovery says which one is present.
#pragma once

#include <string>

namespace xdna {

enum class NpuGeneration {
    unknown,
    npu1,  // XDNA (AIE2): Phoenix, Hawk Point; 4 usable columns
    npu2,  // XDNA2 (AIE2P): Strix, Strix Halo, Krackan; 8 columns
};

// The manifest spelling: "npu1", "npu2"; "unknown" for anything else.
inline const char * to_string(NpuGeneration g) {
    switch (g) {
        case NpuGeneration::npu1: return "npu1";
        case NpuGeneration::npu2: return "npu2";
        default: return "unknown";
    }
}

// Parse the manifest spelling; false for anything that is not a known generation.
inline bool parse_npu_generation(const std::string & s, NpuGeneration & out) {
    if (s == "npu1") {
        out = NpuGeneration::npu1;
        return true;
    }
    if (s == "npu2") {
        out = NpuGeneration::npu2;
        return true;
    }
    return false;
}

}  // namespace xdna
