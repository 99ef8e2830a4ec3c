// The add kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>

namespace xdna {

struct TileShape;

// y[r][i] = a[r][i] + b[r][i] over `rows` rows of `cols` fp32 values; b_row_stride 0: one b row for
// every row (aie/add/kernels/add.cc). `multiply`: a[r][i] * b[r][i] instead (MUL, aie/add/kernels/mul.cc).
struct AddParams {
    static constexpr KernelKind kKind = KernelKind::add;
    static constexpr const char * kName = "add";

    int64_t rows = 0, cols = 0;
    int64_t a_row_stride = 0, b_row_stride = 0, y_row_stride = 0;  // floats
    bool    multiply = false;

    uint64_t    macs(const TileShape &) const { return 0; }
    std::string shape_label(const TileShape &) const;  // "rows x cols"
};

}  // namespace xdna
