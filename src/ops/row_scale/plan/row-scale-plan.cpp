#include "ops/row_scale/row-scale-plan.h"

#include "plan/row-folding.h"

namespace xdna {

namespace {

bool f32_rows(const ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0 &&
           t->nb[2] % sizeof(float) == 0 && t->nb[3] % sizeof(float) == 0;
}

constexpr int64_t kMaxSlices = 256;

// Whether b is one value for every row.
bool one_value(const ggml_tensor * b) { return b->ne[1] == 1 && b->ne[2] == 1 && b->ne[3] == 1; }

// b's stride in floats along dim d: 0 where b repeats (one value for every index of a's dim d).
int64_t w_stride(const ggml_tensor * b, int d) {
    return b->ne[d] == 1 ? 0 : static_cast<int64_t>(b->nb[d] / sizeof(float));
}

// The rows one invocation takes: x's and y's rows folded, and b's as they step with them (a value per row
// of every slice), or regardless of b where one value serves every row; b repeated along a dim folds
// nothing.
RowFolding fold(const ggml_tensor * x, const ggml_tensor * b, const ggml_tensor * y) {
    if (one_value(b)) {
        return fold_rows(x, {x, y});
    }
    const bool per_row = b->ne[1] == x->ne[1] && b->ne[2] == x->ne[2] && b->ne[3] == x->ne[3];
    return fold_rows(x, {x, y, b}, per_row);
}

}  // namespace

bool mul_by_row_values(const ggml_tensor * mul) {
    return mul->op == GGML_OP_MUL && mul->src[0] != nullptr && mul->src[1] != nullptr && mul->src[1]->ne[0] == 1 &&
           mul->src[0]->ne[0] > 1;
}

bool row_scale_supported(const ggml_tensor * mul, const TensorResolver & resolve, std::string & why) {
    const ggml_tensor * x = mul->src[0];
    const ggml_tensor * b = mul->src[1];
    if (!mul_by_row_values(mul) || !f32_rows(x) || !f32_rows(b) || !f32_rows(mul) || !ggml_are_same_shape(x, mul)) {
        why = "MUL by one value per row on the NPU takes F32 rows of the output's shape and F32 values";
        return false;
    }
    for (int d = 1; d < 4; ++d) {
        if (b->ne[d] != x->ne[d] && b->ne[d] != 1) {
            why = "MUL by one value per row: b's dim " + std::to_string(d) + " neither matches nor repeats";
            return false;
        }
    }
    const int tile = row_scale_tile(x->ne[0]);
    if (tile == 0) {
        why = "MUL by one value per row: a row of " + std::to_string(x->ne[0]) +
              " values is not a whole number of groups of 2 chunks of 64 to 1024 values (aie/row_scale/dataflow.json)" +
              (row_scale_design().ok() ? std::string() : ": " + row_scale_design().error);
        return false;
    }
    const RowFolding f = fold(x, b, mul);
    const int64_t slices = f.n2 * f.n3;
    if (slices > kMaxSlices) {
        why = "MUL by one value per row over " + std::to_string(slices) + " slices of rows that do not follow each other (the NPU takes up to " +
              std::to_string(kMaxSlices) + ")";
        return false;
    }
    if (resolve.packed_or_view_of_packed(x) || resolve.packed_or_view_of_packed(b)) {
        why = "MUL by one value per row of a packed weight";
        return false;
    }
    if (resolve.has_kernel && !resolve.has_kernel(row_scale_key(tile))) {
        why = "the device has no row_scale kernel";
        return false;
    }
    return true;
}

bool plan_row_scale(const ggml_tensor * mul, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why) {
    if (!row_scale_supported(mul, resolve, why)) {
        return false;
    }
    const ggml_tensor * x = mul->src[0];
    const ggml_tensor * b = mul->src[1];
    const BufferSlice xs = resolve.slice_of(x), bs = resolve.slice_of(b), ys = resolve.slice_of(mul);
    if (xs.buffer == nullptr || bs.buffer == nullptr || ys.buffer == nullptr) {
        why = "MUL by one value per row: an operand not in device memory";
        return false;
    }
    const RowFolding f = fold(x, b, mul);
    // One value for everything: stride 0. Folded rows step through b at its row stride, as they step
    // through x (fold checked it, also where a dim of one row folds); a slice's rows at b's dim-1
    // stride, 0 where b repeats along it.
    const int64_t bw = one_value(b) ? 0 : f.dims >= 1 ? static_cast<int64_t>(b->nb[1] / sizeof(float)) : w_stride(b, 1);
    for (int64_t i3 = 0; i3 < f.n3; ++i3) {
        for (int64_t i2 = 0; i2 < f.n2; ++i2) {
            RowScaleInvocation r;
            r.p.rows = f.rows;
            r.p.cols = x->ne[0];
            r.p.x_row_stride = static_cast<int64_t>(x->nb[1] / sizeof(float));
            r.p.w_stride = f.rows == 1 ? 0 : bw;
            r.p.y_row_stride = static_cast<int64_t>(mul->nb[1] / sizeof(float));
            r.x = {xs.buffer, xs.offset + i2 * x->nb[2] + i3 * x->nb[3]};
            r.w = {bs.buffer, bs.offset + (i2 % b->ne[2]) * b->nb[2] + (i3 % b->ne[3]) * b->nb[3]};
            r.y = {ys.buffer, ys.offset + i2 * mul->nb[2] + i3 * mul->nb[3]};
            out.push_back(to_invocation(r));
        }
    }
    return true;
}

}  // namespace xdna
