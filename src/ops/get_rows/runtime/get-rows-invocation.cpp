#include "ops/get_rows/get-rows-invocation.h"

#include "runtime/design-registry.h"
#include "runtime/rows-sequence.h"

#include "ggml.h"

#include <cstdio>

namespace xdna {

std::string GetRowsParams::shape_label(const TileShape &) const {
    char buf[80];
    std::snprintf(buf, sizeof buf, "%lld of %lld x %lld", static_cast<long long>(n_ids), static_cast<long long>(src_rows),
                  static_cast<long long>(cols));
    return buf;
}

KernelKey get_rows_key(int tile) {
    KernelKey k;
    k.kind = KernelKind::get_rows;
    k.design = kGetRowsDesign;
    k.variant = kGetRowsVariant;
    k.tile = TileShape{0, tile, 0};
    return k;
}

const DesignRead & get_rows_design() {
    return built_in_design(kGetRowsDesign);
}

int get_rows_tile(int64_t cols) {
    const DesignRead & d = get_rows_design();
    return d.ok() ? rows_tile_for(d.design, d.design.families.front().first, cols) : 0;
}

Invocation to_invocation(const GetRowsInvocation & g) {
    Invocation inv;
    inv.key = get_rows_key(get_rows_tile(g.p.cols));
    inv.params = g.p;
    const uint64_t row = static_cast<uint64_t>(g.p.cols) * sizeof(float);
    inv.add_operand({"src", g.src, row, g.p.src_rows, static_cast<uint64_t>(g.p.src_row_stride) * sizeof(float), Access::read,
                     g.p.n_ids});
    // Read by the host at submission (the stream's BD addresses), never by a DMA.
    const uint64_t id_bytes = static_cast<uint64_t>(g.p.n_ids) * sizeof(int32_t);
    inv.add_operand({"ids", g.ids, id_bytes, 1, id_bytes, Access::read});
    inv.add_operand({"y", g.y, row, g.p.n_ids, static_cast<uint64_t>(g.p.y_row_stride) * sizeof(float), Access::write});
    return inv;
}

GetRowsInvocation get_rows_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::get_rows);
    GetRowsInvocation g;
    g.p = std::get<GetRowsParams>(inv.params);
    g.src = inv.operand("src")->slice;
    g.ids = inv.operand("ids")->slice;
    g.y = inv.operand("y")->slice;
    return g;
}

}  // namespace xdna
