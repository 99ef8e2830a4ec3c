// libFuzzer entry for the control-code decoder: any bytes, as 32-bit words, must decode or be refused
// with a message, never crash or read past the input; a stream that decodes must re-encode to exactly
// the words it came from (the decoder accepts only what it can represent).
#include "control/control-ops.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    std::vector<uint32_t> words(size / 4);
    if (!words.empty()) std::memcpy(words.data(), data, words.size() * 4);  // trailing 1-3 bytes dropped
    const xdna::control::Decoded d = xdna::control::decode(words.data(), words.size());
    if (d.ok()) {
        if (xdna::control::encode(d.stream) != words) std::abort();
    } else if (d.error.empty() || !d.stream.ops.empty()) {
        std::abort();
    }
    return 0;
}
