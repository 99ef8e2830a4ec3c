// The get_rows kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>

namespace xdna {

struct TileShape;

// y[r] = src[ids[r]] for r < n_ids, rows of `cols` fp32 values (GET_ROWS, aie/get_rows): a gather the
// DMAs do, no core program. src has src_rows rows; strides in floats.
struct GetRowsParams {
    static constexpr KernelKind kKind = KernelKind::get_rows;
    static constexpr const char * kName = "get_rows";

    int64_t n_ids = 0, cols = 0, src_rows = 0;
    int64_t src_row_stride = 0, y_row_stride = 0;

    uint64_t    macs(const TileShape &) const { return 0; }
    std::string shape_label(const TileShape &) const;  // "n_ids of src_rows x cols"
};

}  // namespace xdna
