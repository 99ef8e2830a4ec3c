// GGML_XDNA_SIM_EXEC=stream gives the kernels mode's bits: the instruction stream built on the host
// (runtime/matmul-sequence.h), decoded and executed by the DMA interpreter (sim/dma-interpreter.h),
// moves the bytes through shim, memory tile and core buffers to the same core kernel code. The
// reference is the kernels mode, which indexes the packed operands directly (no stream, no DMA model).
// Random invocations: every family, both token tiles, partial 4-row groups, ragged N, output strides,
// two K chunks. Then bad input: limits refused with their reason, DMA patterns outside an argument and
// corrupted streams reported as errors.
#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"
#include "contracts/tile-codec.h"
#include "contracts/weight-layout.h"
#include "control/shim-bd.h"
#include "runtime/argument-places.h"
#include "runtime/matmul-sequence.h"
#include "runtime/thread-pool.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-device.h"
#include "sim/sim-matmul.h"
#include "sim/timing-model.h"
#include "sim-operands.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace xdna;

uint64_t seed() { return xdna_test::test_seed(); }

using xdna_test::HostBuffer;
using Operands = xdna_test::SimOperands;

Operands make_operands(const MatmulContract & c, int tn, int64_t m, int64_t k_tiles, int64_t n, std::mt19937_64 & g) {
    return xdna_test::make_sim_operands(c, tn, m, k_tiles, n, g);
}

struct Case {
    const char * contract;
    int          tile_n;
    int64_t      m, k_tiles, n, extra_stride;
    const char * layout = "";  // the xclbin's layout (design-description.h); "": the default (m_split)
};

class StreamExec : public ::testing::TestWithParam<Case> {};

TEST_P(StreamExec, StreamGivesTheKernelsBits) {
    const Case cs = GetParam();
    const MatmulContract * c = nullptr;
    for (const auto & x : all_matmul_contracts()) {
        if (std::string(x.name) == cs.contract) c = &x;
    }
    ASSERT_NE(c, nullptr);
    SCOPED_TRACE(testing::Message() << cs.contract << " n" << cs.tile_n << " m " << cs.m << " layout '" << cs.layout
                                    << "' seed " << seed());
    std::mt19937_64 g(seed() ^ std::hash<std::string>{}(cs.contract) ^ (cs.m * 131 + cs.n));
    Operands o = make_operands(*c, cs.tile_n, cs.m, cs.k_tiles, cs.n, g);
    MatmulInvocation inv = o.inv;
    inv.out_row_stride = cs.m + cs.extra_stride;
    const size_t out_floats = (cs.n - 1) * inv.out_row_stride + cs.m;
    HostBuffer out_k(out_floats * 4), out_s(out_floats * 4);
    // Sentinel between the valid outputs: stream mode must leave it as the kernels mode does.
    for (size_t i = 0; i < out_floats; ++i) {
        const float s = -7.25f;
        std::memcpy(static_cast<float *>(out_k.host_ptr()) + i, &s, 4);
        std::memcpy(static_cast<float *>(out_s.host_ptr()) + i, &s, 4);
    }
    ThreadPool pool(2);
    inv.out = {&out_k, 0};
    sim_run_matmul(inv, pool, SimExec::kernels);
    inv.out = {&out_s, 0};
    const Status st = sim_run_matmuls_stream({to_invocation(inv)}, pool, {cs.layout});
    ASSERT_TRUE(st.ok) << st.message;
    const auto * a = static_cast<const float *>(out_k.host_ptr());
    const auto * b = static_cast<const float *>(out_s.host_ptr());
    size_t nonzero = 0;
    for (size_t i = 0; i < out_floats; ++i) {
        ASSERT_EQ(0, std::memcmp(&a[i], &b[i], 4)) << "output " << i << ": kernels " << a[i] << " stream " << b[i];
        nonzero += a[i] != 0.0f && a[i] != -7.25f;
    }
    EXPECT_GT(nonzero, static_cast<size_t>(cs.m * cs.n / 2));  // real values were compared
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, StreamExec,
    ::testing::Values(
        // m: partial last group (5 row tiles + 7 rows -> 2 groups, 2 padded), ragged n.
        Case{"mm_q4_K_a8", 4, 64 * 5 + 7, 3, 3, 0}, Case{"mm_q6_K_a8", 32, 64 * 5 + 7, 2, 37, 0},
        Case{"mm_q5_K_a8", 4, 64 * 4, 2, 4, 0},      // whole groups and tiles: written in place
        Case{"mm_q4_0_a8", 4, 64 * 9, 2, 2, 5},      // a row stride wider than M
        Case{"mm_q8_0_a8", 32, 64 * 8 * 4 + 64, 1, 33, 0},  // 9 groups: 2 rounds over 8 columns
        Case{"mm_q2_K_a8", 4, 100, 2, 1, 0}, Case{"mm_q3_K_a8", 4, 64 * 4, 1, 4, 0},
        Case{"mm_f16_f16", 4, 70, 2, 2, 0}, Case{"mm_bf16_bf16", 4, 64, 1, 4, 0},
        Case{"mm_f32_f32", 32, 64 * 4, 2, 32, 0},
        Case{"mm_q4_1_a8", 4, 64 * 4, 70, 1, 0},  // 70 K tiles: two K chunks (64 + 6), one task each
        // n_split (W broadcast down a column, A split: each core its own token tile of a group of 4):
        // ragged M and N, 9 row tiles (2 rounds, the second on one column), two K chunks, a row stride
        // wider than M, every family.
        Case{"mm_q4_K_a8", 32, 64 * 5 + 7, 2, 4 * 32 - 5, 0, "n_split"}, Case{"mm_q6_K_a8", 4, 64 * 9, 3, 30, 0, "n_split"},
        Case{"mm_q8_0_a8", 4, 64 * 3 + 1, 70, 16, 3, "n_split"}, Case{"mm_q3_K_a8", 32, 64, 1, 128, 0, "n_split"},
        Case{"mm_bf16_bf16", 4, 130, 2, 32, 0, "n_split"}, Case{"mm_f32_f32", 32, 64 * 2, 2, 8 * 32, 0, "n_split"},
        // n_shared (n_split with A read once per step for the array and fanned out to every column): 9
        // row tiles (the second round's 7 idle columns recompute the last row tile and write the same
        // values to the same place), 3 row tiles (5 duplicates in the only round), 16 row tiles (whole
        // rounds), two K chunks, a row stride wider than M.
        Case{"mm_q4_K_a8", 32, 64 * 8 + 7, 2, 4 * 32 - 5, 0, "n_shared"}, Case{"mm_q6_K_a8", 4, 64 * 3, 3, 30, 2, "n_shared"},
        Case{"mm_q8_0_a8", 4, 64 * 16, 70, 16, 0, "n_shared"}, Case{"mm_f32_f32", 32, 64 * 2, 2, 8 * 32, 0, "n_shared"},
        // Token tile 64 (Q4_K, Q5_K bfp16): A in two K halves, the kernel called once per half with the
        // same W. Every layout; in n_split 33 K tiles are two K chunks (its strided A BD iterates over K
        // tiles x halves: 32 per chunk); ragged M and N.
        Case{"mm_q4_K_bfp16", 64, 64 * 3 + 5, 2, 4 * 64 - 5, 0, "n_shared"},
        Case{"mm_q5_K_bfp16", 64, 64 * 2, 33, 4 * 64, 3, "n_split"},
        Case{"mm_q4_K_bfp16", 64, 64 + 9, 33, 70, 0, "m_split"},
        // n_rows (n_shared with core row r's A from column r's shim and memory tile): the same shapes as
        // n_shared's above, and token tile 64 with A in K halves and two K chunks.
        Case{"mm_q4_K_a8", 32, 64 * 8 + 7, 2, 4 * 32 - 5, 0, "n_rows"}, Case{"mm_q6_K_a8", 4, 64 * 3, 3, 30, 2, "n_rows"},
        Case{"mm_q8_0_a8", 4, 64 * 16, 70, 16, 0, "n_rows"}, Case{"mm_f32_f32", 32, 64 * 2, 2, 8 * 32, 0, "n_rows"},
        Case{"mm_q5_K_bfp16", 64, 64 * 9 + 3, 33, 4 * 64 - 9, 0, "n_rows"}),
    [](const auto & info) {
        return std::string(info.param.contract) + "_n" + std::to_string(info.param.tile_n) + "_m" + std::to_string(info.param.m) +
               "_k" + std::to_string(info.param.k_tiles) + "_n" + std::to_string(info.param.n) + "_s" +
               std::to_string(info.param.extra_stride) + (*info.param.layout ? std::string("_") + info.param.layout : "");
    });

