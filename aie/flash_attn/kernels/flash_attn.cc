// FLASH_ATTN_EXT with an F16 KV cache, the attention of every llama.cpp layer under `-fa on|auto`:
//     out[r] = sum_j softmax_j(scale * q[r].k[j] + slope[r] * mask[r][j]) v[j]
// over the KV rows j, as an online softmax (Milakov and Gimelshein; FlashAttention): a core keeps, for
// each of its query rows, the running maximum m, the running sum s of e^(score - m) and the unnormalised
// output o, and takes the K/V rows a block of 32 at a time (aie/flash_attn/README.md).
//
// Numerics as the core computes them:
// - K, V and the mask arrive as F16 and are widened to fp32 exactly with integer operations (the core
//   has no f16 arithmetic): normal values by rebasing the exponent field, subnormals as their integer
//   significand times 2^-24 (an exact int -> float conversion), Inf and NaN kept. The bfp16 program
//   builds its finite K and V values into an fp32 accumulator from three bf16 parts (widen_finite).
// - q.k: the fp32 products of aie_api's float multiply-accumulate (Peano's `safe` emulation), 32 lanes
//   of the head dim at a time into an fp32 accumulator, then the 32 lanes summed by reduce_add's
//   halving tree; times `scale` (one safe product), plus slope * mask (one safe product, one add; the
//   product skipped for slope 1, and a -inf mask kept -inf, since the safe product of an infinity is NaN).
// - e^x = 2^(x log2 e) by xdna_aie/fp32_exp.h for x >= -87; below (and for -inf, a masked position) 0.
// - The running maximum, the comparisons and s * ms + sum are scalar fp32 code (Peano: compiler-rt's
//   soft-float, IEEE round to nearest even, what the host computes); the rescale of o by ms and the
//   accumulation o += p[j] * v[j] are safe products into fp32 accumulators, one rounding per step.
// - A row whose every score so far is -inf keeps m = -inf, s = 0, o = 0: fa_finish writes zeros, as
//   ggml's CPU backend does (S == 0 -> 0). A NaN score makes the row NaN.
// The kernel does no division but fa_finish's 1/s per row (scalar, compiler-rt's __divsf3).
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/flash_attn_softmax.h"
#include "xdna_aie/flash_attn_tiles.h"
#include "xdna_aie/fp32_exp.h"
#include "xdna_aie/loop-hints.h"

