// The set_rows kind (SET_ROWS of fp32 rows into an F16 or Q8_0 cache: the K and V writes of every layer)
// as its planner builds it and its engines read it.
#pragma once

#include "runtime/invocation.h"
#include "xdna_aie/set_rows_tiles.h"

#include <algorithm>

namespace xdna {

// The set_rows design (aie/set_rows). No dataflow.json yet (its README says why).
inline constexpr const char * kSetRowsDesign = "set_rows";
inline constexpr const char * kSetRowsF16Variant = "f32_to_f16";
inline constexpr const char * kSetRowsQ8Variant = "f32_to_q8_0";

// The kernels' loops promise the compiler 4 trips of 32 values (aie/set_rows/kernels): a call on fewer
// values is undefined on the core, so the design makes none. A row (a multiple of 32 values) is cut into
// the fewest chunks of at most kSetRowsChunk values, balanced in steps of 32 (the first ones a step
// longer): a row of more than one chunk has none under 16 steps, a row of one chunk is one call, so the
// design takes rows of at least kSetRowsMinCall values (set_rows_calls_keep_promise). A K or V row of
// Llama's and Qwen's models is 128 values (Qwen2.5-0.5B: 2 KV heads of 64) or more.
inline constexpr int kSetRowsMinCall = 4 * xdna_aie::kSetRowsLanes;

struct SetRowsChunk {
    int64_t begin = 0;  // its first value in the row
    int32_t n = 0;      // its values: the kernel call's n
};
constexpr int64_t set_rows_chunks(int64_t cols) { return (cols + xdna_aie::kSetRowsChunk - 1) / xdna_aie::kSetRowsChunk; }
constexpr SetRowsChunk set_rows_chunk(int64_t cols, int64_t c) {
    const int64_t steps = cols / xdna_aie::kSetRowsLanes, chunks = set_rows_chunks(cols);
    const int64_t base = steps / chunks, longer = steps % chunks;
    SetRowsChunk k;
    k.begin = (c * base + std::min(c, longer)) * xdna_aie::kSetRowsLanes;
    k.n = static_cast<int32_t>((base + (c < longer ? 1 : 0)) * xdna_aie::kSetRowsLanes);
    return k;
}
constexpr bool set_rows_calls_keep_promise(int64_t cols) { return cols >= kSetRowsMinCall; }

struct SetRowsInvocation {
    BufferSlice   x, ids, y;
    SetRowsParams p;
};

KernelKey set_rows_key(bool y_q8_0 = false);

// Its operands: x rows read, the ids read (the design's runtime words), every y row may be written.
Invocation to_invocation(const SetRowsInvocation & s);
SetRowsInvocation set_rows_of(const Invocation & inv);

}  // namespace xdna
