// The add design run as an NPU runs it: the instruction stream built on the host from aie/add/dataflow.json
// (runtime/rows-sequence.h), executed by the simulator's DMA interpreter with the design's core
// program calling the aie/add kernels. Every output against the IEEE sum (and the core's safe product)
// computed here, the bytes the interpreter moved against the stream's own traffic figures, and shapes
// the design cannot take refused before anything runs.
#include "core-fp32-reference.h"
#include "kernel-loop-promises.h"
#include "ops/add/add-invocation.h"
#include "runtime/rows-sequence.h"
#include "ops/add/sim-add.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-stream.h"
#include "sim/binary-rows.h"
#include "runtime/design-registry.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {

using namespace xdna;

struct Case {
    int64_t rows, cols, stride;
    bool    b_row, multiply;
};

// Runs one add through the stream engine; y starts as 777 everywhere, so a value the stream writes past
// a row (or a row it misses) shows.
std::vector<float> run_stream(const Case & c, const std::vector<float> & a, const std::vector<float> & b, StreamContexts & ctx,
                              Status & st, bool & refused) {
    const size_t n = static_cast<size_t>(c.rows * c.stride);
    xdna_test::HostBuffer ab(n * 4), bb(n * 4), yb(n * 4);
    std::memcpy(ab.host_ptr(), a.data(), n * 4);
    std::memcpy(bb.host_ptr(), b.data(), n * 4);
    std::vector<float> y(n, 777.0f);
    std::memcpy(yb.host_ptr(), y.data(), n * 4);
    AddInvocation r;
    r.p = {c.rows, c.cols, c.stride, c.b_row ? 0 : c.stride, c.stride, c.multiply};
    r.a = {&ab, 0};
    r.b = {&bb, 0};
    r.y = {&yb, 0};
    ThreadPool pool(2);
    st = sim_run_adds_stream({to_invocation(r)}, pool, ctx, &refused);
    std::memcpy(y.data(), yb.host_ptr(), n * 4);
    return y;
}

}  // namespace

// Rows over 1 to 8 columns, blocks of more than one step per column, strided rows, a shared b row, ADD
// and MUL, tiles 64 to 512: every value is the IEEE sum (the core's safe product for MUL), every value
// past a row untouched.
TEST(AddStream, EveryOutputThroughTheDesignsDataMovement) {
    StreamContexts ctx;
    const Case cases[] = {
        {1, 4096, 4096, false, false},   // a decode token's residual: 4 groups of 2 x 512 over 4 columns
        {3, 1280, 1320, false, false},   // tile 128 (a group of 2 x 256 does not divide 1280): 2 segments x 3 rows
        {9, 2048, 2048, true, true},     // MUL by a shared row, 8 columns, one with two rows
        {2100, 256, 264, false, false},  // 263 rows in column 0: two steps
        {40, 768, 768, true, false},     // tile 128: 768 = 3 groups of 2 x 128
        {2, 896, 896, false, false},     // tile 64: Qwen2.5-0.5B's rows, 7 groups of 2 x 64
        {1, 14336, 14336, false, true},  // one long row over all 8 columns (14 groups of 2 x 512)
        {3, 3584, 3600, true, false},    // 3 rows in segments over 6 columns (7 groups of 2 x 256: 4 + 3)
    };
    for (const Case & c : cases) {
        SCOPED_TRACE(std::to_string(c.rows) + " x " + std::to_string(c.cols) + (c.b_row ? " b row" : "") + (c.multiply ? " mul" : ""));
        const size_t n = static_cast<size_t>(c.rows * c.stride);
        std::vector<float> a = xdna_test::random_floats(n, 4.0f), b = xdna_test::random_floats(n, 2.0f);
        a[0] = std::numeric_limits<float>::infinity();
        b[1] = std::numeric_limits<float>::quiet_NaN();
        Status st;
        bool refused = true;
        const std::vector<float> y = run_stream(c, a, b, ctx, st, refused);
        ASSERT_TRUE(st.ok) << st.message;
        EXPECT_FALSE(refused);
        for (int64_t r = 0; r < c.rows; ++r) {
            for (int64_t i = 0; i < c.stride; ++i) {
                const size_t at = static_cast<size_t>(r * c.stride + i);
                if (i >= c.cols) {
                    ASSERT_EQ(y[at], 777.0f) << "row " << r << " value " << i << ": written past the row";
                    continue;
                }
                const float bv = b[c.b_row ? static_cast<size_t>(i) : at];
                const float want = c.multiply ? xdna_test::safe_mul(a[at], bv) : a[at] + bv;
                if (std::isnan(want)) {
                    ASSERT_TRUE(std::isnan(y[at])) << "row " << r << " value " << i;
                } else {
                    ASSERT_EQ(0, std::memcmp(&want, &y[at], 4)) << "row " << r << " value " << i << ": " << want << " vs " << y[at];
                }
            }
        }
    }
}

