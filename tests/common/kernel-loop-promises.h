// The loop promises written in a core kernel's source, for the kernel tests that hold them against the
// calls their op's engine makes.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace xdna_test {

struct LoopPromise {
    int         trips = 0;  // k of AIE_LOOP_MIN_ITERATION_COUNT(k)
    std::string loop;       // "for (...)"
};

// The loop promises of a core kernel's source (aie/<path>): for each AIE_LOOP_MIN_ITERATION_COUNT(k)
// written in code (not in a comment), k and the header of the for statement it stands before, its
// spaces as written. A promise is what the compiler may assume about every call on the core (fewer
// trips are undefined there), which the host's aie_api cannot check: the kernel tests hold each one
// against the fewest trips the op's engine can make (test_rms_norm.cpp, test_scale.cpp,
// test_set_rows.cpp, test_flash_attn.cpp).
inline std::vector<LoopPromise> kernel_loop_promises(const std::string & aie_path) {
    // This header is tests/common/kernel-loop-promises.h (however the includer spelled its path).
    const std::filesystem::path here = std::filesystem::weakly_canonical(std::filesystem::path(__FILE__));
    const std::filesystem::path file = here.parent_path().parent_path().parent_path() / "aie" / aie_path;
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    std::vector<LoopPromise> out;
    if (s.empty()) {
        ADD_FAILURE() << "cannot read " << file;
        return out;
    }
    const std::string key = "AIE_LOOP_MIN_ITERATION_COUNT(";
    for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + key.size())) {
        const size_t line = s.rfind('\n', at) + 1;
        if (s.substr(line, at - line).find("//") != std::string::npos) continue;  // in a comment
        LoopPromise p;
        p.trips = std::atoi(s.c_str() + at + key.size());
        const size_t f = s.find("for (", at);
        size_t e = f + 4;
        for (int depth = 0; e < s.size(); ++e) {
            if (s[e] == '(') ++depth;
            if (s[e] == ')' && --depth == 0) break;
        }
        p.loop = f == std::string::npos ? std::string() : s.substr(f, e + 1 - f);
        out.push_back(p);
    }
    return out;
}

}  // namespace xdna_test
