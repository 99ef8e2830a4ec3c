// The hadamard kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>

namespace xdna {

struct TileShape;

// y[r] = H_n x[r] over `rows` rows of n fp32 values, H_n the orthonormal Walsh-Hadamard matrix (a MUL_MAT
// by it with GGML_HINT_SRC0_IS_HADAMARD, aie/hadamard/kernels/fwht.cc); strides in floats.
struct HadamardParams {
    static constexpr KernelKind kKind = KernelKind::hadamard;
    static constexpr const char * kName = "hadamard";

    int64_t rows = 0, n = 0;
    int64_t x_row_stride = 0, y_row_stride = 0;
    // The design whose xclbin runs the program (fwht_f32 is linked into both, aie/hadamard/README.md):
    // flash_attn for the rotation of the attention's output, set_rows for q, k and v before the cache
    // writes. It decides only where the rotation runs, not what it computes.
    KernelKind host = KernelKind::set_rows;

    uint64_t    macs(const TileShape &) const { return 0; }
    std::string shape_label(const TileShape &) const;  // "rows x n", and where the rotated rows come from
};

}  // namespace xdna
