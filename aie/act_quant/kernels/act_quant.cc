// Activation quantization on the core: fp32 activations -> the a8 activation tile the integer matmul
// contracts read (docs/kernels.md, "Activations"; aie/include/xdna_aie/matmul_tiles.h ActTileFormat),
// the bfp16 tile of the prefill contracts v3 (BlockActTileFormat) or the F16/BF16/F32 tile of the float
// contracts (FloatActTileFormat; both below), so that a matmul can take the output of an earlier NPU
// stage without a trip to the host.
//
// One call quantizes one group of 4 tokens (kTokGroup: one A operand of the int8 x int4 mmul) of a
// tile of TN tokens x 256 K values: x holds the 4 tokens' 256 values each, one after the other. Per
// token and block of AB (32 or 256) values, as the core computes it:
//   amax  = the largest |x| bit pattern of the block (an integer max: NaN's patterns sort above inf's);
//   s     = amax / 127 and id = 127 / amax, scalar fp32 divisions (Peano lowers them to compiler-rt's
//           __divsf3, IEEE round to nearest even: the host's division); s = NaN for a NaN or infinite
//           block, id = 0 for an all-zero block or one whose 127 / amax overflows;
//   code  = clamp(rint(x (x) id), -127, 127): (x) the core's fp32 multiply (Peano's `safe` emulation,
//           split in the reset mode, floor), rint by adding and subtracting 1.5 * 2^23 in the fp32
//           accumulators (round to nearest even), the clamp and the int8 conversion exact;
//   sum   = the exact sum of every 16 codes, int16.
// The host's quantizer (src/contracts/tile-codec.cpp) multiplies with a correctly rounded product: the
// two can differ by one code where x * id lies within an ulp of a half-integer.
#include <aie_api/aie.hpp>
#include <stdint.h>
#include <string.h>

#include "xdna_aie/half_bits.h"
#include "xdna_aie/loop-hints.h"
#include "xdna_aie/matmul_tiles.h"

