// The hadamard kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xdna {

struct TileShape;

// y[r] = H_n x[r] over `rows` rows of n fp32 values, H_n the orthonormal Walsh-Hadamard matrix (a MUL_MAT
// by it with GGML_HINT_SRC0_IS_HADAMARD, aie/hadamard/kernels/fwht.cc); strides in floats.
struct HadamardParams {
    static constexpr KernelKind kKind = KernelKind::hadamard;
    static constexpr const char * kName = "hadamard";

    int64_t rows = 0, n = 0;
    int64_t x_row_stride = 0, y_row_stride = 0;
    // 1 / sqrtf(n) as ggml's CPU backend computes it (ggml-cpu ops.cpp ggml_compute_forward_fwht_f32): the
    // core program's fp32 RTP word "scale" (aie/hadamard/dataflow.json), so the core computes no root.
    float scale = 0.0f;
    // Whether the rows are the attention's output (a view of a FLASH_ATTN_EXT's): for the profile's label only.
    bool attention_output = false;

    uint64_t    macs(const TileShape &) const { return 0; }
    std::string shape_label(const TileShape &) const;  // "rows x n", and where the rotated rows come from
    // The core program's word "scale" (aie/hadamard/dataflow.json core_program.rtp_words).
    std::vector<std::pair<std::string, uint32_t>> runtime_words() const;
};

}  // namespace xdna
