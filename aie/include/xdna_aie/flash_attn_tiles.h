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

}  // namespace xdna_aie
