#include "ops/rope/rope-plan.h"

#include "xdna_aie/rope_tiles.h"

#include <cstring>

namespace xdna {

namespace {

bool f32_head_rows(const ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0 &&
           t->nb[2] % sizeof(float) == 0 && t->nb[3] % sizeof(float) == 0;
}

// The op_params layout of ggml_rope_impl (ggml.c): [1] n_dims, [2] mode, [4] n_ctx_orig, [5..10]
// freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow, [15] the offset of the rotated dims.
RopeAngles angles_of(const ggml_tensor * rope) {
    RopeAngles a;
    a.n_dims = op_param_i32(rope, 1);
    a.n_ctx_orig = op_param_i32(rope, 4);
    a.freq_base = op_param_f32(rope, 5);
    a.freq_scale = op_param_f32(rope, 6);
    a.ext_factor = op_param_f32(rope, 7);
    a.attn_factor = op_param_f32(rope, 8);
    a.beta_fast = op_param_f32(rope, 9);
    a.beta_slow = op_param_f32(rope, 10);
    a.has_freq_factors = rope->src[2] != nullptr;
    return a;
}

}  // namespace

bool rope_supported(const ggml_tensor * rope, const TensorResolver & resolve, std::string & why) {
    const ggml_tensor * x = rope->src[0];
    const ggml_tensor * pos = rope->src[1];
    const ggml_tensor * ff = rope->src[2];
    if (rope->op != GGML_OP_ROPE || x == nullptr || pos == nullptr) {
        why = "ROPE on the NPU: the forward rotation only";
        return false;
    }
    const int mode = op_param_i32(rope, 2);
    if (mode != GGML_ROPE_TYPE_NORMAL && mode != GGML_ROPE_TYPE_NEOX) {
        why = "ROPE mode " + std::to_string(mode) + " (the NPU has NORM and NEOX)";
        return false;
    }
    if (!f32_head_rows(x) || !f32_head_rows(rope) || std::memcmp(x->ne, rope->ne, sizeof x->ne) != 0) {
        why = "ROPE on the NPU takes F32 rows of contiguous values, x of the output's shape";
        return false;
    }
    const int32_t n_dims = op_param_i32(rope, 1);
    if (!xdna_aie::rope_row_fits(n_dims, static_cast<int>(rope->ne[0])) || op_param_i32(rope, 15) != 0) {
        why = "ROPE of " + std::to_string(n_dims) + " of " + std::to_string(rope->ne[0]) +
              " dims (the NPU rotates a multiple of 32 from dim 0 and copies a multiple of 16, rows up to " +
              std::to_string(xdna_aie::kRopeMaxRow) + ")";
        return false;
    }
    // One xclbin per head row length (aie/rope/dataflow.json): a head row and its angle row are one object each.
    if (!rope_row_has_xclbin(rope->ne[0])) {
        std::string lengths;  // the description's row lengths, as its kernel stacks list them
        for (const DesignDescription::KernelStack & k : rope_design().design.kernel_stacks) {
            if (k.family == "norm") lengths += (lengths.empty() ? "" : ", ") + std::to_string(k.tile_n);
        }
        why = "ROPE of head rows of " + std::to_string(rope->ne[0]) + " values (the design's xclbins take rows of " + lengths +
              ", aie/rope/dataflow.json)" + (rope_design().ok() ? std::string() : ": " + rope_design().error);
        return false;
    }
    if (pos->type != GGML_TYPE_I32 || !ggml_is_contiguous(pos) || pos->ne[0] != rope->ne[2]) {
        why = "ROPE positions: one contiguous I32 per token";
        return false;
    }
    if (ff != nullptr && (ff->type != GGML_TYPE_F32 || !ggml_is_contiguous(ff) || ff->ne[0] < n_dims / 2)) {
        why = "ROPE freq factors: F32, one per rotated pair";
        return false;
    }
    if (resolve.packed_or_view_of_packed(x) || resolve.packed_or_view_of_packed(pos) || (ff != nullptr && resolve.packed_or_view_of_packed(ff))) {
        why = "ROPE of a packed weight";
        return false;
    }
    if (resolve.has_kernel &&
        !resolve.has_kernel(rope_key(mode == GGML_ROPE_TYPE_NEOX ? RopeMode::neox : RopeMode::norm, static_cast<int>(rope->ne[0])))) {
        why = "the device has no rope kernel for head rows of " + std::to_string(rope->ne[0]) + " values";
        return false;
    }
    return true;
}

bool plan_rope(const ggml_tensor * rope, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why) {
    if (!rope_supported(rope, resolve, why)) {
        return false;
    }
    const ggml_tensor * x = rope->src[0];
    const ggml_tensor * pos = rope->src[1];
    const ggml_tensor * ff = rope->src[2];
    const BufferSlice xs = resolve.slice_of(x), ps = resolve.slice_of(pos), ys = resolve.slice_of(rope);
    const BufferSlice fs = ff != nullptr ? resolve.slice_of(ff) : BufferSlice{};
    if (xs.buffer == nullptr || ps.buffer == nullptr || ys.buffer == nullptr || (ff != nullptr && fs.buffer == nullptr)) {
        why = "ROPE operand not in device memory";
        return false;
    }
    for (int64_t i3 = 0; i3 < x->ne[3]; ++i3) {
        RopeInvocation r;
        r.p.mode = op_param_i32(rope, 2) == GGML_ROPE_TYPE_NEOX ? RopeMode::neox : RopeMode::norm;
        r.p.angles = angles_of(rope);
        r.p.ne0 = x->ne[0];
        r.p.n_heads = x->ne[1];
        r.p.n_tokens = x->ne[2];
        r.p.x_head_stride = static_cast<int64_t>(x->nb[1] / sizeof(float));
        r.p.x_token_stride = static_cast<int64_t>(x->nb[2] / sizeof(float));
        r.p.y_head_stride = static_cast<int64_t>(rope->nb[1] / sizeof(float));
        r.p.y_token_stride = static_cast<int64_t>(rope->nb[2] / sizeof(float));
        r.x = {xs.buffer, xs.offset + i3 * x->nb[3]};
        r.pos = ps;  // every i3 slice has the same positions (ggml-cpu/ops.cpp reads pos[i2])
        r.freq_factors = fs;
        r.y = {ys.buffer, ys.offset + i3 * rope->nb[3]};
        out.push_back(to_invocation(r));
    }
    return true;
}

}  // namespace xdna
