// What the rms_norm design's core program and the host agree on (aie/rms_norm/README.md): rows of
// fp32 values stream through a core in chunks; the kernels of aie/rms_norm/kernels work on one chunk.
#pragma once

#include <cstdint>

namespace xdna_aie {

constexpr int kRmsNormLanes = 32;          // fp32 lanes per vector op (one emulated multiply)
constexpr int kRmsNormChunk = 1024;        // the kernels mode's chunk (the design's xclbins chunk at their tile, 32..1024)
constexpr int kRmsNormMaxCols = 8192;      // the longest row the planner claims (the design takes longer: design.py)

// A row takes this many chunks; the last one holds cols - (chunks - 1) * kRmsNormChunk values.
constexpr int64_t rms_norm_chunks(int64_t cols) { return (cols + kRmsNormChunk - 1) / kRmsNormChunk; }
constexpr int64_t rms_norm_chunk_len(int64_t cols, int64_t c) {
    return c + 1 < rms_norm_chunks(cols) ? kRmsNormChunk : cols - c * kRmsNormChunk;
}

}  // namespace xdna_aie
