// What the glu design's core program and the host agree on (aie/glu/README.md): chunks of the xclbin's
// tile (32 to 512 values, aie/glu/dataflow.json), a multiple of kGluLanes each.
#pragma once

namespace xdna_aie {

constexpr int kGluLanes = 32;    // fp32 lanes per vector op
constexpr int kGluChunk = 1024;  // the largest call the simulator's kernel mode makes (past the design's tiles)

}  // namespace xdna_aie
