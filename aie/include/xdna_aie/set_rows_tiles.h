// What the set_rows design's core program and the host agree on (aie/set_rows/README.md).
#pragma once

namespace xdna_aie {

constexpr int kSetRowsLanes = 32;    // fp32 values per step: 16 words of two fp16 each
constexpr int kSetRowsChunk = 1024;  // values per chunk a core holds (4 KB in, 2 KB out)

}  // namespace xdna_aie
