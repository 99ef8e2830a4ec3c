#include "ops/act_quant/act-quant-invocation.h"

#include "ggml.h"

#include <cstdio>

namespace xdna {

namespace {
constexpr int kTileK = 256;
}  // namespace

std::string ActQuantParams::shape_label(const TileShape &) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld x %lld", static_cast<long long>(n), static_cast<long long>(k));
    return buf;
}

bool act_quant_takes(const ActivationLayout & L) {
    const bool a8 = (L.format == ActFormat::a8_b32 || L.format == ActFormat::a8_b256) && (L.tile_n == 4 || L.tile_n == 32);
    const bool bfp16 = L.format == ActFormat::bfp16 && L.tile_n == 32;  // the K-quant and legacy prefill contracts (TK 256)
    return (a8 || bfp16) && L.tile_k == kTileK && L.k == L.k_pad && L.k % kTileK == 0;
}

KernelKey act_quant_key(const ActivationLayout & L) {
    static const char * const names[2][2] = {{"act_quant_a8_b32_n4", "act_quant_a8_b32_n32"},
                                             {"act_quant_a8_b256_n4", "act_quant_a8_b256_n32"}};
    KernelKey key;
    key.kind = KernelKind::act_quant;
    key.design = kActQuantDesign;
    key.variant = L.format == ActFormat::bfp16 ? "act_quant_bfp16_n32" : names[L.format == ActFormat::a8_b256 ? 1 : 0][L.tile_n == 32 ? 1 : 0];
    key.tile = TileShape{0, L.tile_n, kTileK};
    return key;
}

Invocation to_invocation(const ActQuantInvocation & a) {
    ActivationLayout L;
    L.format = a.p.bfp16 ? ActFormat::bfp16 : a.p.act_block == 256 ? ActFormat::a8_b256 : ActFormat::a8_b32;
    L.tile_n = a.p.tile_n;
    L.tile_k = kTileK;
    L.k = L.k_pad = a.p.k;
    Invocation inv;
    inv.key = act_quant_key(L);
    inv.params = a.p;
    const uint64_t row_bytes = static_cast<uint64_t>(a.p.k) * sizeof(float);
    inv.add_operand({"x", a.x, row_bytes, a.p.n, static_cast<uint64_t>(a.p.x_row_stride) * sizeof(float), Access::read});
    const uint64_t tile_bytes = a.p.tile_bytes * static_cast<uint64_t>(a.p.n_tiles * a.p.k_tiles);
    inv.add_operand({"tiles", a.tiles, tile_bytes, 1, tile_bytes, Access::write});
    return inv;
}

ActQuantInvocation act_quant_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::act_quant);
    ActQuantInvocation a;
    a.p = std::get<ActQuantParams>(inv.params);
    a.x = inv.operand("x")->slice;
    a.tiles = inv.operand("tiles")->slice;
    return a;
}

ActQuantInvocation act_quant_invocation(const ActivationLayout & L, BufferSlice x, int64_t x_row_stride, BufferSlice tiles) {
    ActQuantInvocation a;
    a.x = x;
    a.tiles = tiles;
    a.p.n = L.n;
    a.p.k = L.k;
    a.p.tile_n = L.tile_n;
    a.p.bfp16 = L.format == ActFormat::bfp16;
    a.p.act_block = a.p.bfp16 ? 0 : act_format_block(L.format);
    a.p.n_tiles = L.n_tiles;
    a.p.k_tiles = L.k_tiles;
    a.p.tile_bytes = L.tile_bytes;
    a.p.x_row_stride = x_row_stride;
    return a;
}

}  // namespace xdna
