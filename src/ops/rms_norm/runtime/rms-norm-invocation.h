// The rms_norm kind (RMS_NORM, alone or fused with the MUL by its weight) as its planner builds it and
// its engines read it.
#pragma once

#include "runtime/invocation.h"

namespace xdna {

// The name of the rms_norm design (aie/rms_norm). No dataflow.json yet: the design has no instruction
// stream of its own (aie/rms_norm/README.md).
inline constexpr const char * kRmsNormDesign = "rms_norm";

// The program variants of the design: with and without the norm weight.
inline constexpr const char * kRmsNormVariant = "rms_norm_f32";
inline constexpr const char * kRmsNormMulVariant = "rms_norm_mul_f32";

struct RmsNormInvocation {
    BufferSlice x, weight, y;    // weight: one row of cols floats, or one per row; null buffer without it
    RmsNormParams p;
};

KernelKey rms_norm_key(bool with_weight);

// Its operands: x read as rows of cols floats x_row_stride floats apart, the weight once (or per row), y
// written as rows y_row_stride floats apart.
Invocation to_invocation(const RmsNormInvocation & r);

// The typed view of an rms_norm-kind invocation. Aborts on another kind.
RmsNormInvocation rms_norm_of(const Invocation & inv);

}  // namespace xdna
