// The glu kind (SwiGLU of fp32 rows: the FFN's gate) as its planner builds it and its engines read it.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"
#include "runtime/rows-sequence.h"

namespace xdna {

// The name of the glu design (aie/glu, its data movement in aie/glu/dataflow.json).
inline constexpr const char * kGluDesign = "glu";
inline constexpr const char * kSwigluVariant = "swiglu_f32";

struct GluInvocation {
    BufferSlice a, b, y;  // gate, up, out
    GluParams   p;
};

// The key of the program at the xclbin of `tile` values per chunk (add_key says why the tile).
KernelKey glu_key(int tile = 0);

// Its operands: a and b read as rows of cols floats, y written.
Invocation to_invocation(const GluInvocation & g);
GluInvocation glu_of(const Invocation & inv);

// The glu design as built into the library (its error says why if its description does not parse), and
// an invocation's shape for its instruction stream (runtime/rows-sequence.h).
const DesignRead & glu_design();
RowsShape glu_rows_shape(const GluParams & p);

}  // namespace xdna
