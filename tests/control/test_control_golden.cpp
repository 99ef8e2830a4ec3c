// Our encoder against the words mlir-aie's own tests record (golden-vectors.h): the stream, op by op,
// and the shim BD / queue-push words of its DMA lowering.
#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "control-test-util.h"
#include "golden-vectors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

using namespace xdna::control;

namespace {

std::string hex_diff(const std::vector<uint32_t> & got, const std::vector<uint32_t> & want) {
    std::string s;
    for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
        char line[64];
        std::snprintf(line, sizeof line, "%3zu: %08X %08X%s\n", i, i < got.size() ? got[i] : 0u, i < want.size() ? want[i] : 0u,
                      (i < got.size() && i < want.size() && got[i] == want[i]) ? "" : "  <--");
        s += line;
    }
    return "word: ours golden\n" + s;
}

std::vector<uint32_t> data_100_to_107() { return {100, 101, 102, 103, 104, 105, 106, 107}; }

// The ops both instgen tests share; column/row-relative addresses built the way the tests state them.
std::vector<ControlOp> instgen_common_ops() {
    return {
        Write32{tile_address(3, 4, 0xabc00def), 0x42},
        Write32{0xabc00def, 0x314},
        BlockWrite{0x12345679, data_100_to_107(), 0},
        BlockWrite{tile_address(1, 1, 100), data_100_to_107(), 0x101},  // column | row << 8
        MaskWrite32{tile_address(2, 3, 0x567A), 0x1001, 0xf00ff00f},
        Sync{3, 4, 1, 5, 1, 2},
    };
}

void expect_decodes_to(const std::vector<uint32_t> & words, const ControlStream & want) {
    Decoded d = decode(words.data(), words.size());
    ASSERT_TRUE(d.ok()) << d.error;
    EXPECT_TRUE(d.stream.header == want.header);
    ASSERT_EQ(d.stream.ops.size(), want.ops.size());
    // Decoding then encoding must give back exactly the golden words.
    EXPECT_EQ(encode(d.stream), words) << hex_diff(encode(d.stream), words);
    for (size_t i = 0; i < want.ops.size(); ++i)
        EXPECT_TRUE(control_test::same_op(d.stream.ops[i], want.ops[i])) << "op " << i << ": " << describe(d.stream.ops[i]);
}

}  // namespace

TEST(ControlGolden, Npu2Instgen) {
    ControlStream s;  // default header: npu2, 8 columns
    s.ops = instgen_common_ops();
    s.ops.push_back(Preempt{3});
    EXPECT_EQ(encode(s), golden::npu2_instgen) << hex_diff(encode(s), golden::npu2_instgen);
    expect_decodes_to(golden::npu2_instgen, s);
}

TEST(ControlGolden, Npu1InstgenWithLoadPdi) {
    ControlStream s;
    s.header.dev_gen = 3;
    s.header.cols = 4;
    s.ops = instgen_common_ops();
    s.ops.push_back(LoadPdi{2, 1024, 0xabc12345678ull});
    EXPECT_EQ(encode(s), golden::npu1_instgen) << hex_diff(encode(s), golden::npu1_instgen);
    expect_decodes_to(golden::npu1_instgen, s);
}

TEST(ControlGolden, Npu2OneColumnHeader) {
    ControlStream s;
    s.header.cols = 1;
    EXPECT_EQ(encode(s), golden::npu2_1col_header) << hex_diff(encode(s), golden::npu2_1col_header);
    expect_decodes_to(golden::npu2_1col_header, s);
}

TEST(ControlGolden, Npu1BlockwriteOfLoweredBd) {
    ControlStream s;
    s.header.dev_gen = 3;
    s.header.cols = 4;
    s.ops = {
        BlockWrite{0x061A00C0, {0x00000001, 0x00580002, 0x000C0005, 0x00100007, 0x00000009, 0x00000000, 0x059A000C, 0x84038201}, 0},
        Write32{tile_address(3, 4, 0xabc00def), 0x42},
        Sync{3, 4, 1, 5, 1, 2},
    };
    EXPECT_EQ(encode(s), golden::npu1_blockwrite_instgen) << hex_diff(encode(s), golden::npu1_blockwrite_instgen);
    expect_decodes_to(golden::npu1_blockwrite_instgen, s);
}

TEST(ControlGolden, AddressPatch64BitOffset) {
    for (const auto & v : golden::address_patch_64bit) {
        ControlStream s;
        s.ops = {AddressPatch{74560, 0, v.arg_plus}};
        const std::vector<uint32_t> w = encode(s);
        ASSERT_EQ(w.size(), 4u + 12u);
        EXPECT_EQ(w[4], 0x81u);  // opcode and size: lib/Targets/AIETargetNPU.cpp (header comment of control-ops.cpp)
        EXPECT_EQ(w[5], 48u);
        for (int k = 0; k < 6; ++k) EXPECT_EQ(w[4 + 6 + k], v.words_6_to_11[k]) << "arg_plus " << v.arg_plus << " word " << 6 + k;
        Decoded d = decode(w.data(), w.size());
        ASSERT_TRUE(d.ok()) << d.error;
        EXPECT_EQ(std::get<AddressPatch>(d.stream.ops[0]).arg_offset, v.arg_plus);
    }
}

