// The byte layout of every matmul tile the AIE2P core kernels consume: the ABI between the host (which
// packs weights once at load and quantizes activations per submission) and the core programs of
// aie/matmul/. Included by both sides: plain constexpr C++, no host headers, no aie_api.
//
// Why this shape (docs/kernels.md, "Contracts v2"):
//   - GGUF blocks (18, 34, 110, 210 bytes) cannot be split into fields by the DMA (4-byte units) or by
//     aligned 256/512-bit vector loads, and GGUF's nibble order is not the operand order of the mmul.
//     So a tile is a set of PLANES, each a separate 64-byte-aligned array: code planes in mmul operand
//     order, and one plane per block field (fp16 d, m, dmin; the GGUF's scale bytes kept verbatim).
//   - Nothing is re-quantized: every plane is a bit permutation of GGUF fields (4-bit code planes are
//     stored XOR 8, i.e. as the signed int4 `code - 8`, which is invertible), so get_tensor recovers
//     the GGUF bytes exactly, and a tile has exactly the bytes of its GGUF blocks (Q4_K: 4.5 bits).
//
// Weight tile: TM = 64 rows (output features) x TK values of K. Elements are ordered for the
// int8 x int4 4x16x16 mmul (B operand = 16 K x 16 rows, row-major), row groups of 16 outermost:
//     e(row, k) = ((row / 16) * (TK / 16) + k / 16) * 256 + (k % 16) * 16 + row % 16
// so one B operand is 256 consecutive elements and one row group's whole K run is contiguous.
// Float tiles use the 4x8x8 mmul's B operand (8 K x 8 rows):
//     e(row, k) = ((row / 8) * (TK / 8) + k / 8) * 64 + (k % 8) * 8 + row % 8
//
// Code planes pack elements LSB first: q4 = element e in nibble e % 2 of byte e / 2 (low nibble
// first), q2 = bits 2*(e % 4) of byte e / 4, h1 = bit e % 8 of byte e / 8, q8 = one byte each.
//
// Field planes hold one field per (row, block): [row / 16][block in tile][unit][row % 16] with units
// of `unit_bytes`, so the 16 rows of a row group are one contiguous 16-lane vector per unit.
// (fp16 scales: unit 2 bytes, units 1; Q4_K's 12 scale bytes: unit 1 byte, units 12.)
//
// Activation tile (quantized contracts): TN tokens x TK, three planes, each padded to 64 bytes:
//     codes  int8  [t / 4][k / 16][t % 4][k % 16]       (the A operand of the 4x16x16 mmul: 64 bytes)
//     scales fp32  [t / 4][k / ABLK][t % 4]              (ABLK = 32 or 256 values per scale)
//     sums   int16 [t / 4][k / 16][t % 4]                (exact sum of 16 codes)
// Activation tile (float contracts): values [t / 4][k / 8][t % 4][k % 8] (the 4x8x8 A operand).
// Output (C) tile: fp32 [TN][TM] row-major (token-major), accumulated over the K tiles.
//
// Whole operands: weights [mat][m_tile][k_tile][tile]; activations [n_tile][k_tile][tile].
#pragma once

#include <stdint.h>

namespace xdna_aie {

constexpr int kTileM = 64;    // weight rows per tile
constexpr int kRowGroup = 16; // rows per int4 B operand
constexpr int kKStep = 16;    // K per int4 B operand
constexpr int kTokGroup = 4;  // tokens per A operand
constexpr int kPlaneAlign = 64;

constexpr int align_up(int x, int a) { return (x + a - 1) / a * a; }

enum class PlaneKind : uint8_t { none, q4, q2, h1, q8, v16, v32, field };

// One plane of a weight tile.
struct Plane {
    PlaneKind kind;
    int       unit_bytes;  // field planes: bytes of one unit (2 for fp16, 1 for a scale byte)
    int       units;       // field planes: units per (row, block)
    int       gguf_offset; // field planes: byte offset of the field inside the GGUF block
};

constexpr int kMaxPlanes = 6;

// Tile format of one weight type. Blocks are the GGUF's (32 or 256 values).
struct WeightTileFormat {
    int   tile_k;
    int   block_values;      // values per GGUF block
    int   block_bytes;       // bytes per GGUF block
    int   act_block;         // activation values per fp32 scale (0: float contract)
    int   n_planes;
    Plane planes[kMaxPlanes];