// The interpreter moves exactly what the stream says it moves: a and b in, y out, and one kernel call
// per chunk; the busiest core's calls are the RTP word the stream wrote.
TEST(AddStream, MovesTheBytesTheStreamCounts) {
    const DesignRead & design = add_design();
    ASSERT_TRUE(design.ok()) << design.error;
    const DesignDescription & d = design.design;
    for (bool b_row : {false, true}) {
        const int64_t rows = 19, cols = 1536, stride = 1600;
        AddParams q{rows, cols, stride, b_row ? 0 : stride, stride, false};
        const RowsSequence seq = build_rows_sequence(d, add_rows_shape(q));
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.tile, 256);  // 1536 = 3 groups of 2 x 256; a group of 2 x 512 does not divide it
        EXPECT_EQ(seq.traffic.columns_used, 8);
        EXPECT_EQ(seq.traffic.of("a"), static_cast<uint64_t>(rows * cols * 4));
        EXPECT_EQ(seq.traffic.of("b"), static_cast<uint64_t>(rows * cols * 4));  // a shared row is read again per row
        EXPECT_EQ(seq.traffic.of("y"), static_cast<uint64_t>(rows * cols * 4));
        EXPECT_EQ(seq.traffic.calls_per_core, 3 * 3);  // column 0: 3 of the 19 rows, 3 groups each
        const size_t n = static_cast<size_t>(rows * stride);
        std::vector<float> a = xdna_test::random_floats(n, 1.0f), b = xdna_test::random_floats(n, 1.0f), y(n, 0.0f);
        std::vector<DmaArgument> args(3);
        args[d.operand_arg("a")] = {reinterpret_cast<uint8_t *>(a.data()), n * 4};
        args[d.operand_arg("b")] = {reinterpret_cast<uint8_t *>(b.data()), n * 4};
        args[d.operand_arg("y")] = {reinterpret_cast<uint8_t *>(y.data()), n * 4};
        LoadedDesign loaded;
        const DmaRun run = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""}, add_core_roles(d, seq.tile),
                                             seq.words.data(), seq.words.size(), args, nullptr, loaded);
        ASSERT_TRUE(run.ok()) << run.error;
        EXPECT_EQ(run.stats.mm2s_bytes, seq.traffic.read);
        EXPECT_EQ(run.stats.s2mm_bytes, seq.traffic.written);
        EXPECT_EQ(run.stats.kernel_calls, static_cast<uint64_t>(rows * cols / 256));
        // The same stream again on the loaded design: the cores meet it at their barrier.
        const DmaRun again = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""}, add_core_roles(d, seq.tile),
                                               seq.words.data(), seq.words.size(), args, nullptr, loaded);
        ASSERT_TRUE(again.ok()) << again.error;
        // On another tile's xclbin its objects are other sizes: the cores never finish what the stream sets.
        LoadedDesign other;
        const DmaRun wrong = run_design_stream(d, XclbinId{seq.family, 128, seq.layout, ""}, add_core_roles(d, 128),
                                               seq.words.data(), seq.words.size(), args, nullptr, other);
        EXPECT_FALSE(wrong.ok());
    }
}

// A row no tile's group of 4 chunks divides, and operands shorter than the rows, are refused before
// anything runs: the outputs are as they were.
TEST(AddStream, RefusesWhatTheDesignCannotTake) {
    StreamContexts ctx;
    const Case odd{2, 96, 96, false, false};  // no group of 2 chunks of 64 or more divides 96
    const size_t n = 2 * 96;
    const std::vector<float> a = xdna_test::random_floats(n, 1.0f), b = xdna_test::random_floats(n, 1.0f);
    Status st;
    bool refused = false;
    const std::vector<float> y = run_stream(odd, a, b, ctx, st, refused);
    EXPECT_FALSE(st.ok);
    EXPECT_TRUE(refused);
    EXPECT_NE(st.message.find("a row of 96 values is not a whole number of groups of 2 chunks"), std::string::npos) << st.message;
    for (float v : y) {
        ASSERT_EQ(v, 777.0f);
    }
    const DesignDescription & d = add_design().design;
    const RowsSequence narrow = build_rows_sequence(d, add_rows_shape({4, 512, 256, 512, 512, false}));
    EXPECT_FALSE(narrow.ok());
    EXPECT_NE(narrow.error.find("a's row stride 256 floats"), std::string::npos) << narrow.error;
}

