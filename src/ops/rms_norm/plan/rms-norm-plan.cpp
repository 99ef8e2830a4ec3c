#include "ops/rms_norm/rms-norm-plan.h"

#include "ops/rms_norm/rms-norm-invocation.h"
#include "xdna_aie/rms_norm_tiles.h"

#include <cfloat>
#include <cstring>

namespace xdna {

namespace {

float eps_of(const ggml_tensor * norm) {
    float eps = 0;
    std::memcpy(&eps, norm->op_params, sizeof eps);
    return eps;
}

// F32 with contiguous values: rows of one (i2, i3) slice are nb[1] apart, a whole number of floats.
bool f32_rows(const ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0 &&
           t->nb[2] % sizeof(float) == 0 && t->nb[3] % sizeof(float) == 0;
}

bool same_shape(const ggml_tensor * a, const ggml_tensor * b) {
    return std::memcmp(a->ne, b->ne, sizeof a->ne) == 0;
}

}  // namespace

bool rms_norm_supported(const ggml_tensor * norm, std::string & why) {
    const ggml_tensor * x = norm->src[0];
    if (!f32_rows(x) || !f32_rows(norm) || !same_shape(x, norm)) {
        why = "RMS_NORM on the NPU takes F32 rows of contiguous values";
        return false;
    }
    const int64_t cols = x->ne[0];
    if (cols % xdna_aie::kRmsNormLanes != 0 || cols > xdna_aie::kRmsNormMaxCols) {
        why = "RMS_NORM row length " + std::to_string(cols) + ": the rms_norm design takes multiples of " +
              std::to_string(xdna_aie::kRmsNormLanes) + " up to " + std::to_string(xdna_aie::kRmsNormMaxCols);
        return false;
    }
    if (!rms_norm_calls_keep_promise(cols)) {
        why = "RMS_NORM row length " + std::to_string(cols) + ": its last chunk of " +
              std::to_string(xdna_aie::rms_norm_chunk_len(cols, xdna_aie::rms_norm_chunks(cols) - 1)) +
              " values is under the rms_norm kernels' " + std::to_string(kRmsNormMinCall) +
              " (their loops promise the compiler " + std::to_string(kRmsNormMinCall / 32) + " trip(s) of 32 lanes)";
        return false;
    }
    const float eps = eps_of(norm);
    if (!(eps >= 0x1p-100f) || !(eps <= FLT_MAX)) {
        // eps 0: a zero row's scale is 1/sqrt(0), infinite on the CPU (NaN outputs); the core's
        // Newton rsqrt does not reach it. Below 2^-100 its emulated products lose bits (rms_norm.cc).
        why = "RMS_NORM eps must be at least 2^-100 for the NPU's rsqrt";
        return false;
    }
    return true;
}

bool rms_norm_mul_fusable(const ggml_tensor * mul, const TensorResolver & resolve, std::string & why) {
    const ggml_tensor * norm = mul->src[0];
    const ggml_tensor * w = mul->src[1];
    if (mul->op != GGML_OP_MUL || norm == nullptr || norm->op != GGML_OP_RMS_NORM || w == nullptr) {
        why = "not a MUL of an RMS_NORM";
        return false;
    }
    if (!rms_norm_supported(norm, why)) {
        return false;
    }
    const bool one_row = w->ne[1] == 1 && w->ne[2] == 1 && w->ne[3] == 1;
    if (!f32_rows(w) || w->ne[0] != norm->ne[0] || !(one_row || same_shape(w, norm)) || !f32_rows(mul) ||
        !same_shape(mul, norm)) {
        why = "the MUL after RMS_NORM takes one F32 weight row, or one per row";
        return false;
    }
    if (resolve.packed_or_view_of_packed(w)) {
        why = "the norm weight is a packed matrix";
        return false;
    }
    if (resolve.slice_of && resolve.slice_of(w).buffer == nullptr) {
        why = "the norm weight is not in device memory";
        return false;
    }
    return true;
}

bool mul_fuses_rms_norm(const ggml_tensor * mul, const TensorResolver & resolve) {
    std::string why;
    return mul->op == GGML_OP_MUL && mul->src[0] != nullptr && mul->src[0]->op == GGML_OP_RMS_NORM &&
           rms_norm_mul_fusable(mul, resolve, why);
}

bool plan_rms_norm(const ggml_tensor * node, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why) {
    const bool fused = node->op == GGML_OP_MUL;
    const ggml_tensor * norm = fused ? node->src[0] : node;
    if (fused ? !rms_norm_mul_fusable(node, resolve, why) : !rms_norm_supported(norm, why)) {
        return false;
    }
    const ggml_tensor * x = norm->src[0];
    const ggml_tensor * w = fused ? node->src[1] : nullptr;
    const BufferSlice xs = resolve.slice_of(x), ys = resolve.slice_of(node);
    const BufferSlice ws = w != nullptr ? resolve.slice_of(w) : BufferSlice{};
    if (xs.buffer == nullptr || ys.buffer == nullptr || (w != nullptr && ws.buffer == nullptr)) {
        why = "RMS_NORM operand not in device memory";
        return false;
    }
    const bool w_per_row = w != nullptr && !(w->ne[1] == 1 && w->ne[2] == 1 && w->ne[3] == 1);
    for (int64_t i3 = 0; i3 < x->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < x->ne[2]; ++i2) {
            RmsNormInvocation r;
            r.p.rows = x->ne[1];
            r.p.cols = x->ne[0];
            r.p.eps = eps_of(norm);
            r.p.inv_cols = 1.0f / static_cast<float>(x->ne[0]);
            r.p.with_weight = fused;
            r.p.x_row_stride = static_cast<int64_t>(x->nb[1] / sizeof(float));
            r.p.y_row_stride = static_cast<int64_t>(node->nb[1] / sizeof(float));
            r.p.w_row_stride = w_per_row ? static_cast<int64_t>(w->nb[1] / sizeof(float)) : 0;
            r.x = {xs.buffer, xs.offset + i2 * x->nb[2] + i3 * x->nb[3]};
            r.y = {ys.buffer, ys.offset + i2 * node->nb[2] + i3 * node->nb[3]};
            if (w != nullptr) {
                r.weight = {ws.buffer, ws.offset + (w_per_row ? i2 * w->nb[2] + i3 * w->nb[3] : 0)};
            }
            out.push_back(to_invocation(r));
        }
    }
    return true;
}

}  // namespace xdna
