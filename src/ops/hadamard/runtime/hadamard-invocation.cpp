#include "ops/hadamard/hadamard-invocation.h"

#include "ggml.h"

#include <cstdio>

namespace xdna {

std::string HadamardParams::shape_label(const TileShape &) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld x %lld%s", static_cast<long long>(rows), static_cast<long long>(n),
                  host == KernelKind::flash_attn ? " (attention's output)" : "");
    return buf;
}

KernelKey hadamard_key() {
    KernelKey k;
    k.kind = KernelKind::hadamard;
    k.design = kHadamardDesign;
    k.variant = kHadamardVariant;
    k.tile = TileShape{0, 0, 0};
    return k;
}

Invocation to_invocation(const HadamardInvocation & h) {
    Invocation inv;
    inv.key = hadamard_key();
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