// --- Tail room: the stream reads the weight's own memory ------------------------------------------

// A buffer that shows the first `size` bytes of another one (a weight buffer cut short).
class CutBuffer final : public DeviceBuffer {
public:
    CutBuffer(DeviceBuffer & of, size_t size) : of_(of), size_(size) {}
    void * host_ptr() override { return of_.host_ptr(); }
    size_t size() const override { return size_; }
    void   sync_to_device(size_t, size_t) override {}
    void   sync_from_device(size_t, size_t) override {}

private:
    DeviceBuffer & of_;
    size_t         size_;
};

// Packed weights carry the tail room their instruction stream reads (contracts/weight-layout.h): the
// last expert of a stack of 3 matrices of M = 67 rows (2 row tiles of a group of 4), in a buffer of
// exactly the packed tensor's size, runs in stream mode on that buffer and gives the kernels mode's
// bits, for every contract. The same buffer 4 bytes (one DMA word) short is an error naming the sizes:
// the stream never reads a copy.
TEST(StreamTailRoom, LastExpertOfAStackRunsOnTheTensorsOwnBytesForEveryContract) {
    ThreadPool pool(2);
    for (const MatmulContract & c : all_matmul_contracts()) {
        if (c.use != ContractUse::any) continue;  // a prefill alternative: tested with its own reference
        SCOPED_TRACE(testing::Message() << c.name << " seed " << seed());
        std::mt19937_64 g(seed() ^ std::hash<std::string>{}(c.name));
        const int64_t m = 67, mats = 3, k_tiles = 2, n = 3;
        const int64_t k = k_tiles * c.tile_k;
        const int64_t ne[4] = {k, m, mats, 1};
        WeightLayout L;
        ASSERT_TRUE(make_weight_layout(c.weight_type, ne, L));
        const std::vector<uint8_t> rows = xdna_test::random_rows(c.weight_type, k, m * mats, g);
        HostBuffer w(L.total_bytes);
        std::memset(w.host_ptr(), 0xA5, L.total_bytes);  // garbage where the padding must be cleared
        clear_weight_padding(L, w.host_ptr());
        pack_weight_rows(L, rows.data(), 0, m * mats, w.host_ptr());

        Operands o = make_operands(c, 4, m, k_tiles, n, g);  // the activations (and one matrix's geometry)
        MatmulInvocation inv = o.inv;
        inv.weights = {&w, static_cast<size_t>(mats - 1) * L.mat_bytes};
        const size_t out_floats = (n - 1) * inv.out_row_stride + m;
        HostBuffer out_k(out_floats * 4), out_s(out_floats * 4);
        std::memset(out_k.host_ptr(), 0, out_floats * 4);
        std::memset(out_s.host_ptr(), 0, out_floats * 4);
        inv.out = {&out_k, 0};
        sim_run_matmul(inv, pool, SimExec::kernels);
        inv.out = {&out_s, 0};
        const Status st = sim_run_matmuls_stream({to_invocation(inv)}, pool);
        ASSERT_TRUE(st.ok) << st.message;
        ASSERT_EQ(0, std::memcmp(out_k.host_ptr(), out_s.host_ptr(), out_floats * 4));
        size_t nonzero = 0;
        for (size_t i = 0; i < out_floats; ++i) nonzero += static_cast<const float *>(out_s.host_ptr())[i] != 0.0f;
        EXPECT_GT(nonzero, static_cast<size_t>(m * n / 2));  // real values were compared

        CutBuffer short_w(w, L.total_bytes - 4);
        inv.weights = {&short_w, static_cast<size_t>(mats - 1) * L.mat_bytes};
        const Status cut = sim_run_matmuls_stream({to_invocation(inv)}, pool);
        ASSERT_FALSE(cut.ok);
        EXPECT_NE(cut.message.find("the weights hold " + std::to_string(L.stream_bytes() - 4) + " bytes"), std::string::npos)
            << cut.message;
        EXPECT_NE(cut.message.find("the stream reads " + std::to_string(L.stream_bytes())), std::string::npos) << cut.message;
    }
}

// --- Bad input -------------------------------------------------------------------------------------

MatmulSequenceShape q4k_shape() {
    MatmulSequenceShape s;
    s.contract = "mm_q4_K_a8";
    s.tile_n = 4;
    s.m_tiles = 8;
    s.n_tiles = 1;
    s.k_tiles = 2;
    s.out_row_stride = 512;
    s.weight_tile_bytes = 9216;
    s.act_tile_bytes = 1216;
    return s;
}

