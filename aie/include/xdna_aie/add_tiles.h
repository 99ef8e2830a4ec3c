// What the add design's core program and the host agree on (aie/add/README.md): rows of fp32 values
// stream through a core in chunks of kAddChunk values, a multiple of kAddLanes each.
#pragma once

namespace xdna_aie {

constexpr int kAddLanes = 32;    // fp32 lanes per vector op
constexpr int kAddChunk = 1024;  // values per chunk a core holds (4 KB of a, b and y each)

}  // namespace xdna_aie
