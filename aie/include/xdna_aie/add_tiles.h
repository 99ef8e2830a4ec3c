// What the add design's core program and the host agree on (aie/add/README.md): rows of fp32 values
// stream through a core in chunks of the xclbin's tile (64 to 512 values, aie/add/dataflow.json), a
// multiple of kAddLanes each.
#pragma once

namespace xdna_aie {

constexpr int kAddLanes = 32;    // fp32 lanes per vector op
constexpr int kAddChunk = 1024;  // the largest call the simulator's kernel mode makes (past the design's tiles)

}  // namespace xdna_aie
