// The rms_norm design run as an NPU runs it: the instruction stream built on the host from
// aie/rms_norm/dataflow.json (runtime/norm-sequence.h), executed by the simulator's DMA interpreter
// with the design's core program calling the aie/rms_norm kernels. Every output against the kernels
// mode (the same kernel code called chunk by chunk without the data movement: bit for bit) and against
// the norm computed here in double (within the kernels' measured bound), the bytes the interpreter
// moved against the stream's own figures, and shapes the design cannot take refused before anything
// runs.
#include "ops/rms_norm/rms-norm-invocation.h"
#include "ops/rms_norm/sim-rms-norm.h"
#include "runtime/design-registry.h"
#include "runtime/norm-sequence.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "sim/rows-stream.h"
#include "sim/sim-stream.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

extern "C" void rms_norm_sumsq_f32(const float * x, float * partial, int32_t n);  // aie/rms_norm/kernels/rms_norm.cc

namespace {

using namespace xdna;

struct Case {
    int64_t rows, cols, x_stride, y_stride;
    bool    weight, weight_per_row, in_place;
    int     columns;  // 0: the design's 8
};

struct NormRun {
    std::vector<float> y;
    Status             st;
    bool               refused = true;
};

// One rms_norm through an engine (stream: the design's stream; else kernels mode); y starts as 777
// everywhere, so a value written past a row (or a row missed) shows.
NormRun run(const Case & c, const std::vector<float> & x, const std::vector<float> & w, bool stream, StreamContexts & ctx,
        const RmsNormKernels * broken = nullptr) {
    const size_t xn = static_cast<size_t>(c.rows * c.x_stride), yn = static_cast<size_t>(c.rows * c.y_stride);
    xdna_test::HostBuffer xb(xn * 4), wb(w.size() * 4), yb(yn * 4);
    std::memcpy(xb.host_ptr(), x.data(), xn * 4);
    std::memcpy(wb.host_ptr(), w.data(), w.size() * 4);
    NormRun out;
    out.y.assign(yn, 777.0f);
    std::memcpy(yb.host_ptr(), out.y.data(), yn * 4);
    RmsNormInvocation r;
    r.p.rows = c.rows;
    r.p.cols = c.cols;
    r.p.eps = 1e-5f;
    r.p.inv_cols = 1.0f / static_cast<float>(c.cols);
    r.p.with_weight = c.weight;
    r.p.x_row_stride = c.x_stride;
    r.p.w_row_stride = c.weight_per_row ? c.cols : 0;
    r.p.y_row_stride = c.in_place ? c.x_stride : c.y_stride;
    r.x = {&xb, 0};
    r.weight = {c.weight ? &wb : nullptr, 0};
    r.y = {c.in_place ? &xb : &yb, 0};
    const Invocation inv = to_invocation(r);  // the design's columns (`columns` is the stream builder's alone)
    ThreadPool pool(2);
    if (broken != nullptr) {
        out.st = sim_run_rows_invocations({inv}, rms_norm_has_kernel,
                                          [&](const DesignDescription & d, int tile) { return rms_norm_core_roles(d, tile, *broken); },
                                          pool, ctx, &out.refused, "rms_norm");
    } else if (stream) {
        out.st = sim_run_rms_norms_stream({inv}, pool, ctx, &out.refused);
    } else {
        out.st = sim_run_rms_norms({inv}, pool);
        out.refused = false;
    }
    if (c.in_place) {
        std::memcpy(out.y.data(), xb.host_ptr(), xn * 4);
    } else {
        std::memcpy(out.y.data(), yb.host_ptr(), yn * 4);
    }
    return out;
}

const Case kCases[] = {
    {1, 4096, 4096, 4096, true, false, false, 0},   // a decode token's norm: tile 1024, one column
    {7, 896, 900, 904, true, false, false, 0},      // Qwen2.5-0.5B's rows, strided: tile 128, 7 columns
    {600, 64, 64, 64, false, false, false, 0},      // q/k norms of head dim 64: 75 rows per column, two steps
    {130, 2080, 2080, 2080, true, false, false, 3}, // 1024 k + 32: tile 32, three columns, 44 rows in column 0
    {12, 5120, 5120, 5120, true, true, false, 0},   // one weight row per row
    {9, 1024, 1024, 1024, true, false, true, 0},    // in place (y is x)
    {2, 32, 40, 48, true, false, false, 0},         // head dim 32: tile 32, one chunk
};

std::string name_of(const Case & c) {
    return std::to_string(c.rows) + " x " + std::to_string(c.cols) + (c.weight ? c.weight_per_row ? " w rows" : " w" : "") +
           (c.in_place ? " in place" : "") + " cols " + std::to_string(c.columns);
}

}  // namespace

