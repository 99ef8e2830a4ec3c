// The row_scale design run as an NPU runs it: the instruction stream built on the host from
// aie/row_scale/dataflow.json (runtime/rows-sequence.h, the rows movement with a second input of one
// value per row, held by the core for every chunk of its row), executed by the simulator's DMA
// interpreter with the design's core program calling aie/row_scale/kernels/row_scale.cc. Every output
// against the kernels mode (the same kernel code called chunk by chunk without the data movement: bit
// for bit) and against the stated numerics written here (the core's safe fp32 product); the stream's
// traffic and grid against the design's rules; one value for every row.
#include "core-fp32-reference.h"
#include "ops/row_scale/row-scale-invocation.h"
#include "ops/row_scale/sim-row-scale.h"
#include "runtime/rows-sequence.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "sim/rows-stream.h"
#include "sim/sim-stream.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

extern "C" void row_scale_f32(const float * x, float * y, int32_t n, float w);  // aie/row_scale/kernels/row_scale.cc

namespace {

using namespace xdna;

struct Case {
    int64_t rows, cols, x_stride, w_stride, y_stride;
};

struct RowScaleRun {
    std::vector<float> y;
    Status             st;
    bool               refused = true;
};

size_t w_count(const Case & c) { return c.w_stride == 0 ? 1 : static_cast<size_t>((c.rows - 1) * c.w_stride + 1); }

// y starts as 777 everywhere, so a value written past a row (or a row missed) shows.
RowScaleRun run(const Case & c, const std::vector<float> & x, const std::vector<float> & w, bool stream, StreamContexts & ctx,
                RowScaleKernel broken = nullptr) {
    const size_t xn = static_cast<size_t>(c.rows * c.x_stride), yn = static_cast<size_t>(c.rows * c.y_stride);
    xdna_test::HostBuffer xb(xn * 4), wb(w.size() * 4), yb(yn * 4);
    std::memcpy(xb.host_ptr(), x.data(), xn * 4);
    std::memcpy(wb.host_ptr(), w.data(), w.size() * 4);
    RowScaleRun out;
    out.y.assign(yn, 777.0f);
    std::memcpy(yb.host_ptr(), out.y.data(), yn * 4);
    RowScaleInvocation r;
    r.p = {c.rows, c.cols, c.x_stride, c.w_stride, c.y_stride};
    r.x = {&xb, 0};
    r.w = {&wb, 0};
    r.y = {&yb, 0};
    const Invocation inv = to_invocation(r);
    ThreadPool pool(2);
    if (broken != nullptr) {
        out.st = sim_run_rows_invocations({inv}, row_scale_has_kernel,
                                          [&](const DesignDescription & d, int tile) { return row_scale_core_roles(d, tile, broken); },
                                          pool, ctx, &out.refused, "row_scale");
    } else if (stream) {
        out.st = sim_run_row_scales_stream({inv}, pool, ctx, &out.refused);
    } else {
        out.st = sim_run_row_scales({inv}, pool);
        out.refused = false;
    }
    std::memcpy(out.y.data(), yb.host_ptr(), yn * 4);
    return out;
}

const Case kCases[] = {
    {8, 2048, 2048, 1, 2048},      // a decode token's 8 expert outputs (Qwen3-30B-A3B's 2048): 8 columns, one group each
    {1, 4096, 4096, 0, 4096},      // one long row: 2 groups over 2 columns, each reading the row's value
    {37, 1536, 1600, 3, 1540},     // strided rows and values, tile 256
    {600, 256, 256, 1, 256},       // tile 128, 75 rows per column
    {2100, 128, 128, 1, 128},      // 263 rows in column 0: 2 steps of at most 256 rows
    {24, 2048, 2048, 0, 2048},     // one value for every row: its BD repeated per row
};

std::string name_of(const Case & c) {
    return std::to_string(c.rows) + " x " + std::to_string(c.cols) + " w stride " + std::to_string(c.w_stride);
}

}  // namespace

TEST(RowScaleStream, OutputIsTheKernelsModesBitsAndTheStatedNumerics) {
    StreamContexts ctx;
    for (const Case & c : kCases) {
        SCOPED_TRACE(name_of(c));
        const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.rows * c.x_stride), 4.0f);
        const std::vector<float> w = xdna_test::random_floats(w_count(c), 2.0f);
        const RowScaleRun s = run(c, x, w, true, ctx);
        ASSERT_TRUE(s.st.ok) << s.st.message;
        EXPECT_FALSE(s.refused);
        const RowScaleRun k = run(c, x, w, false, ctx);
        ASSERT_TRUE(k.st.ok) << k.st.message;
        ASSERT_EQ(0, std::memcmp(s.y.data(), k.y.data(), s.y.size() * 4)) << "stream and kernels mode differ";
        for (int64_t r = 0; r < c.rows; ++r) {
            const float wr = w[static_cast<size_t>(r * c.w_stride)];
            for (int64_t i = 0; i < c.y_stride; ++i) {
                const float got = s.y[static_cast<size_t>(r * c.y_stride + i)];
                if (i >= c.cols) {
                    ASSERT_EQ(got, 777.0f) << "row " << r << " value " << i << ": written past the row";
                    continue;
                }
                const float want = xdna_test::safe_mul(x[static_cast<size_t>(r * c.x_stride + i)], wr);
                ASSERT_EQ(0, std::memcmp(&want, &got, 4)) << "row " << r << " value " << i << ": " << want << " vs " << got;
            }
        }
    }
}

