// The per-slot instruction counts the host aie_api records (aie_host::op_counts()).
#include "aie_api_test_support.h"

#include <thread>

using aie_host::mmul_shape;
using aie_host::OpCounts;

TEST_F(AieApi, CountsOfASmallMmulSequence) {
    alignas(64) int8 a[64] = {}, b[64] = {}, c[64];
    aie::mmul<8, 8, 8, int8, int8> mm;
    const auto va = aie::load_v<64>(a);  // 2 loads of 512 bits
    const auto vb = aie::load_v<64>(b);
    mm.mac(va, vb);                      // 3 mmul instructions, vector slot
    mm.mac(va, vb);
    mm.mac(va, vb);
    aie::store_v(c, mm.to_vector<int8>(4));  // 1 srs (64 lanes acc32 -> int8) + 1 store, store slot
    const OpCounts & n = aie_host::op_counts();
    EXPECT_EQ(n.load, 2u);
    EXPECT_EQ(n.vector, 3u);
    EXPECT_EQ(n.store, 2u);
    EXPECT_EQ(n.move, 0u);
    EXPECT_EQ(n.unpack, 0u);
    EXPECT_EQ(n.scalar, 0u);
    EXPECT_EQ(n.mmul_calls(mmul_shape::i8xi8_8x8x8), 3u);
    EXPECT_EQ(n.mmul_macs, 3u * 512u);
}

TEST_F(AieApi, CountsOfInt8xInt4MmulAndUnpack) {
    alignas(64) int8 a[64] = {};
    alignas(64) uint8_t b[128] = {};
    const auto vb = aie::load_v<256>(reinterpret_cast<const int4 *>(b));  // 1024 bits: 2 loads
    aie::mmul<4, 16, 16, int8, int4> mm;
    mm.mac(aie::load_v<64>(a), vb);
    EXPECT_EQ(aie_host::op_counts().load, 3u);
    EXPECT_EQ(aie_host::op_counts().vector, 1u);
    EXPECT_EQ(aie_host::op_counts().unpack, 0u);  // the mmul takes int4 operands as they are
    EXPECT_EQ(aie_host::op_counts().mmul_macs, 1024u);
    EXPECT_EQ(aie_host::op_counts().mmul_calls(mmul_shape::i8xi4_4x16x16), 1u);
    // Unpacking 256 int4 to int8: 4 VUNPACKs of 64 lanes, counted apart from loads.
    const aie::vector<int8, 256> u = aie::unpack(vb);
    (void)u;
    EXPECT_EQ(aie_host::op_counts().unpack, 4u);
    EXPECT_EQ(aie_host::op_counts().load, 3u);
}

TEST_F(AieApi, CountsOfPaddedInt8x4x8x8) {
    aie::mmul<4, 8, 8, int8, int8> mm;
    mm.mul(aie::vector<int8, 32>(), aie::vector<int8, 64>());
    EXPECT_EQ(aie_host::op_counts().vector, 1u);
    EXPECT_EQ(aie_host::op_counts().mmul_macs, 512u);  // the 8x8x8 instruction, half of A unused
    EXPECT_EQ(aie_host::op_counts().mmul_calls(mmul_shape::i8xi8_4x8x8), 1u);
}

TEST_F(AieApi, CountsOfTheBf16MmulEmulation) {
    aie::mmul<4, 8, 8, bfloat16, bfloat16> mm;
    mm.mac(aie::vector<bfloat16, 32>(), aie::vector<bfloat16, 64>());
    EXPECT_EQ(aie_host::op_counts().vector, 8u);  // 8 mac_elem_32
    EXPECT_EQ(aie_host::op_counts().move, 33u);   // 1 transpose + 8 x (extract, broadcast, shuffle, broadcast)
    EXPECT_EQ(aie_host::op_counts().mmul_macs, 256u);
    aie::mmul<8, 8, 8, bfloat16, bfloat16> big;
    big.mac(aie::vector<bfloat16, 64>(), aie::vector<bfloat16, 64>());
    EXPECT_EQ(aie_host::op_counts().vector, 24u);
    EXPECT_EQ(aie_host::op_counts().mmul_calls(mmul_shape::bf16_8x8x8), 1u);
}

