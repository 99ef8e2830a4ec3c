#include "ops/scale/scale-invocation.h"

#include "ggml.h"

#include <cstdio>

namespace xdna {

std::string ScaleParams::shape_label(const TileShape &) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld x %lld", static_cast<long long>(rows), static_cast<long long>(cols));
    return buf;
}

KernelKey scale_key() {
    KernelKey k;
    k.kind = KernelKind::scale;
    k.design = kScaleDesign;
    k.variant = kScaleVariant;
    k.tile = TileShape{0, 0, 0};
    return k;
}

Invocation to_invocation(const ScaleInvocation & s) {
    Invocation inv;
    inv.key = scale_key();
    inv.params = s.p;
    const uint64_t row = static_cast<uint64_t>(s.p.cols) * sizeof(float);
    inv.add_operand({"x", s.x, row, s.p.rows, static_cast<uint64_t>(s.p.x_row_stride) * sizeof(float), Access::read});
    inv.add_operand({"y", s.y, row, s.p.rows, static_cast<uint64_t>(s.p.y_row_stride) * sizeof(float), Access::write});
    return inv;
}

ScaleInvocation scale_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::scale);
    ScaleInvocation s;
    s.p = std::get<ScaleParams>(inv.params);
    s.x = inv.operand("x")->slice;
    s.y = inv.operand("y")->slice;
    return s;
}

}  // namespace xdna
