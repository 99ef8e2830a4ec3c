// What the glu design's core program and the host agree on (aie/glu/README.md).
#pragma once

namespace xdna_aie {

constexpr int kGluLanes = 32;    // fp32 lanes per vector op
constexpr int kGluChunk = 1024;  // values per chunk a core holds (4 KB of x, g and y each)

}  // namespace xdna_aie