TEST_F(AieApi, CountsOfTheFp32MmulEmulation) {
    aie::mmul<4, 8, 4, float, float> mm;
    mm.mul(aie::vector<float, 32>(), aie::vector<float, 32>());
    // mul_elem_16 then seven mac_elem_16, all safe (aie2p_vmult.h): 4 residual msc + 9 products +
    // 8 adds = 21 vector instructions, 22 with the accumulator add; 6 bf16 conversions each (store);
    // moves per emulation: 2 float -> accumulator, the bf16 ones, 6 inserts of 16-lane parts; plus
    // the 26 shuffles and broadcasts of the 4x8x4 layout.
    EXPECT_EQ(aie_host::op_counts().vector, 21u + 7u * 22u);
    EXPECT_EQ(aie_host::op_counts().store, 8u * 6u);
    EXPECT_EQ(aie_host::op_counts().move, 8u * 9u + 26u);
    EXPECT_EQ(aie_host::op_counts().mmul_macs, 8u * 9u * 32u);
    aie_host::reset_op_counts();
    mm.mac(aie::vector<float, 32>(), aie::vector<float, 32>());  // eight mac_elem_16
    EXPECT_EQ(aie_host::op_counts().vector, 8u * 22u);
}

TEST_F(AieApi, CountsOfTheFp32ElementwiseEmulation) {
    using aie_host::op_counts;
    // One safe emulation per 32 lanes (aie_api mul_acc32_fp.hpp: muls_per_mul = 32), so a 16-lane
    // multiply costs what a 32-lane one does: 21 vector (22 for mac / msc), 6 bf16 conversions in the
    // store slot, 5 moves (two 1024-bit operands into accumulators, the bf16 ones).
    const aie::vector<float, 16> h;
    const auto m16 = aie::mul(h, h);
    (void)m16;
    EXPECT_EQ(op_counts().vector, 21u);
    EXPECT_EQ(op_counts().store, 6u);
    EXPECT_EQ(op_counts().move, 5u);
    aie_host::reset_op_counts();
    const aie::vector<float, 32> w;
    auto acc = aie::mul(w, w);
    EXPECT_EQ(op_counts().vector, 21u);
    acc = aie::mac(acc, w, w);
    EXPECT_EQ(op_counts().vector, 21u + 22u);
    acc = aie::msc(acc, w, 2.0f);  // plus one broadcast
    EXPECT_EQ(op_counts().vector, 21u + 22u + 22u);
    EXPECT_EQ(op_counts().move, 3u * 5u + 1u);
    aie_host::reset_op_counts();
    const auto m64 = aie::mul(aie::vector<float, 64>(), aie::vector<float, 64>());  // two emulations
    (void)m64;
    EXPECT_EQ(op_counts().vector, 2u * 21u);
    EXPECT_EQ(op_counts().store, 2u * 6u);
    // The 32-lane fast intrinsic: 4 msc + 1 mul + 8 MACs.
    aie_host::reset_op_counts();
    const auto f = mul_elem_32_accuracy_fast(w, w);
    (void)f;
    EXPECT_EQ(op_counts().vector, 13u);
    EXPECT_EQ(op_counts().store, 6u);
    EXPECT_EQ(op_counts().move, 5u);
    // Float vector adds: both operands into accumulators, one accumulator add per 64 lanes, the
    // result out (aie_api detail/aie2/add.hpp, AIE2P: native_elems = 64).
    aie_host::reset_op_counts();
    const auto s = aie::add(w, w);
    (void)s;
    EXPECT_EQ(op_counts().vector, 1u);
    EXPECT_EQ(op_counts().move, 2u * 2u + 2u);
}

