// The scale kind (SCALE of fp32 rows) as its planner builds it and its engines read it.
#pragma once

#include "runtime/invocation.h"
#include "xdna_aie/scale_tiles.h"

#include <algorithm>

namespace xdna {

// The scale design (aie/scale). No dataflow.json yet (its README says why).
inline constexpr const char * kScaleDesign = "scale";
inline constexpr const char * kScaleVariant = "scale_f32";

// The kernel's loop promises the compiler 4 trips of 32 lanes (aie/scale/kernels/scale.cc): a call on
// fewer values is undefined on the core, so the design makes none. A call's n is its chunk padded to
// whole vectors. A row is cut into the fewest chunks of at most kScaleChunk values, balanced in whole
// vectors (the first ones a vector longer, the last ending where the row ends): a row of more than one
// chunk has none under 16 vectors, a row of one chunk is one call, so the design takes rows of more
// than 96 values (scale_calls_keep_promise).
inline constexpr int kScaleMinCall = 4 * xdna_aie::kScaleLanes;

struct ScaleChunk {
    int64_t begin = 0;   // its first value in the row
    int32_t n = 0;       // values the DMA brings and sends back
    int32_t padded = 0;  // n up to whole vectors: the kernel call's n
};
constexpr int64_t scale_row_vectors(int64_t cols) { return (cols + xdna_aie::kScaleLanes - 1) / xdna_aie::kScaleLanes; }
constexpr int64_t scale_chunks(int64_t cols) {
    constexpr int64_t per_chunk = xdna_aie::kScaleChunk / xdna_aie::kScaleLanes;
    return (scale_row_vectors(cols) + per_chunk - 1) / per_chunk;
}
constexpr ScaleChunk scale_chunk(int64_t cols, int64_t c) {
    const int64_t vectors = scale_row_vectors(cols), chunks = scale_chunks(cols);
    const int64_t base = vectors / chunks, longer = vectors % chunks;
    const int64_t own = base + (c < longer ? 1 : 0);
    ScaleChunk k;
    k.begin = (c * base + std::min(c, longer)) * xdna_aie::kScaleLanes;
    k.n = static_cast<int32_t>(std::min<int64_t>(own * xdna_aie::kScaleLanes, cols - k.begin));
    k.padded = static_cast<int32_t>(own * xdna_aie::kScaleLanes);
    return k;
}
constexpr bool scale_calls_keep_promise(int64_t cols) { return cols > kScaleMinCall - xdna_aie::kScaleLanes; }

struct ScaleInvocation {
    BufferSlice x, y;
    ScaleParams p;
};

KernelKey scale_key();

// Its operands: x rows read, y rows written.
Invocation to_invocation(const ScaleInvocation & s);
ScaleInvocation scale_of(const Invocation & inv);

}  // namespace xdna
