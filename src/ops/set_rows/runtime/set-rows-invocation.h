// The set_rows kind (SET_ROWS of fp32 rows into an F16 or Q8_0 cache: the K and V writes of every layer)
// as its planner builds it and its engines read it.
#pragma once

#include "runtime/invocation.h"

namespace xdna {

// The set_rows design (aie/set_rows). No dataflow.json yet (its README says why).
inline constexpr const char * kSetRowsDesign = "set_rows";
inline constexpr const char * kSetRowsF16Variant = "f32_to_f16";
inline constexpr const char * kSetRowsQ8Variant = "f32_to_q8_0";

struct SetRowsInvocation {
    BufferSlice   x, ids, y;
    SetRowsParams p;
};

KernelKey set_rows_key(bool y_q8_0 = false);

// Its operands: x rows read, the ids read (the design's runtime words), every y row may be written.
Invocation to_invocation(const SetRowsInvocation & s);
SetRowsInvocation set_rows_of(const Invocation & inv);

}  // namespace xdna
