// The glu kind (SwiGLU of fp32 rows: the FFN's gate) as its planner builds it and its engines read it.
#pragma once

#include "runtime/invocation.h"

namespace xdna {

// The name of the glu design (aie/glu). No dataflow.json yet (its README says why).
inline constexpr const char * kGluDesign = "glu";
inline constexpr const char * kSwigluVariant = "swiglu_f32";

struct GluInvocation {
    BufferSlice a, b, y;  // gate, up, out
    GluParams   p;
};

KernelKey glu_key();

// Its operands: a and b read as rows of cols floats, y written.
Invocation to_invocation(const GluInvocation & g);
GluInvocation glu_of(const Invocation & inv);

}  // namespace xdna