// The timing model charges what the stream moves and what its busiest core executes: a decode token's
// residual (one row of 4096: 4 groups of 2 chunks of 512) is four columns' 8 cores, one call of 512
// values each, 2 x 16 KB in and 16 KB out; a shared b row is charged once per row, as the stream reads it.
TEST(AddStream, TheTimingModelChargesTheStreamsTraffic) {
    AddInvocation r;
    xdna_test::HostBuffer buf(4);
    r.a = r.b = r.y = {&buf, 0};
    r.p = {1, 4096, 4096, 4096, 4096, false};
    ModelShape s = add_model_shape(to_invocation(r));
    EXPECT_EQ(s.kind_columns, 4);
    EXPECT_EQ(s.kind_cores, 8);
    ASSERT_EQ(s.n_core_calls, 1);
    EXPECT_DOUBLE_EQ(s.core_calls[0].count, 1.0);
    EXPECT_DOUBLE_EQ(s.activation_bytes, 2 * 16384.0);
    EXPECT_DOUBLE_EQ(s.out_bytes, 16384.0);
    r.p = {512, 4096, 4096, 0, 4096, true};
    s = add_model_shape(to_invocation(r));
    EXPECT_EQ(s.kind_columns, 8);
    EXPECT_DOUBLE_EQ(s.core_calls[0].count, 64 * 4.0);  // 64 rows per column, 4 chunks of each per core
    EXPECT_DOUBLE_EQ(s.activation_bytes, 2 * 512 * 16384.0);
}

// One long row spreads over the array: a row of 14336 values (14 groups of 2 x 512) takes all 8
// columns, 2 groups at most each; 3 rows of it take 2 segments each over 6 columns.
TEST(AddStream, ALongRowSpreadsOverTheColumns) {
    const DesignDescription & d = add_design().design;
    const RowsSequence one = build_rows_sequence(d, add_rows_shape({1, 14336, 14336, 14336, 14336, false}));
    ASSERT_TRUE(one.ok()) << one.error;
    EXPECT_EQ(one.tile, 512);
    EXPECT_EQ(one.traffic.columns_used, 8);
    EXPECT_EQ(one.traffic.calls_per_core, 2);
    const RowsSequence three = build_rows_sequence(d, add_rows_shape({3, 14336, 14336, 14336, 14336, false}));
    ASSERT_TRUE(three.ok()) << three.error;
    EXPECT_EQ(three.traffic.columns_used, 6);
    EXPECT_EQ(three.traffic.calls_per_core, 7);  // 14 groups in segments of 7
}

// The rows kernels' loop promises hold for every call the designs make: each promise is at most the
// trips of the smallest tile its design's description has, and of the fewest values the kernel mode calls
// it on (add's kBinaryMinCall; glu's 32, one trip: its smallest tile takes a row of 128 over 4 core rows).
TEST(AddStream, LoopPromisesHoldForEveryTileTheDesignsHave) {
    const struct {
        const char *              design;
        std::vector<const char *> sources;
        int                       engine_min_call;
    } designs[] = {{"add", {"add/kernels/add.cc", "add/kernels/mul.cc"}, kBinaryMinCall}, {"glu", {"glu/kernels/swiglu.cc"}, kBinaryLanes}};
    for (const auto & d : designs) {
        int smallest = 1 << 20;
        for (const DesignDescription::KernelStack & k : built_in_design(d.design).design.kernel_stacks) {
            smallest = std::min(smallest, k.tile_n);
        }
        ASSERT_GE(smallest, d.engine_min_call) << d.design;
        for (const char * source : d.sources) {
            const std::vector<xdna_test::LoopPromise> promises = xdna_test::kernel_loop_promises(source);
            ASSERT_FALSE(promises.empty()) << source;
            for (const xdna_test::LoopPromise & p : promises) {
                EXPECT_LE(p.trips, d.engine_min_call / kBinaryLanes) << source << ": " << p.loop;
                EXPECT_LE(p.trips, smallest / kBinaryLanes) << source << ": " << p.loop;
            }
        }
    }
}