TEST(StreamLimits, StrideTooWideForItsBdFieldIsRefusedWithTheReason) {
    MatmulSequenceShape s = q4k_shape();
    s.out_row_stride = (1 << 20) + 1;  // the d1 step field holds at most 2^20 words
    const MatmulSequence seq = build_matmul_sequence(matmul_design().design, s);
    ASSERT_FALSE(seq.ok());
    EXPECT_NE(seq.error.find("C drain"), std::string::npos) << seq.error;
    EXPECT_NE(seq.error.find("stride"), std::string::npos) << seq.error;
    EXPECT_TRUE(seq.words.empty());
}

TEST(StreamLimits, KBeyondTheBdSlotsIsRefused) {
    MatmulSequenceShape s = q4k_shape();
    s.k_tiles = 3 * 64 + 1;
    const MatmulSequence seq = build_matmul_sequence(matmul_design().design, s);
    ASSERT_FALSE(seq.ok());
    EXPECT_NE(seq.error.find("chunks"), std::string::npos) << seq.error;
}

TEST(StreamLimits, WrongActivationTileForTheFamilyIsRefused) {
    MatmulSequenceShape s = q4k_shape();
    s.act_tile_bytes = 1280;  // a legacy-family A tile on the kquant xclbin
    EXPECT_FALSE(build_matmul_sequence(matmul_design().design, s).ok());
}

struct Args {
    std::vector<uint8_t> w, a, out, params;
    std::vector<DmaArgument> list() { return {{w.data(), w.size()}, {a.data(), a.size()}, {out.data(), out.size()}, {params.data(), params.size()}}; }
};

Args args_for(const MatmulSequence & seq) {
    Args a;
    a.w.assign(seq.weights_bytes, 0);
    a.a.assign(seq.activations_bytes, 0);
    a.out.assign(seq.out_bytes, 0);
    a.params.assign(48, 0);
    return a;
}

TEST(StreamInterpreter, ZeroOperandsRunCleanlyAndMoveTheExpectedBytes) {
    const MatmulSequence seq = build_matmul_sequence(matmul_design().design, q4k_shape());
    ASSERT_TRUE(seq.ok()) << seq.error;
    Args a = args_for(seq);
    std::fill(a.out.begin(), a.out.end(), 0xFF);
    const DmaRun r = run_control_stream(matmul_design().design, seq.family, 4, seq.words.data(), seq.words.size(), a.list(), nullptr);
    ASSERT_TRUE(r.ok()) << r.error;
    // 2 groups x 4 row tiles x 2 K tiles, each window 13440 bytes (the family's largest W tile);
    // A once per active column; C: 2 groups x 4 x TN x 64 floats, all of it written (zeros).
    EXPECT_EQ(r.stats.mm2s_bytes, 2u * 4 * 2 * 13440 + 2u * 2 * 1216);
    EXPECT_EQ(r.stats.s2mm_bytes, 2u * 4 * 4 * 64 * 4);
    EXPECT_EQ(r.stats.kernel_calls, 2u * 4 * 2);
    for (uint8_t b : a.out) ASSERT_EQ(b, 0);
}

// One source of truth for the traffic: the bytes the builder counts from its BDs (what the timing model
// charges, sim/design-traffic.h) are the bytes the interpreter moves running the words, per direction,
// and the figures-only build counts the same as the whole stream. Random shapes of every family and
// both token tiles, including partial rounds and two K chunks; the bytes are also restated here from
// the design's documented schedule (aie/matmul/README.md): per step and active column, the 4 windows of
// W per K tile, one A tile per K tile, and the 4 C tiles.
TEST(StreamInterpreter, MovesExactlyTheBytesTheBuilderCounts) {
    const DesignDescription & d = matmul_design().design;
    std::mt19937_64 g(seed());
    SCOPED_TRACE(testing::Message() << "seed " << seed());
    const char * contracts[] = {"mm_q4_K_a8", "mm_q6_K_a8", "mm_q4_0_a8", "mm_q3_K_a8", "mm_bf16_bf16", "mm_f32_f32"};
    for (int trial = 0; trial < 24; ++trial) {
        const MatmulContract * c = nullptr;
        const char * name = contracts[trial % 6];
        const bool n_split = trial >= 12;          // a token group per step (n_split, n_shared)
        const bool shared = n_split && trial % 3 == 0;  // n_shared: A once per step for the whole array
        for (const auto & x : all_matmul_contracts()) {
            if (std::string(x.name) == name) c = &x;
        }
        ASSERT_NE(c, nullptr);
        MatmulSequenceShape s;
        s.contract = name;
        s.layout = shared ? "n_shared" : n_split ? "n_split" : "m_split";
        s.tile_n = trial % 2 ? 32 : 4;
        s.m_tiles = 1 + static_cast<int64_t>(g() % 40);
        s.n_tiles = n_split ? 4 * (1 + static_cast<int64_t>(g() % 2)) : 1 + static_cast<int64_t>(g() % 3);
        s.k_tiles = trial % 12 == 5 ? 66 : 1 + static_cast<int64_t>(g() % 3);
        s.out_row_stride = (s.m_tiles + 3) / 4 * 4 * 64;
        const int64_t ne[4] = {c->tile_k, c->tile_m, 1, 1};
        WeightLayout L;
        ASSERT_TRUE(make_weight_layout(c->weight_type, ne, L));
        s.weight_tile_bytes = L.tile_bytes;
        s.act_tile_bytes = activation_tile_bytes(*c, s.tile_n);
        s.exact = trial % 4 == 1;  // the contract's own xclbin: W objects of its tile
        SCOPED_TRACE(testing::Message() << name << " n" << s.tile_n << " tiles " << s.m_tiles << "x" << s.n_tiles << "x" << s.k_tiles
                                        << " " << s.layout << (s.exact ? " exact" : ""));
        const MatmulSequence seq = build_matmul_sequence(d, s);
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.layout, s.layout);
        const MatmulSequence fig = build_matmul_sequence(d, s, SequenceOutput::figures);
        ASSERT_TRUE(fig.ok()) << fig.error;
        EXPECT_TRUE(fig.words.empty());
        Args a = args_for(seq);
        const DmaRun r = run_control_stream(d, seq.family, s.tile_n, seq.words.data(), seq.words.size(), a.list(), nullptr, seq.layout,
                                            s.exact ? s.contract : std::string());
        ASSERT_TRUE(r.ok()) << r.error;
        const SequenceTraffic & t = seq.traffic;
        if (s.exact) {
            EXPECT_EQ(seq.buffers.w_obj, s.weight_tile_bytes);  // no window past the tile
        }
        EXPECT_EQ(r.stats.mm2s_bytes, t.w_read + t.a_read);
        EXPECT_EQ(r.stats.s2mm_bytes, t.c_written);
        EXPECT_EQ(fig.traffic.w_read, t.w_read);
        EXPECT_EQ(fig.traffic.a_read, t.a_read);
        EXPECT_EQ(fig.traffic.c_written, t.c_written);
        EXPECT_EQ(fig.traffic.column_w, t.column_w);
        // The documented schedules (aie/matmul/README.md). m_split: groups q of 4 row tiles on column q % 8,
        // a step per (round, token tile): 4 windows and one A tile per K tile, 4 C tiles. n_split: row
        // tile m on column m % 8, a step per (round, group of 4 token tiles): one window and 4 A tiles
        // per K tile, 4 C tiles. n_shared: as n_split on all 8 columns in every round (the columns past
        // the last row tile recompute it), and the 4 A tiles per K tile once per round for the array.
        const uint64_t W = seq.buffers.w_obj, A = s.act_tile_bytes, tn = s.tile_n;
        const uint64_t units = n_split ? s.m_tiles : (s.m_tiles + 3) / 4;
        const uint64_t token_steps = n_split ? s.n_tiles / 4 : s.n_tiles;
        const uint64_t rounds = (units + 7) / 8;
        uint64_t col_rounds = 0;
        for (uint64_t col = 0; col < 8; ++col) col_rounds += shared ? rounds : col < units ? (units - col + 7) / 8 : 0;
        EXPECT_EQ(col_rounds, shared ? rounds * 8 : units);
        const uint64_t steps = col_rounds * token_steps;  // column steps, over all columns
        EXPECT_EQ(t.w_read, steps * s.k_tiles * (n_split ? 1 : 4) * W);
        EXPECT_EQ(t.a_read, (shared ? rounds * token_steps : steps) * s.k_tiles * (n_split ? 4 : 1) * A);
        if (shared) {
            EXPECT_EQ(t.column_a[0], t.a_read);  // column 0's shim streams all of it
        }
        EXPECT_EQ(t.c_written, steps * 4 * tn * 64 * 4);
        EXPECT_EQ(t.w_tiles, steps * s.k_tiles * (n_split ? 1 : 4));
        EXPECT_EQ(r.stats.kernel_calls, steps * 4 * s.k_tiles);
    }
    // n_split takes N in whole groups of 4 token tiles only: refused with the reason otherwise.
    MatmulSequenceShape s = q4k_shape();
    s.layout = "n_split";
    s.n_tiles = 6;
    const MatmulSequence seq = build_matmul_sequence(d, s);
    ASSERT_FALSE(seq.ok());
    EXPECT_NE(seq.error.find("groups of 4"), std::string::npos) << seq.error;
    s.layout = "k_split";
    EXPECT_NE(build_matmul_sequence(d, s).error.find("no layout"), std::string::npos);
    // n_shared fans A out to every column of the array: a stream on fewer columns is refused.
    s.layout = "n_shared";
    s.n_tiles = 4;
    s.columns = 4;
    const MatmulSequence four = build_matmul_sequence(d, s);
    ASSERT_FALSE(four.ok());
    EXPECT_NE(four.error.find("shares A by all 8 columns"), std::string::npos) << four.error;
}

