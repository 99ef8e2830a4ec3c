// The rope kind (ROPE of fp32 head rows) as its planner builds it and its engines read it.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"

namespace xdna {

// The rope design (aie/rope): the rope movement of aie/rope/dataflow.json (runtime/rope-sequence.h), a
// family per rotation, an xclbin per head row length.
inline constexpr const char * kRopeDesign = "rope";
inline constexpr const char * kRopeNormVariant = "rope_norm_f32";
inline constexpr const char * kRopeNeoxVariant = "rope_neox_f32";

struct RopeInvocation {
    BufferSlice x, pos, freq_factors, y;  // freq_factors: unset unless p.angles.has_freq_factors
    RopeParams  p;
};

// The key of the program at the xclbin of head rows of `tile` values (add_key says why the tile).
KernelKey rope_key(RopeMode mode, int tile = 0);

// The rope design as built into the library (its error says why if its description does not parse),
// and whether it has an xclbin for head rows of `ne0` values (its tiles: the row lengths).
const DesignRead & rope_design();
bool rope_row_has_xclbin(int64_t ne0);

// The angle rows of the positions `inv` reads now (one per token, ne0 floats: the configuration's table
// row of n_dims values, then zeros), written to `out`, which holds rope_angle_bytes(inv). False with
// `err` for a position outside the table.
size_t rope_angle_bytes(const Invocation & inv);
bool   rope_angle_rows(const Invocation & inv, void * out, std::string & err);

// Its operands: x rows read, the n_tokens int32 positions read (by the host at submission, for the angle rows), the
// n_dims/2 freq factors read when there are any, y rows written.
Invocation to_invocation(const RopeInvocation & r);
RopeInvocation rope_of(const Invocation & inv);

}  // namespace xdna
