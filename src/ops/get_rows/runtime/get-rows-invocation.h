// The get_rows kind (GET_ROWS of fp32 rows: the output rows of the last layer) as its planner builds it
// and its engines read it.
#pragma once

#include "runtime/invocation.h"

namespace xdna {

// The get_rows design (aie/get_rows): data movement only. No dataflow.json yet (its README says why).
inline constexpr const char * kGetRowsDesign = "get_rows";
inline constexpr const char * kGetRowsVariant = "get_rows_f32";

struct GetRowsInvocation {
    BufferSlice   src, ids, y;
    GetRowsParams p;
};

KernelKey get_rows_key();

// Its operands: every src row may be read, the n_ids int32 ids read (the design's runtime words), y written.
Invocation to_invocation(const GetRowsInvocation & g);
GetRowsInvocation get_rows_of(const Invocation & inv);

}  // namespace xdna