// Token tile 64: per K tile the cores take two A objects (the K halves) with one W object, and the A
// transfer of a token group iterates over K tiles x halves. The bytes moved and the kernel calls, as the
// builder counts them and as the schedule gives them.
TEST(StreamInterpreter, AInKHalvesMovesEachHalfOnceAndCallsTheKernelPerHalf) {
    const DesignDescription & d = matmul_design().design;
    for (const char * layout : {"m_split", "n_split", "n_shared"}) {
        for (const int64_t k_tiles : {int64_t{3}, int64_t{40}}) {
            const MatmulContract * c = matmul_contract_named("mm_q4_K_bfp16");
            ASSERT_NE(c, nullptr);
            MatmulSequenceShape s;
            s.contract = c->name;
            s.layout = layout;
            s.tile_n = 64;
            s.m_tiles = 9;
            s.n_tiles = std::string(layout) == "m_split" ? 3 : 8;
            s.k_tiles = k_tiles;
            s.out_row_stride = 12 * 64;
            const int64_t ne[4] = {c->tile_k, c->tile_m, 1, 1};
            WeightLayout L;
            ASSERT_TRUE(make_weight_layout(c->weight_type, ne, L));
            s.weight_tile_bytes = L.tile_bytes;
            s.act_tile_bytes = activation_tile_bytes(*c, 64);
            SCOPED_TRACE(testing::Message() << layout << " k_tiles " << k_tiles);
            ASSERT_EQ(s.act_tile_bytes, 2u * activation_object_bytes(*c, 64));
            const MatmulSequence seq = build_matmul_sequence(d, s);
            ASSERT_TRUE(seq.ok()) << seq.error;
            EXPECT_EQ(seq.buffers.a_k_parts, 2);
            EXPECT_EQ(seq.buffers.a_obj, activation_object_bytes(*c, 64));
            Args a = args_for(seq);
            const DmaRun r = run_control_stream(d, seq.family, 64, seq.words.data(), seq.words.size(), a.list(), nullptr, layout);
            ASSERT_TRUE(r.ok()) << r.error;
            const SequenceTraffic & t = seq.traffic;
            EXPECT_EQ(r.stats.mm2s_bytes, t.w_read + t.a_read);
            EXPECT_EQ(r.stats.s2mm_bytes, t.c_written);
            const bool n_split = std::string(layout) != "m_split", shared = std::string(layout) == "n_shared";
            const uint64_t units = n_split ? s.m_tiles : (s.m_tiles + 3) / 4, rounds = (units + 7) / 8;
            const uint64_t token_steps = n_split ? s.n_tiles / 4 : s.n_tiles;
            uint64_t col_rounds = 0;
            for (uint64_t col = 0; col < 8; ++col) col_rounds += shared ? rounds : col < units ? (units - col + 7) / 8 : 0;
            const uint64_t steps = col_rounds * token_steps;
            // Each half of each K tile once per step (n_shared: once per round for the array); W once per
            // K tile; C once per output tile; two kernel calls per K tile on every core.
            EXPECT_EQ(t.a_read, (shared ? rounds * token_steps : steps) * s.k_tiles * (n_split ? 4 : 1) * s.act_tile_bytes);
            EXPECT_EQ(t.w_read, steps * s.k_tiles * (n_split ? 1 : 4) * seq.buffers.w_obj);
            EXPECT_EQ(t.c_written, steps * 4 * 64 * 64 * 4);
            EXPECT_EQ(r.stats.kernel_calls, steps * 4 * s.k_tiles * 2);
        }
    }
    // K of 112 tiles (a 70B-shaped down projection): a linear A run (m_split, n_rows) chunks K by the
    // BD's 64 iterations, n_shared's strided A by 32 K tiles x 2 halves, so 4 chunks, more than the
    // design's BD slots: refused with the reason, where n_rows takes it.
    {
        const MatmulContract * c = matmul_contract_named("mm_q4_K_bfp16");
        MatmulSequenceShape k = q4k_shape();
        k.contract = c->name;
        k.tile_n = 64;
        k.m_tiles = 8;
        k.n_tiles = 4;
        k.k_tiles = 112;
        k.weight_tile_bytes = 9216;
        k.act_tile_bytes = activation_tile_bytes(*c, 64);
        for (const char * layout : {"m_split", "n_rows"}) {
            k.layout = layout;
            EXPECT_TRUE(build_matmul_sequence(d, k, SequenceOutput::figures).ok()) << layout;
        }
        k.layout = "n_shared";
        const MatmulSequence refused = build_matmul_sequence(d, k, SequenceOutput::figures);
        ASSERT_FALSE(refused.ok());
        EXPECT_NE(refused.error.find("2 A parts"), std::string::npos) << refused.error;
    }
    // Q6_K has no 64-token program: its stream is refused, naming why.
    MatmulSequenceShape s = q4k_shape();
    s.contract = "mm_q6_K_bfp16";
    s.tile_n = 64;
    const MatmulSequence q6 = build_matmul_sequence(d, s);
    ASSERT_FALSE(q6.ok());
    EXPECT_NE(q6.error.find("token tile 64"), std::string::npos) << q6.error;
}

