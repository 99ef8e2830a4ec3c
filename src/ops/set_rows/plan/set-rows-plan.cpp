#include "ops/set_rows/set-rows-plan.h"

#include "ops/set_rows/set-rows-invocation.h"
#include "xdna_aie/set_rows_tiles.h"

namespace xdna {

namespace {

bool rows_of(const ggml_tensor * t, ggml_type type) {
    const size_t e = ggml_type_size(type);
    return t->type == type && t->nb[0] == e && t->nb[1] % e == 0 && t->nb[2] % e == 0 && t->nb[3] % e == 0;
}

constexpr int64_t kMaxSlices = 256;

// A row the design's chunks do not make up (aie/set_rows/dataflow.json: chunks of 128 to 1024 values, a
// power of two; the kernels' loops promise the compiler 4 trips of 32 values, so no call is shorter).
bool row_not_taken(const char * op, int64_t cols, std::string & why) {
    if (set_rows_tile(cols) != 0) return false;
    why = std::string(op) + " row length " + std::to_string(cols) + " is not a whole number of chunks of 128 to 1024 values " +
          "(aie/set_rows/dataflow.json; the kernels' loops promise the compiler 4 trips of 32 values)" +
          (set_rows_design().ok() ? std::string() : ": " + set_rows_design().error);
    return true;
}

// CPY from F32 rows to F16 rows of the same shape (either may be a permuted view with contiguous rows).
bool cpy_supported(const ggml_tensor * c, const TensorResolver & resolve, std::string & why) {
    const ggml_tensor * x = c->src[0];
    if (x == nullptr || !rows_of(x, GGML_TYPE_F32) || !rows_of(c, GGML_TYPE_F16) || !ggml_are_same_shape(x, c)) {
        why = "CPY on the NPU takes F32 rows into F16 rows of the same shape";
        return false;
    }
    if (row_not_taken("CPY", x->ne[0], why)) {
        return false;
    }
    if (x->ne[2] * x->ne[3] > kMaxSlices) {
        why = "CPY over " + std::to_string(x->ne[2] * x->ne[3]) + " slices (the NPU takes up to " + std::to_string(kMaxSlices) + ")";
        return false;
    }
    if (resolve.packed_or_view_of_packed(x) || resolve.packed_or_view_of_packed(c)) {
        why = "CPY of a packed weight";
        return false;
    }
    if (resolve.has_kernel && !resolve.has_kernel(set_rows_key(false, set_rows_tile(x->ne[0])))) {
        why = "the device has no set_rows kernel";
        return false;
    }
    return true;
}

}  // namespace

bool set_rows_supported(const ggml_tensor * s, const TensorResolver & resolve, std::string & why) {
    if (s->op == GGML_OP_CPY) {
        return cpy_supported(s, resolve, why);
    }
    const ggml_tensor * x = s->src[0];
    const ggml_tensor * ids = s->src[1];
    if (s->op != GGML_OP_SET_ROWS || x == nullptr || ids == nullptr || !rows_of(x, GGML_TYPE_F32) ||
        (!rows_of(s, GGML_TYPE_F16) && !rows_of(s, GGML_TYPE_Q8_0))) {
        why = "SET_ROWS on the NPU takes F32 rows into F16 or Q8_0 rows";
        return false;
    }
    if (s->type == GGML_TYPE_Q8_0 && (x->ne[0] % 64 != 0 || s->nb[1] % 4 != 0 || s->nb[2] % 4 != 0 || s->nb[3] % 4 != 0)) {
        why = "SET_ROWS into Q8_0 rows of " + std::to_string(x->ne[0]) +
              " values (the NPU writes whole rows at 32-bit word offsets: a multiple of 64 values)";
        return false;
    }
    if (ggml_nelements(x) == 0) {
        why = "SET_ROWS of no rows (nothing for the NPU to move)";
        return false;
    }
    if ((ids->type != GGML_TYPE_I64 && ids->type != GGML_TYPE_I32) || ids->nb[0] != ggml_type_size(ids->type) || ids->ne[3] != 1) {
        why = "SET_ROWS ids: I64 or I32, contiguous rows";
        return false;
    }
    // ggml_set_rows: dst[:, ids[i01, i02 % ne11, i03 % ne12], i02, i03] = x[:, i01, i02, i03].
    if (x->ne[0] != s->ne[0] || x->ne[2] != s->ne[2] || x->ne[3] != s->ne[3] || ids->ne[0] != x->ne[1] ||
        x->ne[2] % ids->ne[1] != 0 || x->ne[3] % ids->ne[2] != 0) {
        why = "SET_ROWS of a shape the NPU does not take";
        return false;
    }
    // (The transposed V cache of the non-flash path writes one value per row: never a whole chunk.)
    if (row_not_taken("SET_ROWS", x->ne[0], why)) {
        return false;
    }
    if (x->ne[2] * x->ne[3] > kMaxSlices) {
        why = "SET_ROWS over " + std::to_string(x->ne[2] * x->ne[3]) + " slices (the NPU takes up to " + std::to_string(kMaxSlices) + ")";
        return false;
    }
    if (resolve.packed_or_view_of_packed(x) || resolve.packed_or_view_of_packed(s)) {
        why = "SET_ROWS of a packed weight";
        return false;
    }
    const KernelKey key = set_rows_key(s->type == GGML_TYPE_Q8_0, set_rows_tile(x->ne[0]));
    if (resolve.has_kernel && !resolve.has_kernel(key)) {
        why = std::string("the device has no set_rows kernel ") + key.variant + " at tile " + std::to_string(key.tile.n);
        return false;
    }
    return true;
}

bool plan_set_rows(const ggml_tensor * s, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why) {
    if (!set_rows_supported(s, resolve, why)) {
        return false;
    }
    const ggml_tensor * x = s->src[0];
    const bool identity = s->op == GGML_OP_CPY;
    const ggml_tensor * ids = identity ? nullptr : s->src[1];
    const BufferSlice xs = resolve.slice_of(x), is = identity ? BufferSlice{} : resolve.slice_of(ids), ys = resolve.slice_of(s);
    if (xs.buffer == nullptr || (!identity && is.buffer == nullptr) || ys.buffer == nullptr) {
        why = "SET_ROWS operand not in device memory";
        return false;
    }
    // The design's y BDs address 32-bit words: the rows and slices of the view must start on one.
    if (ys.offset % 4 != 0 || s->nb[1] % 4 != 0 || s->nb[2] % 4 != 0 || s->nb[3] % 4 != 0) {
        why = std::string(identity ? "CPY" : "SET_ROWS") + " into a view whose rows do not start on 32-bit words";
        return false;
    }
    for (int64_t i03 = 0; i03 < x->ne[3]; ++i03) {
        for (int64_t i02 = 0; i02 < x->ne[2]; ++i02) {
            SetRowsInvocation r;
            r.p.rows = x->ne[1];
            r.p.cols = x->ne[0];
            r.p.y_rows = s->ne[1];
            r.p.x_row_stride = static_cast<int64_t>(x->nb[1] / sizeof(float));
            r.p.y_q8_0 = s->type == GGML_TYPE_Q8_0;
            r.p.y_row_stride = static_cast<int64_t>(r.p.y_q8_0 ? s->nb[1] : s->nb[1] / sizeof(ggml_fp16_t));
            r.p.identity = identity;
            r.p.ids_64 = !identity && ids->type == GGML_TYPE_I64;
            r.x = {xs.buffer, xs.offset + i02 * x->nb[2] + i03 * x->nb[3]};
            if (!identity) r.ids = {is.buffer, is.offset + (i02 % ids->ne[1]) * ids->nb[1] + (i03 % ids->ne[2]) * ids->nb[2]};
            r.y = {ys.buffer, ys.offset + i02 * s->nb[2] + i03 * s->nb[3]};
            out.push_back(to_invocation(r));
        }
    }
    return true;
}

}  // namespace xdna
