// The scale kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xdna {

struct TileShape;

// y[r][i] = x[r][i] * s + b over `rows` rows of `cols` fp32 values (SCALE, aie/scale/kernels/scale.cc);
// strides in floats.
struct ScaleParams {
    static constexpr KernelKind kKind = KernelKind::scale;
    static constexpr const char * kName = "scale";

    int64_t rows = 0, cols = 0;
    int64_t x_row_stride = 0, y_row_stride = 0;
    float   s = 1.0f, b = 0.0f;

    // The RTP words the design's core program reads from the block (aie/scale/dataflow.json): s and b as
    // their fp32 bits.
    std::vector<std::pair<std::string, uint32_t>> runtime_words() const;

    uint64_t    macs(const TileShape &) const { return 0; }
    std::string shape_label(const TileShape &) const;  // "rows x cols"
};

}  // namespace xdna