// An n_split stream (A on every active column) of 16 row tiles and `n_tiles` token tiles, run on the xclbin
// of `layout`: how a stream of another layout meets an xclbin that shares A.
DmaRun n_split_stream_on(const char * layout, int64_t n_tiles) {
    const DesignDescription & d = matmul_design().design;
    MatmulSequenceShape s = q4k_shape();
    s.layout = "n_split";
    s.m_tiles = 16;
    s.n_tiles = n_tiles;
    s.out_row_stride = 16 * 64;
    const MatmulSequence seq = build_matmul_sequence(d, s);
    EXPECT_TRUE(seq.ok()) << seq.error;
    Args a = args_for(seq);
    return run_control_stream(d, seq.family, s.tile_n, seq.words.data(), seq.words.size(), a.list(), nullptr, layout);
}

// n_shared streams A through column 0's shim only: an n_split stream (A on every active column) run on
// the n_shared xclbin is an error naming the column, not A objects piling up in a memory tile nobody reads.
TEST(StreamInterpreter, SharedActivationsComeThroughColumnZeroOnly) {
    const DesignDescription & d = matmul_design().design;
    const DmaRun wrong = n_split_stream_on("n_shared", 4);
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.error.find("column 1"), std::string::npos) << wrong.error;
    EXPECT_NE(wrong.error.find("through column 0 only"), std::string::npos) << wrong.error;
    MatmulSequenceShape s = q4k_shape();
    s.m_tiles = 16;
    s.n_tiles = 4;
    s.out_row_stride = 16 * 64;
    s.layout = "n_shared";
    const MatmulSequence shared = build_matmul_sequence(d, s);
    ASSERT_TRUE(shared.ok()) << shared.error;
    Args b = args_for(shared);
    const DmaRun right = run_control_stream(d, shared.family, s.tile_n, shared.words.data(), shared.words.size(), b.list(), nullptr, "n_shared");
    EXPECT_TRUE(right.ok()) << right.error;
}

// n_rows streams core row r's A through column r's shim only: an n_split stream (A on every active
// column) run on the n_rows xclbin is an error naming column 4; the n_rows stream moves the array's A
// once per step, a quarter on each of columns 0-3, nothing on the others (its bits: StreamExec's n_rows cases).
TEST(StreamInterpreter, RowActivationsComeThroughTheirOwnColumns) {
    const DesignDescription & d = matmul_design().design;
    const DmaRun wrong = n_split_stream_on("n_rows", 8);
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.error.find("column 4"), std::string::npos) << wrong.error;
    EXPECT_NE(wrong.error.find("through columns 0 to 3 only"), std::string::npos) << wrong.error;
    MatmulSequenceShape s = q4k_shape();
    s.m_tiles = 16;
    s.n_tiles = 8;
    s.out_row_stride = 16 * 64;
    s.layout = "n_rows";
    const MatmulSequence rows = build_matmul_sequence(d, s);
    ASSERT_TRUE(rows.ok()) << rows.error;
    s.layout = "n_shared";
    const MatmulSequence shared = build_matmul_sequence(d, s);
    ASSERT_TRUE(shared.ok()) << shared.error;
    const SequenceTraffic & t = rows.traffic;
    EXPECT_EQ(t.a_read, shared.traffic.a_read);  // the same A, once per step for the array
    for (int c = 0; c < 8; ++c) {
        EXPECT_EQ(t.column_a[c], c < 4 ? t.a_read / 4 : 0u) << "column " << c;
    }
    EXPECT_EQ(shared.traffic.column_a[0], shared.traffic.a_read);  // n_shared: all of it on column 0's channel
    Args b = args_for(rows);
    const DmaRun r1 = run_control_stream(d, rows.family, s.tile_n, rows.words.data(), rows.words.size(), b.list(), nullptr, "n_rows");
    ASSERT_TRUE(r1.ok()) << r1.error;
    EXPECT_EQ(r1.stats.mm2s_bytes, t.w_read + t.a_read);
}

