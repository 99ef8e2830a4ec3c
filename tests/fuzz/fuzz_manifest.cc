// Fuzz the kernel manifest parser (src/runtime/kernel-manifest.h): whatever the text, parse_manifest
// returns a manifest whose every entry passed validation, or false with an error; it never crashes,
// reads out of bounds or hangs. The invariants below are what the XRT device relies on.
#include "runtime/kernel-manifest.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    xdna::Manifest m;
    std::string    err;
    const bool ok = xdna::parse_manifest(text, "/fuzz/manifest.json", false, m, err);
    if (!ok && err.empty()) {
        std::abort();  // an unusable manifest must say why
    }
    if (!ok) {
        return 0;
    }
    for (const xdna::KernelEntry & k : m.kernels) {
        // Accepted entries name their files and have arguments the device can index.
        if (k.contract == nullptr || k.xclbin.empty() || k.kernel_name.empty() || k.design.empty() ||
            k.family.empty()) {
            std::abort();
        }
        for (xdna::ArgKind kind : {xdna::ArgKind::weights, xdna::ArgKind::activations, xdna::ArgKind::output,
                                   xdna::ArgKind::instructions}) {
            const int i = k.arg_index(kind);
            if (i >= static_cast<int>(k.args.size())) {
                std::abort();
            }
        }
        (void) k.label();
    }
    return 0;
}
