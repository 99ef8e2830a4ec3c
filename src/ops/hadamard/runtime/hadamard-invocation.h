// The hadamard kind (the Walsh-Hadamard rotation around a quantized KV cache) as its planner builds it
// and its engines read it.
#pragma once

#include "runtime/invocation.h"

namespace xdna {

// The hadamard design (aie/hadamard). No dataflow.json yet (its README says why).
inline constexpr const char * kHadamardDesign = "hadamard";
inline constexpr const char * kHadamardVariant = "fwht_f32";

struct HadamardInvocation {
    BufferSlice    x, y;
    HadamardParams p;
};

KernelKey hadamard_key();

// Its operands: x rows read, y rows written.
Invocation to_invocation(const HadamardInvocation & h);
HadamardInvocation hadamard_of(const Invocation & inv);

}  // namespace xdna
