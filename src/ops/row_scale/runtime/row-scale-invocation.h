// The row_scale kind (the MUL of fp32 rows by one value per row) as its planner builds it and its
// engines read it.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"
#include "xdna_aie/row_scale_tiles.h"

namespace xdna {

// The row_scale design (aie/row_scale/dataflow.json: the rows movement of aie/scale with a second input
// of one value per row).
inline constexpr const char * kRowScaleDesign = "row_scale";
inline constexpr const char * kRowScaleVariant = "row_scale_f32";

struct RowScaleInvocation {
    BufferSlice    x, w, y;
    RowScaleParams p;
};

// The key of the program at the xclbin of `tile` values per chunk (add_key says why the tile).
KernelKey row_scale_key(int tile = 0);

// The row_scale design as built into the library (its error says why if its description does not
// parse), and the tile of the xclbin a row of `cols` values takes: the largest whose group of core_rows
// chunks divides it, 0 when none does (the row is then not the design's).
const DesignRead & row_scale_design();
int row_scale_tile(int64_t cols);

// Its operands: x rows and w's values read, y rows written; the key at the row's tile.
Invocation to_invocation(const RowScaleInvocation & r);
RowScaleInvocation row_scale_of(const Invocation & inv);

}  // namespace xdna
