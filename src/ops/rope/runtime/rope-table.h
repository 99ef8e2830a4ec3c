// The rope design's angle table: for each position, cos of the n_dims/2 angles, then their sin, as
// ggml's CPU backend computes them for ROPE (ggml-cpu/ops.cpp ggml_rope_cache_init and rope_yarn,
// YaRN ramp and magnitude included). The core has no vector sin or cos; like IRON's RoPE operator
// (a precomputed angle look-up table, amd/IRON iron/operators/rope/design.py) the design reads the
// row of each token's position from this table in device memory, the position being a runtime word.
// One table per rope configuration, built on the host in blocks of positions as they are first used.
#pragma once

#include "ops/rope/rope-params.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace xdna {

// Positions a table covers: [0, kRopeMaxPosition). Others are refused (the host path computes them).
constexpr int64_t kRopeMaxPosition = int64_t(1) << 20;

// Row p of the table of `a` (n_dims floats), freq_factors nullptr or n_dims/2 values.
void rope_angle_row(const RopeAngles & a, const float * freq_factors, int64_t p, float * row);

class RopeAngleTable {
public:
    RopeAngleTable(const RopeAngles & a, const float * freq_factors);

    bool matches(const RopeAngles & a, const float * freq_factors) const;
    // The row of position p (0 <= p < kRopeMaxPosition), built with its block on first use. The
    // pointer stays valid as long as the table.
    const float * row(int64_t p);
    int64_t row_floats() const { return angles_.n_dims; }

private:
    static constexpr int64_t kBlock = 256;  // positions per block

    RopeAngles                            angles_;
    std::vector<float>                    freq_factors_;
    std::mutex                            mutex_;
    std::vector<std::unique_ptr<float[]>> blocks_;
};

// The table of a configuration, shared by every invocation that has it; the process keeps the last
// few configurations used.
std::shared_ptr<RopeAngleTable> rope_angle_table(const RopeAngles & a, const float * freq_factors);

}  // namespace xdna
