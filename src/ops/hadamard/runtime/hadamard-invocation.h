// The hadamard kind (the Walsh-Hadamard rotation around a quantized KV cache) as its planner builds it
// and its engines read it.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"

namespace xdna {

// The hadamard design (aie/hadamard/dataflow.json): the rows movement with one input and one core row,
// one xclbin per transform length (the tile).
inline constexpr const char * kHadamardDesign = "hadamard";
inline constexpr const char * kHadamardVariant = "fwht_f32";

struct HadamardInvocation {
    BufferSlice    x, y;
    HadamardParams p;
};

// The key of the xclbin that rotates rows of n values (its tile is n), or a key of tile 0 when the
// design has no xclbin for n.
KernelKey hadamard_key(int64_t n);

// The hadamard design's description, read once.
const DesignRead & hadamard_design();

// Its operands: x rows read, y rows written.
Invocation to_invocation(const HadamardInvocation & h);
HadamardInvocation hadamard_of(const Invocation & inv);

}  // namespace xdna
