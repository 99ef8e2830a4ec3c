#include "ops/glu/glu-invocation.h"

#include "runtime/design-registry.h"

#include "ggml.h"

#include <cstdio>

namespace xdna {

std::string GluParams::shape_label(const TileShape &) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld x %lld", static_cast<long long>(rows), static_cast<long long>(cols));
    return buf;
}

KernelKey glu_key(int tile) {
    KernelKey k;
    k.kind = KernelKind::glu;
    k.design = kGluDesign;
    k.variant = kSwigluVariant;
    k.tile = TileShape{0, tile, 0};
    return k;
}

Invocation to_invocation(const GluInvocation & g) {
    Invocation inv;
    const DesignRead & d = glu_design();
    inv.key = glu_key(d.ok() ? rows_tile_for(d.design, d.design.families.front().first, g.p.cols) : 0);
    inv.params = g.p;
    const uint64_t row = static_cast<uint64_t>(g.p.cols) * sizeof(float);
    inv.add_operand({"a", g.a, row, g.p.rows, static_cast<uint64_t>(g.p.a_row_stride) * sizeof(float), Access::read});
    inv.add_operand({"b", g.b, row, g.p.rows, static_cast<uint64_t>(g.p.b_row_stride) * sizeof(float), Access::read});
    inv.add_operand({"y", g.y, row, g.p.rows, static_cast<uint64_t>(g.p.y_row_stride) * sizeof(float), Access::write});
    return inv;
}

GluInvocation glu_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::glu);
    GluInvocation g;
    g.p = std::get<GluParams>(inv.params);
    g.a = inv.operand("a")->slice;
    g.b = inv.operand("b")->slice;
    g.y = inv.operand("y")->slice;
    return g;
}

const DesignRead & glu_design() {
    return built_in_design(kGluDesign);
}

RowsShape glu_rows_shape(const GluParams & p) {
    GluInvocation i;
    i.p = p;
    RowsShape s;
    std::string err;
    if (!glu_design().ok() || !rows_shape_of(to_invocation(i), glu_design().design, s, err)) {
        s = RowsShape{};  // an empty shape: the stream builder refuses it
    }
    return s;
}

}  // namespace xdna
