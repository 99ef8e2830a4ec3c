// The add design's instruction stream for one invocation shape, built on the host from its description
// (aie/add/dataflow.json): what the XRT device hands the firmware and the simulator's DMA interpreter
// executes (sim/dma-interpreter.h, with the add core program of ops/add/sim).
//
// The work: rows go to the columns in contiguous blocks (column c the rows [first_c, first_c + n_c));
// each row is cut into groups of 4 chunks of `tile` values, chunk k of a group to core row k of its
// column. So every core of a used column runs n_c x cols / (4 tile) kernel calls, and no row is padded,
// duplicated or staged. Per column and step (a block of at most kAddRowsPerStep of its rows), three shim
// tasks: a's rows and b's rows (or b's one row again for every row: a queue-push repeat) in, y's rows
// out, with a token the stream syncs on; two steps in flight.
#pragma once

#include "runtime/design-description.h"

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// Rows per step and column: the queue-push repeat count of a shared b row holds at most 255 repeats.
inline constexpr int64_t kAddRowsPerStep = 256;

struct AddSequenceShape {
    int64_t rows = 0, cols = 0;                                    // fp32 values
    int64_t a_row_stride = 0, b_row_stride = 0, y_row_stride = 0;  // floats; b 0: one b row for every row
    bool    multiply = false;                                       // mul_f32, else add_f32
    int     columns = 0;                                            // 0: the design's
    bool operator==(const AddSequenceShape & o) const {
        return rows == o.rows && cols == o.cols && a_row_stride == o.a_row_stride && b_row_stride == o.b_row_stride &&
               y_row_stride == o.y_row_stride && multiply == o.multiply && columns == o.columns;
    }
};

// What the stream moves (the timing model charges these), from the BDs and pushes it holds.
struct AddTraffic {
    uint64_t a_read = 0, b_read = 0, y_written = 0;  // bytes through the shim
    int      columns_used = 0;
    int64_t  calls_per_core = 0;  // kernel calls of the busiest core
    int64_t  steps = 0;
};

struct AddSequence {
    std::string           error;  // empty on success: why the design cannot take the shape
    std::string           family, layout;
    int                   tile = 0;  // values per chunk: which xclbin of the family runs it
    std::vector<uint32_t> words;
    AddTraffic            traffic;
    bool ok() const { return error.empty(); }
};

// The add design as built into the library; its error says why if the built-in text does not parse.
const DesignRead & add_design();

// The largest tile of the family's xclbins whose group of core_rows chunks divides a row of `cols`
// values, 0 when none does (the row is then not the design's).
int add_tile_for(const DesignDescription & d, const std::string & family, int64_t cols);

// The stream, or the reason it cannot be built (a row length no xclbin divides, a stride or count past
// a BD field or an RTP word): the caller then runs the invocation elsewhere.
AddSequence build_add_sequence(const DesignDescription & d, const AddSequenceShape & s);

}  // namespace xdna
