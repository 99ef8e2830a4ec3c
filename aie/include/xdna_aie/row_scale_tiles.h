// What the row_scale design's core program and the host agree on (aie/row_scale/README.md).
#pragma once

namespace xdna_aie {

constexpr int kRowScaleLanes = 32;      // fp32 lanes per vector op
constexpr int kRowScaleMinCall = 64;    // the kernel's loop promises 2 trips of 32 lanes
constexpr int kRowScaleChunk = 1024;    // values per chunk a core holds (4 KB of x and y each)

}  // namespace xdna_aie
