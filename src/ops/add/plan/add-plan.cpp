#include "ops/add/add-plan.h"

#include "ops/add/add-invocation.h"
#include "runtime/rows-sequence.h"
#include "xdna_aie/add_tiles.h"

#include <cstring>

namespace xdna {

namespace {

bool f32_rows(const ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0 &&
           t->nb[2] % sizeof(float) == 0 && t->nb[3] % sizeof(float) == 0;
}

bool one_row(const ggml_tensor * t) {
    return t->ne[1] == 1 && t->ne[2] == 1 && t->ne[3] == 1;
}

}  // namespace

bool add_supported(const ggml_tensor * add, const TensorResolver & resolve, std::string & why) {
    const ggml_tensor * a = add->src[0];
    const ggml_tensor * b = add->src[1];
    const std::string op = ggml_op_name(add->op);
    if ((add->op != GGML_OP_ADD && add->op != GGML_OP_MUL) || a == nullptr || b == nullptr || !f32_rows(a) || !f32_rows(b) ||
        !f32_rows(add)) {
        why = op + " on the NPU takes F32 rows of contiguous values";
        return false;
    }
    if (std::memcmp(a->ne, add->ne, sizeof a->ne) != 0 || b->ne[0] != a->ne[0] ||
        !(one_row(b) || std::memcmp(b->ne, a->ne, sizeof a->ne) == 0)) {
        why = op + " on the NPU: b of a's shape or one row (other broadcasts stay on the host)";
        return false;
    }
    if (a->ne[0] % xdna_aie::kAddLanes != 0) {
        why = op + " row length " + std::to_string(a->ne[0]) + " is not a multiple of " + std::to_string(xdna_aie::kAddLanes);
        return false;
    }
    // The design's data movement takes rows in groups of core_rows (2) chunks of one of its tiles (aie/add/dataflow.json):
    // a row no group divides is not the NPU's (the simulator runs exactly what the design takes).
    const DesignRead & d = add_design();
    const int tile = d.ok() ? rows_tile_for(d.design, d.design.families.front().first, a->ne[0]) : 0;
    if (tile == 0) {
        why = op + " row length " + std::to_string(a->ne[0]) + " is not a whole number of groups of 2 chunks of 64 to 512 values " +
              "(aie/add/dataflow.json)" + (d.ok() ? std::string() : ": " + d.error);
        return false;
    }
    if (resolve.packed_or_view_of_packed(a) || resolve.packed_or_view_of_packed(b)) {
        why = op + " of a packed weight";
        return false;
    }
    if (resolve.has_kernel && !resolve.has_kernel(add_key(add->op == GGML_OP_MUL, tile))) {
        why = "the device has no " + op + " kernel";
        return false;
    }
    return true;
}

bool plan_add(const ggml_tensor * add, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why) {
    if (!add_supported(add, resolve, why)) {
        return false;
    }
    const ggml_tensor * a = add->src[0];
    const ggml_tensor * b = add->src[1];
    const BufferSlice as = resolve.slice_of(a), bs = resolve.slice_of(b), ys = resolve.slice_of(add);
    if (as.buffer == nullptr || bs.buffer == nullptr || ys.buffer == nullptr) {
        why = std::string(ggml_op_name(add->op)) + " operand not in device memory";
        return false;
    }
    const bool b_row = one_row(b);
    for (int64_t i3 = 0; i3 < a->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < a->ne[2]; ++i2) {
            AddInvocation r;
            r.p.rows = a->ne[1];
            r.p.cols = a->ne[0];
            r.p.a_row_stride = static_cast<int64_t>(a->nb[1] / sizeof(float));
            r.p.b_row_stride = b_row ? 0 : static_cast<int64_t>(b->nb[1] / sizeof(float));
            r.p.y_row_stride = static_cast<int64_t>(add->nb[1] / sizeof(float));
            r.p.multiply = add->op == GGML_OP_MUL;
            r.a = {as.buffer, as.offset + i2 * a->nb[2] + i3 * a->nb[3]};
            r.b = {bs.buffer, bs.offset + (b_row ? 0 : i2 * b->nb[2] + i3 * b->nb[3])};
            r.y = {ys.buffer, ys.offset + i2 * add->nb[2] + i3 * add->nb[3]};
            out.push_back(to_invocation(r));
        }
    }
    return true;
}

}  // namespace xdna