// A queue push with a repeat count runs its BD repeat + 1 times: the A fill of 2 K tiles rewritten as
// a 1-tile BD pushed with repeat 1 moves the same bytes in twice the BD passes; with repeat 2 the A
// stream is one tile too long and the run ends with an error, not silently.
TEST(StreamInterpreter, QueuePushRepeatRunsTheBdAgain) {
    const DesignDescription & d = matmul_design().design;
    const MatmulSequence seq = build_matmul_sequence(d, q4k_shape());
    ASSERT_TRUE(seq.ok()) << seq.error;
    auto with_repeat = [&](uint32_t repeat) {
        control::ControlStream s = seq.stream;
        for (auto & op : s.ops) {
            if (auto * b = std::get_if<control::BlockWrite>(&op)) {
                const uint32_t off = b->address & 0xFFFFF;
                if (((b->address >> 20) & 0x1F) == 0 && (off == 0x1D000 + 0x20 * d.bd_slots[0].a[0] || off == 0x1D000 + 0x20 * d.bd_slots[1].a[0])) {
                    std::array<uint32_t, 8> w{};
                    std::copy(b->words.begin(), b->words.end(), w.begin());
                    control::ShimBd bd = control::decode_shim_bd(w);
                    bd.buffer_length /= 2;  // one A tile of the two
                    const auto e = control::encode_shim_bd(bd);
                    b->words.assign(e.begin(), e.end());
                }
            } else if (auto * w = std::get_if<control::Write32>(&op)) {
                if (w->address == control::shim_queue_address(w->address >> 25, 1, 1)) {
                    control::QueuePush q = control::decode_queue_push(w->value);
                    q.repeat_count = repeat;
                    w->value = control::encode_queue_push(q);
                }
            }
        }
        const std::vector<uint32_t> words = control::encode(s);
        Args a = args_for(seq);
        return run_control_stream(d, seq.family, 4, words.data(), words.size(), a.list(), nullptr);
    };
    Args a = args_for(seq);
    const DmaRun base = run_control_stream(d, seq.family, 4, seq.words.data(), seq.words.size(), a.list(), nullptr);
    ASSERT_TRUE(base.ok()) << base.error;
    const DmaRun once = with_repeat(1);
    ASSERT_TRUE(once.ok()) << once.error;
    EXPECT_EQ(once.stats.mm2s_bytes, base.stats.mm2s_bytes);
    EXPECT_EQ(once.stats.bds_run, base.stats.bds_run + 2);  // 2 active columns, one A push each
    const DmaRun twice = with_repeat(2);
    EXPECT_FALSE(twice.ok());
}

// A BD with an iteration dimension moves one iteration per execution, as the shim DMA advances
// iteration_current after each (control/shim-bd.h): the W fill of q4k_shape's 2 K tiles is one BD of 2
// iterations, pushed with repeat 1. Pushed once, as if the BD walked every iteration in one pass, only the
// first K tile arrives, and the cores wait for the second until the sync can never complete.
TEST(StreamInterpreter, AnIteratedBdMovesOneIterationPerExecution) {
    const DesignDescription & d = matmul_design().design;
    const MatmulSequence seq = build_matmul_sequence(d, q4k_shape());
    ASSERT_TRUE(seq.ok()) << seq.error;
    control::ControlStream s = seq.stream;
    int w_pushes = 0;
    for (auto & op : s.ops) {
        if (auto * w = std::get_if<control::Write32>(&op)) {
            if (w->address == control::shim_queue_address(w->address >> 25, 1, 0)) {
                control::QueuePush q = control::decode_queue_push(w->value);
                EXPECT_EQ(q.repeat_count, 1u) << "the 2-iteration W BD runs twice";
                q.repeat_count = 0;
                w->value = control::encode_queue_push(q);
                ++w_pushes;
            }
        }
    }
    ASSERT_GT(w_pushes, 0);
    const std::vector<uint32_t> words = control::encode(s);
    Args a = args_for(seq);
    const DmaRun once = run_control_stream(d, seq.family, 4, words.data(), words.size(), a.list(), nullptr);
    ASSERT_FALSE(once.ok());
    EXPECT_NE(once.error.find("can never complete"), std::string::npos) << once.error;
    Args b = args_for(seq);
    const DmaRun built = run_control_stream(d, seq.family, 4, seq.words.data(), seq.words.size(), b.list(), nullptr);
    ASSERT_TRUE(built.ok()) << built.error;
    EXPECT_EQ(built.stats.mm2s_bytes, seq.traffic.w_read + seq.traffic.a_read);
}

// A channel's task queue holds 4 starts: a fifth push while 4 tasks are queued and none awaited is an
// error naming the channel, never a transfer the hardware might drop.
TEST(StreamInterpreter, AFifthTaskOnAFullQueueIsRefused) {
    const DesignDescription & d = matmul_design().design;
    const MatmulSequence seq = build_matmul_sequence(d, q4k_shape());
    ASSERT_TRUE(seq.ok()) << seq.error;
    auto with_pushes = [&](int extra) {
        control::ControlStream s;
        bool done = false;
        for (const auto & op : seq.stream.ops) {
            s.ops.push_back(op);
            const auto * w = std::get_if<control::Write32>(&op);
            if (!done && w != nullptr && w->address == control::shim_queue_address(0, 1, 0)) {
                for (int i = 0; i < extra; ++i) {
                    s.ops.push_back(op);  // the same W task again: its BD stays unchanged
                }
                done = true;
            }
        }
        s.header = seq.stream.header;
        const std::vector<uint32_t> words = control::encode(s);
        Args a = args_for(seq);
        return run_control_stream(d, seq.family, 4, words.data(), words.size(), a.list(), nullptr);
    };
    const DmaRun five = with_pushes(4);
    ASSERT_FALSE(five.ok());
    EXPECT_NE(five.error.find("task queue"), std::string::npos) << five.error;
    // Four fit the queue; the extra K tiles then overrun the cores' objects and the run fails otherwise.
    const DmaRun four = with_pushes(3);
    ASSERT_FALSE(four.ok());
    EXPECT_EQ(four.error.find("task queue"), std::string::npos) << four.error;
}

TEST(StreamInterpreter, PatternOutsideItsArgumentNamesTheBd) {
    const MatmulSequence seq = build_matmul_sequence(matmul_design().design, q4k_shape());
    ASSERT_TRUE(seq.ok()) << seq.error;
    Args a = args_for(seq);
    a.w.resize(a.w.size() - 4);  // one word short of the last W window
    const DmaRun r = run_control_stream(matmul_design().design, seq.family, 4, seq.words.data(), seq.words.size(), a.list(), nullptr);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error.find("shim BD"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("argument 0"), std::string::npos) << r.error;
    Args b = args_for(seq);
    b.out.resize(b.out.size() - 4);
    const DmaRun r2 = run_control_stream(matmul_design().design, seq.family, 4, seq.words.data(), seq.words.size(), b.list(), nullptr);
    ASSERT_FALSE(r2.ok());
    EXPECT_NE(r2.error.find("writes bytes"), std::string::npos) << r2.error;
}

