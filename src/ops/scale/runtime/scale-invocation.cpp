#include "ops/scale/scale-invocation.h"

#include "runtime/design-registry.h"
#include "runtime/rows-sequence.h"

#include "ggml.h"

#include <cstdio>
#include <cstring>

namespace xdna {

std::string ScaleParams::shape_label(const TileShape &) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld x %lld", static_cast<long long>(rows), static_cast<long long>(cols));
    return buf;
}

std::vector<std::pair<std::string, uint32_t>> ScaleParams::runtime_words() const {
    uint32_t sb = 0, bb = 0;
    std::memcpy(&sb, &s, sizeof sb);
    std::memcpy(&bb, &b, sizeof bb);
    return {{"s", sb}, {"b", bb}};
}

KernelKey scale_key(int tile) {
    KernelKey k;
    k.kind = KernelKind::scale;
    k.design = kScaleDesign;
    k.variant = kScaleVariant;
    k.tile = TileShape{0, tile, 0};
    return k;
}

const DesignRead & scale_design() {
    return built_in_design(kScaleDesign);
}

int scale_tile(int64_t cols) {
    const DesignRead & d = scale_design();
    return d.ok() ? rows_tile_for(d.design, d.design.families.front().first, cols) : 0;
}

Invocation to_invocation(const ScaleInvocation & s) {
    Invocation inv;
    inv.key = scale_key(scale_tile(s.p.cols));
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
