// The add kind (ADD of fp32 rows: the residual add) as its planner builds it and its engines read it.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"
#include "runtime/rows-sequence.h"

namespace xdna {

// The name of the add design (aie/add, its data movement in aie/add/dataflow.json).
inline constexpr const char * kAddDesign = "add";
inline constexpr const char * kAddVariant = "add_f32";
inline constexpr const char * kMulVariant = "mul_f32";  // the design's second program: MUL

struct AddInvocation {
    BufferSlice a, b, y;
    AddParams   p;
};

KernelKey add_key(bool multiply = false);

// Its operands: a and b read as rows of cols floats (b once when it has one row), y written.
Invocation to_invocation(const AddInvocation & a);
AddInvocation add_of(const Invocation & inv);

// The add design as built into the library (its error says why if its description does not parse), and
// an invocation's shape for its instruction stream (runtime/rows-sequence.h).
const DesignRead & add_design();
RowsShape add_rows_shape(const AddParams & p);

}  // namespace xdna
