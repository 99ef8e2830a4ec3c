#include "ops/rope/rope-table.h"

#include "ggml.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace xdna {

namespace {

// ggml-cpu/ops.cpp rope_yarn_ramp: the share of extrapolation of pair i0/2 between the corrected dims.
float yarn_ramp(float low, float high, int64_t i0) {
    const float y = (static_cast<float>(i0 / 2) - low) / std::max(0.001f, high - low);
    return 1 - std::min(1.0f, std::max(0.0f, y));
}

bool same_angles(const RopeAngles & a, const RopeAngles & b) {
    return a.n_dims == b.n_dims && a.n_ctx_orig == b.n_ctx_orig && a.has_freq_factors == b.has_freq_factors &&
           std::memcmp(&a.freq_base, &b.freq_base, sizeof(float)) == 0 &&
           std::memcmp(&a.freq_scale, &b.freq_scale, sizeof(float)) == 0 &&
           std::memcmp(&a.ext_factor, &b.ext_factor, sizeof(float)) == 0 &&
           std::memcmp(&a.attn_factor, &b.attn_factor, sizeof(float)) == 0 &&
           std::memcmp(&a.beta_fast, &b.beta_fast, sizeof(float)) == 0 &&
           std::memcmp(&a.beta_slow, &b.beta_slow, sizeof(float)) == 0;
}

}  // namespace

void rope_angle_row(const RopeAngles & a, const float * freq_factors, int64_t p, float * row) {
    // The same float operations in the same order as ggml_rope_cache_init (the angle of pair i is
    // pos * theta_scale^i, accumulated by multiplication), so the rotation sees the CPU's angles.
    const float theta_scale = powf(a.freq_base, -2.0f / a.n_dims);
    float corr_dims[2];
    ggml_rope_yarn_corr_dims(a.n_dims, a.n_ctx_orig, a.freq_base, a.beta_fast, a.beta_slow, corr_dims);
    const int64_t half = a.n_dims / 2;
    float theta = static_cast<float>(p);
    for (int64_t i0 = 0; i0 < a.n_dims; i0 += 2) {
        const float ff = freq_factors != nullptr ? freq_factors[i0 / 2] : 1.0f;
        const float theta_extrap = theta / ff;
        const float theta_interp = a.freq_scale * theta_extrap;
        float t = theta_interp;
        float mscale = a.attn_factor;
        if (a.ext_factor != 0.0f) {
            const float ramp_mix = yarn_ramp(corr_dims[0], corr_dims[1], i0) * a.ext_factor;
            t = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
            mscale *= 1.0f + 0.1f * logf(1.0f / a.freq_scale);
        }
        row[i0 / 2] = cosf(t) * mscale;
        row[half + i0 / 2] = sinf(t) * mscale;
        theta *= theta_scale;
    }
}

RopeAngleTable::RopeAngleTable(const RopeAngles & a, const float * freq_factors) : angles_(a) {
    if (a.has_freq_factors && freq_factors != nullptr) freq_factors_.assign(freq_factors, freq_factors + a.n_dims / 2);
}

bool RopeAngleTable::matches(const RopeAngles & a, const float * freq_factors) const {
    if (!same_angles(angles_, a)) return false;
    if (!a.has_freq_factors) return true;
    return freq_factors != nullptr && std::memcmp(freq_factors_.data(), freq_factors, freq_factors_.size() * sizeof(float)) == 0;
}

const float * RopeAngleTable::row(int64_t p) {
    if (p < 0 || p >= kRopeMaxPosition) return nullptr;
    const int64_t b = p / kBlock;
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<int64_t>(blocks_.size()) <= b) blocks_.resize(b + 1);
    if (!blocks_[b]) {
        auto block = std::make_unique<float[]>(kBlock * angles_.n_dims);
        const float * ff = angles_.has_freq_factors ? freq_factors_.data() : nullptr;
        for (int64_t i = 0; i < kBlock; ++i) rope_angle_row(angles_, ff, b * kBlock + i, block.get() + i * angles_.n_dims);
        blocks_[b] = std::move(block);
    }
    return blocks_[b].get() + (p - b * kBlock) * angles_.n_dims;
}

std::shared_ptr<RopeAngleTable> rope_angle_table(const RopeAngles & a, const float * freq_factors) {
    // A model has one or two configurations (the attention layers', a sliding window's); a test run many.
    constexpr size_t kKept = 8;
    static std::mutex mutex;
    static std::vector<std::shared_ptr<RopeAngleTable>> recent;  // most recently used last
    std::lock_guard<std::mutex> lock(mutex);
    for (size_t i = 0; i < recent.size(); ++i) {
        if (recent[i]->matches(a, freq_factors)) {
            std::shared_ptr<RopeAngleTable> t = recent[i];
            recent.erase(recent.begin() + static_cast<std::ptrdiff_t>(i));
            recent.push_back(t);
            return t;
        }
    }
    if (recent.size() == kKept) recent.erase(recent.begin());
    recent.push_back(std::make_shared<RopeAngleTable>(a, freq_factors));
    return recent.back();
}

}  // namespace xdna
