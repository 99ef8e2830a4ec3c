#include "ops/act_quant/act-quant-invocation.h"

#include "ggml.h"

#include <cstdio>

namespace xdna {

namespace {

// The core program's entry points by activation format, token tile and K tile (aie/act_quant/kernels).
struct Entry {
    ActFormat    format;
    int          tile_n, tile_k;
    const char * name;
};
constexpr Entry kEntries[] = {
    {ActFormat::a8_b32, 4, 256, "act_quant_a8_b32_n4"},       {ActFormat::a8_b32, 32, 256, "act_quant_a8_b32_n32"},
    {ActFormat::a8_b256, 4, 256, "act_quant_a8_b256_n4"},     {ActFormat::a8_b256, 32, 256, "act_quant_a8_b256_n32"},
    {ActFormat::bfp16, 32, 256, "act_quant_bfp16_n32"},       {ActFormat::bfp16, 32, 128, "act_quant_bfp16_k128_n32"},
    {ActFormat::bfp16, 32, 64, "act_quant_bfp16_k64_n32"},    {ActFormat::bfp16, 64, 128, "act_quant_bfp16_k128_n64"},
    {ActFormat::f16, 4, 128, "act_quant_f16_n4"},
    {ActFormat::f16, 32, 128, "act_quant_f16_n32"},           {ActFormat::bf16, 4, 128, "act_quant_bf16_n4"},
    {ActFormat::bf16, 32, 128, "act_quant_bf16_n32"},         {ActFormat::f32, 4, 64, "act_quant_f32_n4"},
    {ActFormat::f32, 32, 64, "act_quant_f32_n32"},
};

const Entry * entry_for(ActFormat format, int tile_n, int tile_k) {
    for (const Entry & e : kEntries) {
        if (e.format == format && e.tile_n == tile_n && e.tile_k == tile_k) return &e;
    }
    return nullptr;
}

}  // namespace

std::string ActQuantParams::shape_label(const TileShape &) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld x %lld", static_cast<long long>(n), static_cast<long long>(k));
    return buf;
}

bool act_quant_takes(const ActivationLayout & L) {
    return entry_for(L.format, L.tile_n, L.tile_k) != nullptr && L.k == L.k_pad && L.k % L.tile_k == 0;
}

KernelKey act_quant_key(const ActivationLayout & L) {
    const Entry * e = entry_for(L.format, L.tile_n, L.tile_k);
    KernelKey key;
    key.kind = KernelKind::act_quant;
    key.design = kActQuantDesign;
    key.variant = e != nullptr ? e->name : nullptr;
    key.tile = TileShape{0, L.tile_n, L.tile_k};
    return key;
}

Invocation to_invocation(const ActQuantInvocation & a) {
    ActivationLayout L;
    L.format = a.p.format;
    L.tile_n = a.p.tile_n;
    L.tile_k = a.p.tile_k;
    L.k = L.k_pad = a.p.k;
    Invocation inv;
    inv.key = act_quant_key(L);
    inv.params = a.p;
    const uint64_t row_bytes = static_cast<uint64_t>(a.p.k) * sizeof(float);
    inv.add_operand({"x", a.x, row_bytes, a.p.n, static_cast<uint64_t>(a.p.x_row_stride) * sizeof(float), Access::read});
    const uint64_t tile_bytes = a.p.tile_bytes * static_cast<uint64_t>(a.p.n_tiles * a.p.k_tiles);
    inv.add_operand({"tiles", a.tiles, tile_bytes, 1, tile_bytes, Access::write});
    if (a.zeros.buffer != nullptr) {
        inv.add_operand({"zeros", a.zeros, kActQuantZeroBytes, 1, kActQuantZeroBytes, Access::read});
    }
    return inv;
}

ActQuantInvocation act_quant_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::act_quant);
    ActQuantInvocation a;
    a.p = std::get<ActQuantParams>(inv.params);
    a.x = inv.operand("x")->slice;
    a.tiles = inv.operand("tiles")->slice;
    if (const Operand * z = inv.operand("zeros")) {
        a.zeros = z->slice;
    }
    return a;
}

ActQuantInvocation act_quant_invocation(const ActivationLayout & L, BufferSlice x, int64_t x_row_stride, BufferSlice tiles,
                                        BufferSlice zeros) {
    ActQuantInvocation a;
    a.x = x;
    a.tiles = tiles;
    a.zeros = zeros;
    a.p.n = L.n;
    a.p.k = L.k;
    a.p.tile_n = L.tile_n;
    a.p.format = L.format;
    a.p.tile_k = L.tile_k;
    a.p.act_block = act_format_block(L.format);
    a.p.n_tiles = L.n_tiles;
    a.p.k_tiles = L.k_tiles;
    a.p.tile_bytes = L.tile_bytes;
    a.p.x_row_stride = x_row_stride;
    return a;
}

}  // namespace xdna
