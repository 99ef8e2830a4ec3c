// Q2_K and Q3_K weights x bfp16 activations on the native bfp16 matrix unit (prefill contracts v3:
// mm_q2_K_bfp16 / mm_q3_K_bfp16, tile 64 x 32 x 256). One core program for the two types, as
// mm_kquant_low.cc; the structure is mm_kquant_bfp16.cc's (whose Q6_K path has the same 16 sub-blocks
// of 16 values), with the Q2_K / Q3_K planes of aie/include/xdna_aie/matmul_tiles.h.
//
// The numerics are defined in docs/kernels.md, "Prefill contracts v3", "Q2_K and Q3_K"; this file
// computes exactly that. Per call the weight tile (the GGUF's own bits) is dequantized ONCE into
// bfp16ebs8 blocks and each block serves all 32 tokens of the activation tile through
// aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8> (512 MACs per instruction). No per-output fp32 epilogue.
//
// ---- Dequantization, per row group of 16 rows --------------------------------------------------
// 1. Fields (floor mode: the nibble and bit-pair extraction shifts right): Q2_K sc_j = scales[j] & 15,
//    m_j = scales[j] >> 4; Q3_K the 6-bit scale of ggml's dequantize_row_q3_K minus 32 (-32..31),
//    m_j = 0; fp32 d (and dmin) from the fp16 fields, exactly (kquant_fields.h).
// 2. Per (sub-block, row), 64 lanes [j][r] at a time (conv_even from here): d = d_hi + d_lo and
//    dmin = dm_hi + dm_lo as bf16 parts (exact), s = d_hi * sc + d_lo * sc (two bf16 products into
//    fp32: exact, at most 11 + 6 bits), s_hi = bf16(s), s_lo = bf16(s - s_hi); m as bf16 (exact).
//    Per sub-block and row half, in [row][k] lanes: o = ((s_hi nb + s_lo nb) - dm_hi m) - dm_lo m
//    (Q3_K: no m terms), nb = -128 (Q2_K) or -132 (Q3_K: the value is code - 4 = x - 132).
// 3. Per 16-K step: the codes as bytes b in the plane's [k][row] order. Q2_K: the q2 plane unpacked as
//    uint4 holds elements 2i (bits 0-1) and 2i+1 (bits 2-3) in byte i; bits 0-1 by a mask, bits 2-3 by
//    a 16-bit upshift of 6 that puts them at bits 8-9 and the odd bytes of that (no right shift: this
//    step runs in conv_even, where a downshift would round). Q3_K: the same low bits, OR 4 where the
//    h1 (hmask) bit is set (select masks, lane = bit). Two 8 x 16 transposes give the [row][k] order
//    of four 8x8 B^T operands; b | 0x4300 as 16 bits is the bf16 value 128 + b; acc = o + x * s_hi,
//    acc += x * s_lo (bf16 MACs into fp32), acc -> bfp16ebs8 (to_v64bfp16ebs8, conv_even) into the
//    scratch stream of its row half, K blocks in order.
// 4. Per row half: C (4 token groups of 8) into 4 fp32 accumulators, then for each of the 32 K blocks
//    one B^T pop and 4 A pops with 4 mmul macs; C stored back (zero.cc clears it per output tile).
//
// ---- Loop order --------------------------------------------------------------------------------
// Row group (4) outermost: fields (floor), parameters (conv_even), the 16 sub-blocks of one 16-K step
// each (the software-pipelined loop), then the two row halves' mmul loops (32 K blocks each,
// pipelined). The caller's rounding mode is restored on return.
//
// ---- Data memory budget (64 KB per core), TN = 32 ---------------------------------------------
//   W tile, double-buffered, largest type Q3_K   2 x  7040 = 14080 B
//   A tile (bfp16 blocks + flags), double-buffered  2 x 9280 = 18560 B
//   C tile fp32 32 x 64, single buffer                         8192 B
//   stack: dequantized row group (2 halves x 32 blocks x 72 B) 4608 B
//   stack: row fields LowFields (sc, m 2 x 512, d, dmin 128)   1152 B
//   stack: row parameters (s_hi, s_lo, m 3 x 512, dmin parts 64) 1600 B
//   stack: call frames, spills (estimate)                      1024 B   (stack in all 8384 B)
//   total (+ 16 B of RTP words)                               49232 B = 48.1 KB of 64 KB
//
// ---- Program memory estimate (16 KB) -----------------------------------------------------------
// At about 12 bytes per VLIW bundle (not a compiler figure): per type the dequantization body (one
// 16-K step: code expansion ~10 (Q2_K) / ~14 (Q3_K) instructions, 2 transposes, 8 MACs, 4
// conversions, 4 stores: ~1 KB unrolled), parameter set-up (~0.4 KB), field decoding (~0.3 KB) and
// the mmul loop (~0.5 KB): ~2.2 KB per type, 4.5 KB for two; fp16 widening and entry points: about
// 5.5 KB of 16 KB.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/matmul_tiles.h"