// The stream moves x and y once and w one value per row of each column; the core words are its rows
// and the chunks of each row's segment.
TEST(RowScaleStream, TrafficGridAndWordsAreTheDesigns) {
    const DesignRead & design = row_scale_design();
    ASSERT_TRUE(design.ok()) << design.error;
    struct Want {
        Case c;
        int tile, columns;
        int64_t calls_per_core, steps;
        uint64_t w_bytes;
    };
    const Want wants[] = {
        {kCases[0], 1024, 8, 1, 1, 8 * 4},
        {kCases[1], 1024, 2, 1, 1, 2 * 4},     // each of the 2 columns reads the one row's value
        {kCases[2], 256, 8, 5 * 3, 1, 37 * 4},
        {kCases[3], 128, 8, 75, 1, 600 * 4},
        {kCases[4], 64, 8, 263, 2, 2100 * 4},
        {kCases[5], 1024, 8, 3, 1, 24 * 4},    // one value, read again for each row
    };
    for (const Want & t : wants) {
        const Case & c = t.c;
        SCOPED_TRACE(name_of(c));
        xdna_test::HostBuffer xb(static_cast<size_t>(c.rows * c.x_stride) * 4), wb(w_count(c) * 4),
            yb(static_cast<size_t>(c.rows * c.y_stride) * 4);
        RowScaleInvocation r;
        r.p = {c.rows, c.cols, c.x_stride, c.w_stride, c.y_stride};
        r.x = {&xb, 0};
        r.w = {&wb, 0};
        r.y = {&yb, 0};
        const Invocation inv = to_invocation(r);
        EXPECT_EQ(inv.key.tile.n, t.tile);
        RowsShape shape;
        std::string err;
        ASSERT_TRUE(rows_shape_of(inv, design.design, shape, err)) << err;
        const RowsSequence seq = build_rows_sequence(design.design, shape);
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.tile, t.tile);
        EXPECT_EQ(seq.traffic.columns_used, t.columns);
        EXPECT_EQ(seq.traffic.calls_per_core, t.calls_per_core);
        EXPECT_EQ(seq.traffic.steps, t.steps);
        const uint64_t bytes = static_cast<uint64_t>(c.rows * c.cols) * 4;
        EXPECT_EQ(seq.traffic.of("x"), bytes);
        EXPECT_EQ(seq.traffic.of("y"), bytes);
        EXPECT_EQ(seq.traffic.of("w"), t.w_bytes);
        EXPECT_EQ(seq.traffic.read, bytes + t.w_bytes);
        EXPECT_EQ(seq.traffic.written, bytes);
    }
}

// A row length no group of 2 chunks divides is refused by both engines before any row runs.
TEST(RowScaleStream, RowsTheDesignDoesNotTakeAreRefused) {
    EXPECT_EQ(row_scale_tile(96), 0);
    EXPECT_EQ(row_scale_tile(2048), 1024);
    StreamContexts ctx;
    const Case c{2, 96, 96, 1, 96};
    const std::vector<float> x = xdna_test::random_floats(192, 1.0f), w = xdna_test::random_floats(2, 1.0f);
    EXPECT_FALSE(run(c, x, w, true, ctx).st.ok);
    EXPECT_FALSE(run(c, x, w, false, ctx).st.ok);
}

// A core program that takes the next row's value (or a fixed one) gives other bits: the stream test sees
// the kernel the role calls with the value it holds, not a copy of the kernels mode.
namespace {
void doubled(const float * x, float * y, int32_t n, float w) { row_scale_f32(x, y, n, 2.0f * w); }
}  // namespace

TEST(RowScaleStream, ABrokenCoreProgramIsSeen) {
    StreamContexts ctx;
    const Case c = kCases[0];
    const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.rows * c.x_stride), 4.0f);
    const std::vector<float> w = xdna_test::random_floats(w_count(c), 2.0f);
    const RowScaleRun good = run(c, x, w, true, ctx);
    ASSERT_TRUE(good.st.ok) << good.st.message;
    const RowScaleRun bad = run(c, x, w, true, ctx, doubled);
    ASSERT_TRUE(bad.st.ok) << bad.st.message;
    EXPECT_NE(0, std::memcmp(good.y.data(), bad.y.data(), good.y.size() * 4));
}
