// The instruction stream of a "scatter" design (aie/set_rows: y[ids[r]] = convert(x[r]), fp32 rows
// converted by a core per column into the rows of a KV cache), built on the host from its description
// and the invocation's ids: what the XRT device hands the firmware and the simulator's DMA interpreter
// executes.
//
// The ids are data, not shape: the host reads them when it submits (llama.cpp's KV-cache write rows
// are graph inputs, written before the graph runs), so the plan never depends on them and is reused
// across tokens, while each run's stream points its output BDs at that run's rows. The work is the
// rows design's grid (runtime/rows-sequence.h): R row blocks x S segments of each row's chunks, a
// column each. Per column, its block's rows are cut into runs of consecutive ids (at most
// kScatterRunRows rows each), a step takes as many runs as a BD slot has y BDs: one x task over the
// step's rows (consecutive rows of x) and one y task per run at the row its first id names, the last
// with the token the stream syncs on (a channel completes its tasks in order). As many steps in flight
// as the description has slots.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"
#include "runtime/rows-sequence.h"

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// Rows of one run at most: a step's x task covers its runs' rows, and the rows design's steps take at
// most kRowsPerStep.
inline constexpr int64_t kScatterRunRows = kRowsPerStep;

struct ScatterShape {
    std::string          contract;            // the program: the family's one (f32_to_f16, f32_to_q8_0)
    int64_t              rows = 0, cols = 0;  // rows of x (one per id), fp32 values per row
    int64_t              x_stride = 0;        // floats between rows of x
    int64_t              y_rows = 0;          // rows an id may name
    int64_t              y_row_bytes = 0;     // bytes of one converted row
    int64_t              y_stride = 0;        // bytes between rows of y
    std::vector<int64_t> ids;                 // one per row of x
    int                  columns = 0;         // 0: the design's
    bool operator==(const ScatterShape & o) const {
        return contract == o.contract && rows == o.rows && cols == o.cols && x_stride == o.x_stride && y_rows == o.y_rows &&
               y_row_bytes == o.y_row_bytes && y_stride == o.y_stride && ids == o.ids && columns == o.columns;
    }
};

// The shape of a scatter invocation from its key, its operands (x, ids, y; no ids: the rows in order,
// a CPY) and the ids its "ids" operand holds now, 64- or 32-bit as its bytes per row of x say (read
// from its memory: call it when the ids are written, at submission). False with `err` when an operand
// is missing or its rows are not whole.
bool scatter_shape_of(const Invocation & inv, const DesignDescription & d, ScatterShape & out, std::string & err);

// The stream, or the reason it cannot be built (an id outside y, two rows with one id, which the
// columns' DMAs would write in no defined order, a row no xclbin's tile divides, y rows not of the
// family's format, a stride past a BD field): the caller then runs the invocation elsewhere. Its
// traffic: the bytes of x read and y written, the columns used, the busiest core's calls, the most
// steps of a column.
RowsSequence build_scatter_sequence(const DesignDescription & d, const ScatterShape & s);

}  // namespace xdna