namespace {

using namespace xdna_aie::fa;

// ---- The bfp16 products (fa_prepare_q_bfp16, fa_block_f16_bfp16) -----------------------------------
// A value x of an operand becomes two bfp16ebs8 operands, x = hi + lo + err: hi = bfp16(x), lo =
// bfp16(x - hi) (x - hi is exact in fp32), each in conv_even. A bfp16 block carries 8-bit two's
// complement mantissas under the largest exponent of its 8 values, so |x - hi| <= 2^-7 of the block's
// largest magnitude and |err| <= 2^-7 of the largest residual: about 2^-14 of the block's largest
// magnitude. p.v is taken as p_hi.v_hi + p_hi.v_lo + p_lo.v_hi (three 8x8x8 bfp16 mmul instructions,
// 512 MACs each, into fp32 accumulators; p_lo.v_lo, about 2^-14 of the rest, left out). The scores
// split q and k in three (hi, mid, lo: about 2^-21) and take the six products of order up to 2^-14
// (hh, hm, mh, hl, lh, mm): an error of 2^-14 of a block in q.k would be 2^-14 of scores that reach
// +-50 and more in random-weight models, 0.3 % of a weight (measured: the MoE demo model's decode KLD
// against fp32 attention 0.0106 with two parts, 0.0073 with three, 0.0059 with fp32 products).

using Blocks = aie::block_vector<bfp16ebs8, 64>;
using BMul = aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8, accfloat>;
using FAcc = aie::accum<accfloat, 64>;
using v64f = aie::vector<float, 64>;
using v64u16 = aie::vector<uint16_t, 64>;
constexpr int kOp = 8;  // rows, columns and depth of one bfp16 mmul

struct Split {
    Blocks hi, lo;
};
Split split_bfp16(const FAcc & a) {
    Split s;
    s.hi = a.template to_vector<bfp16ebs8>();
    s.lo = aie::sub(a, FAcc(s.hi)).template to_vector<bfp16ebs8>();
    return s;
}
Split split_bfp16(const v64f & x) { return split_bfp16(FAcc(x)); }
// Three parts (hi + mid + lo, about 2^-21 of the block's largest magnitude) for the scores' operands:
// hi, then the residual split in two.
struct Split3 {
    Blocks hi, mid, lo;
};
Split3 split3_bfp16(const FAcc & a) {
    const Blocks hi = a.template to_vector<bfp16ebs8>();
    const Split rest = split_bfp16(aie::sub(a, FAcc(hi)));
    return {hi, rest.hi, rest.lo};
}
Split3 split3_bfp16(const v64f & x) { return split3_bfp16(FAcc(x)); }

// 8 rows of 8 F16 values, `stride` values apart, as one 64-value vector (row-major).
v64u16 load_8x8(const uint16_t * p, int32_t stride) {
    return aie::concat(aie::load_v<8>(p), aie::load_v<8>(p + stride), aie::load_v<8>(p + 2 * stride), aie::load_v<8>(p + 3 * stride),
                       aie::load_v<8>(p + 4 * stride), aie::load_v<8>(p + 5 * stride), aie::load_v<8>(p + 6 * stride),
                       aie::load_v<8>(p + 7 * stride));
}

// 64 finite F16 values (the bfp16 program takes no block with an Inf or a NaN: any_nonfinite) into an fp32
// accumulator, exactly, by integer operations on 16-bit lanes and three bf16 multiplies by 1 (f16_to_f32
// per 32 lanes and the accumulator move cost about twice the moves). With s, e, m the sign, exponent
// field and significand field, a normal value x = (-1)^s 2^(e-15) (1 + m/1024) is A + C - D:
//   A = (-1)^s 2^(e-15) (1 + (m >> 3)/128)   the exponent field rebased and the top 7 bits of m,
//   C = (-1)^s 2^(e-18) (1 + (m & 7)/128)    the low 3 bits of m, at the bottom of a bf16 mantissa,
//   D = (-1)^s 2^(e-18)                       C's leading one, taken back;
// each a bf16 value. A subnormal or zero (e = 0: x = m 2^-24) is made e = 1 with the leading one set,
// and its D is 2^-17 + 2^-14, which takes that one back too. The products by 1 are exact, and so is each
// fp32 add (A + C has at most 12 significant bits, x at most 11). The shift by 3 runs on a multiple of 8
// (aie_api shifts go through an accumulator and round in the current mode: conv_even here).
// `one`: 64 bf16 ones, broadcast once per block by the caller.
struct HalfParts {
    aie::vector<bfloat16, 64> a, c, d;  // x = a + c - d
};
HalfParts half_parts(const v64u16 & h) {
    const v64u16 em = aie::bit_and(uint16_t(0x7fff), h);
    const v64u16 sign = aie::bit_and(uint16_t(0x8000), h);
    const auto small = aie::lt(em, uint16_t(0x400));                                  // subnormal or zero
    const v64u16 en = aie::select(em, aie::bit_or(uint16_t(0x400), em), small);       // exponent field >= 1
    const v64u16 t = aie::downshift(aie::bit_and(uint16_t(0x7ff8), en), 3);           // e << 7 | m >> 3
    const v64u16 a = aie::bit_or(aie::add(t, uint16_t(112 << 7)), sign);               // 2^(e-15) (1 + (m>>3)/128)
    const v64u16 lead = aie::add(aie::bit_and(uint16_t(0x7f80), t), uint16_t(109 << 7));  // 2^(e-18)
    const v64u16 c = aie::bit_or(aie::bit_or(lead, aie::bit_and(uint16_t(7), en)), sign);
    const v64u16 dd = aie::bit_or(aie::select(lead, uint16_t(0x3890), small), sign);  // 0x3890: 2^-14 (1 + 1/8)
    return {aie::vector_cast<bfloat16>(a), aie::vector_cast<bfloat16>(c), aie::vector_cast<bfloat16>(dd)};
}
FAcc widen_finite(const v64u16 & h, const aie::vector<bfloat16, 64> & one) {
    const HalfParts x = half_parts(h);
    return aie::msc(aie::mac(aie::mul(x.a, one), x.c, one), x.d, one);
}

// ---- Q8_0 K/V rows (fa_block_q8_0, fa_block_q8_0_bfp16) ----------------------------------------------
// A row of d values is d / 32 ggml blocks of 34 bytes (block_q8_0: an F16 scale, then 32 int8 codes;
// value = scale * code), the rows fa_q8_0_row_bytes(d) apart: a block's codes sit at 2 bytes past a
// multiple of 2, so they are read with unaligned loads.
constexpr int kQ8Bytes = 34;
const int8_t * q8_codes(const uint8_t * row, int32_t block) { return reinterpret_cast<const int8_t *>(row + block * kQ8Bytes + 2); }
uint16_t q8_scale(const uint8_t * row, int32_t block) { return *reinterpret_cast<const uint16_t *>(row + block * kQ8Bytes); }  // fp32 program

// 64 values scale * code into an fp32 accumulator, exactly: the codes are bf16 exactly (8 bits), the F16
// scales (one per lane) split as half_parts does (a + c - d, each bf16), and the three products by bf16
// parts are exact (16 bits) as are their sums (code * scale has at most 19 significant bits). Finite
// scales only (the caller checks). An int8 code of -128 is exact too.
// `s`: the half_parts of the lanes' scales.
FAcc widen_q8_0(const aie::vector<int8_t, 64> & codes, const HalfParts & s) {
    const aie::vector<bfloat16, 64> c = aie::to_float<bfloat16>(codes);
    return aie::msc(aie::mac(aie::mul(c, s.a), c, s.c), c, s.d);
}

// The codes of Q8_0 block b of 8 rows (`rows`, `stride` bytes apart) as the four 8 x 8 tiles of its
// 8-code groups (tile s: lane 8m + n = row m's code 8s + n): one unaligned 32-code load per row (a
// block's codes start 2 bytes past a word: two loads and a shift), then two rounds of interleave_unzip on
// 8-byte chunks, which turn rows x groups into groups x rows.
struct CodeTiles {
    aie::vector<int8_t, 64> t[4];
};
CodeTiles load_code_tiles(const uint8_t * rows, int32_t stride, int32_t b) {
    aie::vector<int8_t, 64> pair[4];  // rows 2k and 2k + 1
    for (int32_t k = 0; k < 4; ++k) {
        pair[k] = aie::concat(aie::load_unaligned_v<32>(q8_codes(rows + 2 * k * stride, b), 2),
                              aie::load_unaligned_v<32>(q8_codes(rows + (2 * k + 1) * stride, b), 2));
    }
    const auto [e01, o01] = aie::interleave_unzip(pair[0], pair[1], 8);  // groups 0, 2 / 1, 3 of rows 0-3
    const auto [e23, o23] = aie::interleave_unzip(pair[2], pair[3], 8);  // of rows 4-7
    const auto [t0, t2] = aie::interleave_unzip(e01, e23, 8);
    const auto [t1, t3] = aie::interleave_unzip(o01, o23, 8);
    return {{t0, t1, t2, t3}};
}


// The 64 lanes of a C tile (8 query rows x 8 columns) to `rows_left` rows of `dst`, `stride` floats apart.
void store_rows(const v64f & c, float * dst, int32_t stride, int32_t rows_left) {
    for (int32_t m = 0; m < kOp && m < rows_left; ++m) aie::store_v(dst + m * stride, c.extract<8>(m));
}
// 8 rows of 8 floats (`stride` apart; rows from `rows_left` on read as zeros) as one C tile.
v64f load_rows(const float * src, int32_t stride, int32_t rows_left) {
    aie::vector<float, 8> r[kOp];
    for (int32_t m = 0; m < kOp; ++m) r[m] = m < rows_left ? aie::load_v<8>(src + m * stride) : aie::zeros<float, 8>();
    return aie::concat(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
}

// Whether any of the first n rows of d F16 values (row after row) is an infinity or a NaN: the bfp16
// conversion does not keep them (an all-ones exponent field is an ordinary largest exponent there), so
// such a block takes the fp32 program, which propagates them as the CPU backend does.
// ceil(n d / 64) trips, at least 1 and no more promised: the calls go as low as one KV row of d = 32
// or 64 (a block of one row: n_kv % 32 == 1) and the Q8_0 program's scales of d = 64 (2 x 32 values).
bool any_nonfinite(const uint16_t * p, int32_t n, int32_t d) {
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
    for (int32_t i = 0; i < n * d; i += 64) {
        if (!aie::ge(aie::bit_and(uint16_t(0x7c00), aie::load_v<64>(p + i)), uint16_t(0x7c00)).empty()) return true;
    }
    return false;
}

// Lane i of a transposed V tile holds KV row i % 8 of its block of 8.
alignas(64) const int16_t kRowOfLane[64] = {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7,
                                            0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7};

using QStream = aie::block_vector_input_buffer_stream<bfp16ebs8, 64>;

// The scores' six products of one K tile (split in three) into each 8 query rows' accumulator, the query
// operands popped in fa_prepare_q_bfp16's order.
void mac_scores(BMul * c, QStream & qs, const Split3 & kt, int32_t groups) {
    for (int32_t rg = 0; rg < groups; ++rg) {
        const Blocks qh = qs.pop(), qm = qs.pop(), ql = qs.pop();
        c[rg].mac(qh, aie::op_transpose(kt.hi));
        c[rg].mac(qh, aie::op_transpose(kt.mid));
        c[rg].mac(qm, aie::op_transpose(kt.hi));
        c[rg].mac(qh, aie::op_transpose(kt.lo));
        c[rg].mac(ql, aie::op_transpose(kt.hi));
        c[rg].mac(qm, aie::op_transpose(kt.mid));
    }
}

// The score tiles of K rows 8 ng .. 8 ng + 7 into `scores` (32 per query row).
void store_scores(BMul * c, float * scores, int32_t ng, int32_t rows, int32_t groups) {
    for (int32_t rg = 0; rg < groups; ++rg) {
        store_rows(c[rg].template to_vector<float>(), scores + rg * kOp * kBlock + ng * kOp, kBlock, rows - rg * kOp);
    }
}

// o += p v, the bfp16 programs' values step: the weights p split in two once; then per 8 of the head dim
// (ng) `begin(ng)`, the o tiles loaded into accumulators, for each 8 V rows (jb) the B^T operand
// `v_tile(ng, jb)` (block n = head-dim column n over the 8 V rows, split in two) taken three times, the
// tiles stored back.
template <typename Begin, typename VTile>
void accumulate_values(const float * scores, float * state, int32_t rows, int32_t d, int32_t kv_groups, Begin && begin, VTile && v_tile) {
    const int32_t groups = (rows + kOp - 1) / kOp;
    Split p[2][kBlock / kOp];
    for (int32_t rg = 0; rg < groups; ++rg) {
        for (int32_t jb = 0; jb < kv_groups; ++jb) p[rg][jb] = split_bfp16(load_rows(scores + rg * kOp * kBlock + jb * kOp, kBlock, rows - rg * kOp));
    }
    for (int32_t ng = 0; ng < d / kOp; ++ng) {
        begin(ng);
        BMul c[2];
        for (int32_t rg = 0; rg < groups; ++rg) c[rg] = BMul(FAcc(load_rows(outputs(state, d, rg * kOp) + ng * kOp, d, rows - rg * kOp)));
        AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
        for (int32_t jb = 0; jb < kv_groups; ++jb) {
            const Split vt = v_tile(ng, jb);
            for (int32_t rg = 0; rg < groups; ++rg) {
                c[rg].mac(p[rg][jb].hi, aie::op_transpose(vt.hi));
                c[rg].mac(p[rg][jb].hi, aie::op_transpose(vt.lo));
                c[rg].mac(p[rg][jb].lo, aie::op_transpose(vt.hi));
            }
        }
        for (int32_t rg = 0; rg < groups; ++rg) {
            store_rows(c[rg].template to_vector<float>(), outputs(state, d, rg * kOp) + ng * kOp, d, rows - rg * kOp);
        }
    }
}

// K/V rows as the fp32 program reads them: chunk c (32 values) of row j widened to fp32, exactly.
struct F16Rows {
    const uint16_t * p;
    int32_t          d;
    vf chunk(int32_t j, int32_t c) const { return f16_to_f32(p + j * d + c * kLanes); }
};
// Chunk c of a Q8_0 row is its block c: the codes times the scale, the safe product exact for a finite
// scale (8 and 11 significant bits). An infinite or NaN scale gives what IEEE's product would (the safe
// product of an infinity is NaN): +-inf for a code of that sign, NaN for a code 0 or a NaN scale.
struct Q8Rows {
    const uint8_t * p;
    int32_t         row_bytes;
    vf chunk(int32_t j, int32_t c) const {
        const uint8_t * row = p + j * row_bytes;
        const vf codes = aie::to_float(aie::load_unaligned_v<kLanes>(q8_codes(row, c), 2));
        const vf s = f16_to_f32(aie::broadcast<uint16_t, kLanes>(q8_scale(row, c)));
        if ((q8_scale(row, c) & 0x7c00) != 0x7c00) return fp32_mul(codes, s);
        const vf signed_s = aie::select(s, aie::neg(s), aie::lt(codes, 0.0f));
        return aie::select(signed_s, aie::broadcast<float, kLanes>(__builtin_nanf("")), aie::eq(codes, 0.0f));
    }
};

// The fp32 program's block on K/V rows of either format (fa_block_f16, fa_block_q8_0).
template <typename Rows>
void block_fp32(const float * __restrict q, const Rows & k, const Rows & v, const uint16_t * __restrict mask,
                const float * __restrict slope, float * __restrict state, float * __restrict scores, int32_t rows, int32_t d,
                int32_t n_kv, float scale) {
    if (all_masked(mask, rows, n_kv)) return;
    const int32_t chunks = d / kLanes;
    vf wide[kMaxChunks];

    // Raw scores q.k, K row by K row: each row widened once for every query row.
    for (int32_t j = 0; j < n_kv; ++j) {
        for (int32_t c = 0; c < chunks; ++c) wide[c] = k.chunk(j, c);
        AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
        for (int32_t r = 0; r < rows; ++r) {
            acc a = aie::mul(aie::load_v<kLanes>(q + r * d), wide[0]);
            for (int32_t c = 1; c < chunks; ++c) a = aie::mac(a, aie::load_v<kLanes>(q + r * d + c * kLanes), wide[c]);
            scores[r * kBlock + j] = aie::reduce_add(a.template to_vector<float>());
        }
    }

    softmax_step(mask, slope, state, scores, rows, d, n_kv, scale);

    // o += p[j] v[j], V row by V row: each row widened once for every query row.
    for (int32_t j = 0; j < n_kv; ++j) {
        for (int32_t c = 0; c < chunks; ++c) wide[c] = v.chunk(j, c);
        AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
        for (int32_t r = 0; r < rows; ++r) {
            const float pj = scores[r * kBlock + j];
            float * o = outputs(state, d, r);
            for (int32_t c = 0; c < chunks; ++c) {
                const acc a = aie::mac(acc(aie::load_v<kLanes>(o + c * kLanes)), wide[c], pj);
                aie::store_v(o + c * kLanes, a.template to_vector<float>());
            }
        }
    }
}

}  // namespace

extern "C" {

// The state of `rows` query rows before their first block: m = -inf, s = 0, o = 0. Its loop makes
// rows d / 32 trips, at least 1 and no more promised: one query row of d = 32 (a decode token without
// GQA at the smallest head dim the design takes) is one trip.
void fa_init_f32(float * __restrict state, int32_t rows, int32_t d) {
    for (int32_t r = 0; r < rows; ++r) {
        maxima(state)[r] = kNegInf;
        sums(state)[r] = 0.0f;
    }
    const vf zero = aie::zeros<float, kLanes>();
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(1)
    for (int32_t i = 0; i < rows * d; i += kLanes) aie::store_v(outputs(state, d, 0) + i, zero);
}

// One block of n_kv <= 32 K/V rows (d F16 values each, row after row) for `rows` <= 16 query rows
// (q: d fp32 each). mask: 32 F16 per query row, or nullptr (no mask); slope: one per query row (ALiBi;
// 1 without). scores: 32 floats per query row of scratch. Nothing to do when the mask hides the whole
// block (all_masked).
void fa_block_f16(const float * __restrict q, const uint16_t * __restrict k, const uint16_t * __restrict v,
                  const uint16_t * __restrict mask, const float * __restrict slope, float * __restrict state,
                  float * __restrict scores, int32_t rows, int32_t d, int32_t n_kv, float scale) {
    block_fp32(q, F16Rows{k, d}, F16Rows{v, d}, mask, slope, state, scores, rows, d, n_kv, scale);
}

// fa_block_f16 on Q8_0 K/V rows (fa_q8_0_row_bytes(d) bytes apart).
void fa_block_q8_0(const float * __restrict q, const uint8_t * __restrict k, const uint8_t * __restrict v,
                   const uint16_t * __restrict mask, const float * __restrict slope, float * __restrict state,
                   float * __restrict scores, int32_t rows, int32_t d, int32_t n_kv, float scale) {
    const int32_t rb = xdna_aie::fa_q8_0_row_bytes(d);
    block_fp32(q, Q8Rows{k, rb}, Q8Rows{v, rb}, mask, slope, state, scores, rows, d, n_kv, scale);
}

// q's `rows` (<= 16) rows of d fp32 values as the bfp16 A operands of the scores: for each 8 of the head
// dim (kb) and each 8 query rows (rg), hi, mid and lo (Split3), 72 bytes each, rows past `rows` zero:
// ((kb * row groups + rg) * 3 + part) * 72 bytes into qb. Runs in conv_even; the caller's mode is restored.
void fa_prepare_q_bfp16(const float * __restrict q, uint8_t * __restrict qb, int32_t rows, int32_t d) {
    const aie::rounding_mode entry = aie::swap_rounding(aie::rounding_mode::conv_even);
    const int32_t groups = (rows + kOp - 1) / kOp;
    aie::block_vector_output_buffer_stream<bfp16ebs8, 64> os(reinterpret_cast<bfp16ebs8 *>(qb));
    for (int32_t kb = 0; kb < d / kOp; ++kb) {
        for (int32_t rg = 0; rg < groups; ++rg) {
            const Split3 x = split3_bfp16(load_rows(q + rg * kOp * d + kb * kOp, d, rows - rg * kOp));
            os.push(x.hi);
            os.push(x.mid);
            os.push(x.lo);
        }
    }
    aie::set_rounding(entry);
}

// fa_block_f16 with the two products on the bfp16 matrix unit: qb holds q as fa_prepare_q_bfp16 wrote
// it; the rest as fa_block_f16, which this block runs instead (on q) when a live K or V row holds an
// infinity or a NaN. Scores: per 8 K rows (a B^T operand: block n = K row n, 8 of the head
// dim, widened exactly and split in three) and 8 of the head dim, six mmul per 8 query rows. Values: the
// weights p (32 per row) split per 8 KV rows; per 8 of the head dim an o tile (8 rows x 8) is loaded
// into an accumulator, each 8 V rows transposed into a B^T operand (block n = head-dim column n over
// the 8 KV rows; rows past n_kv zero), three mmul per 8 query rows, the tile stored back.
// Runs in conv_even (the softmax's fp32 products split in it too); the caller's mode is restored.
void fa_block_f16_bfp16(const float * __restrict q, const uint8_t * __restrict qb, const uint16_t * __restrict k,
                        const uint16_t * __restrict v, const uint16_t * __restrict mask, const float * __restrict slope,
                        float * __restrict state, float * __restrict scores, int32_t rows, int32_t d, int32_t n_kv, float scale) {
    if (all_masked(mask, rows, n_kv)) return;
    if (any_nonfinite(k, n_kv, d) || any_nonfinite(v, n_kv, d)) {
        fa_block_f16(q, k, v, mask, slope, state, scores, rows, d, n_kv, scale);
        return;
    }
    const aie::rounding_mode entry = aie::swap_rounding(aie::rounding_mode::conv_even);
    const int32_t groups = (rows + kOp - 1) / kOp, kbs = d / kOp, kv_groups = (n_kv + kOp - 1) / kOp;
    const aie::vector<bfloat16, 64> one = aie::broadcast<bfloat16, 64>(bfloat16(1.0f));

    // Raw scores q.k: K rows 8 at a time (rows past n_kv are masked by the softmax step).
    for (int32_t ng = 0; ng < kv_groups; ++ng) {
        BMul c[2];
        QStream qs(reinterpret_cast<const bfp16ebs8 *>(qb));
        AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(4)
        for (int32_t kb = 0; kb < kbs; ++kb) mac_scores(c, qs, split3_bfp16(widen_finite(load_8x8(k + ng * kOp * d + kb * kOp, d), one)), groups);
        store_scores(c, scores, ng, rows, groups);
    }

    softmax_step(mask, slope, state, scores, rows, d, n_kv, scale);

    // o += p v: V rows 8 at a time, transposed on 16-bit lanes; rows past n_kv (stale data of the buffer)
    // zero, as they would share a block exponent.
    const auto row_of_lane = aie::load_v<64>(kRowOfLane);
    accumulate_values(scores, state, rows, d, kv_groups, [](int32_t) {}, [&](int32_t ng, int32_t jb) {
        v64u16 t = aie::transpose(load_8x8(v + jb * kOp * d + ng * kOp, d), kOp, kOp);
        if ((jb + 1) * kOp > n_kv) t = aie::select(t, uint16_t(0), aie::ge(row_of_lane, int16_t(n_kv - jb * kOp)));
        return split_bfp16(widen_finite(t, one));
    });
    aie::set_rounding(entry);
}

// fa_block_f16_bfp16 on Q8_0 K/V rows (fa_q8_0_row_bytes(d) bytes apart). k_words, v_words: for each Q8_0
// block b of the head dim and each of the 32 rows (block-major: [b][row]), the 32-bit word of the row
// that holds block b's scale, which the design's DMA gathers beside the rows (a scale sits 34 b bytes
// into its row: in the low half of the word at 34 b for an even b, in the high half of the word at
// 34 b - 2 for an odd one; a DMA moves whole words, so it cannot gather the scales themselves). Words of
// rows past n_kv are stale. scratch: fa_q8_0_scratch_bytes(d) bytes (64-byte aligned): the rows' scales
// (rows past n_kv get scale 0, so their stale codes widen to 0 and raise no bfp16 block's exponent),
// their half_parts (64 scales per call), and the V scales' parts laid out for each Q8_0 block of the
// head dim and 8 V rows, made once per block call and read by every 8 of the head dim. A block with an
// infinite or NaN scale among its live rows runs fa_block_q8_0 instead. The products as
// fa_block_f16_bfp16's: K and V widened exactly (widen_q8_0: per 8 K rows and 8 of the head dim, the
// rows' scales in lanes 8n..8n+7; per 8 of the head dim and 8 V rows, the codes transposed on 8-bit
// lanes and the scales in lanes i % 8), K split in three and V in two.
void fa_block_q8_0_bfp16(const float * __restrict q, const uint8_t * __restrict qb, const uint8_t * __restrict k,
                         const uint8_t * __restrict v, const uint32_t * __restrict k_words, const uint32_t * __restrict v_words,
                         const uint16_t * __restrict mask, const float * __restrict slope, float * __restrict state,
                         float * __restrict scores, uint8_t * __restrict scratch, int32_t rows, int32_t d, int32_t n_kv, float scale) {
    if (all_masked(mask, rows, n_kv)) return;
    const int32_t rb = xdna_aie::fa_q8_0_row_bytes(d), nb = d / kBlock;
    const int32_t n_scales = 2 * nb * kBlock;  // K's, then V's
    uint16_t * ks = reinterpret_cast<uint16_t *>(scratch);
    uint16_t * vs = ks + nb * kBlock;
    bfloat16 * parts = reinterpret_cast<bfloat16 *>(ks + n_scales);  // [a, c, d][n_scales]
    bfloat16 * vparts = parts + 3 * n_scales;                          // [nb][4 groups of 8 rows][a, c, d][64]
    int8_t * vtiles = reinterpret_cast<int8_t *>(vparts + nb * (kBlock / kOp) * 3 * 64);  // one block's: [8 V rows][group][64]
    const auto past_end = aie::ge(aie::load_v<kLanes>(kLaneIndex), n_kv);
    for (int32_t b = 0; b < nb; ++b) {
        // The scale halves of the 32 words (little-endian: the low half of word i is 16-bit lane 2i).
        const auto kh = aie::vector_cast<uint16_t>(aie::load_v<kBlock>(k_words + b * kBlock));
        const auto vh = aie::vector_cast<uint16_t>(aie::load_v<kBlock>(v_words + b * kBlock));
        const aie::vector<uint16_t, kBlock> kb16 = b % 2 == 0 ? aie::filter_even(kh) : aie::filter_odd(kh);
        const aie::vector<uint16_t, kBlock> vb16 = b % 2 == 0 ? aie::filter_even(vh) : aie::filter_odd(vh);
        aie::store_v(ks + b * kBlock, aie::select(kb16, uint16_t(0), past_end));
        aie::store_v(vs + b * kBlock, aie::select(vb16, uint16_t(0), past_end));
    }
    if (any_nonfinite(ks, nb, kBlock) || any_nonfinite(vs, nb, kBlock)) {
        fa_block_q8_0(q, k, v, mask, slope, state, scores, rows, d, n_kv, scale);
        return;
    }
    const aie::rounding_mode entry = aie::swap_rounding(aie::rounding_mode::conv_even);
    const int32_t groups = (rows + kOp - 1) / kOp, kv_groups = (n_kv + kOp - 1) / kOp;
    constexpr int32_t kSubs = kBlock / kOp;  // 8 of the head dim per Q8_0 block
    for (int32_t i = 0; i < n_scales; i += 64) {
        const HalfParts hp = half_parts(aie::load_v<64>(ks + i));
        aie::store_v(parts + i, hp.a);
        aie::store_v(parts + n_scales + i, hp.c);
        aie::store_v(parts + 2 * n_scales + i, hp.d);
    }
    // The parts of 8 scales (from index i) repeated: lane l holds scale i + l % 8's.
    const auto repeated = [&](int32_t i) -> HalfParts {
        return {aie::load_v<8>(parts + i).template grow_replicate<64>(), aie::load_v<8>(parts + n_scales + i).template grow_replicate<64>(),
                aie::load_v<8>(parts + 2 * n_scales + i).template grow_replicate<64>()};
    };
    for (int32_t b = 0; b < nb; ++b) {
        for (int32_t jb = 0; jb < kv_groups; ++jb) {
            const HalfParts hp = repeated(nb * kBlock + b * kBlock + jb * kOp);  // lane 8n + m: V row m
            bfloat16 * out = vparts + (b * (kBlock / kOp) + jb) * 3 * 64;
            aie::store_v(out, hp.a);
            aie::store_v(out + 64, hp.c);
            aie::store_v(out + 128, hp.d);
        }
    }

    // Raw scores q.k: K rows 8 at a time, each Q8_0 block of the head dim 8 values at a time.
    for (int32_t ng = 0; ng < kv_groups; ++ng) {
        BMul c[2];
        QStream qs(reinterpret_cast<const bfp16ebs8 *>(qb));
        const uint8_t * rows8 = k + ng * kOp * rb;
        for (int32_t b = 0; b < nb; ++b) {
            const CodeTiles codes = load_code_tiles(rows8, rb, b);
            const HalfParts r = repeated(b * kBlock + ng * kOp);
            const HalfParts sk = {aie::transpose(r.a, kOp, kOp), aie::transpose(r.c, kOp, kOp), aie::transpose(r.d, kOp, kOp)};  // lane 8n + i: row n
            AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(4)
            for (int32_t sub = 0; sub < kSubs; ++sub) mac_scores(c, qs, split3_bfp16(widen_q8_0(codes.t[sub], sk)), groups);
        }
        store_scores(c, scores, ng, rows, groups);
    }

    softmax_step(mask, slope, state, scores, rows, d, n_kv, scale);

    // o += p v: at the first 8 of the head dim of each Q8_0 block, the block's V tiles, transposed (lane
    // 8n + m: code n of V row m), for its four groups; each tile widened with its rows' scale parts.
    const auto begin = [&](int32_t ng) {
        if (ng % kSubs != 0) return;
        for (int32_t jb = 0; jb < kv_groups; ++jb) {
            const CodeTiles codes = load_code_tiles(v + jb * kOp * rb, rb, ng / kSubs);
            for (int32_t g = 0; g < kSubs; ++g) aie::store_v(vtiles + (jb * kSubs + g) * 64, aie::transpose(codes.t[g], kOp, kOp));
        }
    };
    accumulate_values(scores, state, rows, d, kv_groups, begin, [&](int32_t ng, int32_t jb) {
        const aie::vector<int8_t, 64> t = aie::load_v<64>(vtiles + (jb * kSubs + ng % kSubs) * 64);
        const bfloat16 * hp = vparts + ((ng / kSubs) * (kBlock / kOp) + jb) * 3 * 64;
        return split_bfp16(widen_q8_0(t, {aie::load_v<64>(hp), aie::load_v<64>(hp + 64), aie::load_v<64>(hp + 128)}));
    });
    aie::set_rounding(entry);
}

// a <- the state of the same rows over a's K/V rows and b's together (a core that split the context
// with another): m = max(ma, mb), s = sa e^(ma - m) + sb e^(mb - m), o likewise.
void fa_merge_f32(float * __restrict a, const float * __restrict b, int32_t rows, int32_t d) {
    const int32_t chunks = d / kLanes;
    for (int32_t r = 0; r < rows; ++r) {
        const float ma = maxima(a)[r], mb = maxima(b)[r];
        const float m = mb > ma ? mb : ma;
        if (m == kNegInf) continue;  // both fully masked: a stays empty
        const float ca = exp_nonpos(ma - m), cb = exp_nonpos(mb - m);
        sums(a)[r] = sums(a)[r] * ca + sums(b)[r] * cb;
        float * oa = outputs(a, d, r);
        const float * ob = outputs(b, d, r);
        for (int32_t c = 0; c < chunks; ++c) {
            const acc x = aie::mac(aie::mul(aie::load_v<kLanes>(oa + c * kLanes), ca), aie::load_v<kLanes>(ob + c * kLanes), cb);
            aie::store_v(oa + c * kLanes, x.template to_vector<float>());
        }
        maxima(a)[r] = m;
    }
}

// out[r] = o[r] / s[r] (0 where s = 0: every score masked), d fp32 per row, rows out_stride floats apart.
void fa_finish_f32(const float * __restrict state, float * __restrict out, int32_t rows, int32_t d, int32_t out_stride) {
    const int32_t chunks = d / kLanes;
    for (int32_t r = 0; r < rows; ++r) {
        const float s = sums(state)[r];
        const float inv = s == 0.0f ? 0.0f : 1.0f / s;
        const float * o = outputs(state, d, r);
        for (int32_t c = 0; c < chunks; ++c) aie::store_v(out + r * out_stride + c * kLanes, fp32_mul(aie::load_v<kLanes>(o + c * kLanes), inv));
    }
}

}  // extern "C"