#include "bfp16_dequant.h"
#include "bfp16_mmul.h"

#include "kquant_fields.h"

namespace {

constexpr int TN = 32;
constexpr int kTokGroups = TN / kBfp16TokGroup;  // 4 A operands per K block
constexpr int kKBlocks = kTK / kBfp16Block;      // 32 K blocks per tile
constexpr int kHalf = 8;                         // rows per B^T operand
constexpr int kSubs = 16;                        // sub-blocks of 16 values = K steps

using Blocks = aie::block_vector<bfp16ebs8, 64>;
using BMul = aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8, accfloat>;
using FAcc = aie::accum<accfloat, 64>;
using BF64 = aie::vector<bfloat16, 64>;
using bfp16_dequant::HalvesOverK;
using bfp16_dequant::rows_over_k;

template <bool Q3> struct Lq {
    static constexpr WeightTileFormat f = Q3 ? fmt::q3_K : fmt::q2_K;
    static constexpr int pQ2 = 0, pH1 = Q3 ? 1 : -1, pScales = Q3 ? 2 : 1, pD = Q3 ? 3 : 2, pDmin = Q3 ? -1 : 3;
    static constexpr bool kMin = !Q3;
    static constexpr float nb = Q3 ? -132.0f : -128.0f;
};

// A row group's decoded fields, row in lane.
struct alignas(64) LowFields {
    int16_t sc[kSubs][16];  // [sub-block][row]
    int16_t m[kSubs][16];   // Q2_K only
    float d[16];
    float dmin[16];
};

struct alignas(64) LowParams {
    bfloat16 s_hi[kSubs][16];
    bfloat16 s_lo[kSubs][16];
    bfloat16 m[kSubs][16];
    bfloat16 dm_hi[16], dm_lo[16];
};

// Step 1 of the header (floor mode).
template <bool Q3> KQ_NOINLINE void decode_low_fields(const uint8_t * __restrict w, int rg, LowFields & lf) {
    using L = Lq<Q3>;
    constexpr const WeightTileFormat & f = L::f;
    const uint8_t * s = w + f.plane_offset(L::pScales) + field_offset(f, f.planes[L::pScales], rg * kRowGroup, 0, 0);
    if constexpr (Q3) {
        // Units 0..7 ([u][row]) give the low nibbles of sub-blocks 0..7 and the high nibbles of 8..15;
        // unit 8 + (j % 4) bit pair (j / 4) gives bits 4-5.
        const aie::vector<uint8_t, 128> a = aie::load_v<128>(s);
        const aie::vector<uint8_t, 64> h = aie::load_v<64>(s + 128);
        const aie::vector<uint8_t, 128> hb0 =
            aie::concat(aie::bit_and(uint8_t(3), h), aie::bit_and(uint8_t(3), aie::downshift(h, 2)));
        const aie::vector<uint8_t, 128> hb1 =
            aie::concat(aie::bit_and(uint8_t(3), aie::downshift(h, 4)), aie::downshift(h, 6));
        const aie::vector<uint8_t, 128> s0 = aie::bit_or(aie::bit_and(uint8_t(15), a), aie::upshift(hb0, 4));
        const aie::vector<uint8_t, 128> s1 = aie::bit_or(aie::downshift(a, 4), aie::upshift(hb1, 4));
        const aie::vector<int16_t, 64> k32 = aie::broadcast<int16_t, 64>(32);
        aie::store_v(&lf.sc[0][0], aie::sub(aie::vector_cast<int16_t>(aie::unpack(s0.extract<64>(0))), k32));
        aie::store_v(&lf.sc[4][0], aie::sub(aie::vector_cast<int16_t>(aie::unpack(s0.extract<64>(1))), k32));
        aie::store_v(&lf.sc[8][0], aie::sub(aie::vector_cast<int16_t>(aie::unpack(s1.extract<64>(0))), k32));
        aie::store_v(&lf.sc[12][0], aie::sub(aie::vector_cast<int16_t>(aie::unpack(s1.extract<64>(1))), k32));
    } else {
        for (int q = 0; q < 4; ++q) {
            const aie::vector<uint8_t, 64> b = aie::load_v<64>(s + 64 * q);
            aie::store_v(&lf.sc[4 * q][0], aie::vector_cast<int16_t>(aie::unpack(aie::bit_and(uint8_t(15), b))));
            aie::store_v(&lf.m[4 * q][0], aie::vector_cast<int16_t>(aie::unpack(aie::downshift(b, 4))));
        }
        aie::store_v(lf.dmin, fp16x16_to_float(w + f.plane_offset(L::pDmin) + field_offset(f, f.planes[L::pDmin], rg * kRowGroup, 0, 0)));
    }
    aie::store_v(lf.d, fp16x16_to_float(w + f.plane_offset(L::pD) + field_offset(f, f.planes[L::pD], rg * kRowGroup, 0, 0)));
}

// d (or dmin) for 4 sub-blocks x 16 rows as exact bf16 parts.
inline void split_bf16(const float * d16, BF64 & hi, BF64 & lo) {
    const aie::vector<float, 16> d = aie::load_v<16>(d16);
    const FAcc acc(aie::concat(d, d, d, d));
    hi = acc.to_vector<bfloat16>();
    lo = aie::msc(acc, hi, aie::broadcast<bfloat16, 64>(bfloat16(1.0f))).to_vector<bfloat16>();
}

// Step 2 of the header for one row group (conv_even).
template <bool Q3> KQ_NOINLINE void low_params(const LowFields & lf, LowParams & lp) {
    BF64 d_hi, d_lo;
    split_bf16(lf.d, d_hi, d_lo);
    if constexpr (!Q3) {
        BF64 dm_hi, dm_lo;
        split_bf16(lf.dmin, dm_hi, dm_lo);
        aie::store_v(lp.dm_hi, dm_hi.extract<16>(0));
        aie::store_v(lp.dm_lo, dm_lo.extract<16>(0));
    }
    const BF64 one = aie::broadcast<bfloat16, 64>(bfloat16(1.0f));
    for (int j4 = 0; j4 < kSubs; j4 += 4) {  // 4 sub-blocks x 16 rows = 64 lanes
        const BF64 sc = aie::to_float<bfloat16>(aie::load_v<64>(&lf.sc[j4][0]));
        FAcc s = aie::mul(d_hi, sc);
        s = aie::mac(s, d_lo, sc);
        const BF64 s_hi = s.to_vector<bfloat16>();
        const BF64 s_lo = aie::msc(s, s_hi, one).to_vector<bfloat16>();
        aie::store_v(&lp.s_hi[j4][0], s_hi);
        aie::store_v(&lp.s_lo[j4][0], s_lo);
        if constexpr (!Q3) aie::store_v(&lp.m[j4][0], aie::to_float<bfloat16>(aie::load_v<64>(&lf.m[j4][0])));
    }
}

// The unsigned codes b of one 16-K step of a row group, [k][row] (the plane order), 256 bytes.
template <bool Q3> inline aie::vector<uint8_t, 256> low_step_codes(const uint8_t * __restrict w, int blk) {
    using L = Lq<Q3>;
    // q2 plane, 64 bytes per step; unpacked as uint4 byte i holds elements 2i (bits 0-1), 2i+1 (bits 2-3).
    const aie::vector<uint8_t, 128> y = aie::unpack(aie::vector_cast<uint4>(aie::load_v<64>(w + L::f.plane_offset(L::pQ2) + blk * 64)));
    const aie::vector<uint8_t, 128> ev = aie::bit_and(uint8_t(3), y);
    aie::vector<uint8_t, 128> od;
    for (int h = 0; h < 2; ++h) {
        // Bits 2-3 of each byte to bits 8-9 of its 16-bit lane: the high byte is the odd element.
        const aie::vector<uint16_t, 64> u = aie::upshift(aie::unpack(y.extract<64>(h)), 6);
        od.insert(h, aie::filter_odd(aie::vector_cast<uint8_t>(u), 1));
    }
    const aie::vector<uint8_t, 256> lo = aie::concat(aie::interleave_zip(ev, od, 1));
    if constexpr (!Q3) {
        return lo;
    } else {
        // h1 plane: bit e of the step's 256 bits is element e's hmask bit (select masks, lane = bit).
        const uint32_t * wd = reinterpret_cast<const uint32_t *>(w + L::f.plane_offset(L::pH1) + blk * 32);
        const aie::vector<uint8_t, 64> zero = aie::zeros<uint8_t, 64>();
        const aie::vector<uint8_t, 64> four = aie::broadcast<uint8_t, 64>(4);
        const aie::vector<uint8_t, 256> hb =
            aie::concat(aie::select(zero, four, aie::mask<64>::from_uint32(wd[0], wd[1])),
                        aie::select(zero, four, aie::mask<64>::from_uint32(wd[2], wd[3])),
                        aie::select(zero, four, aie::mask<64>::from_uint32(wd[4], wd[5])),
                        aie::select(zero, four, aie::mask<64>::from_uint32(wd[6], wd[7])));
        return aie::bit_or(lo, hb);
    }
}

// Step 3 of the header: the row group's 32 K blocks x 2 row halves into `out` ([half][kb] blocks).
template <bool Q3> KQ_NOINLINE void dequantize_low_row_group(const uint8_t * __restrict w, int rg, const LowParams & lp,
                                                             uint8_t * __restrict out) {
    using L = Lq<Q3>;
    aie::block_vector_output_buffer_stream<bfp16ebs8, 64> half_out[2] = {
        aie::block_vector_output_buffer_stream<bfp16ebs8, 64>(reinterpret_cast<bfp16ebs8 *>(out)),
        aie::block_vector_output_buffer_stream<bfp16ebs8, 64>(reinterpret_cast<bfp16ebs8 *>(out + kKBlocks * Blocks::memory_bytes()))};
    const BF64 nb = aie::broadcast<bfloat16, 64>(bfloat16(L::nb));
    HalvesOverK<bfloat16> dm_hi, dm_lo;
    if constexpr (L::kMin) {
        dm_hi = rows_over_k(aie::load_v<16>(lp.dm_hi));
        dm_lo = rows_over_k(aie::load_v<16>(lp.dm_lo));
    }
    AIE_PREPARE_FOR_PIPELINING
    for (int j = 0; j < kSubs; ++j) {
        const HalvesOverK<bfloat16> s_hi = rows_over_k(aie::load_v<16>(&lp.s_hi[j][0]));
        const HalvesOverK<bfloat16> s_lo = rows_over_k(aie::load_v<16>(&lp.s_lo[j][0]));
        HalvesOverK<bfloat16> m;
        if constexpr (L::kMin) m = rows_over_k(aie::load_v<16>(&lp.m[j][0]));
        FAcc o[2];
        for (int h = 0; h < 2; ++h) {
            o[h] = aie::mul(s_hi.h[h], nb);
            o[h] = aie::mac(o[h], s_lo.h[h], nb);
            if constexpr (L::kMin) {
                o[h] = aie::msc(o[h], dm_hi.h[h], m.h[h]);
                o[h] = aie::msc(o[h], dm_lo.h[h], m.h[h]);
            }
        }
        const aie::vector<uint8_t, 256> b = low_step_codes<Q3>(w, rg * kKSteps + j);
        for (int kh = 0; kh < 2; ++kh) {
            // [k8][half][r8] -> [half][r8][k8]: an 8 x 16 transpose.
            const aie::vector<uint8_t, 128> t = aie::transpose(b.extract<128>(kh), 8, 16);
            for (int h = 0; h < 2; ++h) {
                const BF64 x = bfp16_dequant::codes_as_bf16(t.extract<64>(h));
                FAcc acc = aie::mac(o[h], x, s_hi.h[h]);
                acc = aie::mac(acc, x, s_lo.h[h]);
                half_out[h].push(acc.to_vector<bfp16ebs8>());
            }
        }
    }
}


template <bool Q3> void mm_kquant_low_bfp16(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    alignas(64) uint8_t deq[2 * kKBlocks * 72];  // one row group, both halves (on the stack: budget above)
    LowFields lf;
    LowParams lp;
    const aie::rounding_mode entry = aie::get_rounding();  // restored on return (the caller's mode)
    for (int rg = 0; rg < kRowGroups; ++rg) {
        aie::set_rounding(aie::rounding_mode::floor);
        decode_low_fields<Q3>(w, rg, lf);
        aie::set_rounding(aie::rounding_mode::conv_even);
        low_params<Q3>(lf, lp);
        dequantize_low_row_group<Q3>(w, rg, lp, deq);
        for (int h = 0; h < 2; ++h) bfp16_mmul::bfp16_multiply_rows8<kKBlocks>(deq + h * kKBlocks * Blocks::memory_bytes(), a, c, rg * kRowGroup + h * kHalf);
    }
    bfp16_mmul::nan_flagged_tokens<kTK>(a, c);
    aie::set_rounding(entry);
}

}  // namespace

extern "C" {
void mm_q2_K_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_kquant_low_bfp16<false>(w, a, c); }
void mm_q3_K_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_kquant_low_bfp16<true>(w, a, c); }
}
