#include "ops/row_scale/row-scale-invocation.h"

#include "runtime/design-registry.h"
#include "runtime/rows-sequence.h"

#include "ggml.h"

#include <cstdio>

namespace xdna {

std::string RowScaleParams::shape_label(const TileShape &) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld x %lld", static_cast<long long>(rows), static_cast<long long>(cols));
    return buf;
}

KernelKey row_scale_key(int tile) {
    KernelKey k;
    k.kind = KernelKind::row_scale;
    k.design = kRowScaleDesign;
    k.variant = kRowScaleVariant;
    k.tile = TileShape{0, tile, 0};
    return k;
}

const DesignRead & row_scale_design() {
    return built_in_design(kRowScaleDesign);
}

int row_scale_tile(int64_t cols) {
    const DesignRead & d = row_scale_design();
    return d.ok() ? rows_tile_for(d.design, d.design.families.front().first, cols) : 0;
}

Invocation to_invocation(const RowScaleInvocation & r) {
    Invocation inv;
    inv.key = row_scale_key(row_scale_tile(r.p.cols));
    inv.params = r.p;
    const uint64_t row = static_cast<uint64_t>(r.p.cols) * sizeof(float);
    inv.add_operand({"x", r.x, row, r.p.rows, static_cast<uint64_t>(r.p.x_row_stride) * sizeof(float), Access::read});
    // One value for every row: a one-row operand (the stream reads it again for each row).
    inv.add_operand({"w", r.w, sizeof(float), r.p.w_stride == 0 ? 1 : r.p.rows, static_cast<uint64_t>(r.p.w_stride) * sizeof(float),
                     Access::read});
    inv.add_operand({"y", r.y, row, r.p.rows, static_cast<uint64_t>(r.p.y_row_stride) * sizeof(float), Access::write});
    return inv;
}

RowScaleInvocation row_scale_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::row_scale);
    RowScaleInvocation r;
    r.p = std::get<RowScaleParams>(inv.params);
    r.x = inv.operand("x")->slice;
    r.w = inv.operand("w")->slice;
    r.y = inv.operand("y")->slice;
    return r;
}

}  // namespace xdna
