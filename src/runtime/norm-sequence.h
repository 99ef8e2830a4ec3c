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
// Reached through rows_shape_of / build_rows_sequence (rows-sequence.h), which hand a norm design over
// to the functions here.
#pragma once

#include "runtime/rows-sequence.h"

#include <string>

namespace xdna {

// The shape of an invocation of a norm design, from its key and operands alone: the program is the
// key's variant; each operand the layout moves is the invocation's operand of that role (an input it
// does not give is not moved: the norm without its weight); the written one gives the rows and the row
// length; an input of one row under several output rows is read again per row; the RTP words the
// parameter block gives (Invocation::runtime_words). False with `err` when an operand is missing or its
// rows are not whole fp32 rows.
bool norm_shape_of(const Invocation & inv, const DesignDescription & d, RowsShape & out, std::string & err);

// The stream, or the reason it cannot be built (a row length no xclbin's tile divides, a stride past a
// BD field, an RTP word the shape does not give or past an int32): the caller then runs the invocation
// elsewhere.
RowsSequence build_norm_sequence(const DesignDescription & d, const RowsShape & s);

}  // namespace xdna