TEST(ControlGolden, AddressPatchArgumentIndex) {
    for (const auto & v : golden::address_patch_ddr_offset) {
        ControlStream s;
        s.ops = {AddressPatch{74560, v.arg_index, v.arg_plus_as_written}};
        const std::vector<uint32_t> w = encode(s);
        for (int k = 0; k < 3; ++k) EXPECT_EQ(w[4 + 8 + k], v.words_8_to_10[k]) << "arg " << v.arg_index << " word " << 8 + k;
    }
    // The same test is why builders of ours stay below the firmware-translated argument count.
    EXPECT_EQ(kFirmwareTranslatedArgs, 5u);
}

// A dma_memcpy_nd lowered by mlir-aie: our pattern -> BD fields -> words, addresses and queue word.
TEST(ControlGolden, ShimBdOfNpu1MemcpyNd) {
    // [1, 2, 32, 32] sizes, [4096, 2048, 64, 1] strides (outermost first), i32, offset [1, 0, 0, 0].
    ShimBdPattern p;
    p.sizes = {32, 32, 2};
    p.strides = {1, 64, 2048};
    ShimBdOrError r = shim_bd_from_pattern(p);
    ASSERT_TRUE(r.ok()) << r.error;
    r.bd.burst_length = 2;  // npu1's largest burst
    r.bd.axcache = 0;       // not yet written at that commit
    const auto w = encode_shim_bd(r.bd);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(w[i], golden::npu1_memcpy_bd[i]) << "BD word " << i;
    EXPECT_EQ(shim_bd_address(0, 0), golden::npu1_memcpy_bd_address);
    EXPECT_EQ(shim_bd_address(0, 0) + 4, golden::npu1_memcpy_patch_address);
    EXPECT_EQ(1u * 4096 * 4, golden::npu1_memcpy_patch_offset);  // offset [1,0,0,0] x stride 4096 x 4 bytes
    EXPECT_EQ(shim_queue_address(0, 1, 0), golden::npu1_memcpy_queue_address);
    EXPECT_EQ(encode_queue_push({0, 0, false}), golden::npu1_memcpy_queue_word);
    EXPECT_TRUE(decode_shim_bd(w) == r.bd);
}

TEST(ControlGolden, ShimBdIterationAndRepeat) {
    ShimBdPattern p;
    p.sizes = {64, 1, 1};
    p.iterations = 4;
    p.iteration_stride = 64;
    ShimBdOrError bd0 = shim_bd_from_pattern(p);
    ASSERT_TRUE(bd0.ok()) << bd0.error;
    bd0.bd.burst_length = 2;
    const auto w0 = encode_shim_bd(bd0.bd);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(w0[i], golden::npu1_iter_bd0[i]) << "BD 0 word " << i;

    p.iterations = 1;
    p.iteration_stride = 0;
    ShimBdOrError bd1 = shim_bd_from_pattern(p);
    ASSERT_TRUE(bd1.ok()) << bd1.error;
    bd1.bd.burst_length = 2;
    const auto w1 = encode_shim_bd(bd1.bd);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(w1[i], golden::npu1_iter_bd1[i]) << "BD 1 word " << i;

    EXPECT_EQ(shim_queue_address(0, 1, 0), golden::npu1_iter_queue_address);
    EXPECT_EQ(encode_queue_push({0, 0, false}), golden::npu1_iter_queue_word_bd0);
    EXPECT_EQ(encode_queue_push({1, 3, false}), golden::npu1_iter_queue_word_bd1);
}

TEST(ControlGolden, PacketWordAndTokenPush) {
    ShimBd bd;
    bd.enable_packet = true;
    bd.packet_id = 2;
    bd.packet_type = 3;
    EXPECT_EQ(encode_shim_bd(bd)[2], golden::npu1_packet_bd_word2);
    EXPECT_EQ(encode_queue_push({1, 0, true}), golden::npu1_token_push_word);
    const QueuePush q = decode_queue_push(golden::npu1_token_push_word);
    EXPECT_EQ(q.bd_id, 1u);
    EXPECT_EQ(q.repeat_count, 0u);
    EXPECT_TRUE(q.issue_token);
}

TEST(ControlGolden, Npu2BurstLengthWord) {
    ShimBd writebd;  // (a): burst 512, d1 fields zero
    writebd.burst_length = kShimBurst512;
    EXPECT_EQ(encode_shim_bd(writebd)[4], golden::npu2_burst512_word4);

    ShimBdPattern in;  // (b): [1,2,2,8] sizes, [0,16,1,1] strides, burst 64 (encoding 0)
    in.sizes = {8, 2, 2};
    in.strides = {1, 1, 16};
    ShimBdOrError b = shim_bd_from_pattern(in);
    ASSERT_TRUE(b.ok()) << b.error;
    b.bd.burst_length = 0;
    EXPECT_EQ(encode_shim_bd(b.bd)[4], golden::npu2_burst64_d1wrap2_word4);

    ShimBdPattern out;  // (c): linear 32 words, default burst (512 on npu2)
    out.sizes = {32, 1, 1};
    ShimBdOrError c = shim_bd_from_pattern(out);
    ASSERT_TRUE(c.ok()) << c.error;
    EXPECT_EQ(encode_shim_bd(c.bd)[4], golden::npu2_burst512_word4);
}
