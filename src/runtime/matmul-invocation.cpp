#include "runtime/matmul-invocation.h"

#include "ggml.h"

#include <cstdio>

namespace xdna {

namespace {
// The matmul kernel's operand slots (its argument order in the manifest).
enum : uint8_t { kWeights, kActivations, kOut, kMatmulOperands };
}  // namespace

uint64_t MatmulParams::macs(const TileShape & tile) const {
    return static_cast<uint64_t>(m_tiles * tile.m) * (n_tiles * tile.n) * (k_tiles * tile.k);
}

std::string MatmulParams::shape_label(const TileShape & tile) const {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%6lld x %4lld x %5lld", static_cast<long long>(m), static_cast<long long>(n),
                  static_cast<long long>(k_tiles * tile.k));
    return buf;
}

KernelKey matmul_key(const MatmulContract & contract, const TileShape & tile) {
    return {KernelKind::matmul, kMatmulDesign, contract.name, tile};
}

Invocation to_invocation(const MatmulInvocation & m) {
    Invocation inv;
    inv.key = {KernelKind::matmul, kMatmulDesign, m.contract ? m.contract->name : nullptr, m.tile};
    inv.add_operand({"weights", m.weights, m.weight_bytes(), 1, m.weight_bytes(), Access::read});
    inv.add_operand({"activations", m.activations, m.activation_bytes(), 1, m.activation_bytes(), Access::read});
    inv.add_operand({"out", m.out, static_cast<uint64_t>(m.m) * sizeof(float), m.n,
                     static_cast<uint64_t>(m.out_row_stride) * sizeof(float), Access::write});
    inv.params = MatmulParams{m.contract, m.m, m.n, m.m_tiles, m.n_tiles, m.k_tiles,
                              m.weight_tile_bytes, m.act_tile_bytes, m.out_row_stride, m.expert};
    return inv;
}

MatmulInvocation matmul_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::matmul && inv.n_operands == kMatmulOperands);
    const MatmulParams & p = std::get<MatmulParams>(inv.params);
    MatmulInvocation m;
    m.contract = p.contract;
    m.tile = inv.key.tile;
    m.weights = inv.operand_slots[kWeights].slice;
    m.activations = inv.operand_slots[kActivations].slice;
    m.out = inv.operand_slots[kOut].slice;
    m.m = p.m;
    m.n = p.n;
    m.m_tiles = p.m_tiles;
    m.n_tiles = p.n_tiles;
    m.k_tiles = p.k_tiles;
    m.weight_tile_bytes = p.weight_tile_bytes;
    m.act_tile_bytes = p.act_tile_bytes;
    m.out_row_stride = p.out_row_stride;
    m.expert = p.expert;
    return m;
}

}  // namespace xdna
