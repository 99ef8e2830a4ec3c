// What the scale design's core program and the host agree on (aie/scale/README.md).
#pragma once

namespace xdna_aie {

constexpr int kScaleLanes = 32;    // fp32 lanes per vector op
constexpr int kScaleChunk = 1024;  // values per chunk a core holds (4 KB of x and y each)

}  // namespace xdna_aie
