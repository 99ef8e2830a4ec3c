// The set_rows kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>

namespace xdna {

struct TileShape;

// y[ids[r]] = fp16(x[r]) (or q8_0(x[r]): y_q8_0) for r < rows, rows of `cols` values (SET_ROWS into an
// F16 or Q8_0 KV cache, aie/set_rows): x strides in floats, y strides in halves (F16) or bytes (Q8_0);
// y has y_rows rows, ids are 64- or 32-bit.
// `identity`: y[r] = fp16(x[r]) with no ids (a CPY from F32 to F16 rows).
struct SetRowsParams {
    static constexpr KernelKind kKind = KernelKind::set_rows;
    static constexpr const char * kName = "set_rows";

    int64_t rows = 0, cols = 0, y_rows = 0;
    int64_t x_row_stride = 0, y_row_stride = 0;
    bool    ids_64 = true;
    bool    identity = false;
    bool    y_q8_0 = false;  // y rows of ggml's block_q8_0 (34 bytes per 32 values)

    int64_t y_row_bytes() const { return y_q8_0 ? cols / 32 * 34 : cols * 2; }
    int64_t y_stride_bytes() const { return y_q8_0 ? y_row_stride : y_row_stride * 2; }

    uint64_t    macs(const TileShape &) const { return 0; }
    std::string shape_label(const TileShape &) const;  // "rows x cols into y_rows"
};

}  // namespace xdna
