// The rope kind (ROPE of fp32 head rows) as its planner builds it and its engines read it.
#pragma once

#include "runtime/invocation.h"

namespace xdna {

// The rope design (aie/rope) and its two programs. No dataflow.json yet (its README says why).
inline constexpr const char * kRopeDesign = "rope";
inline constexpr const char * kRopeNormVariant = "rope_norm_f32";
inline constexpr const char * kRopeNeoxVariant = "rope_neox_f32";

struct RopeInvocation {
    BufferSlice x, pos, freq_factors, y;  // freq_factors: unset unless p.angles.has_freq_factors
    RopeParams  p;
};

KernelKey rope_key(RopeMode mode);

// Its operands: x rows read, the n_tokens int32 positions read (the design's runtime words), the
// n_dims/2 freq factors read when there are any, y rows written.
Invocation to_invocation(const RopeInvocation & r);
RopeInvocation rope_of(const Invocation & inv);

}  // namespace xdna
