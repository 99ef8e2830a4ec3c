// The add design run as an NPU runs it: the instruction stream built on the host from aie/add/dataflow.json
// (ops/add/runtime/add-sequence.h), executed by the simulator's DMA interpreter with the design's core
// program calling the aie/add kernels. Every output against the IEEE sum (and the core's safe product)
// computed here, the bytes the interpreter moved against the stream's own traffic figures, and shapes
// the design cannot take refused before anything runs.
#include "core-fp32-reference.h"
#include "ops/add/add-invocation.h"
#include "ops/add/add-sequence.h"
#include "ops/add/sim-add.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-stream.h"
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
// and MUL, tiles 32 to 512: every value is the IEEE sum (the core's safe product for MUL), every value
// past a row untouched.
TEST(AddStream, EveryOutputThroughTheDesignsDataMovement) {
    StreamContexts ctx;
    const Case cases[] = {
        {1, 4096, 4096, false, false},   // a decode token's residual: one column, tile 512
        {3, 896, 960, false, false},     // 896 = 7 x 128: tile 32 (a group of 4 x 64 does not divide it)
        {9, 2048, 2048, true, true},     // MUL by a shared row, 8 columns, one with two rows
        {2100, 128, 136, false, false},  // 263 rows in column 0: two steps
        {40, 640, 640, true, false},     // tile 32: 640 = 4 x 160
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
        const AddSequence seq = build_add_sequence(d, {rows, cols, stride, b_row ? 0 : stride, stride, false, 0});
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.tile, 128);  // 1536 = 4 x 384: 4 x 128 divides it, 4 x 256 does not
        EXPECT_EQ(seq.traffic.columns_used, 8);
        EXPECT_EQ(seq.traffic.a_read, static_cast<uint64_t>(rows * cols * 4));
        EXPECT_EQ(seq.traffic.b_read, static_cast<uint64_t>(rows * cols * 4));  // a shared row is read again per row
        EXPECT_EQ(seq.traffic.y_written, static_cast<uint64_t>(rows * cols * 4));
        EXPECT_EQ(seq.traffic.calls_per_core, 3 * cols / (4 * 128));  // column 0: 3 of the 19 rows
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
        EXPECT_EQ(run.stats.mm2s_bytes, seq.traffic.a_read + seq.traffic.b_read);
        EXPECT_EQ(run.stats.s2mm_bytes, seq.traffic.y_written);
        EXPECT_EQ(run.stats.kernel_calls, static_cast<uint64_t>(rows * cols / 128));
        // The same stream again on the loaded design: the cores meet it at their barrier.
        const DmaRun again = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""}, add_core_roles(d, seq.tile),
                                               seq.words.data(), seq.words.size(), args, nullptr, loaded);
        ASSERT_TRUE(again.ok()) << again.error;
        // On another tile's xclbin its objects are other sizes: the cores never finish what the stream sets.
        LoadedDesign other;
        const DmaRun wrong = run_design_stream(d, XclbinId{seq.family, 256, seq.layout, ""}, add_core_roles(d, 256),
                                               seq.words.data(), seq.words.size(), args, nullptr, other);
        EXPECT_FALSE(wrong.ok());
    }
}

// A row no tile's group of 4 chunks divides, and operands shorter than the rows, are refused before
// anything runs: the outputs are as they were.
TEST(AddStream, RefusesWhatTheDesignCannotTake) {
    StreamContexts ctx;
    const Case odd{2, 96, 96, false, false};  // 96 = 4 x 24: no tile of 32 or more
    const size_t n = 2 * 96;
    const std::vector<float> a = xdna_test::random_floats(n, 1.0f), b = xdna_test::random_floats(n, 1.0f);
    Status st;
    bool refused = false;
    const std::vector<float> y = run_stream(odd, a, b, ctx, st, refused);
    EXPECT_FALSE(st.ok);
    EXPECT_TRUE(refused);
    EXPECT_NE(st.message.find("a row of 96 values is not a whole number of groups of 4 chunks"), std::string::npos) << st.message;
    for (float v : y) {
        ASSERT_EQ(v, 777.0f);
    }
    const DesignDescription & d = add_design().design;
    const AddSequence narrow = build_add_sequence(d, {4, 512, 256, 512, 512, false, 0});
    EXPECT_FALSE(narrow.ok());
    EXPECT_NE(narrow.error.find("a's row stride 256 floats"), std::string::npos) << narrow.error;
}
