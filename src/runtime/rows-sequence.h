// The instruction stream of a "rows" design (elementwise ops of fp32 rows: aie/add, aie/glu), built on
// the host from its description: what the XRT device hands the firmware and the simulator's DMA
// interpreter executes (sim/dma-interpreter.h, with the design's core program).
//
// A rows design's layout moves each input operand from a shim MM2S channel into a memory-tile FIFO
// whose objects are core_rows chunks of `tile` values (split over the core rows, or broadcast whole),
// and its one output back joined the same way. The work: a row is cut into groups of core_rows chunks (chunk k
// of a group for core row k); the columns take a grid of row blocks x segments of each row (every row
// of a block, the same contiguous range of groups of each), so one long row (a decode token's) spreads
// over the whole array and many short rows go to the columns in blocks. Every core of a used column
// runs the same number of kernel calls, and no value is padded, duplicated or staged. Per column and
// step (at most kRowsPerStep of its rows) one shim task per operand, the output's with a token the
// stream syncs on; as many steps in flight as the description has BD slots.
#pragma once

#include "control/shim-bd.h"
#include "runtime/design-description.h"
#include "runtime/invocation.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace xdna {

// Rows per step and column, at most: a one-row operand is re-read per row with a queue-push repeat
// (the description's limits.repeat_max, 255 in mlir-aie).
inline constexpr int64_t kRowsPerStep = 256;

// One operand of the invocation: its name in the description, its row stride in floats (0: one row,
// read again for every row of the invocation).
struct RowsOperand {
    std::string name;
    int64_t     row_stride = 0;
    bool operator==(const RowsOperand & o) const { return name == o.name && row_stride == o.row_stride; }
};

struct RowsShape {
    std::string              contract;  // the program of the design's family the invocation runs
    int64_t                  rows = 0, cols = 0;  // fp32 values
    std::vector<RowsOperand> operands;  // every shim FIFO's operand of the layout, in any order
    int                      columns = 0;  // 0: the design's
    // RTP words from the invocation's parameter block, by name (Invocation::runtime_words: the norm's
    // inv_cols and eps, the scale's s and b).
    std::vector<std::pair<std::string, uint32_t>> words;
    bool operator==(const RowsShape & o) const {
        return contract == o.contract && rows == o.rows && cols == o.cols && operands == o.operands && columns == o.columns &&
               words == o.words;
    }
};

// What the stream moves (the timing model charges these), from the BDs and pushes it holds.
struct RowsTraffic {
    std::vector<std::pair<std::string, uint64_t>> bytes;  // per operand: through the shim
    uint64_t read = 0, written = 0;
    int      columns_used = 0;
    int64_t  calls_per_core = 0;  // kernel calls of the busiest core
    int64_t  rows_per_core = 0;   // (norm) rows of the busiest core
    int64_t  steps = 0;
    uint64_t of(const std::string & operand) const;
};

struct RowsSequence {
    std::string           error;  // empty on success: why the design cannot take the shape
    std::string           family, layout;
    int                   tile = 0;  // values per chunk: which xclbin of the family runs it
    std::vector<uint32_t> words;
    RowsTraffic           traffic;
    bool ok() const { return error.empty(); }
};

// The functions below serve the norm movement too (".movement": "norm", runtime/norm-sequence.h): the
// shape is read the same way (an input the norm's program does not read, its weight without the MUL,
// is then not moved), and build_rows_sequence hands such a design over to build_norm_sequence, so the
// simulator and the XRT device reach either movement through them.

// `total` items dealt to `parts` in consecutive blocks, the first total % parts one larger: the first
// item and the count of block i.
constexpr int64_t block_first(int64_t total, int64_t parts, int64_t i) {
    return total / parts * i + (i < total % parts ? i : total % parts);
}
constexpr int64_t block_count(int64_t total, int64_t parts, int64_t i) { return total / parts + (i < total % parts ? 1 : 0); }

// The grid the rows designs lay their work on (and the scatter's and the rope's): R blocks of the rows
// (or tokens) x S segments of each row's parts (groups of chunks, chunks, heads), one column each. Many
// rows go to the columns in blocks; fewer rows than columns spread their parts over the columns left.
struct RowsGrid {
    int64_t R = 0, S = 0;
    int     columns() const { return static_cast<int>(R * S); }
};
constexpr RowsGrid rows_grid(int64_t rows, int64_t parts, int64_t avail) {
    const int64_t R = rows < avail ? rows : avail;
    const int64_t fit = rows >= avail ? 1 : (parts < avail / rows ? parts : avail / rows);
    return {R, fit > 1 ? fit : 1};
}

// The rows shape of an invocation of a rows design, from its key and operands alone (what every device
// builds its stream from, so the simulator and the XRT device cannot differ): the program is the key's
// variant; each operand the layout moves is the invocation's operand of that role; the written one gives
// the rows and the row length; an input of one row under several output rows is read again per row; the
// RTP words the parameter block gives (Invocation::runtime_words).
// False with `err` when an operand is missing or its rows are not whole fp32 rows.
bool rows_shape_of(const Invocation & inv, const DesignDescription & d, RowsShape & out, std::string & err);

// A shim BD over `rows` rows of `cols` values (a segment of each), `stride` floats apart, as chunks of
// `tile` values (d0; halved while past the 10-bit wrap), the segment's chunks (d1) and the rows (d2):
// the order the memory tile's objects take them in.
control::ShimBdOrError rows_bd(int64_t rows, int64_t cols, int64_t stride, int tile);

// The largest tile of the family's xclbins whose group of core_rows chunks divides a row of `cols`
// values, 0 when none does (the row is then not the design's).
int rows_tile_for(const DesignDescription & d, const std::string & family, int64_t cols);

// The core program's RTP words of a rows or norm stream, before the per-core counts: contract and
// version 0 (the builder sets them), the `stream_words` (the builder's own counts) 0, every other word
// from the shape's `words` (the parameter block's): none missing, none unknown, and one the core reads
// as an int32 count at most rtp_word_max (a word the description lists in rtp_float_words is fp32 bits:
// any pattern). False with `err` otherwise.
bool rows_rtp_words(const DesignDescription & d, const RowsShape & s, std::initializer_list<int> stream_words,
                    std::vector<uint32_t> & base, std::string & err);

// The stream, or the reason it cannot be built (a row length no xclbin divides, a stride or count past
// a BD field or an RTP word, an operand the layout does not move): the caller then runs the invocation
// elsewhere.
RowsSequence build_rows_sequence(const DesignDescription & d, const RowsShape & s);

}  // namespace xdna
