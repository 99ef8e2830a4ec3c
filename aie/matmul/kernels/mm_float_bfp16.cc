// F16, BF16 and F32 weights x bfp16 activations on the native bfp16 matrix unit (prefill contracts v3:
// mm_f16_bfp16 / mm_bf16_bfp16 / mm_f32_bfp16, tile 64 x 32 x TK with TK = 128 / 128 / 64, the same
// weight tiles as the float contracts: fmt::f16 / bf16 / f32 of aie/include/xdna_aie/matmul_tiles.h).
// Families float_bfp16 (F16, BF16) and f32_bfp16 (F32: its 64-K activation tile is half the size of
// the others', and one xclbin's A tile object has one size); one core program for both.
//
// The numerics are defined in docs/kernels.md, "Prefill contracts v3", "F16, BF16 and F32"; this file
// computes exactly that. Per call each weight value goes into an fp32 accumulator lane exactly (F16
// widened exactly by integer ops, BF16 by moving its 16 bits to the top of a 32-bit lane, F32 as it
// is) and each 8 K of one row become one bfp16ebs8 block (to_v64bfp16ebs8, conv_even); each block
// then serves all 32 tokens through aie::mmul<8, 8, 8, bfp16ebs8, bfp16ebs8> (512 MACs per
// instruction). No per-output fp32 epilogue.
//
// ---- Plane order ---------------------------------------------------------------------------------
// The float tiles hold 8 K x 8 rows operands ([k][row], 64 values) for the 4x8x8 mmul, operand index
// (row / 8) * (TK / 8) + k / 8. A bfp16 B^T operand wants [row][k] (a block is 8 K of one row), so
// each operand is transposed 8 x 8 on 16-bit lanes (F32: its low and high 16-bit halves transposed
// separately and zipped back, 1024-bit shuffles only).
//
// ---- Loop order --------------------------------------------------------------------------------
// Row block of 8 rows (8 per tile) outermost: its TK / 8 operands converted into a scratch stream of
// blocks (the first software-pipelined loop), then its C columns (4 token groups of 8 tokens) in 4
// fp32 accumulators, one B^T pop and 4 A pops (BlockActTileFormat{32, TK}) with 4 mmul macs per K
// block (the second), C stored back. The C tile carries the sum across K tiles (zero.cc clears it).
// The whole call runs in conv_even (there is no right shift); the caller's mode is restored on return.
//
// ---- Data memory budget (64 KB per core), TN = 32 ---------------------------------------------
//   W tile, double-buffered (F16/BF16 64 x 128 x 2, F32 64 x 64 x 4)  2 x 16384 = 32768 B
//   A tile (bfp16 blocks, 32 x TK / 8 x 9 B, 64 B of flags), 2 bufs, TK 128  2 x  4672 =  9344 B
//   C tile fp32 32 x 64, single buffer                                             8192 B
//   stack: one row block's blocks (16 x 72 B)                                      1152 B
//   stack: call frames, spills (estimate)                                          1024 B
//   total (+ 16 B of RTP words)                                                   52496 B = 51.3 KB
//   (F32: A 2 x 2368 B and 576 B of blocks: 48.5 KB.)
//
// ---- Program memory estimate (16 KB) -----------------------------------------------------------
// At about 12 bytes per VLIW bundle (not a compiler figure): per type the conversion body (F16: 4
// x ~12 integer instructions for the exact widening, BF16 2 zips, F32 4 filters + 2 zips; 1-2
// transposes, 1 conversion, 1 store: ~0.3-0.6 KB) and the mmul loop (~0.5 KB): ~1 KB per type, 3 KB
// for three, with entry points about 3.5 KB of 16 KB.
#include <aie_api/aie.hpp>
#include <stdint.h>

#include "xdna_aie/loop-hints.h"
#include "xdna_aie/matmul_tiles.h"

#include "bfp16_mmul.h"

#if defined(__GNUC__) || defined(__clang__)
#define FB_NOINLINE __attribute__((noinline))
#else
#define FB_NOINLINE
#endif

