// Fresh random inputs for every test run; the seed is printed so a failure can be replayed
// with GGML_XDNA_TEST_SEED=<seed>.
#pragma once

#include "ggml.h"

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

namespace xdna_test {

inline uint64_t test_seed() {
    static const uint64_t seed = [] {
        if (const char * s = std::getenv("GGML_XDNA_TEST_SEED")) {
            return static_cast<uint64_t>(std::strtoull(s, nullptr, 10));
        }
        return static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}();
    }();
    return seed;
}

inline std::mt19937_64 & rng() {
    static std::mt19937_64 gen(test_seed());
    return gen;
}

// Normally distributed values with a few outliers, like LLM weights and activations.
inline std::vector<float> random_floats(size_t n, float scale = 1.0f) {
    std::normal_distribution<float> normal(0.0f, scale);
    std::uniform_real_distribution<float> uni(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto & x : v) {
        x = normal(rng());
        if (uni(rng()) < 0.002f) {
            x *= 8.0f;
        }
    }
    return v;
}

// A real GGUF-style tensor of `type`: random floats quantized with ggml's own quantizer.
inline std::vector<uint8_t> random_weights(ggml_type type, int64_t k, int64_t rows) {
    const std::vector<float> f = random_floats(static_cast<size_t>(k * rows));
    std::vector<uint8_t> out(ggml_row_size(type, k) * rows);
    ggml_quantize_chunk(type, f.data(), out.data(), 0, rows, k, nullptr);
    return out;
}

// Uniformly random bytes: every bit pattern a GGUF block could hold (NaN scales included).
inline void fill_random_bytes(std::vector<uint8_t> & v) {
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto & b : v) b = static_cast<uint8_t>(byte(rng()));
}

inline float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng()); }

inline double nmse(const std::vector<double> & ref, const std::vector<float> & got) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double d = ref[i] - got[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

}  // namespace xdna_test