    constexpr int blocks_per_row() const { return tile_k / block_values; }
    constexpr int elements() const { return kTileM * tile_k; }
    constexpr int plane_bytes(int i) const {
        const Plane & p = planes[i];
        switch (p.kind) {
            case PlaneKind::q4: return elements() / 2;
            case PlaneKind::q2: return elements() / 4;
            case PlaneKind::h1: return elements() / 8;
            case PlaneKind::q8: return elements();
            case PlaneKind::v16: return elements() * 2;
            case PlaneKind::v32: return elements() * 4;
            case PlaneKind::field: return kTileM * blocks_per_row() * p.units * p.unit_bytes;
            default: return 0;
        }
    }
    constexpr int plane_offset(int i) const {
        int off = 0;
        for (int j = 0; j < i; ++j) off += align_up(plane_bytes(j), kPlaneAlign);
        return off;
    }
    constexpr int tile_bytes() const { return plane_offset(n_planes); }
};

constexpr Plane field(int unit_bytes, int units, int gguf_offset) { return {PlaneKind::field, unit_bytes, units, gguf_offset}; }
constexpr Plane code(PlaneKind k) { return {k, 0, 0, 0}; }

// GGUF block layouts (ggml-common.h): field offsets below are into those blocks.
//   Q4_0 {d; qs[16]}            Q4_1 {d; m; qs[16]}        Q5_0 {d; qh[4]; qs[16]}
//   Q5_1 {d; m; qh[4]; qs[16]}  Q8_0 {d; qs[32] int8}
//   Q2_K {scales[16]; qs[64]; d; dmin}          Q3_K {hmask[32]; qs[64]; scales[12]; d}
//   Q4_K {d; dmin; scales[12]; qs[128]}         Q5_K {d; dmin; scales[12]; qh[32]; qs[128]}
//   Q6_K {ql[128]; qh[64]; scales[16] int8; d}
// Code planes hold each value's code: the low 4 bits in q4 (XOR 8), bits 4.. in h1/q2; for Q2_K/Q3_K
// the low 2 bits in q2 and Q3_K's hmask bit in h1. Q8_0's int8 codes in q8 verbatim.
namespace fmt {
constexpr WeightTileFormat q4_0 = {256, 32, 18, 32, 2, {code(PlaneKind::q4), field(2, 1, 0)}};
constexpr WeightTileFormat q4_1 = {256, 32, 20, 32, 3, {code(PlaneKind::q4), field(2, 1, 0), field(2, 1, 2)}};
constexpr WeightTileFormat q5_0 = {256, 32, 22, 32, 3, {code(PlaneKind::q4), code(PlaneKind::h1), field(2, 1, 0)}};
constexpr WeightTileFormat q5_1 = {256, 32, 24, 32, 4,
                                   {code(PlaneKind::q4), code(PlaneKind::h1), field(2, 1, 0), field(2, 1, 2)}};
constexpr WeightTileFormat q8_0 = {256, 32, 34, 32, 2, {code(PlaneKind::q8), field(2, 1, 0)}};
constexpr WeightTileFormat q2_K = {256, 256, 84, 256, 4,
                                   {code(PlaneKind::q2), field(1, 16, 0), field(2, 1, 80), field(2, 1, 82)}};
constexpr WeightTileFormat q3_K = {256, 256, 110, 256, 4,
                                   {code(PlaneKind::q2), code(PlaneKind::h1), field(1, 12, 96), field(2, 1, 108)}};
constexpr WeightTileFormat q4_K = {256, 256, 144, 256, 4,
                                   {code(PlaneKind::q4), field(1, 12, 4), field(2, 1, 0), field(2, 1, 2)}};
constexpr WeightTileFormat q5_K = {256, 256, 176, 256, 5,
                                   {code(PlaneKind::q4), code(PlaneKind::h1), field(1, 12, 4), field(2, 1, 0), field(2, 1, 2)}};
constexpr WeightTileFormat q6_K = {256, 256, 210, 256, 4,
                                   {code(PlaneKind::q4), code(PlaneKind::q2), field(1, 16, 192), field(2, 1, 208)}};
constexpr WeightTileFormat f16 = {128, 1, 2, 0, 1, {code(PlaneKind::v16)}};
constexpr WeightTileFormat bf16 = {128, 1, 2, 0, 1, {code(PlaneKind::v16)}};
constexpr WeightTileFormat f32 = {64, 1, 4, 0, 1, {code(PlaneKind::v32)}};
}  // namespace fmt

// Lossless: a quantized tile holds exactly its GGUF blocks' bytes.
static_assert(fmt::q4_0.tile_bytes() == 64 * 8 * 18, "Q4_0 tile");
static_assert(fmt::q4_1.tile_bytes() == 64 * 8 * 20, "Q4_1 tile");
static_assert(fmt::q5_0.tile_bytes() == 64 * 8 * 22, "Q5_0 tile");
static_assert(fmt::q5_1.tile_bytes() == 64 * 8 * 24, "Q5_1 tile");
static_assert(fmt::q8_0.tile_bytes() == 64 * 8 * 34, "Q8_0 tile");
static_assert(fmt::q2_K.tile_bytes() == 64 * 84, "Q2_K tile");
static_assert(fmt::q3_K.tile_bytes() == 64 * 110, "Q3_K tile");
static_assert(fmt::q4_K.tile_bytes() == 64 * 144, "Q4_K tile");
static_assert(fmt::q5_K.tile_bytes() == 64 * 176, "Q5_K tile");
static_assert(fmt::q6_K.tile_bytes() == 64 * 210, "Q6_K tile");
static_assert(fmt::f16.tile_bytes() == 64 * 128 * 2, "F16 tile");
static_assert(fmt::f32.tile_bytes() == 64 * 64 * 4, "F32 tile");

// Element index of (row, k) in a quantized weight tile (int4 B-operand order).
constexpr int q_element(int tile_k, int row, int k) {
    return ((row / kRowGroup) * (tile_k / kKStep) + k / kKStep) * 256 + (k % kKStep) * kRowGroup + row % kRowGroup;
}
// Element index of (row, k) in a float weight tile (4x8x8 B-operand order).
constexpr int f_element(int tile_k, int row, int k) {
    return ((row / 8) * (tile_k / 8) + k / 8) * 64 + (k % 8) * 8 + row % 8;
}
// Byte offset, inside a field plane, of unit `u` of (row, block).
constexpr int field_offset(const WeightTileFormat & f, const Plane & p, int row, int block, int u) {
    return ((((row / kRowGroup) * f.blocks_per_row() + block) * p.units + u) * kRowGroup + row % kRowGroup) * p.unit_bytes;
}

// Activation tile of a quantized contract, TN tokens x TK.
struct ActTileFormat {
    int tile_n, tile_k, act_block;
    constexpr int codes_bytes() const { return align_up(tile_n * tile_k, kPlaneAlign); }
    constexpr int scales_bytes() const { return align_up(tile_n * (tile_k / act_block) * 4, kPlaneAlign); }
    constexpr int sums_bytes() const { return align_up(tile_n * (tile_k / 16) * 2, kPlaneAlign); }
    constexpr int codes_offset() const { return 0; }
    constexpr int scales_offset() const { return codes_bytes(); }
    constexpr int sums_offset() const { return codes_bytes() + scales_bytes(); }
    constexpr int tile_bytes() const { return codes_bytes() + scales_bytes() + sums_bytes(); }
    // Index of code (t, k) in the codes plane; of the scale of (t, block) and the sum of (t, k / 16).
    constexpr int code_index(int t, int k) const {
        return ((t / kTokGroup) * (tile_k / kKStep) + k / kKStep) * 64 + (t % kTokGroup) * kKStep + k % kKStep;
    }
    constexpr int scale_index(int t, int block) const { return ((t / kTokGroup) * (tile_k / act_block) + block) * kTokGroup + t % kTokGroup; }
    constexpr int sum_index(int t, int k16) const { return ((t / kTokGroup) * (tile_k / 16) + k16) * kTokGroup + t % kTokGroup; }
};

// Activation tile of a float contract: `value_bytes` 2 (F16, BF16) or 4 (F32).
struct FloatActTileFormat {
    int tile_n, tile_k, value_bytes;
    constexpr int tile_bytes() const { return align_up(tile_n * tile_k * value_bytes, kPlaneAlign); }
    constexpr int value_index(int t, int k) const {
        return ((t / kTokGroup) * (tile_k / 8) + k / 8) * 32 + (t % kTokGroup) * 8 + k % 8;
    }
};

// Activation tile of a bfp16 prefill contract (docs/kernels.md, "Prefill contracts v3"): TN tokens x TK
// as bfp16ebs8 blocks of 8 consecutive K values of one token, 9 bytes each (the exponent byte, then the
// eight int8 mantissas: aie_api's block memory layout), indexed [k / 8][t / 8][t % 8]. The 8 blocks of
// one A operand of the 8x8x8 bfp16 mmul (tokens 8g..8g+7 of K block kb) are 72 contiguous bytes, and a
// kernel that walks K blocks outside and token groups inside reads the tile front to back.
// After the blocks, one flag byte per token: nonzero when that token's TK values in this tile hold a NaN
// or an infinity, which a bfp16 block cannot carry (its exponent field 255 is an ordinary exponent).
// The kernel sets a flagged token's outputs to NaN, as an IEEE product with such a value would make
// them; the blocks of a flagged token are whatever the conversion gave.
constexpr int kBfp16Block = 8;       // values per block
constexpr int kBfp16BlockBytes = 9;  // exponent + 8 mantissas
constexpr int kBfp16TokGroup = 8;    // tokens (A rows) per 8x8x8 operand
struct BlockActTileFormat {
    int tile_n, tile_k;
    constexpr int blocks() const { return tile_n * (tile_k / kBfp16Block); }
    constexpr int flags_offset() const { return blocks() * kBfp16BlockBytes; }  // a multiple of 64 for TK % 64 == 0
    constexpr int tile_bytes() const { return align_up(flags_offset() + tile_n, kPlaneAlign); }
    // Block index of token t, K block kb (value k = 8 kb + i is lane i of that block).
    constexpr int block_index(int t, int kb) const { return (kb * (tile_n / kBfp16TokGroup) + t / kBfp16TokGroup) * kBfp16TokGroup + t % kBfp16TokGroup; }
    constexpr int block_offset(int t, int kb) const { return block_index(t, kb) * kBfp16BlockBytes; }
};
static_assert(BlockActTileFormat{32, 256}.tile_bytes() == 32 * 32 * 9 + 64, "bfp16 activation tile, TN 32: blocks, flags");
static_assert(BlockActTileFormat{32, 64}.flags_offset() % kPlaneAlign == 0, "the flags are one aligned 32-byte load");

}  // namespace xdna_aie
