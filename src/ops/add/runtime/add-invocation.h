// The add kind (ADD of fp32 rows: the residual add) as its planner builds it and its engines read it.
#pragma once

#include "runtime/invocation.h"

namespace xdna {

// The name of the add design (aie/add). No dataflow.json yet (its README says why).
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

}  // namespace xdna
