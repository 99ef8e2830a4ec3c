// The set_rows kind (SET_ROWS of fp32 rows into an F16 or Q8_0 cache: the K and V writes of every layer)
// as its planner builds it and its engines read it.
#pragma once

#include "runtime/design-description.h"
#include "runtime/invocation.h"
#include "xdna_aie/set_rows_tiles.h"

namespace xdna {

// The set_rows design (aie/set_rows): the scatter movement of aie/set_rows/dataflow.json
// (runtime/scatter-sequence.h), one family per output format, named after it.
inline constexpr const char * kSetRowsDesign = "set_rows";
inline constexpr const char * kSetRowsF16Variant = "f32_to_f16";
inline constexpr const char * kSetRowsQ8Variant = "f32_to_q8_0";
inline constexpr const char * kSetRowsF16Family = "f16";
inline constexpr const char * kSetRowsQ8Family = "q8_0";

// The kernels' loops promise the compiler 4 trips of 32 values (aie/set_rows/kernels): a call on fewer
// values is undefined on the core, so the design makes none. The design's xclbins hold chunks of 128 to
// 1024 values (its tiles), a row is a whole number of chunks of one, and every call is on one chunk: a row
// of a multiple of 128 values (a K or V row of Llama's and Qwen's models is 128 values, Qwen2.5-0.5B: 2 KV
// heads of 64, or more).
inline constexpr int kSetRowsMinCall = 4 * xdna_aie::kSetRowsLanes;

struct SetRowsInvocation {
    BufferSlice   x, ids, y;
    SetRowsParams p;
};

// The key of the program at the xclbin of `tile` values per chunk (add_key says why the tile).
KernelKey set_rows_key(bool y_q8_0 = false, int tile = 0);

// The set_rows design as built into the library (its error says why if its description does not parse),
// and the tile of the xclbin a row of `cols` values takes: the largest that divides it, 0 when none does
// (the row is then not the design's).
const DesignRead & set_rows_design();
int set_rows_tile(int64_t cols);

// Its operands: x rows read, the ids read (by the host at submission, for the y BDs' rows), every y row may be written.
Invocation to_invocation(const SetRowsInvocation & s);
SetRowsInvocation set_rows_of(const Invocation & inv);

}  // namespace xdna
