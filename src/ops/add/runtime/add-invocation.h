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

// The key of the program at the xclbin of `tile` values per chunk (0: none chosen), the tile its rows
// need (rows_tile_for) when built from an invocation, as a matmul key carries its token tile.
KernelKey add_key(bool multiply = false, int tile = 0);

// Its operands: a and b read as rows of cols floats (b once when it has one row), y written.
Invocation to_invocation(const AddInvocation & a);
AddInvocation add_of(const Invocation & inv);

// The add design as built into the library (its error says why if its description does not parse), and
// an invocation's shape for its instruction stream (runtime/rows-sequence.h).
const DesignRead & add_design();
RowsShape add_rows_shape(const AddParams & p);

}  // namespace xdna
