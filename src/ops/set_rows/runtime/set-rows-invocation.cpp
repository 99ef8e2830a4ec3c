#include "ops/set_rows/set-rows-invocation.h"

#include "runtime/design-registry.h"
#include "runtime/rows-sequence.h"

#include "ggml.h"

#include <cstdio>

namespace xdna {

std::string SetRowsParams::shape_label(const TileShape &) const {
    char buf[80];
    if (identity) {
        std::snprintf(buf, sizeof buf, "%lld x %lld", static_cast<long long>(rows), static_cast<long long>(cols));
    } else {
        std::snprintf(buf, sizeof buf, "%lld x %lld into %lld", static_cast<long long>(rows), static_cast<long long>(cols),
                      static_cast<long long>(y_rows));
    }
    return buf;
}

KernelKey set_rows_key(bool y_q8_0, int tile) {
    KernelKey k;
    k.kind = KernelKind::set_rows;
    k.design = kSetRowsDesign;
    k.variant = y_q8_0 ? kSetRowsQ8Variant : kSetRowsF16Variant;
    k.tile = TileShape{0, tile, 0};
    return k;
}

const DesignRead & set_rows_design() {
    return built_in_design(kSetRowsDesign);
}

int set_rows_tile(int64_t cols) {
    // Both families have xclbins at the same tiles; a row is the same chunks in either format.
    const DesignRead & d = set_rows_design();
    return d.ok() ? rows_tile_for(d.design, kSetRowsF16Family, cols) : 0;
}

Invocation to_invocation(const SetRowsInvocation & s) {
    Invocation inv;
    inv.key = set_rows_key(s.p.y_q8_0, set_rows_tile(s.p.cols));
    inv.params = s.p;
    inv.add_operand({"x", s.x, static_cast<uint64_t>(s.p.cols) * sizeof(float), s.p.rows,
                     static_cast<uint64_t>(s.p.x_row_stride) * sizeof(float), Access::read});
    if (!s.p.identity) {
        const uint64_t id_bytes = static_cast<uint64_t>(s.p.rows) * (s.p.ids_64 ? 8 : 4);
        inv.add_operand({"ids", s.ids, id_bytes, 1, id_bytes, Access::read});
    }
    inv.add_operand({"y", s.y, static_cast<uint64_t>(s.p.y_row_bytes()), s.p.y_rows, static_cast<uint64_t>(s.p.y_stride_bytes()),
                     Access::write, s.p.rows});
    return inv;
}

SetRowsInvocation set_rows_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::set_rows);
    SetRowsInvocation s;
    s.p = std::get<SetRowsParams>(inv.params);
    s.x = inv.operand("x")->slice;
    if (const Operand * ids = inv.operand("ids")) s.ids = ids->slice;
    s.y = inv.operand("y")->slice;
    return s;
}

}  // namespace xdna