// Every case: the stream's output is the kernels mode's bit for bit, within 8 ulp-ish of the exact
// norm in double, and no value past a row is written.
TEST(RmsNormStream, OutputIsTheKernelsModesBitsAndTheExactNorm) {
    StreamContexts ctx;
    for (const Case & c : kCases) {
        SCOPED_TRACE(name_of(c));
        const size_t xn = static_cast<size_t>(c.rows * c.x_stride);
        const std::vector<float> x = xdna_test::random_floats(xn, 3.0f);
        const std::vector<float> w = xdna_test::random_floats(static_cast<size_t>(c.cols * (c.weight_per_row ? c.rows : 1)), 2.0f);
        const NormRun s = run(c, x, w, true, ctx);
        ASSERT_TRUE(s.st.ok) << s.st.message;
        EXPECT_FALSE(s.refused);
        const NormRun k = run(c, x, w, false, ctx);
        ASSERT_TRUE(k.st.ok) << k.st.message;
        ASSERT_EQ(s.y.size(), k.y.size());
        ASSERT_EQ(0, std::memcmp(s.y.data(), k.y.data(), s.y.size() * 4)) << "stream and kernels mode differ";
        const int64_t y_stride = c.in_place ? c.x_stride : c.y_stride;
        for (int64_t r = 0; r < c.rows; ++r) {
            double sum = 0;
            for (int64_t i = 0; i < c.cols; ++i) {
                const double v = x[static_cast<size_t>(r * c.x_stride + i)];
                sum += v * v;
            }
            const double scale = 1.0 / std::sqrt(sum / static_cast<double>(c.cols) + 1e-5);
            for (int64_t i = 0; i < y_stride; ++i) {
                const size_t at = static_cast<size_t>(r * y_stride + i);
                if (i >= c.cols) {
                    const float untouched = c.in_place ? x[at] : 777.0f;
                    ASSERT_EQ(s.y[at], untouched) << "row " << r << " value " << i << ": written past the row";
                    continue;
                }
                double want = x[static_cast<size_t>(r * c.x_stride + i)] * scale;
                if (c.weight) {
                    want *= w[static_cast<size_t>((c.weight_per_row ? r * c.cols : 0) + i)];
                }
                ASSERT_NEAR(s.y[at], want, 1e-6 * std::fabs(want) + 1e-30) << "row " << r << " value " << i;
            }
        }
    }
}

