// The get_rows kind (GET_ROWS of fp32 rows: the output rows of the last layer) as its planner builds it
// and its engines read it.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"

namespace xdna {

// The get_rows design (aie/get_rows): data movement only, described in aie/get_rows/dataflow.json (the
// gather movement: runtime/gather-sequence.h).
inline constexpr const char * kGetRowsDesign = "get_rows";
inline constexpr const char * kGetRowsVariant = "get_rows_f32";

struct GetRowsInvocation {
    BufferSlice   src, ids, y;
    GetRowsParams p;
};

// The key of the program at the xclbin of `tile` values per memory-tile object (add_key says why the tile).
KernelKey get_rows_key(int tile = 0);

// The get_rows design as built into the library (its error says why if its description does not parse),
// and the tile of the xclbin a row of `cols` values takes: the largest that divides it, 0 when none does
// (the row is then not the design's).
const DesignRead & get_rows_design();
int get_rows_tile(int64_t cols);

// Its operands: every src row may be read, the n_ids int32 ids read (by the host at submission, for the source BDs' rows), y written.
Invocation to_invocation(const GetRowsInvocation & g);
GetRowsInvocation get_rows_of(const Invocation & inv);

}  // namespace xdna
