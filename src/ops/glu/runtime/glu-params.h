// The glu kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>

namespace xdna {

struct TileShape;

// SwiGLU: y[r][i] = silu(a[r][i]) * b[r][i] over `rows` rows of `cols` fp32 values, a the gate and b
// the up projection (aie/glu/kernels/swiglu.cc).
struct GluParams {
    static constexpr KernelKind kKind = KernelKind::glu;
    static constexpr const char * kName = "glu";

    int64_t rows = 0, cols = 0;
    int64_t a_row_stride = 0, b_row_stride = 0, y_row_stride = 0;  // floats

    uint64_t    macs(const TileShape &) const { return 0; }
    std::string shape_label(const TileShape &) const;  // "rows x cols"
};

}  // namespace xdna
