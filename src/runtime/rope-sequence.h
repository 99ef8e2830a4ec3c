// The instruction stream of a "rope" design (aie/rope: ROPE over fp32 head rows), built on the host from
// its description: what the XRT device hands the firmware and the simulator's DMA interpreter executes.
//
// One core per column; the columns take the rows design's grid (runtime/rows-sequence.h) over tokens:
// R token blocks x S segments of each token's heads, so a decode token's heads spread over the array.
// The angles are an operand the host writes at submission (.host_written "cs": one row per token, in
// token order, Invocation::host_operand), so the stream depends on the shape only, never on the
// positions, and is reused across tokens. Per column and step (at most kRowsPerStep of its tokens): one x
// task over the step's tokens x the segment's heads (a 3-D pattern: the head row, the heads, the
// tokens), one cs task over the step's angle rows, one y task like x's with the token the stream syncs
// on. As many steps in flight as the description has slots.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"
#include "runtime/rows-sequence.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xdna {

struct RopeShape {
    std::string contract;                 // the family's program (rope_norm_f32, rope_neox_f32)
    int64_t     tokens = 0, heads = 0;    // head rows: heads of each token
    int64_t     ne0 = 0, n_dims = 0;      // values per head row, the rotated ones
    int64_t     x_head_stride = 0, x_token_stride = 0, y_head_stride = 0, y_token_stride = 0;  // floats
    int         columns = 0;              // 0: the design's
    bool operator==(const RopeShape & o) const {
        return contract == o.contract && tokens == o.tokens && heads == o.heads && ne0 == o.ne0 && n_dims == o.n_dims &&
               x_head_stride == o.x_head_stride && x_token_stride == o.x_token_stride && y_head_stride == o.y_head_stride &&
               y_token_stride == o.y_token_stride && columns == o.columns;
    }
};

// The shape of a rope invocation from its key and parameter block. False with `err` for another kind.
bool rope_shape_of(const Invocation & inv, const DesignDescription & d, RopeShape & out, std::string & err);

// The stream, or the reason it cannot be built (a row length the design has no xclbin for, rotated dims
// the program does not take, a stride past a BD field): the caller then runs the invocation elsewhere.
// Its traffic: the bytes of x and the angle rows read and of y written, the columns used, the busiest
// core's calls (head rows), the most steps of a column.
RowsSequence build_rope_sequence(const DesignDescription & d, const RopeShape & s);

}  // namespace xdna
