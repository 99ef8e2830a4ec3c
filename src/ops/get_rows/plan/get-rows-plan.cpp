#include "ops/get_rows/get-rows-plan.h"

namespace xdna {

namespace {

bool f32_rows(const ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0 &&
           t->nb[2] % sizeof(float) == 0 && t->nb[3] % sizeof(float) == 0;
}

}  // namespace

bool get_rows_supported(const ggml_tensor * g, const TensorResolver & resolve, std::string & why) {
    const ggml_tensor * src = g->src[0];
    const ggml_tensor * ids = g->src[1];
    if (g->op != GGML_OP_GET_ROWS || src == nullptr || ids == nullptr || !f32_rows(src) || !f32_rows(g)) {
        why = "GET_ROWS on the NPU takes F32 rows into F32 rows";
        return false;
    }
    if (ids->type != GGML_TYPE_I32 || ids->nb[0] != sizeof(int32_t) || ids->ne[3] != 1) {
        why = "GET_ROWS ids: I32, contiguous rows";
        return false;
    }
    // ggml_get_rows: dst[:, i10, i11, i12] = src[:, ids[i10, i11, i12], i11, i12].
    if (g->ne[0] != src->ne[0] || g->ne[1] != ids->ne[0] || g->ne[2] != ids->ne[1] || g->ne[3] != ids->ne[2] ||
        src->ne[2] != ids->ne[1] || src->ne[3] != ids->ne[2]) {
        why = "GET_ROWS of a shape the NPU's gather does not take";
        return false;
    }
    // One invocation per slice (each its own BD tasks and dispatch): many small ones are the host's job.
    constexpr int64_t kMaxSlices = 256;
    if (ids->ne[1] * ids->ne[2] > kMaxSlices) {
        why = "GET_ROWS over " + std::to_string(ids->ne[1] * ids->ne[2]) + " slices of ids (the NPU takes up to " +
              std::to_string(kMaxSlices) + ")";
        return false;
    }
    if (resolve.packed_or_view_of_packed(src)) {
        why = "GET_ROWS of a packed weight";
        return false;
    }
    // The design's memory-tile objects are chunks of one of its tiles (aie/get_rows/dataflow.json): a row
    // no tile divides is not the NPU's.
    const int tile = get_rows_tile(src->ne[0]);
    if (tile == 0) {
        why = "GET_ROWS row length " + std::to_string(src->ne[0]) + " is not a whole number of chunks of 32 to 1024 values " +
              "(aie/get_rows/dataflow.json)" + (get_rows_design().ok() ? std::string() : ": " + get_rows_design().error);
        return false;
    }
    // The DMAs relay a chunk at a time: a gather into memory it reads from would read rows it already wrote.
    const BufferSlice ss = resolve.slice_of(src), ys = resolve.slice_of(g);
    if (ss.buffer != nullptr && ss.buffer == ys.buffer && ss.offset < ys.offset + ggml_nbytes(g) && ys.offset < ss.offset + ggml_nbytes(src)) {
        why = "GET_ROWS into memory its source occupies";
        return false;
    }
    if (resolve.has_kernel && !resolve.has_kernel(get_rows_key(tile))) {
        why = "the device has no get_rows design";
        return false;
    }
    return true;
}

bool plan_get_rows(const ggml_tensor * g, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why) {
    if (!get_rows_supported(g, resolve, why)) {
        return false;
    }
    const ggml_tensor * src = g->src[0];
    const ggml_tensor * ids = g->src[1];
    const BufferSlice ss = resolve.slice_of(src), is = resolve.slice_of(ids), ys = resolve.slice_of(g);
    if (ss.buffer == nullptr || is.buffer == nullptr || ys.buffer == nullptr) {
        why = "GET_ROWS operand not in device memory";
        return false;
    }
    for (int64_t i12 = 0; i12 < ids->ne[2]; ++i12) {
        for (int64_t i11 = 0; i11 < ids->ne[1]; ++i11) {
            GetRowsInvocation r;
            r.p.n_ids = ids->ne[0];
            r.p.cols = src->ne[0];
            r.p.src_rows = src->ne[1];
            r.p.src_row_stride = static_cast<int64_t>(src->nb[1] / sizeof(float));
            r.p.y_row_stride = static_cast<int64_t>(g->nb[1] / sizeof(float));
            r.src = {ss.buffer, ss.offset + i11 * src->nb[2] + i12 * src->nb[3]};
            r.ids = {is.buffer, is.offset + i11 * ids->nb[1] + i12 * ids->nb[2]};
            r.y = {ys.buffer, ys.offset + i11 * g->nb[2] + i12 * g->nb[3]};
            out.push_back(to_invocation(r));
        }
    }
    return true;
}

}  // namespace xdna
