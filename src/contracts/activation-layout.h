// Activation operand of a matmul contract: src1 quantized on the host, once per src1 tensor.
//
// Layout: [Np rows][Kp / blck blocks of act_type], one row per token, K padded with zeros to the
// contract's padded K and tokens padded with zero rows to a multiple of the chosen token tile.
// Quantization is ggml's own row quantizer for act_type (the same one the CPU backend uses), so the
// integer codes and block scales are exactly ggml's Q8_0 / Q8_1 / Q8_K (or F16/BF16/F32 values).
#pragma once

#include "ggml.h"
#include "matmul-contract.h"

#include <cstddef>
#include <cstdint>

namespace xdna {

struct ActivationLayout {
    ggml_type act_type = GGML_TYPE_COUNT;
    int64_t   k = 0;       // valid K
    int64_t   k_pad = 0;   // padded K (multiple of the contract's tile K)
    int64_t   n = 0;       // valid tokens
    int64_t   n_pad = 0;   // padded tokens (multiple of the token tile)
    int       tile_n = 0;
    size_t    row_bytes = 0;
    size_t    total_bytes = 0;
};

// Layout for n tokens in token tiles of `tile_n` (by default choose_tile_n(c, n)).
ActivationLayout make_activation_layout(const MatmulContract & c, int64_t k, int64_t k_pad, int64_t n, int tile_n = 0);

// Quantize rows [r0, r1) of the 2-D slice (i2, i3) of src1 (F32, F16 or BF16, any strides) into `dst`.
// Rows at or beyond layout.n are written as zeros. `scratch` holds at least k_pad floats.
void quantize_activation_rows(const ggml_tensor * src1, int64_t i2, int64_t i3, const ActivationLayout & L,
                              int64_t r0, int64_t r1, void * dst, float * scratch);

}  // namespace xdna
