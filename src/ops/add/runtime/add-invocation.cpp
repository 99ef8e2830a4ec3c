#include "ops/add/add-invocation.h"

#include "runtime/design-registry.h"

#include "ggml.h"

#include <cstdio>

namespace xdna {

std::string AddParams::shape_label(const TileShape &) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld x %lld%s", static_cast<long long>(rows), static_cast<long long>(cols),
                  b_row_stride == 0 && rows > 1 ? (multiply ? " * row" : " + row") : "");
    return buf;
}

KernelKey add_key(bool multiply, int tile) {
    KernelKey k;
    k.kind = KernelKind::add;
    k.design = kAddDesign;
    k.variant = multiply ? kMulVariant : kAddVariant;
    k.tile = TileShape{0, tile, 0};
    return k;
}

Invocation to_invocation(const AddInvocation & a) {
    Invocation inv;
    const DesignRead & d = add_design();
    inv.key = add_key(a.p.multiply, d.ok() ? rows_tile_for(d.design, d.design.families.front().first, a.p.cols) : 0);
    inv.params = a.p;
    const uint64_t row = static_cast<uint64_t>(a.p.cols) * sizeof(float);
    inv.add_operand({"a", a.a, row, a.p.rows, static_cast<uint64_t>(a.p.a_row_stride) * sizeof(float), Access::read});
    inv.add_operand({"b", a.b, row, a.p.b_row_stride == 0 ? 1 : a.p.rows, static_cast<uint64_t>(a.p.b_row_stride) * sizeof(float),
                     Access::read});
    inv.add_operand({"y", a.y, row, a.p.rows, static_cast<uint64_t>(a.p.y_row_stride) * sizeof(float), Access::write});
    return inv;
}

AddInvocation add_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::add);
    AddInvocation a;
    a.p = std::get<AddParams>(inv.params);
    a.a = inv.operand("a")->slice;
    a.b = inv.operand("b")->slice;
    a.y = inv.operand("y")->slice;
    return a;
}

const DesignRead & add_design() {
    return built_in_design(kAddDesign);
}

RowsShape add_rows_shape(const AddParams & p) {
    AddInvocation i;
    i.p = p;
    RowsShape s;
    std::string err;
    if (!add_design().ok() || !rows_shape_of(to_invocation(i), add_design().design, s, err)) {
        s = RowsShape{};  // an empty shape: the stream builder refuses it
    }
    return s;
}

}  // namespace xdna
