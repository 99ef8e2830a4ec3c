// The scale kind (SCALE of fp32 rows) as its planner builds it and its engines read it.
#pragma once

#include "runtime/invocation.h"

namespace xdna {

// The scale design (aie/scale). No dataflow.json yet (its README says why).
inline constexpr const char * kScaleDesign = "scale";
inline constexpr const char * kScaleVariant = "scale_f32";

struct ScaleInvocation {
    BufferSlice x, y;
    ScaleParams p;
};

KernelKey scale_key();

// Its operands: x rows read, y rows written.
Invocation to_invocation(const ScaleInvocation & s);
ScaleInvocation scale_of(const Invocation & inv);

}  // namespace xdna
