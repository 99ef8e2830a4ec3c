// Random streams and BDs survive encode -> decode unchanged; the BD words agree with an independent
// field table written from aie-rt's AIE2P register definitions (driver/src/global/xaie2pgbl_params.h at
// 3640b761ded1: NOC_MODULE_DMA_BD0_<word>_<FIELD>_LSB / _WIDTH).
#include "control-test-util.h"
#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <array>
#include <random>

using namespace xdna::control;
using xdna_test::rng;
using xdna_test::test_seed;

namespace {

uint32_t bits(uint32_t width) { return uint32_t(rng()() & (width == 32 ? 0xFFFFFFFFu : ((1u << width) - 1))); }

ControlOp random_op() {
    switch (rng()() % 7) {
    case 0: return Write32{bits(32), bits(32)};
    case 1: {
        std::vector<uint32_t> w(1 + rng()() % 12);
        for (auto & x : w) x = bits(32);
        return BlockWrite{bits(32), w, bits(16)};
    }
    case 2: return MaskWrite32{bits(32), bits(32), bits(32)};
    case 3: return AddressPatch{bits(32), bits(8), (uint64_t(bits(32)) << 32) | bits(32)};
    case 4: return Sync{bits(8), bits(8), bits(1), bits(8), bits(8), bits(8)};
    case 5: return Preempt{uint8_t(bits(8))};
    default: return LoadPdi{uint16_t(bits(16)), bits(32), (uint64_t(bits(32)) << 32) | bits(32)};
    }
}

}  // namespace

TEST(ControlRoundTrip, RandomStreams) {
    for (int trial = 0; trial < 500; ++trial) {
        ControlStream s;
        s.header.dev_gen = (rng()() & 1) ? 4 : 3;
        s.header.cols = uint8_t(bits(8));
        s.header.rows = uint8_t(bits(8));
        s.header.mem_tile_rows = uint8_t(bits(8));
        const size_t n = rng()() % 20;
        for (size_t i = 0; i < n; ++i) s.ops.push_back(random_op());
        const std::vector<uint32_t> w = encode(s);
        ASSERT_EQ(w[2], n) << "seed " << test_seed();
        ASSERT_EQ(w[3], w.size() * 4) << "seed " << test_seed();
        Decoded d = decode(w.data(), w.size());
        ASSERT_TRUE(d.ok()) << d.error << " (seed " << test_seed() << ")";
        ASSERT_TRUE(d.stream.header == s.header) << "seed " << test_seed();
        ASSERT_EQ(d.stream.ops.size(), n) << "seed " << test_seed();
        for (size_t i = 0; i < n; ++i)
            ASSERT_TRUE(control_test::same_op(d.stream.ops[i], s.ops[i])) << "op " << i << " " << describe(s.ops[i]) << " seed " << test_seed();
    }
}

TEST(ControlRoundTrip, FieldThatDoesNotFitIsRefusedNotTruncated) {
    ControlStream s;
    s.ops = {Write32{1, 2}, Sync{256, 0, 0, 0, 1, 1}};
    EXPECT_NE(validate(s).find("op 1: sync column 256 exceeds 8 bits"), std::string::npos) << validate(s);
    EXPECT_THROW(encode(s), std::invalid_argument);
    s.ops = {BlockWrite{0x1D000, {}, 0}};
    EXPECT_NE(validate(s).find("carries no words"), std::string::npos) << validate(s);
    s.ops = {Sync{0, 0, 2, 0, 1, 1}};
    EXPECT_NE(validate(s).find("direction 2"), std::string::npos) << validate(s);
    s.ops = {AddressPatch{0x1D004, 300, 0}};
    EXPECT_NE(validate(s).find("argument index 300"), std::string::npos) << validate(s);
}

namespace {

// aie-rt's AIE2P shim BD fields: word, lsb, width. Written from the register header, independently of
// shim-bd.cpp (which packs with its own code); the test packs random fields with this table.
struct FieldSpec {
    const char * name;
    int word, lsb, width;
};
const FieldSpec kSpec[] = {
    {"buffer_length", 0, 0, 32},     {"base_address_low", 1, 2, 30},  {"enable_packet", 2, 30, 1},
    {"out_of_order_id", 2, 24, 6},   {"packet_id", 2, 19, 5},         {"packet_type", 2, 16, 3},
    {"base_address_high", 2, 0, 16}, {"secure_access", 3, 30, 1},     {"d0_wrap", 3, 20, 10},
    {"d0_stepsize", 3, 0, 20},       {"burst_length", 4, 30, 2},      {"d1_wrap", 4, 20, 10},
    {"d1_stepsize", 4, 0, 20},       {"smid", 5, 28, 4},              {"axcache", 5, 24, 4},
    {"axqos", 5, 20, 4},             {"d2_stepsize", 5, 0, 20},       {"iteration_current", 6, 26, 6},
    {"iteration_wrap", 6, 20, 6},    {"iteration_stepsize", 6, 0, 20}, {"tlast_suppress", 7, 31, 1},
    {"next_bd", 7, 27, 4},           {"use_next_bd", 7, 26, 1},       {"valid_bd", 7, 25, 1},
    {"lock_rel_value", 7, 18, 7},    {"lock_rel_id", 7, 13, 4},       {"lock_acq_enable", 7, 12, 1},
    {"lock_acq_value", 7, 5, 7},     {"lock_acq_id", 7, 0, 4},
};

}  // namespace

