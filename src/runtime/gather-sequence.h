// The instruction stream of a "gather" design (aie/get_rows: y[r] = src[ids[r]], rows of fp32 moved by
// the DMAs alone), built on the host from its description and the invocation's ids: what the XRT device
// hands the firmware and the simulator's DMA interpreter executes.
//
// The ids are data, not shape: the host reads them when it submits (they are graph inputs, written
// before the graph runs: GET_ROWS's ids in llama.cpp's graphs are inp_out_ids or come from host ops), so
// the plan never depends on them and is reused across tokens, while each run's stream points its BDs
// at that run's rows. Rows of y go to the columns in consecutive blocks; per column, each run of
// consecutive ids is one source task (a BD over the run's rows), a step takes as many runs as a BD slot
// has source BDs, and one y task per step writes the step's rows with the token the stream syncs on.
// As many steps in flight as the description has slots.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"
#include "runtime/rows-sequence.h"

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// Rows of one run at most. No BD field needs it (a shim BD's d2 has no wrap): it bounds the bytes one
// task holds up, so a long run of consecutive ids goes as several steps, synced as they complete.
inline constexpr int64_t kGatherRunRows = 256;

struct GatherShape {
    std::string          contract;
    int64_t              rows = 0, cols = 0;  // rows of y (one per id), fp32 values per row
    int64_t              src_rows = 0;        // rows an id may name
    int64_t              src_stride = 0, y_stride = 0;  // floats between rows
    std::vector<int32_t> ids;                 // one per row of y
    int                  columns = 0;         // 0: the design's
    bool operator==(const GatherShape & o) const {
        return contract == o.contract && rows == o.rows && cols == o.cols && src_rows == o.src_rows && src_stride == o.src_stride &&
               y_stride == o.y_stride && ids == o.ids && columns == o.columns;
    }
};

// The shape of a gather invocation from its key, its operands (src, ids, y) and the ids its "ids"
// operand holds now (read from its memory: call it when the ids are written, at submission). False with
// `err` when an operand is missing or its rows are not whole fp32 rows.
bool gather_shape_of(const Invocation & inv, const DesignDescription & d, GatherShape & out, std::string & err);

// The stream, or the reason it cannot be built (an id outside the source, a row no xclbin's tile
// divides, a stride past a BD field): the caller then runs the invocation elsewhere. Its traffic: the
// bytes of the rows in and out, the columns used, the most steps of a column.
RowsSequence build_gather_sequence(const DesignDescription & d, const GatherShape & s);

}  // namespace xdna