namespace {

constexpr int kTK = 256;
constexpr int kGroup = xdna_aie::kTokGroup;
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23

// Tokens < kGroup: x holds that many tokens' values and the group's other tokens are zeros, written as
// their codes, scales and sums would be (all 0): the codes plane is cleared with the other two (a call
// takes the tile's only group, group 0, at TN 4). A decoded token's norm calls it on its row alone
// (aie/rms_norm: the quantizing programs), so neither the padding tokens' values nor their work exist.
template <int AB, int TN, int Tokens = kGroup>
void quantize_group(const float * __restrict x, uint8_t * __restrict tile, int32_t group) {
    static_assert(Tokens == kGroup || TN == kGroup, "a group of fewer tokens is the tile's only group");
    constexpr xdna_aie::ActTileFormat f{TN, kTK, AB};
    auto * codes = reinterpret_cast<int8_t *>(tile + f.codes_offset());
    auto * scales = reinterpret_cast<float *>(tile + f.scales_offset());
    auto * sums = reinterpret_cast<int16_t *>(tile + f.sums_offset());
    if (group == 0) {
        // The scale and sum planes' alignment padding (kPlaneAlign) is part of the tile the core sends
        // out: both planes are cleared whole (aligned stores), then filled group by group. The codes
        // plane (TN x 256 bytes) has no padding.
        static_assert(TN * kTK % xdna_aie::kPlaneAlign == 0, "codes plane without padding");
        const aie::vector<uint8_t, 64> z = aie::zeros<uint8_t, 64>();
        for (int i = 0; i < f.scales_bytes() + f.sums_bytes(); i += 64) aie::store_v(tile + f.scales_offset() + i, z);
        if constexpr (Tokens < kGroup) {
            for (int i = 0; i < f.codes_bytes(); i += 64) aie::store_v(tile + f.codes_offset() + i, z);
        }
    }
    for (int tg = 0; tg < Tokens; ++tg) {
        const int t = group * kGroup + tg;
        const float * xt = x + tg * kTK;
        for (int b = 0; b < kTK / AB; ++b) {
            const float * xb = xt + b * AB;
            // The block's largest |x| as bits.
            aie::vector<int32_t, 16> m = aie::zeros<int32_t, 16>();
            for (int i = 0; i < AB; i += 16) {
                m = aie::max(m, aie::vector_cast<int32_t>(aie::abs(aie::load_v<16>(xb + i))));
            }
            const int32_t amax_bits = aie::reduce_max(m);
            const bool finite = amax_bits < 0x7F800000;
            float amax;
            const int32_t used = finite ? amax_bits : 0;
            memcpy(&amax, &used, 4);
            float id = amax > 0.0f ? 127.0f / amax : 0.0f;
            if (!(id < 3.4028235e38f)) id = 0.0f;  // 127 / amax overflowed: every value quantizes to 0
            const uint32_t nan_bits = 0x7FC00000u;
            float nan;
            memcpy(&nan, &nan_bits, 4);
            scales[f.scale_index(t, b)] = finite ? amax / 127.0f : nan;
            for (int k = 0; k < AB; k += 32) {
                const aie::vector<float, 32> v = aie::mul(aie::load_v<32>(xb + k), id).template to_vector<float>();
                aie::vector<float, 32> r = aie::sub(aie::add(v, kRoundMagic), kRoundMagic);
                r = aie::min(aie::max(r, -127.0f), 127.0f);
                r = aie::select(r, 0.0f, aie::neq(r, r));  // a NaN or infinite x (id 0): code 0, as the host
                const aie::vector<int8_t, 32> c = aie::to_fixed<int8_t>(r, 0);
                for (int h = 0; h < 2; ++h) {
                    const int kk = b * AB + k + 16 * h;
                    const aie::vector<int8_t, 16> c16 = c.template extract<16>(h);
                    aie::store_v(codes + f.code_index(t, kk), c16);
                    sums[f.sum_index(t, kk / 16)] = static_cast<int16_t>(aie::reduce_add(aie::unpack(c16)));
                }
            }
        }
    }
}

// ---- bfp16 (prefill contracts v3) ----------------------------------------------------------------
// fp32 activations -> the bfp16 activation tile (BlockActTileFormat, TN 32 or 64 x TK): one call takes one
// group of 8 tokens (one A operand of the 8x8x8 bfp16 mmul), x holding their TK values each, one after
// the other. Per K block kb, the 8 tokens' 8 values become one 64-lane accumulator and
// to_vector<bfp16ebs8> in conv_even makes the eight blocks (the exponent the largest of each token's 8,
// mantissas rounded to nearest even: aie_api detail/aie2p/accum.hpp, the conversion the host encoder
// src/contracts/bfp16-codec.h reproduces), stored as the 72 bytes of that operand. Per token one flag
// byte: 1 when its TK values hold a NaN or an infinity (the largest |x| bit pattern reaches the
// exponent field 255), which a block cannot carry; the matmul kernels make that token's outputs NaN.
// The tile is the host encoder's, byte for byte, flags and padding included: call 0 clears the flags'
// 64-byte plane first.
// TK is the prefill contract's K tile: 256 (K-quants, Q2_K/Q3_K, legacy types), 128 (F16, BF16), 64 (F32);
// at TN 64 (Q4_K, Q5_K) 128, one K half of the 256-K tile: the matmul takes A in K halves
// (contracts/matmul-contract.h act_k_parts), each half a tile of its own.
constexpr int kBfp16Group = xdna_aie::kBfp16TokGroup;

template <int TK, int TN> void quantize_group_bfp16(const float * __restrict x, uint8_t * __restrict tile, int32_t group) {
    constexpr xdna_aie::BlockActTileFormat f{TN, TK};
    static_assert(f.tile_bytes() - f.flags_offset() == 64, "the flags and their padding are one aligned store");
    const aie::rounding_mode entry = aie::swap_rounding(aie::rounding_mode::conv_even);
    if (group == 0) aie::store_v(tile + f.flags_offset(), aie::zeros<uint8_t, 64>());
    // The group's operand of K block kb is 72 bytes at block_offset(8 group, kb); consecutive kb are the
    // tile's 4 groups' operands apart: one store stream, moved past the other groups after each push.
    aie::block_vector_output_buffer_stream<bfp16ebs8, 64> os(reinterpret_cast<bfp16ebs8 *>(tile + f.block_offset(group * kBfp16Group, 0)));
    for (int kb = 0; kb < TK / xdna_aie::kBfp16Block; ++kb) {
        const float * xk = x + kb * xdna_aie::kBfp16Block;
        const aie::vector<float, 64> v = aie::concat(aie::load_v<8>(xk), aie::load_v<8>(xk + TK), aie::load_v<8>(xk + 2 * TK),
                                                     aie::load_v<8>(xk + 3 * TK), aie::load_v<8>(xk + 4 * TK),
                                                     aie::load_v<8>(xk + 5 * TK), aie::load_v<8>(xk + 6 * TK),
                                                     aie::load_v<8>(xk + 7 * TK));
        os.push(aie::accum<accfloat, 64>(v).to_vector<bfp16ebs8>());
        os.seek(TN / kBfp16Group - 1);
    }
    for (int tg = 0; tg < kBfp16Group; ++tg) {
        aie::vector<int32_t, 16> m = aie::zeros<int32_t, 16>();
        for (int i = 0; i < TK; i += 16) m = aie::max(m, aie::vector_cast<int32_t>(aie::abs(aie::load_v<16>(x + tg * TK + i))));
        tile[f.flags_offset() + group * kBfp16Group + tg] = aie::reduce_max(m) >= 0x7F800000 ? 1 : 0;
    }
    aie::set_rounding(entry);
}

// ---- F16 / BF16 / F32 (the float contracts mm_f16_f16, mm_bf16_bf16, mm_f32_f32) -----------------
// fp32 activations -> FloatActTileFormat (TN 4 or 32 tokens x TK, TK 128 for F16/BF16, 64 for F32): one
// call takes one group of 4 tokens (kTokGroup), x holding their TK values each; per 8 values of K the 4
// tokens' 8 values are 32 consecutive values of the tile ([token][8]). F16 and BF16 are ggml's
// conversions bit for bit by integer arithmetic (xdna_aie/half_bits.h: F16 round to nearest even with
// NaN to 0x7E00; BF16 round to nearest even with a NaN's top bits kept and made quiet); F32 is a copy.
enum class FloatTile { f16, bf16, f32 };

template <FloatTile F, int TK> void quantize_group_float(const float * __restrict x, uint8_t * __restrict tile, int32_t group) {
    constexpr int kChunks = TK / 8;
    for (int kc = 0; kc < kChunks; ++kc) {
        const float * xk = x + kc * 8;
        const aie::vector<float, 32> v = aie::concat(aie::load_v<8>(xk), aie::load_v<8>(xk + TK), aie::load_v<8>(xk + 2 * TK),
                                                     aie::load_v<8>(xk + 3 * TK));
        const int first = (group * kChunks + kc) * 32;  // the chunk's first value in the tile
        if constexpr (F == FloatTile::f32) {
            aie::store_v(reinterpret_cast<float *>(tile) + first, v);
        } else if constexpr (F == FloatTile::f16) {
            aie::store_v(reinterpret_cast<int32_t *>(tile) + first / 2,
                         xdna_aie::halves_as_words(v, [](const aie::vector<int32_t, 16> & b) { return xdna_aie::half_magnitude(b); }));
        } else {
            aie::store_v(reinterpret_cast<int32_t *>(tile) + first / 2,
                         xdna_aie::halves_as_words(v, [](const aie::vector<int32_t, 16> & b) { return xdna_aie::bf16_magnitude(b); }));
        }
    }
}

}  // namespace