// The firmware translates the host addresses of the first 5 buffer arguments only: a BD patched to a
// sixth is refused, never run on an address the NPU cannot reach. Placing the stream's arguments (as a
// design with more operands than 5 does at submission) moves each patch to its argument at its offset:
// the weights read through another argument 256 bytes in move the same bytes to the same output.
TEST(StreamInterpreter, ArgumentsPastTheFirmwaresFiveAreRefusedAndPlacedOnesRunTheSame) {
    const MatmulSequence seq = build_matmul_sequence(matmul_design().design, q4k_shape());
    ASSERT_TRUE(seq.ok()) << seq.error;
    Args a = args_for(seq);
    for (size_t i = 0; i < a.w.size(); ++i) a.w[i] = static_cast<uint8_t>(i * 7 + 3);
    for (size_t i = 0; i < a.a.size(); ++i) a.a[i] = static_cast<uint8_t>(i % 5 == 0 ? 0x3c : i * 13 + 1);
    const DmaRun base = run_control_stream(matmul_design().design, seq.family, 4, seq.words.data(), seq.words.size(), a.list(), nullptr);
    ASSERT_TRUE(base.ok()) << base.error;
    const std::vector<uint8_t> want = a.out;
    ASSERT_NE(std::count(want.begin(), want.end(), 0), static_cast<std::ptrdiff_t>(want.size())) << "the output should not be zeros";

    std::vector<uint32_t> sixth;
    std::string err;
    ASSERT_TRUE(place_arguments(seq.words, {{5, 0}, {1, 0}, {2, 0}, {3, 0}}, sixth, err)) << err;
    std::vector<DmaArgument> six = a.list();
    six.push_back({a.w.data(), a.w.size()});  // argument 4 unused
    six.push_back({a.w.data(), a.w.size()});
    const DmaRun refused = run_control_stream(matmul_design().design, seq.family, 4, sixth.data(), sixth.size(), six, nullptr);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error.find("the firmware translates"), std::string::npos) << refused.error;

    std::vector<uint32_t> moved;
    ASSERT_TRUE(place_arguments(seq.words, {{4, 256}, {1, 0}, {2, 0}, {3, 0}}, moved, err)) << err;
    std::vector<uint8_t> shifted(256, 0xEE);
    shifted.insert(shifted.end(), a.w.begin(), a.w.end());
    std::fill(a.out.begin(), a.out.end(), 0);
    std::vector<DmaArgument> five = a.list();
    five[0] = {nullptr, 0};  // nothing patches argument 0 any more
    five.push_back({shifted.data(), shifted.size()});
    const DmaRun placed = run_control_stream(matmul_design().design, seq.family, 4, moved.data(), moved.size(), five, nullptr);
    ASSERT_TRUE(placed.ok()) << placed.error;
    EXPECT_EQ(placed.stats.mm2s_bytes, base.stats.mm2s_bytes);
    EXPECT_EQ(a.out, want);
    EXPECT_FALSE(place_arguments(seq.words, {{0, 0}}, moved, err));  // a patched argument with no place
}

// No words at all (a null pointer with zero words, and shorter than a header): refused by the decoder.
// The DMA-interpreter fuzzer's first finding was its own harness copying zero words from a null vector
// (corpus/dma-interpreter/short-input.bin keeps that input).
TEST(StreamInterpreter, EmptyStreamIsRefused) {
    const MatmulSequence seq = build_matmul_sequence(matmul_design().design, q4k_shape());
    ASSERT_TRUE(seq.ok()) << seq.error;
    Args a = args_for(seq);
    for (size_t n : {size_t(0), size_t(1)}) {
        const DmaRun r = run_control_stream(matmul_design().design, seq.family, 4, n ? seq.words.data() : nullptr, n, a.list(), nullptr);
        ASSERT_FALSE(r.ok()) << n << " words";
        EXPECT_NE(r.error.find("control stream"), std::string::npos) << r.error;
        EXPECT_EQ(r.stats.mm2s_bytes + r.stats.s2mm_bytes, 0u);
    }
}

TEST(StreamInterpreter, CorruptedStreamsGiveErrorsNotCrashes) {
    const MatmulSequence seq = build_matmul_sequence(matmul_design().design, q4k_shape());
    ASSERT_TRUE(seq.ok()) << seq.error;
    std::mt19937_64 g(seed());
    SCOPED_TRACE(testing::Message() << "seed " << seed());
    // Truncated.
    {
        Args a = args_for(seq);
        const DmaRun r = run_control_stream(matmul_design().design, seq.family, 4, seq.words.data(), seq.words.size() / 2, a.list(), nullptr);
        EXPECT_FALSE(r.ok());
    }
    // The last sync dropped (header counts adjusted by re-encoding): the C drain is never awaited.
    {
        control::ControlStream s = seq.stream;
        s.ops.pop_back();
        const std::vector<uint32_t> words = control::encode(s);
        Args a = args_for(seq);
        const DmaRun r = run_control_stream(matmul_design().design, seq.family, 4, words.data(), words.size(), a.list(), nullptr);
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error.find("awaited"), std::string::npos) << r.error;
    }
    // Random single-word corruptions: an error or a clean run, never a crash or an out-of-range access
    // (the arguments are exactly the sizes the stream needs, so ASan builds catch any overrun).
    int errors = 0;
    for (int trial = 0; trial < 300; ++trial) {
        std::vector<uint32_t> words = seq.words;
        const size_t i = g() % words.size();
        words[i] ^= 1u << (g() % 32);
        Args a = args_for(seq);
        const DmaRun r = run_control_stream(matmul_design().design, seq.family, 4, words.data(), words.size(), a.list(), nullptr);
        errors += r.ok() ? 0 : 1;
    }
    EXPECT_GT(errors, 0);
}

// The layout the timing model finds fastest for a shape is the one the simulator's stream mode runs
// (SimDevice hands the model's choice to the stream builder and the interpreter), with the kernels
// mode's bits: a prefill shape (8 token tiles of 32: W broadcast down the columns, A read once for the
// array, n_shared) and a decode shape (one token tile: m_split) in one batch. The prefill weights (9 row
// tiles) are cut to what n_shared reads: m_split streams whole groups of 4 row tiles (12) and would
// refuse them, so the run passes only in a layout of single row tiles.
TEST(StreamLayouts, SimDeviceRunsTheLayoutTheModelChooses) {
    const MatmulContract & c = *matmul_contract_for(GGML_TYPE_Q4_K);
    std::mt19937_64 g(seed());
    SCOPED_TRACE(testing::Message() << "seed " << seed());
    const NpuPreset & preset = *find_npu_preset("krackan");
    struct One {
        int64_t     m, n;
        int         tn;
        const char * layout;
    };
    const One cases[] = {{64 * 9, 8 * 32 - 3, 32, "n_shared"}, {64 * 9, 1, 4, "m_split"}};
    std::vector<Operands> ops;
    std::vector<std::unique_ptr<HostBuffer>> outs_k, outs_s;
    Batch batch;
    ThreadPool pool(2);
    std::vector<std::unique_ptr<CutBuffer>> cut;
    for (const One & x : cases) {
        ops.push_back(make_operands(c, x.tn, x.m, 2, x.n, g));
        MatmulInvocation inv = ops.back().inv;
        inv.out_row_stride = x.m;
        if (std::string(x.layout) == "n_shared") {
            const size_t window = 13440, tile = inv.weight_tile_bytes;  // the K-quant family's W object
            cut.push_back(std::make_unique<CutBuffer>(*ops.back().w, inv.m_tiles * inv.k_tiles * tile + (window - tile)));
            inv.weights = {cut.back().get(), 0};
        }
        EXPECT_STREQ(TimingModel(preset).invocation(shape_of(inv)).layout, x.layout) << x.n << " tokens";
        const size_t bytes = static_cast<size_t>(x.n * x.m) * 4;
        outs_k.push_back(std::make_unique<HostBuffer>(bytes));
        outs_s.push_back(std::make_unique<HostBuffer>(bytes));
        inv.out = {outs_k.back().get(), 0};
        sim_run_matmul(inv, pool, SimExec::kernels);
        inv.out = {outs_s.back().get(), 0};
        batch.invocations.push_back(to_invocation(inv));
    }
    SimDevice dev(2, preset);
    dev.set_exec(SimExec::stream);
    const Status st = dev.run(batch, std::chrono::milliseconds(60000));
    ASSERT_TRUE(st.ok) << st.message;
    for (size_t i = 0; i < outs_k.size(); ++i) {
        EXPECT_EQ(0, std::memcmp(outs_k[i]->host_ptr(), outs_s[i]->host_ptr(), outs_k[i]->size())) << "invocation " << i;
    }
    // The cut weights in the default layout: refused, naming the bytes the stream would read.
    const Status m_split = sim_run_matmuls_stream({batch.invocations[0]}, pool, {"m_split"});
    EXPECT_FALSE(m_split.ok);
    EXPECT_NE(m_split.message.find("the stream reads"), std::string::npos) << m_split.message;
}

