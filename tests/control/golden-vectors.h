// Word streams recorded by mlir-aie's own tests (github.com/Xilinx/mlir-aie), as the independent
// reference for our encoder: the words below were read from the FileCheck lines of the cited test
// files, not produced by any code of ours. Each vector names file and commit.
//
// npu1 vectors are included where the encoding is the same for npu2: the TXN op formats do not depend on
// the device (lib/Targets/AIETargetNPU.cpp writes the same words; only the header's device generation and
// column count differ), and the shim BD register layout of npu1 (aie-rt xaiemlgbl_params.h) equals
// npu2's (xaie2pgbl_params.h) field for field. What differs on npu1 is the largest burst length
// (256 B, encoding 2, versus 512 B, encoding 3), which those vectors set explicitly.
#pragma once

#include <cstdint>
#include <vector>

namespace golden {

// test/Targets/NPU/npu2_instgen.mlir @ 08c556e32f4b42614013a5bc4b831999c3eff3b7 (aie.device(npu2)):
// write32 (column 3, row 4, address 0xabc00def, value 0x42); write32 (address 0xabc00def, value 0x314);
// blockwrite of [100..107] to 0x12345679; the same to column 1, row 1, address 100; maskwrite32
// (column 2, row 3, address 0x567A, value 0x1001, mask 0xf00ff00f); sync (column 3, row 4, direction 1,
// channel 5, column_num 1, row_num 2); preempt level 3.
inline const std::vector<uint32_t> npu2_instgen = {
    0x06040100, 0x00000108, 0x00000007, 0x000000D0,
    0x00000000, 0x00000000, 0x06400DEF, 0x00000000, 0x00000042, 0x00000018,
    0x00000000, 0x00000000, 0xABC00DEF, 0x00000000, 0x00000314, 0x00000018,
    0x00000001, 0x00000000, 0x12345679, 0x00000030,
    0x00000064, 0x00000065, 0x00000066, 0x00000067, 0x00000068, 0x00000069, 0x0000006A, 0x0000006B,
    0x00000001, 0x00000101, 0x02100064, 0x00000030,
    0x00000064, 0x00000065, 0x00000066, 0x00000067, 0x00000068, 0x00000069, 0x0000006A, 0x0000006B,
    0x00000003, 0x00000000, 0x0430567A, 0x00000000, 0x00001001, 0xF00FF00F, 0x0000001C,
    0x00000080, 0x00000010, 0x00030401, 0x05010200,
    0x00000306,
};

// test/Targets/NPU/npu_instgen.mlir @ 1351c7a5fbce6b925c5570838246c597904a99d6 (aie.device(npu1)):
// the same ops as npu2_instgen without preempt, then load_pdi (address 0xabc12345678, id 2, size 1024).
inline const std::vector<uint32_t> npu1_instgen = {
    0x06030100, 0x00000104, 0x00000007, 0x000000DC,
    0x00000000, 0x00000000, 0x06400DEF, 0x00000000, 0x00000042, 0x00000018,
    0x00000000, 0x00000000, 0xABC00DEF, 0x00000000, 0x00000314, 0x00000018,
    0x00000001, 0x00000000, 0x12345679, 0x00000030,
    0x00000064, 0x00000065, 0x00000066, 0x00000067, 0x00000068, 0x00000069, 0x0000006A, 0x0000006B,
    0x00000001, 0x00000101, 0x02100064, 0x00000030,
    0x00000064, 0x00000065, 0x00000066, 0x00000067, 0x00000068, 0x00000069, 0x0000006A, 0x0000006B,
    0x00000003, 0x00000000, 0x0430567A, 0x00000000, 0x00001001, 0xF00FF00F, 0x0000001C,
    0x00000080, 0x00000010, 0x00030401, 0x05010200,
    0x00020008, 0x00000400, 0x12345678, 0x00000ABC,
};

// test/Targets/NPU/npu2_1col_header.mlir @ 07994622463b823fed96dd41a550bb651a88f132
// (aie.device(npu2_1col), empty runtime sequence): the header alone.
inline const std::vector<uint32_t> npu2_1col_header = {0x06040100, 0x00000101, 0x00000000, 0x00000010};

// test/Targets/NPU/npu_blockwrite_instgen.mlir @ 0df98817251829be39a0f878e61157ad68bb47f6
// (aie.device(npu1), aie-opt --aie-dma-to-npu then the binary translation): a writebd lowered to a
// blockwrite of 8 BD words to 0x061A00C0, a write32 (column 3, row 4, 0xabc00def = 0x42), a sync.
inline const std::vector<uint32_t> npu1_blockwrite_instgen = {
    0x06030100, 0x00000104, 0x00000003, 0x00000068,
    0x00000001, 0x00000000, 0x061A00C0, 0x00000030,
    0x00000001, 0x00580002, 0x000C0005, 0x00100007, 0x00000009, 0x00000000, 0x059A000C, 0x84038201,
    0x00000000, 0x00000000, 0x06400DEF, 0x00000000, 0x00000042, 0x00000018,
    0x00000080, 0x00000010, 0x00030401, 0x05010200,
};

// test/Targets/NPU/npu_address_patch_arg_plus_64bit.mlir @ 875a349d8229f143adc687dfdd754e1e57e2a9a5
// (aie.device(npu2)): address_patch addr 74560 (0x12340), arg_idx 0, with four arg_plus values. The test
// checks words 6..11 of each 12-word patch op (register address, pad, arg index, pad, offset low, high).
struct PatchTail {
    uint64_t arg_plus;
    uint32_t words_6_to_11[6];
};
inline const PatchTail address_patch_64bit[] = {
    {4294967295ull, {0x00012340, 0, 0, 0, 0xFFFFFFFF, 0x00000000}},
    {4294967296ull, {0x00012340, 0, 0, 0, 0x00000000, 0x00000001}},
    {8589934848ull, {0x00012340, 0, 0, 0, 0x00000100, 0x00000002}},
    {256ull, {0x00012340, 0, 0, 0, 0x00000100, 0x00000000}},
};

// test/Targets/NPU/npu_address_patch_ddr_offset.mlir @ c956393ccb3cbb50d7849e8fa20f701f6b302685
// (aie.device(npu2), default "fold" mode for xclbin + instructions buffer): address_patch addr 74560 with
// arg_plus 0x100 on arg 4 keeps 0x100; on arg 5 the firmware does not translate the address, so the
// aperture offset 0x80000000 is folded in. Checked: words 8..10 (arg index, pad, offset low).
struct PatchArg {
    uint32_t arg_index;
    uint64_t arg_plus_as_written;
    uint32_t words_8_to_10[3];
};
inline const PatchArg address_patch_ddr_offset[] = {
    {4, 0x100, {4, 0, 0x00000100}},
    {5, 0x80000100, {5, 0, 0x80000100}},
};

// test/Targets/NPU/npu_dma_memcpy.mlir @ 0429335fc2efe3993db98fc7429fd34167547a1c (aie.device(npu1_1col)):
// dma_memcpy_nd(%arg0[1, 0, 0, 0][1, 2, 32, 32][4096, 2048, 64, 1]) of i32 on MM2S 0 of column 0, BD 0.
// Lowered to a blockwrite of these 8 words to address 118784, an address patch of 118788 with arg 0 plus
// 16384 bytes, and a write32 of 0 to 119316. At this commit mlir-aie wrote burst encoding 2 and no
// AxCache.
inline const uint32_t npu1_memcpy_bd[8] = {2048, 0, 0, 33554432, 0x8200003Fu /* -2113929153 */, 2047, 0, 33554432};
constexpr uint32_t npu1_memcpy_bd_address = 118784;
constexpr uint32_t npu1_memcpy_patch_address = 118788;
constexpr uint64_t npu1_memcpy_patch_offset = 16384;
constexpr uint32_t npu1_memcpy_queue_address = 119316;
constexpr uint32_t npu1_memcpy_queue_word = 0;

// test/Conversion/DmaToNpu/dma_to_npu_iter_repeat.mlir @ ea11545fbc99a3d92f5ce3550e5633e3367dfaf2
// (aie.device(npu1)): two linear 64-word i32 transfers on MM2S 0 of column 0; BD 0 with iter_size 4,
// iter_stride 64; BD 1 with repeat_count 3 (3 extra replays through the queue push).
inline const uint32_t npu1_iter_bd0[8] = {64, 0, 0, 0, 0x80000000u /* -2147483648 */, 33554432, 3145791, 33554432};
inline const uint32_t npu1_iter_bd1[8] = {64, 0, 0, 0, 0x80000000u, 33554432, 0, 33554432};
constexpr uint32_t npu1_iter_queue_address = 119316;
constexpr uint32_t npu1_iter_queue_word_bd0 = 0;
constexpr uint32_t npu1_iter_queue_word_bd1 = 196609;

// test/Conversion/DmaToNpu/dma_to_npu.mlir @ 0429335fc2efe3993db98fc7429fd34167547a1c (aie.device(npu1)):
// a packet-enabled BD (pkt_id 2, pkt_type 3) has word 2 = 1074987008; an S2MM 0 transfer on BD 1 with
// issue_token pushes 2147483649 and its dma_wait becomes sync(column 0, row 0, direction 0, channel 0,
// 1 x 1); on MM2S 1 of column 1 the wait is sync(column 1, row 0, direction 1, channel 1, 1 x 1).
constexpr uint32_t npu1_packet_bd_word2 = 1074987008;
constexpr uint32_t npu1_token_push_word = 2147483649u;

// test/Conversion/DmaToNpu/dma_to_npu_burst_length.mlir @ 1939efaf082db240a8b863f70647f89f6017213c
// (aie.device(npu2)): BD word 4 for (a) a writebd with burst_length 512 and zero d1: -1073741824;
// (b) dma_memcpy_nd(%in[0,2,0,0][1,2,2,8][0,16,1,1]) with burst_length 64: 2097152;
// (c) dma_memcpy_nd(%out[0,0,0,0][1,1,1,32][0,0,0,1]) with burst_length 512: -1073741824.
constexpr uint32_t npu2_burst512_word4 = 0xC0000000u;
constexpr uint32_t npu2_burst64_d1wrap2_word4 = 2097152;

}  // namespace golden
