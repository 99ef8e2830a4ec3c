// The rope kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xdna {

struct TileShape;
struct Invocation;

// What ggml's ROPE asks for, as its op_params hold it (ggml.c ggml_rope_impl): the rotation of
// `n_dims` of each head row's `ne0` fp32 values by the angles of the token's position, the rest copied.
struct RopeAngles {
    int32_t n_dims = 0;
    int32_t n_ctx_orig = 0;
    float   freq_base = 10000.0f, freq_scale = 1.0f, ext_factor = 0.0f, attn_factor = 1.0f;
    float   beta_fast = 32.0f, beta_slow = 1.0f;
    bool    has_freq_factors = false;  // src[2]: one divisor per pair (Llama 3's rope scaling)
};

enum class RopeMode : uint8_t { norm, neox };

// y[t][h] = rope(x[t][h], angles at pos[t]) over n_tokens x n_heads rows of ne0 values; strides in
// floats (aie/rope/kernels/rope.cc).
struct RopeParams {
    static constexpr KernelKind kKind = KernelKind::rope;
    static constexpr const char * kName = "rope";

    RopeMode   mode = RopeMode::norm;
    RopeAngles angles;
    int64_t    ne0 = 0, n_heads = 0, n_tokens = 0;
    int64_t    x_head_stride = 0, x_token_stride = 0, y_head_stride = 0, y_token_stride = 0;

    // The RTP word of the design's core program (aie/rope/dataflow.json): n_dims.
    std::vector<std::pair<std::string, uint32_t>> runtime_words() const;
    // "cs": the angle rows of the positions `inv` reads now, one per token of ne0 floats (the table's
    // n_dims, then zeros), as the host writes them at submission (aie/rope/dataflow.json .host_written).
    bool host_operand(const Invocation & inv, const std::string & name, std::vector<uint8_t> & out, std::string & err) const;

    uint64_t    macs(const TileShape &) const { return 0; }
    std::string shape_label(const TileShape &) const;  // "tokens x heads x ne0 (n_dims, mode)"
};

}  // namespace xdna