// --- Exact W objects: the contract's own xclbin (design.py --exact, GGML_XDNA_W_OBJECTS=exact) --------

// Sets an environment variable for one test.
struct ScopedEnv {
    std::string name;
    ScopedEnv(const char * n, const char * v) : name(n) { setenv(n, v, 1); }
    ~ScopedEnv() { unsetenv(name.c_str()); }
};

// Stream mode on exact xclbins gives the kernels' bits, and reads W in windows of the tile itself: the
// K-quant family's Q4_K tile is 9216 bytes against the family's 13440-byte object (46 % over-fetch).
TEST(StreamExact, ExactXclbinsGiveTheKernelsBitsAndReadNoWindowPastTheTile) {
    const ScopedEnv exact("GGML_XDNA_W_OBJECTS", "exact");
    std::mt19937_64 g(seed());
    SCOPED_TRACE(testing::Message() << "seed " << seed());
    ThreadPool pool(2);
    for (const char * name : {"mm_q4_K_a8", "mm_q4_0_a8", "mm_q5_K_a8"}) {
        const MatmulContract * c = nullptr;
        for (const auto & x : all_matmul_contracts()) {
            if (std::string(x.name) == name) c = &x;
        }
        ASSERT_NE(c, nullptr);
        for (const char * layout : {"m_split", "n_shared"}) {
            const int tn = std::string(layout) == "m_split" ? 4 : 32;
            const int64_t m = 64 * 9 + 5, n = std::string(layout) == "m_split" ? 3 : 4 * 32 - 7;
            Operands o = make_operands(*c, tn, m, 2, n, g);
            MatmulInvocation inv = o.inv;
            inv.out_row_stride = m;
            HostBuffer out_k(static_cast<size_t>(m * n) * 4), out_s(static_cast<size_t>(m * n) * 4);
            inv.out = {&out_k, 0};
            sim_run_matmul(inv, pool, SimExec::kernels);
            inv.out = {&out_s, 0};
            const Status st = sim_run_matmuls_stream({to_invocation(inv)}, pool, {layout});
            ASSERT_TRUE(st.ok) << name << " " << layout << ": " << st.message;
            EXPECT_EQ(0, std::memcmp(out_k.host_ptr(), out_s.host_ptr(), out_k.size())) << name << " " << layout;
        }
        // The traffic: W windows of the tile (exact) against the family's object.
        MatmulSequenceShape s = q4k_shape();
        s.contract = name;
        const int64_t ne[4] = {c->tile_k, c->tile_m, 1, 1};
        WeightLayout L;
        ASSERT_TRUE(make_weight_layout(c->weight_type, ne, L));
        s.weight_tile_bytes = L.tile_bytes;
        s.act_tile_bytes = activation_tile_bytes(*c, s.tile_n);
        const MatmulSequence family = build_matmul_sequence(matmul_design().design, s);
        s.exact = true;
        const MatmulSequence own = build_matmul_sequence(matmul_design().design, s);
        ASSERT_TRUE(family.ok() && own.ok()) << family.error << own.error;
        EXPECT_EQ(own.traffic.w_read, own.traffic.w_tiles * L.tile_bytes) << name;
        EXPECT_EQ(family.traffic.w_read, family.traffic.w_tiles * family.buffers.w_obj) << name;
        EXPECT_GT(family.buffers.w_obj, L.tile_bytes) << name << ": not the family's largest tile";
        EXPECT_LT(own.weights_bytes, family.weights_bytes) << name << ": no tail room read past the last tile";
    }
}

// An exact xclbin is another xclbin: its stream on the loaded family design, or the family's stream on
// it, is refused; and an exact xclbin links its one contract's kernel, so another contract's stream finds
// no kernel (or no object of its size) there, never a silent run.
TEST(StreamExact, ExactAndFamilyXclbinsAreNotInterchangeable) {
    const DesignDescription & d = matmul_design().design;
    MatmulSequenceShape s = q4k_shape();
    const MatmulSequence family = build_matmul_sequence(d, s);
    s.exact = true;
    const MatmulSequence own = build_matmul_sequence(d, s);
    ASSERT_TRUE(family.ok() && own.ok());
    Args a = args_for(family);
    LoadedDesign loaded;
    ASSERT_TRUE(run_control_stream(d, family.family, 4, family.words.data(), family.words.size(), a.list(), nullptr, loaded).ok());
    Args b = args_for(own);
    const DmaRun wrong = run_control_stream(d, own.family, 4, own.words.data(), own.words.size(), b.list(), nullptr, loaded, "",
                                            "mm_q4_K_a8");
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.error.find("on the loaded design"), std::string::npos) << wrong.error;
    // The Q4_K stream on Q6_K's exact xclbin.
    const DmaRun other = run_control_stream(d, own.family, 4, own.words.data(), own.words.size(), b.list(), nullptr, "", "mm_q6_K_a8");
    EXPECT_FALSE(other.ok());
    // A contract outside the family.
    EXPECT_FALSE(run_control_stream(d, own.family, 4, own.words.data(), own.words.size(), b.list(), nullptr, "", "mm_q4_0_a8").ok());
}

}  // namespace
