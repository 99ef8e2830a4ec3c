// The instruction stream of a "norm" design (aie/rms_norm: rows of fp32 whose every value needs a
// statistic of its whole row), built on the host from its description: what the XRT device hands the
// firmware and the simulator's DMA interpreter executes (sim/dma-interpreter.h, with the design's core
// program).
//
// The movement: each column's core takes whole rows, the columns blocks of consecutive rows. A core
// reads each of its rows twice in a row, chunk by chunk (a first pass that reduces, a second that
// scales), a one-row operand (the norm weight, or one row per row) beside the second pass, and writes
// the output row once. Per column and step (at most limits.iteration_max of its rows) one task per
// operand, every BD moving one row per execution (its iteration dimension steps by the row stride, as
// the shim DMA advances it: control/shim-bd.h): the input is two chained BDs over the same rows, so
// each pass of the chain reads one row twice; one-row operands repeat their row. As many steps in
// flight as the description has BD slots; the output's task carries the token the stream syncs on.
//
// Reached through rows_shape_of (which reads a norm invocation's shape as a rows one's) and
// build_rows_sequence (which hands a norm design over to the function here), rows-sequence.h.
#pragma once

#include "runtime/rows-sequence.h"

#include <string>

namespace xdna {

// The stream, or the reason it cannot be built (a row length no xclbin's tile divides, a stride past a
// BD field, an RTP word the shape does not give or past an int32): the caller then runs the invocation
// elsewhere.
RowsSequence build_norm_sequence(const DesignDescription & d, const RowsShape & s);

}  // namespace xdna
