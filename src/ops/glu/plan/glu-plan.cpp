#include "ops/glu/glu-plan.h"

#include "ops/glu/glu-invocation.h"
#include "runtime/rows-sequence.h"

#include "xdna_aie/glu_tiles.h"

#include <cstring>

namespace xdna {

namespace {

bool f32_rows(const ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0 &&
           t->nb[2] % sizeof(float) == 0 && t->nb[3] % sizeof(float) == 0;
}

}  // namespace

bool glu_supported(const ggml_tensor * glu, const TensorResolver & resolve, std::string & why) {
    const ggml_tensor * a = glu->src[0];
    const ggml_tensor * b = glu->src[1];
    if (glu->op != GGML_OP_GLU || ggml_get_glu_op(glu) != GGML_GLU_OP_SWIGLU) {
        why = "GLU on the NPU: SwiGLU only";
        return false;
    }
    if (b == nullptr) {
        why = "GLU on the NPU: the split form only (gate and up as two tensors)";
        return false;
    }
    if (!f32_rows(a) || !f32_rows(b) || !f32_rows(glu) || std::memcmp(a->ne, glu->ne, sizeof a->ne) != 0 ||
        std::memcmp(b->ne, glu->ne, sizeof b->ne) != 0) {
        why = "GLU on the NPU takes F32 rows of the output's shape";
        return false;
    }
    if (a->ne[0] % xdna_aie::kGluLanes != 0) {
        why = "GLU row length " + std::to_string(a->ne[0]) + " is not a multiple of " + std::to_string(xdna_aie::kGluLanes);
        return false;
    }
    // The design's data movement takes rows in groups of core_rows (4) chunks of one of its tiles (aie/glu/dataflow.json).
    const DesignRead & d = glu_design();
    const int tile = d.ok() ? rows_tile_for(d.design, d.design.families.front().first, a->ne[0]) : 0;
    if (tile == 0) {
        why = "GLU row length " + std::to_string(a->ne[0]) + " is not a whole number of groups of " +
              (d.ok() ? std::to_string(d.design.core_rows) : std::string("the design's")) + " chunks of any of its tiles " +
              "(aie/glu/dataflow.json)" + (d.ok() ? std::string() : ": " + d.error);
        return false;
    }
    if (resolve.has_kernel && !resolve.has_kernel(glu_key(tile))) {
        why = "the device has no glu kernel";
        return false;
    }
    return true;
}

bool plan_glu(const ggml_tensor * glu, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why) {
    if (!glu_supported(glu, resolve, why)) {
        return false;
    }
    const ggml_tensor * a = glu->src[0];
    const ggml_tensor * b = glu->src[1];
    const BufferSlice as = resolve.slice_of(a), bs = resolve.slice_of(b), ys = resolve.slice_of(glu);
    if (as.buffer == nullptr || bs.buffer == nullptr || ys.buffer == nullptr) {
        why = "GLU operand not in device memory";
        return false;
    }
    for (int64_t i3 = 0; i3 < a->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < a->ne[2]; ++i2) {
            GluInvocation g;
            g.p.rows = a->ne[1];
            g.p.cols = a->ne[0];
            g.p.a_row_stride = static_cast<int64_t>(a->nb[1] / sizeof(float));
            g.p.b_row_stride = static_cast<int64_t>(b->nb[1] / sizeof(float));
            g.p.y_row_stride = static_cast<int64_t>(glu->nb[1] / sizeof(float));
            g.a = {as.buffer, as.offset + i2 * a->nb[2] + i3 * a->nb[3]};
            g.b = {bs.buffer, bs.offset + i2 * b->nb[2] + i3 * b->nb[3]};
            g.y = {ys.buffer, ys.offset + i2 * glu->nb[2] + i3 * glu->nb[3]};
            out.push_back(to_invocation(g));
        }
    }
    return true;
}

}  // namespace xdna