namespace {

using namespace xdna_aie;

constexpr int kRowBlock = 8;                     // rows per B^T operand
constexpr int kRowBlocks = kTileM / kRowBlock;   // 8 per tile

enum class FT { f16, bf16, f32 };
template <FT T> struct Ft {
    static constexpr int kTK = T == FT::f32 ? 64 : 128;
    static constexpr int kKBlocks = kTK / kBfp16Block;
    static constexpr int kBytes = T == FT::f32 ? 4 : 2;
};

using FAcc = aie::accum<accfloat, 64>;
using V64F = aie::vector<float, 64>;
using V64U16 = aie::vector<uint16_t, 64>;

// Sixteen fp16 bit patterns -> fp32, exactly, with integer ops (normals rebias the exponent, inf / NaN
// keep an all-ones exponent, subnormals m * 2^-24 convert as fixed point: m < 2^10, exact).
inline aie::vector<float, 16> half16_to_float(const aie::vector<uint16_t, 16> & h) {
    aie::accum<acc32, 16> wide;
    wide.from_vector(h);
    const aie::vector<uint32_t, 16> u = aie::vector_cast<uint32_t>(wide.to_vector<int32_t>());
    const aie::vector<uint32_t, 16> em = aie::bit_and(uint32_t(0x7fff), u);
    const aie::vector<uint32_t, 16> sign = aie::upshift(aie::bit_and(uint32_t(0x8000), u), 16);
    const aie::vector<uint32_t, 16> normal = aie::add(aie::upshift(em, 13), uint32_t(0x38000000));  // exponent + 112
    const aie::vector<uint32_t, 16> special = aie::add(normal, uint32_t(0x38000000));             // 31 -> 255
    const aie::vector<uint32_t, 16> sub = aie::vector_cast<uint32_t>(aie::to_float(em, 24));
    aie::vector<uint32_t, 16> bits = aie::select(normal, special, aie::ge(em, uint32_t(0x7c00)));
    bits = aie::select(bits, sub, aie::lt(em, uint32_t(0x0400)));
    return aie::vector_cast<float>(aie::bit_or(bits, sign));
}

// One operand of the plane ([k][row], 64 values) as fp32 in [row][k] lanes, exactly.
template <FT T> inline V64F operand_rows(const uint8_t * __restrict p) {
    if constexpr (T == FT::f32) {
        const aie::vector<uint16_t, 128> v = aie::vector_cast<uint16_t>(aie::load_v<64>(reinterpret_cast<const float *>(p)));
        const V64U16 lo = aie::transpose(aie::filter_even(v, 1), 8, 8);
        const V64U16 hi = aie::transpose(aie::filter_odd(v, 1), 8, 8);
        return aie::vector_cast<float>(aie::concat(aie::interleave_zip(lo, hi, 1)));
    } else {
        const V64U16 t = aie::transpose(aie::load_v<64>(reinterpret_cast<const uint16_t *>(p)), 8, 8);
        if constexpr (T == FT::bf16) {
            // A bf16's bits are the high half of the fp32 of the same value.
            return aie::vector_cast<float>(aie::concat(aie::interleave_zip(aie::zeros<uint16_t, 64>(), t, 1)));
        } else {
            return aie::concat(half16_to_float(t.extract<16>(0)), half16_to_float(t.extract<16>(1)),
                               half16_to_float(t.extract<16>(2)), half16_to_float(t.extract<16>(3)));
        }
    }
}

// Row block rb's K blocks of the tile into `out` (conv_even).
template <FT T> FB_NOINLINE void convert_row_block(const uint8_t * __restrict w, int rb, uint8_t * __restrict out) {
    using F = Ft<T>;
    aie::block_vector_output_buffer_stream<bfp16ebs8, 64> os(reinterpret_cast<bfp16ebs8 *>(out));
    const uint8_t * base = w + rb * F::kKBlocks * 64 * F::kBytes;
    AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(8)
    for (int kb = 0; kb < F::kKBlocks; ++kb) {
        const FAcc acc(operand_rows<T>(base + kb * 64 * F::kBytes));
        os.push(acc.to_vector<bfp16ebs8>());
    }
}

template <FT T> void mm_float_bfp16(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) {
    using F = Ft<T>;
    alignas(64) uint8_t deq[F::kKBlocks * 72];  // one row block's blocks (on the stack: budget above)
    const aie::rounding_mode entry = aie::swap_rounding(aie::rounding_mode::conv_even);  // restored on return
    for (int rb = 0; rb < kRowBlocks; ++rb) {
        convert_row_block<T>(w, rb, deq);
        bfp16_mmul::bfp16_multiply_rows8<F::kKBlocks>(deq, a, c, rb * kRowBlock);
    }
    bfp16_mmul::nan_flagged_tokens<F::kKBlocks * kBfp16Block>(a, c);
    aie::set_rounding(entry);
}

}  // namespace

extern "C" {
void mm_f16_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_float_bfp16<FT::f16>(w, a, c); }
void mm_bf16_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_float_bfp16<FT::bf16>(w, a, c); }
void mm_f32_bfp16_n32(const uint8_t * __restrict w, const uint8_t * __restrict a, float * __restrict c) { mm_float_bfp16<FT::f32>(w, a, c); }
}
