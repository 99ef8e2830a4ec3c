// The row_scale kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>

namespace xdna {

struct TileShape;

// y[r][i] = x[r][i] * w[r] over `rows` rows of `cols` fp32 values, w one fp32 value per row (ggml's MUL
// with b of one value per row: MoE's expert outputs by their routing weights; aie/row_scale); strides in
// floats, w_stride 0: one value for every row.
struct RowScaleParams {
    static constexpr KernelKind kKind = KernelKind::row_scale;
    static constexpr const char * kName = "row_scale";

    int64_t rows = 0, cols = 0;
    int64_t x_row_stride = 0, w_stride = 0, y_row_stride = 0;

    uint64_t    macs(const TileShape &) const { return 0; }
    std::string shape_label(const TileShape &) const;  // "rows x cols"
};

}  // namespace xdna
