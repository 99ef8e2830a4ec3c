#include "ops/hadamard/hadamard-invocation.h"

#include "runtime/design-registry.h"
#include "runtime/rows-sequence.h"

#include "ggml.h"

#include <cstdio>
#include <cstring>

namespace xdna {

std::string HadamardParams::shape_label(const TileShape &) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld x %lld%s", static_cast<long long>(rows), static_cast<long long>(n),
                  attention_output ? " (attention's output)" : "");
    return buf;
}

std::vector<std::pair<std::string, uint32_t>> HadamardParams::runtime_words() const {
    uint32_t bits = 0;
    std::memcpy(&bits, &scale, sizeof bits);
    return {{"scale", bits}};
}

const DesignRead & hadamard_design() {
    return built_in_design(kHadamardDesign);
}

KernelKey hadamard_key(int64_t n) {
    KernelKey k;
    k.kind = KernelKind::hadamard;
    k.design = kHadamardDesign;
    k.variant = kHadamardVariant;
    // A chunk is one row (core_rows 1), so the tile the rows movement takes for a row of n values is the
    // transform length itself when the design has an xclbin for it.
    const DesignRead & d = hadamard_design();
    const int tile = d.ok() ? rows_tile_for(d.design, d.design.families.front().first, n) : 0;
    k.tile = TileShape{0, tile == n ? tile : 0, 0};
    return k;
}

Invocation to_invocation(const HadamardInvocation & h) {
    Invocation inv;
    inv.key = hadamard_key(h.p.n);
    inv.params = h.p;
    const uint64_t row = static_cast<uint64_t>(h.p.n) * sizeof(float);
    inv.add_operand({"x", h.x, row, h.p.rows, static_cast<uint64_t>(h.p.x_row_stride) * sizeof(float), Access::read});
    inv.add_operand({"y", h.y, row, h.p.rows, static_cast<uint64_t>(h.p.y_row_stride) * sizeof(float), Access::write});
    return inv;
}

HadamardInvocation hadamard_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::hadamard);
    HadamardInvocation h;
    h.p = std::get<HadamardParams>(inv.params);
    h.x = inv.operand("x")->slice;
    h.y = inv.operand("y")->slice;
    return h;
}

}  // namespace xdna
