// The scale kind (SCALE of fp32 rows) as its planner builds it and its engines read it.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"
#include "xdna_aie/scale_tiles.h"

namespace xdna {

// The scale design (aie/scale, its data movement in aie/scale/dataflow.json: the rows movement of
// aie/add with one input).
inline constexpr const char * kScaleDesign = "scale";
inline constexpr const char * kScaleVariant = "scale_f32";

// The kernel's loop promises the compiler 4 trips of 32 lanes (aie/scale/kernels/scale.cc): a call on
// fewer values is undefined on the core. The design's tiles (values per call) start there.
inline constexpr int kScaleMinCall = 4 * xdna_aie::kScaleLanes;

struct ScaleInvocation {
    BufferSlice x, y;
    ScaleParams p;
};

// The key of the program at the xclbin of `tile` values per chunk (add_key says why the tile).
KernelKey scale_key(int tile = 0);

// The scale design as built into the library (its error says why if its description does not parse),
// and the tile of the xclbin a row of `cols` values takes: the largest whose group of core_rows chunks
// divides it, 0 when none does (the row is then not the design's).
const DesignRead & scale_design();
int scale_tile(int64_t cols);

// Its operands: x rows read, y rows written; the key at the row's tile.
Invocation to_invocation(const ScaleInvocation & s);
ScaleInvocation scale_of(const Invocation & inv);

}  // namespace xdna
