// What the flash_attn design's core programs and the host agree on (aie/flash_attn/README.md).
#pragma once

#include <stdint.h>

namespace xdna_aie {

constexpr int kFaLanes = 32;     // fp32 lanes per vector op (one safe fp32 emulation per 32 lanes)
constexpr int kFaKvBlock = 32;   // K/V rows per fa_block call: one score vector per query row
constexpr int kFaMaxRows = 16;   // query rows a core holds (heads of one KV head x tokens)
constexpr int kFaMaxHead = 128;  // head dims the core buffers are sized for

// Head dims the programs take: whole vectors, within the buffers.
constexpr bool fa_head_fits(int d) { return d == 32 || d == 64 || d == 128; }

// The running state of `rows` query rows in core memory: the running maxima m[rows], the running sums
// s[rows], then the unnormalised outputs o[rows][d] (floats). fa_state_floats(rows, d) of them.
constexpr int fa_state_floats(int rows, int d) { return 2 * kFaMaxRows + rows * d; }
constexpr int fa_state_o(int) { return 2 * kFaMaxRows; }  // o starts here, after m[] and s[] of kFaMaxRows each

// The bfp16 program's query operands (fa_prepare_q_bfp16): per 8 of the head dim and 8 query rows, two
// 64-value bfp16ebs8 operands (hi, mid, lo) of 72 bytes.
constexpr int fa_q_bfp16_bytes(int rows, int d) { return (d / 8) * ((rows + 7) / 8) * 3 * 72; }

// Q8_0 K/V rows (ggml's block_q8_0: an F16 scale and 32 int8 codes, 34 bytes): the bytes of a row of d
// values, and the bfp16 program's scratch: the K and V scales of a block (uint16 each), their three bf16
// parts, the V scales' parts per Q8_0 block of the head dim and 8 V rows (64 lanes each), then one
// block's V code tiles (8 x 8 per 8 rows and group of 8 codes).
constexpr int fa_q8_0_row_bytes(int d) { return d / 32 * 34; }
// The 32-bit word of a Q8_0 row that holds block b's scale (34 b bytes in: the low half of word 34 b / 4
// for an even b, the high half of word (34 b - 2) / 4 for an odd one), as the DMA gathers it.
constexpr int fa_q8_0_scale_word(int b) { return (34 * b - (b % 2) * 2) / 4; }
constexpr int fa_q8_0_scratch_bytes(int d) {
    return 4 * (2 * kFaKvBlock * (d / 32)) * 2 + (d / 32) * (kFaKvBlock / 8) * 3 * 64 * 2 + (kFaKvBlock / 8) * 4 * 64;
}
// Head dims the Q8_0 programs take: whole 34-byte blocks at 4-byte offsets (a shim BD addresses 32-bit
// words, so a KV head's slice of a cache row, head * fa_q8_0_row_bytes(d) bytes in, must start on one).
constexpr bool fa_q8_0_head_fits(int d) { return d == 64 || d == 128; }

}  // namespace xdna_aie