extern "C" {
void act_quant_a8_b32_n4(const float * x, uint8_t * tile, int32_t group) { quantize_group<32, 4>(x, tile, group); }
void act_quant_a8_b32_n32(const float * x, uint8_t * tile, int32_t group) { quantize_group<32, 32>(x, tile, group); }
void act_quant_a8_b256_n4(const float * x, uint8_t * tile, int32_t group) { quantize_group<256, 4>(x, tile, group); }
void act_quant_a8_b256_n32(const float * x, uint8_t * tile, int32_t group) { quantize_group<256, 32>(x, tile, group); }
// One token's 256 values into a tile of 4 tokens whose other three are zeros (group 0 only).
void act_quant_a8_b32_n4_row(const float * x, uint8_t * tile, int32_t group) { quantize_group<32, 4, 1>(x, tile, group); }
void act_quant_a8_b256_n4_row(const float * x, uint8_t * tile, int32_t group) { quantize_group<256, 4, 1>(x, tile, group); }
void act_quant_bfp16_n32(const float * x, uint8_t * tile, int32_t group) { quantize_group_bfp16<256, 32>(x, tile, group); }
void act_quant_bfp16_k128_n32(const float * x, uint8_t * tile, int32_t group) { quantize_group_bfp16<128, 32>(x, tile, group); }
void act_quant_bfp16_k64_n32(const float * x, uint8_t * tile, int32_t group) { quantize_group_bfp16<64, 32>(x, tile, group); }
void act_quant_bfp16_k128_n64(const float * x, uint8_t * tile, int32_t group) { quantize_group_bfp16<128, 64>(x, tile, group); }
void act_quant_f16_n4(const float * x, uint8_t * tile, int32_t group) { quantize_group_float<FloatTile::f16, 128>(x, tile, group); }
void act_quant_f16_n32(const float * x, uint8_t * tile, int32_t group) { quantize_group_float<FloatTile::f16, 128>(x, tile, group); }
void act_quant_bf16_n4(const float * x, uint8_t * tile, int32_t group) { quantize_group_float<FloatTile::bf16, 128>(x, tile, group); }
void act_quant_bf16_n32(const float * x, uint8_t * tile, int32_t group) { quantize_group_float<FloatTile::bf16, 128>(x, tile, group); }
void act_quant_f32_n4(const float * x, uint8_t * tile, int32_t group) { quantize_group_float<FloatTile::f32, 64>(x, tile, group); }
void act_quant_f32_n32(const float * x, uint8_t * tile, int32_t group) { quantize_group_float<FloatTile::f32, 64>(x, tile, group); }
}