TEST(ShimBdRoundTrip, RandomFieldsMatchTheRegisterTable) {
    for (int trial = 0; trial < 2000; ++trial) {
        std::array<uint32_t, std::size(kSpec)> v{};
        for (size_t i = 0; i < std::size(kSpec); ++i) v[i] = bits(kSpec[i].width);
        auto val = [&](const char * name) {
            for (size_t i = 0; i < std::size(kSpec); ++i)
                if (std::string(kSpec[i].name) == name) return v[i];
            ADD_FAILURE() << name;
            return 0u;
        };
        auto s7 = [](uint32_t x) { return (x & 0x40) ? int32_t(x) - 128 : int32_t(x); };
        ShimBd bd;
        bd.buffer_length = val("buffer_length");
        bd.base_address = uint64_t(val("base_address_high")) << 32 | uint64_t(val("base_address_low")) << 2;
        bd.enable_packet = val("enable_packet");
        bd.out_of_order_id = val("out_of_order_id");
        bd.packet_id = val("packet_id");
        bd.packet_type = val("packet_type");
        bd.secure_access = val("secure_access");
        bd.d0_wrap = val("d0_wrap");
        bd.d0_stepsize = val("d0_stepsize");
        bd.burst_length = val("burst_length");
        bd.d1_wrap = val("d1_wrap");
        bd.d1_stepsize = val("d1_stepsize");
        bd.smid = val("smid");
        bd.axcache = val("axcache");
        bd.axqos = val("axqos");
        bd.d2_stepsize = val("d2_stepsize");
        bd.iteration_current = val("iteration_current");
        bd.iteration_wrap = val("iteration_wrap");
        bd.iteration_stepsize = val("iteration_stepsize");
        bd.tlast_suppress = val("tlast_suppress");
        bd.next_bd = val("next_bd");
        bd.use_next_bd = val("use_next_bd");
        bd.valid_bd = val("valid_bd");
        bd.lock_rel_value = s7(val("lock_rel_value"));
        bd.lock_rel_id = val("lock_rel_id");
        bd.lock_acq_enable = val("lock_acq_enable");
        bd.lock_acq_value = s7(val("lock_acq_value"));
        bd.lock_acq_id = val("lock_acq_id");

        std::array<uint32_t, 8> want{};
        for (size_t i = 0; i < std::size(kSpec); ++i)
            want[kSpec[i].word] |= (kSpec[i].width == 32 ? v[i] : (v[i] & ((1u << kSpec[i].width) - 1))) << kSpec[i].lsb;

        const auto got = encode_shim_bd(bd);
        for (int w = 0; w < 8; ++w) ASSERT_EQ(got[w], want[w]) << "word " << w << " seed " << test_seed();
        ASSERT_TRUE(decode_shim_bd(got) == bd) << "seed " << test_seed();
        if (bd.buffer_length != 0 || !bd.valid_bd) {
            ASSERT_FALSE(check_shim_bd(bd).has_value()) << *check_shim_bd(bd) << " seed " << test_seed();
        }
    }
}

TEST(ShimBdRoundTrip, QueuePush) {
    for (int trial = 0; trial < 1000; ++trial) {
        QueuePush q{bits(4), bits(8), bool(bits(1))};
        const uint32_t w = encode_queue_push(q);
        // Independent: the task-queue register fields (START_BD_ID [3:0], REPEAT_COUNT [23:16],
        // ENABLE_TOKEN_ISSUE [31]).
        ASSERT_EQ(w, q.bd_id | q.repeat_count << 16 | uint32_t(q.issue_token) << 31) << "seed " << test_seed();
        const QueuePush r = decode_queue_push(w);
        ASSERT_EQ(r.bd_id, q.bd_id);
        ASSERT_EQ(r.repeat_count, q.repeat_count);
        ASSERT_EQ(r.issue_token, q.issue_token);
    }
}

TEST(ShimBdAddresses, ColumnsBdsAndQueues) {
    // aie-rt: NOC_MODULE_DMA_BD0_0 0x1D000, BD1_0 0x1D020, BD15_0 0x1D1E0; S2MM_0/1_TASK_QUEUE 0x1D204 /
    // 0x1D20C, MM2S_0/1_TASK_QUEUE 0x1D214 / 0x1D21C; column at bit 25.
    EXPECT_EQ(shim_bd_address(0, 1), 0x1D020u);
    EXPECT_EQ(shim_bd_address(0, 15), 0x1D1E0u);
    EXPECT_EQ(shim_bd_address(3, 2), (3u << 25) | 0x1D040u);
    EXPECT_EQ(shim_queue_address(0, 0, 0), 0x1D204u);
    EXPECT_EQ(shim_queue_address(0, 0, 1), 0x1D20Cu);
    EXPECT_EQ(shim_queue_address(0, 1, 0), 0x1D214u);
    EXPECT_EQ(shim_queue_address(7, 1, 1), (7u << 25) | 0x1D21Cu);
}