// The stream moves what its figures say: x twice, the weight row once per row, y once; its grid and
// tile are the design's rules; the interpreter's core made the calls the figures count.
TEST(RmsNormStream, TrafficGridAndTileAreTheDesigns) {
    const DesignRead & design = rms_norm_design();
    ASSERT_TRUE(design.ok()) << design.error;
    struct Want {
        Case c;
        int tile, columns;
        int64_t rows_per_core, steps;
    };
    const Want wants[] = {
        {kCases[0], 1024, 1, 1, 1},
        {kCases[1], 128, 7, 1, 1},
        {kCases[2], 64, 8, 75, 2},
        {kCases[3], 32, 3, 44, 1},
        {kCases[4], 1024, 8, 2, 1},
    };
    for (const Want & t : wants) {
        const Case & c = t.c;
        SCOPED_TRACE(name_of(c));
        xdna_test::HostBuffer xb(static_cast<size_t>(c.rows * c.x_stride) * 4), wb(static_cast<size_t>(c.rows * c.cols) * 4),
            yb(static_cast<size_t>(c.rows * c.y_stride) * 4);
        RmsNormInvocation r;
        r.p = {c.rows, c.cols, 1e-6f, 1.0f / c.cols, c.weight, c.x_stride, c.weight_per_row ? c.cols : 0, c.y_stride};
        r.x = {&xb, 0};
        r.weight = {c.weight ? &wb : nullptr, 0};
        r.y = {&yb, 0};
        const Invocation inv = to_invocation(r);
        EXPECT_EQ(inv.key.tile.n, t.tile);
        RowsShape shape;
        std::string err;
        ASSERT_TRUE(rows_shape_of(inv, design.design, shape, err)) << err;
        shape.columns = c.columns;
        const RowsSequence seq = build_rows_sequence(design.design, shape);
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.tile, t.tile);
        EXPECT_EQ(seq.traffic.columns_used, t.columns);
        EXPECT_EQ(seq.traffic.rows_per_core, t.rows_per_core);
        EXPECT_EQ(seq.traffic.steps, t.steps);
        const uint64_t row = static_cast<uint64_t>(c.cols) * 4, rows = static_cast<uint64_t>(c.rows);
        EXPECT_EQ(seq.traffic.of("x"), 2 * rows * row);
        EXPECT_EQ(seq.traffic.of("weight"), c.weight ? rows * row : 0);
        EXPECT_EQ(seq.traffic.of("y"), rows * row);
        EXPECT_EQ(seq.traffic.calls_per_core, t.rows_per_core * (2 * (c.cols / t.tile) + 1));
    }
}

// A core program that sums the squares of only the first half of each chunk (a broken reduction) gives
// other bits: the stream test sees the kernels the role calls, not a copy of the kernels mode.
namespace {
void half_sumsq(const float * x, float * partial, int32_t n) { rms_norm_sumsq_f32(x, partial, n > 32 ? n / 2 : n); }
}  // namespace

TEST(RmsNormStream, ABrokenCoreProgramIsSeen) {
    StreamContexts ctx;
    const Case c = kCases[1];
    const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.rows * c.x_stride), 3.0f);
    const std::vector<float> w = xdna_test::random_floats(static_cast<size_t>(c.cols), 2.0f);
    RmsNormKernels broken;
    broken.sumsq = half_sumsq;
    const NormRun b = run(c, x, w, true, ctx, &broken);
    ASSERT_TRUE(b.st.ok) << b.st.message;
    const NormRun k = run(c, x, w, false, ctx);
    ASSERT_TRUE(k.st.ok) << k.st.message;
    EXPECT_NE(0, std::memcmp(b.y.data(), k.y.data(), b.y.size() * 4));
}

// Shapes the stream cannot move are refused before anything runs, y untouched: rows overlapping (a
// stride under the row), a stride past the BD's 20-bit step, a row no tile divides.
TEST(RmsNormStream, ShapesTheDesignCannotTakeAreRefusedBeforeAnythingRuns) {
    StreamContexts ctx;
    const Case bad[] = {
        {4, 1024, 1000, 1024, true, false, false, 0},
        {2, 1024, (1 << 20) + 32, 1024, true, false, false, 0},
        {3, 1000, 1000, 1000, true, false, false, 0},
    };
    for (const Case & c : bad) {
        SCOPED_TRACE(name_of(c));
        const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.rows * c.x_stride), 1.0f);
        const std::vector<float> w = xdna_test::random_floats(static_cast<size_t>(c.cols), 1.0f);
        const NormRun s = run(c, x, w, true, ctx);
        EXPECT_FALSE(s.st.ok);
        EXPECT_TRUE(s.refused);
        for (float v : s.y) {
            ASSERT_EQ(v, 777.0f);
        }
    }
}
