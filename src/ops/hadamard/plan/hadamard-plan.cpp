#include "ops/hadamard/hadamard-plan.h"

#include "ops/hadamard/hadamard-invocation.h"
#include "plan/row-folding.h"
#include "xdna_aie/hadamard_tiles.h"

#include <cmath>

namespace xdna {

namespace {

bool f32_rows(const ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0 &&
           t->nb[2] % sizeof(float) == 0 && t->nb[3] % sizeof(float) == 0;
}

constexpr int64_t kMaxSlices = 256;


}  // namespace

bool hadamard_hinted(const ggml_tensor * node) {
    return node->op == GGML_OP_MUL_MAT && op_param_i32(node, 1) == GGML_HINT_SRC0_IS_HADAMARD;
}

bool hadamard_shape_supported(const ggml_tensor * node, std::string & why) {
    const ggml_tensor * h = node->src[0];
    const ggml_tensor * x = node->src[1];
    if (!hadamard_hinted(node) || h == nullptr || x == nullptr) {
        why = "not a MUL_MAT by a Hadamard matrix";
        return false;
    }
    const int64_t n = x->ne[0];
    if (h->type != GGML_TYPE_F32 || h->ne[0] != n || h->ne[1] != n || h->ne[2] != 1 || h->ne[3] != 1 ||
        !xdna_aie::hadamard_n_fits(static_cast<int>(n))) {
        why = "Hadamard rotation of " + std::to_string(n) + " values (the NPU takes an F32 64, 128 or 256 square)";
        return false;
    }
    if (!f32_rows(x) || !f32_rows(node) || node->ne[0] != n || node->ne[1] != x->ne[1] || node->ne[2] != x->ne[2] ||
        node->ne[3] != x->ne[3]) {
        why = "Hadamard rotation: F32 rows in, F32 rows of the same shape out";
        return false;
    }
    // Slices whose rows follow each other fold into one invocation (llama.cpp's rotations are 2-D); the
    // per-head views of a wider row are one per token.
    const RowFolding f = fold_rows(x, {x, node});
    const int64_t slices = f.n2 * f.n3;
    if (slices > kMaxSlices) {
        why = "Hadamard rotation over " + std::to_string(slices) + " slices of rows that do not follow each other (the NPU takes up to " +
              std::to_string(kMaxSlices) + ")";
        return false;
    }
    return true;
}

bool hadamard_supported(const ggml_tensor * node, const TensorResolver & resolve, std::string & why) {
    if (!hadamard_shape_supported(node, why)) {
        return false;
    }
    if (resolve.packed_or_view_of_packed(node->src[1])) {
        why = "Hadamard rotation of a packed weight";
        return false;
    }
    const KernelKey key = hadamard_key(node->src[1]->ne[0]);
    if (key.tile.n == 0) {
        why = "the hadamard design has no xclbin for rows of " + std::to_string(node->src[1]->ne[0]) + " values (aie/hadamard/dataflow.json)" +
              (hadamard_design().ok() ? std::string() : ": " + hadamard_design().error);
        return false;
    }
    if (resolve.has_kernel && !resolve.has_kernel(key)) {
        why = "the device has no hadamard kernel for rows of " + std::to_string(node->src[1]->ne[0]) + " values";
        return false;
    }
    return true;
}

namespace {

// Whether x is (a view or reshape of) a FLASH_ATTN_EXT's output: the rotation of the attention's output.
bool reads_attention(const ggml_tensor * x) {
    for (const ggml_tensor * t = x; t != nullptr; t = t->view_src != nullptr ? t->view_src : (t->op == GGML_OP_RESHAPE ? t->src[0] : nullptr)) {
        if (t->op == GGML_OP_FLASH_ATTN_EXT) return true;
    }
    return false;
}

}  // namespace

bool plan_hadamard(const ggml_tensor * node, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why) {
    if (!hadamard_supported(node, resolve, why)) {
        return false;
    }
    const ggml_tensor * x = node->src[1];
    const BufferSlice xs = resolve.slice_of(x), ys = resolve.slice_of(node);
    if (xs.buffer == nullptr || ys.buffer == nullptr) {
        why = "Hadamard rotation operand not in device memory";
        return false;
    }
    const RowFolding f = fold_rows(x, {x, node});  // rows of the folded dims: one invocation; the other slices one each
    for (int64_t i3 = 0; i3 < f.n3; ++i3) {
        for (int64_t i2 = 0; i2 < f.n2; ++i2) {
            HadamardInvocation h;
            h.p.rows = f.rows;
            h.p.n = x->ne[0];
            h.p.x_row_stride = static_cast<int64_t>(x->nb[1] / sizeof(float));
            h.p.y_row_stride = static_cast<int64_t>(node->nb[1] / sizeof(float));
            h.p.scale = 1.0f / sqrtf(static_cast<float>(h.p.n));  // as ggml-cpu ops.cpp ggml_compute_forward_fwht_f32
            h.p.attention_output = reads_attention(x);
            h.x = {xs.buffer, xs.offset + i2 * x->nb[2] + i3 * x->nb[3]};
            h.y = {ys.buffer, ys.offset + i2 * node->nb[2] + i3 * node->nb[3]};
            out.push_back(to_invocation(h));
        }
    }
    return true;
}

}  // namespace xdna
