#include "ops/rms_norm/rms-norm-invocation.h"

#include "runtime/design-registry.h"
#include "runtime/rows-sequence.h"
#include "xdna_aie/matmul_tiles.h"

#include "ggml.h"

#include <cstdio>
#include <cstring>

namespace xdna {

std::string RmsNormParams::shape_label(const TileShape &) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld x %lld%s%s", static_cast<long long>(rows), static_cast<long long>(cols),
                  with_weight ? " x w" : "", quant_block != 0 ? " -> a8" : "");
    return buf;
}

std::vector<std::pair<std::string, uint32_t>> RmsNormParams::runtime_words() const {
    uint32_t inv = 0, e = 0;
    std::memcpy(&inv, &inv_cols, sizeof inv);
    std::memcpy(&e, &eps, sizeof e);
    return {{"inv_cols", inv}, {"eps", e}};
}

const DesignRead & rms_norm_design() {
    return built_in_design(kRmsNormDesign);
}

int rms_norm_tile(int64_t cols) {
    const DesignRead & d = rms_norm_design();
    return d.ok() && !d.design.families.empty() ? rows_tile_for(d.design, d.design.families.front().first, cols) : 0;
}

KernelKey rms_norm_key(bool with_weight, int64_t cols, int quant_block) {
    KernelKey k;
    k.kind = KernelKind::rms_norm;
    k.design = kRmsNormDesign;
    k.variant = with_weight ? kRmsNormMulVariant : kRmsNormVariant;
    if (with_weight && quant_block == 32) k.variant = kRmsNormMulQuantB32Variant;
    if (with_weight && quant_block == 256) k.variant = kRmsNormMulQuantB256Variant;
    k.tile = TileShape{0, rms_norm_tile(cols), 0};
    return k;
}

const char * rms_norm_quant_program(const KernelKey & key) {
    if (key.kind != KernelKind::rms_norm || key.variant == nullptr) return nullptr;
    if (std::strcmp(key.variant, kRmsNormMulQuantB32Variant) == 0) return "act_quant_a8_b32_n4_row";
    if (std::strcmp(key.variant, kRmsNormMulQuantB256Variant) == 0) return "act_quant_a8_b256_n4_row";
    return nullptr;
}

bool rms_norm_fuse_quant(RmsNormInvocation & r, int block, BufferSlice tiles) {
    if (!r.p.with_weight || r.p.rows != 1 || r.p.cols % kRmsNormQuantTileK != 0 || (block != 32 && block != 256)) {
        return false;
    }
    r.p.quant_block = block;
    r.p.quant_tile_n = kRmsNormQuantTileN;
    r.p.quant_tile_bytes = xdna_aie::ActTileFormat{kRmsNormQuantTileN, kRmsNormQuantTileK, block}.tile_bytes();
    r.tiles = tiles;
    return true;
}

bool rms_norm_fuse_quant(RmsNormInvocation & r, const ActivationLayout & L, BufferSlice tiles) {
    const bool a8 = L.format == ActFormat::a8_b32 || L.format == ActFormat::a8_b256;
    return a8 && L.tile_n == kRmsNormQuantTileN && L.tile_k == kRmsNormQuantTileK && L.k_parts == 1 && L.n == 1 &&
           L.n_tiles == 1 && L.k == L.k_pad && L.k_pad == r.p.cols && rms_norm_fuse_quant(r, act_format_block(L.format), tiles);
}

Invocation to_invocation(const RmsNormInvocation & r) {
    Invocation inv;
    inv.key = rms_norm_key(r.p.with_weight, r.p.cols, r.p.quant_block);
    inv.params = r.p;
    const uint64_t row_bytes = static_cast<uint64_t>(r.p.cols) * sizeof(float);
    inv.add_operand({"x", r.x, row_bytes, r.p.rows, static_cast<uint64_t>(r.p.x_row_stride) * sizeof(float), Access::read});
    if (r.p.with_weight) {
        const int64_t w_rows = r.p.w_row_stride == 0 ? 1 : r.p.rows;
        inv.add_operand({"weight", r.weight, row_bytes, w_rows, static_cast<uint64_t>(r.p.w_row_stride) * sizeof(float),
                         Access::read});
    }
    inv.add_operand({"y", r.y, row_bytes, r.p.rows, static_cast<uint64_t>(r.p.y_row_stride) * sizeof(float), Access::write});
    if (r.p.quant_block != 0) {
        const uint64_t tiles_bytes = r.p.quant_tile_bytes * static_cast<uint64_t>(r.p.cols / kRmsNormQuantTileK);
        inv.add_operand({"tiles", r.tiles, tiles_bytes, 1, tiles_bytes, Access::write});
    }
    return inv;
}

RmsNormInvocation rms_norm_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::rms_norm);
    RmsNormInvocation r;
    r.p = std::get<RmsNormParams>(inv.params);
    r.x = inv.operand("x")->slice;
    if (const Operand * w = inv.operand("weight")) {
        r.weight = w->slice;
    }
    r.y = inv.operand("y")->slice;
    if (const Operand * t = inv.operand("tiles")) {
        r.tiles = t->slice;
    }
    return r;
}

}  // namespace xdna
