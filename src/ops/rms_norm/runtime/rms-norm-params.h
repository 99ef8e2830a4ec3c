// The rms_norm kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xdna {

struct TileShape;

// y[r][i] = x[r][i] * s_r (* w[i] with the norm weight), s_r = rsqrt(mean_i x[r][i]^2 + eps), over
// `rows` rows of `cols` fp32 values (aie/rms_norm/kernels/rms_norm.cc says how the core computes it).
struct RmsNormParams {
    static constexpr KernelKind kKind = KernelKind::rms_norm;
    static constexpr const char * kName = "rms_norm";

    int64_t rows = 0, cols = 0;
    float   eps = 0;
    float   inv_cols = 0;         // 1 / cols in fp32, as the host passes it to the core
    bool    with_weight = false;  // fused with the following MUL by the norm weight
    int64_t x_row_stride = 0;     // floats between consecutive rows of x, of the weight and of y;
    int64_t w_row_stride = 0;     // 0: one weight row for every row (the norm weight of a layer)
    int64_t y_row_stride = 0;
    // With the activation quantization of the matmuls that read y fused in (one decoded row, the norm
    // weight: the program rms_norm_mul_quant_a8_b<quant_block>_n<quant_tile_n>): the core also makes y's
    // a8 activation tiles (aie/act_quant's program on the same core, after pass 2), one per 256 values.
    // 0: y only.
    int     quant_block = 0;       // 32 or 256 values per scale
    int     quant_tile_n = 0;      // the tile's tokens (4: row 0 is y, the others zeros)
    size_t  quant_tile_bytes = 0;  // one tile's bytes (ActTileFormat)

    // The RTP words the design's core program reads from the block (aie/rms_norm/dataflow.json):
    // inv_cols and eps as their fp32 bits.
    std::vector<std::pair<std::string, uint32_t>> runtime_words() const;

    uint64_t    macs(const TileShape &) const { return 0; }  // no matrix arithmetic
    std::string shape_label(const TileShape &) const;        // "rows x cols" (+ "x w", "-> a8")
};

}  // namespace xdna