TEST_F(AieApi, CountsOfElementwiseOperations) {
    const aie::vector<int16, 64> h;
    const aie::vector<int8, 64> q;
    auto acc = aie::mul(h, h);                   // 1 mac_elem_64
    EXPECT_EQ(aie_host::op_counts().vector, 1u);
    acc = aie::mac(acc, q, q);                   // both int8 operands unpacked (2 x 2), 1 multiply
    EXPECT_EQ(aie_host::op_counts().unpack, 4u);
    EXPECT_EQ(aie_host::op_counts().vector, 2u);
    acc = aie::add(acc, acc);                    // 64 x 32-bit lanes: one accumulator add
    EXPECT_EQ(aie_host::op_counts().vector, 3u);
    const auto s = aie::add(aie::vector<int32, 16>(), aie::vector<int32, 16>());  // move slot
    (void)s;
    EXPECT_EQ(aie_host::op_counts().move, 1u);
    const auto z = aie::interleave_zip(q, q, 1);  // two 512-bit outputs
    (void)z;
    EXPECT_EQ(aie_host::op_counts().move, 3u);
    const auto v = acc.to_vector<int16>(3);       // 2 srs of 32 lanes
    (void)v;
    EXPECT_EQ(aie_host::op_counts().store, 2u);
    const auto m = aie::mul(aie::vector<int32, 32>(), aie::vector<int16, 32>());  // 32 lanes of 32 x 16
    (void)m;
    EXPECT_EQ(aie_host::op_counts().vector, 4u);
    const auto f = aie::mul(aie::vector<float, 16>(), aie::vector<float, 16>());  // one safe fp32 emulation
    (void)f;
    EXPECT_EQ(aie_host::op_counts().vector, 4u + 21u);
}

TEST_F(AieApi, CountsAreThreadLocalAndAggregate) {
    aie::mmul<8, 8, 8, int8, int8> mm;
    mm.mul(aie::vector<int8, 64>(), aie::vector<int8, 64>());
    OpCounts other;
    std::thread t([&] {
        aie_host::reset_op_counts();
        aie::mmul<8, 8, 8, int8, int8> m2;
        m2.mul(aie::vector<int8, 64>(), aie::vector<int8, 64>());
        m2.mac(aie::vector<int8, 64>(), aie::vector<int8, 64>());
        other = aie_host::op_counts();
    });
    t.join();
    EXPECT_EQ(aie_host::op_counts().vector, 1u);  // untouched by the other thread
    EXPECT_EQ(other.vector, 2u);
    OpCounts total = aie_host::op_counts();
    total += other;
    EXPECT_EQ(total.vector, 3u);
    EXPECT_EQ(total.mmul_calls(mmul_shape::i8xi8_8x8x8), 3u);
    EXPECT_EQ(total.mmul_macs, 3u * 512u);
    const OpCounts diff = total - other;
    EXPECT_EQ(diff, aie_host::op_counts());
    total.reset();
    EXPECT_EQ(total, OpCounts{});
    EXPECT_STREQ(aie_host::mmul_shape_name(mmul_shape::i8xi4_4x16x16), "int8xint4 4x16x16");
}

// Pipelining hints (host/config.hpp): chess_prepare_for_pipelining is empty under Peano and counts
// nothing; AIE_PREPARE_FOR_PIPELINING, written before a loop, counts one entry of a pipelined loop
// however often the loop turns, and leaves the loop's own control flow (break, continue) alone.
TEST_F(AieApi, PipelinedLoopsAreCountedWhereTheKernelAsks) {
    int body = 0;
    for (int i = 0; i < 5; ++i) chess_prepare_for_pipelining { ++body; }
    EXPECT_EQ(aie_host::op_counts().pipelined_loops, 0u);
    for (int j = 0; j < 3; ++j) {
        AIE_PREPARE_FOR_PIPELINING AIE_LOOP_MIN_ITERATION_COUNT(4)
        for (int i = 0; i < 6; ++i) {
            if (i == 1) continue;
            if (i == 4) break;
            ++body;
        }
    }
    EXPECT_EQ(body, 5 + 3 * 3);
    EXPECT_EQ(aie_host::op_counts().pipelined_loops, 3u);
    AIE_PREPARE_FOR_PIPELINING
    for (int i = 0; i < 0; ++i) ++body;  // entered, never iterated: still one loop's fill and drain at most
    EXPECT_EQ(aie_host::op_counts().pipelined_loops, 4u);
}
