#include "ops/scale/scale-plan.h"

#include "ops/scale/scale-invocation.h"

#include <cstring>

namespace xdna {

namespace {

bool f32_rows(const ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0 &&
           t->nb[2] % sizeof(float) == 0 && t->nb[3] % sizeof(float) == 0;
}

}  // namespace

bool scale_supported(const ggml_tensor * sc, const TensorResolver & resolve, std::string & why) {
    const ggml_tensor * x = sc->src[0];
    if (sc->op != GGML_OP_SCALE || x == nullptr || !f32_rows(x) || !f32_rows(sc) || !ggml_are_same_shape(x, sc)) {
        why = "SCALE on the NPU takes F32 rows of the output's shape";
        return false;
    }
    // The design's data movement takes rows in groups of core_rows (2) chunks of one of its tiles
    // (aie/scale/dataflow.json): a row no group divides is not the NPU's (the simulator runs exactly what
    // the design takes).
    const int tile = scale_tile(x->ne[0]);
    if (tile == 0) {
        why = "SCALE row length " + std::to_string(x->ne[0]) + " is not a whole number of groups of 2 chunks of 128 to 1024 values " +
              "(aie/scale/dataflow.json)" + (scale_design().ok() ? std::string() : ": " + scale_design().error);
        return false;
    }
    constexpr int64_t kMaxSlices = 256;
    if (x->ne[2] * x->ne[3] > kMaxSlices) {
        why = "SCALE over " + std::to_string(x->ne[2] * x->ne[3]) + " slices (the NPU takes up to " + std::to_string(kMaxSlices) + ")";
        return false;
    }
    if (resolve.packed_or_view_of_packed(x)) {
        why = "SCALE of a packed weight";
        return false;
    }
    if (resolve.has_kernel && !resolve.has_kernel(scale_key(tile))) {
        why = "the device has no scale kernel";
        return false;
    }
    return true;
}

bool plan_scale(const ggml_tensor * sc, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why) {
    if (!scale_supported(sc, resolve, why)) {
        return false;
    }
    const ggml_tensor * x = sc->src[0];
    const BufferSlice xs = resolve.slice_of(x), ys = resolve.slice_of(sc);
    if (xs.buffer == nullptr || ys.buffer == nullptr) {
        why = "SCALE operand not in device memory";
        return false;
    }
    for (int64_t i3 = 0; i3 < x->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < x->ne[2]; ++i2) {
            ScaleInvocation r;
            r.p.rows = x->ne[1];
            r.p.cols = x->ne[0];
            r.p.x_row_stride = static_cast<int64_t>(x->nb[1] / sizeof(float));
            r.p.y_row_stride = static_cast<int64_t>(sc->nb[1] / sizeof(float));
            r.p.s = op_param_f32(sc, 0);
            r.p.b = op_param_f32(sc, 1);
            r.x = {xs.buffer, xs.offset + i2 * x->nb[2] + i3 * x->nb[3]};
            r.y = {ys.buffer, ys.offset + i2 * sc->nb[2] + i3 * sc->nb[3]};
            out.push_back(to_invocation(r));
        }
    }
    return true;
}

}  // namespace xdna
