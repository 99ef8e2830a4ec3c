// The scale design run as an NPU runs it: the instruction stream built on the host from
// aie/scale/dataflow.json (runtime/rows-sequence.h, the rows movement with one input), executed by the
// simulator's DMA interpreter with the design's core program calling aie/scale/kernels/scale.cc. Every
// output against the kernels mode (the same kernel code called chunk by chunk without the data
// movement: bit for bit) and against the stated numerics written here; s and b reach the cores as the
// RTP words' fp32 bits; the stream's traffic and grid against the design's rules.
#include "core-fp32-reference.h"
#include "ops/scale/scale-invocation.h"
#include "ops/scale/sim-scale.h"
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

extern "C" void scale_f32(const float * x, float * y, int32_t n, float s, float b, int32_t with_bias);  // aie/scale/kernels/scale.cc

namespace {

using namespace xdna;

struct Case {
    int64_t rows, cols, x_stride, y_stride;
    float   s, b;
};

struct ScaleRun {
    std::vector<float> y;
    Status             st;
    bool               refused = true;
};

// y starts as 777 everywhere, so a value written past a row (or a row missed) shows.
ScaleRun run(const Case & c, const std::vector<float> & x, bool stream, StreamContexts & ctx, ScaleKernel broken = nullptr) {
    const size_t xn = static_cast<size_t>(c.rows * c.x_stride), yn = static_cast<size_t>(c.rows * c.y_stride);
    xdna_test::HostBuffer xb(xn * 4), yb(yn * 4);
    std::memcpy(xb.host_ptr(), x.data(), xn * 4);
    ScaleRun out;
    out.y.assign(yn, 777.0f);
    std::memcpy(yb.host_ptr(), out.y.data(), yn * 4);
    ScaleInvocation r;
    r.p = {c.rows, c.cols, c.x_stride, c.y_stride, c.s, c.b};
    r.x = {&xb, 0};
    r.y = {&yb, 0};
    const Invocation inv = to_invocation(r);
    ThreadPool pool(2);
    if (broken != nullptr) {
        out.st = sim_run_rows_invocations({inv}, scale_has_kernel,
                                          [&](const DesignDescription & d, int tile) { return scale_core_roles(d, tile, broken); }, pool,
                                          ctx, &out.refused, "scale");
    } else if (stream) {
        out.st = sim_run_scales_stream({inv}, pool, ctx, &out.refused);
    } else {
        out.st = sim_run_scales({inv}, pool);
        out.refused = false;
    }
    std::memcpy(out.y.data(), yb.host_ptr(), yn * 4);
    return out;
}

const Case kCases[] = {
    {1, 4096, 4096, 4096, 0.0883883f, 0.0f},   // one long row (an embedding scale): tile 1024, 2 groups over 2 columns
    {1, 14336, 14336, 14336, -1.5f, 0.25f},    // 7 groups of 2 x 1024: 7 columns, negative s, a bias
    {37, 1536, 1600, 1540, 2.0f, -0.0f},       // strided rows, tile 256; b = -0 is no bias (the CPU's rule)
    {600, 256, 256, 256, 0.125f, 3.5f},        // tile 128, 75 rows per column
    {2100, 256, 256, 256, -0.125f, 0.0f},      // 263 rows in column 0: 2 steps of at most 256 rows
    {10, 2048, 3000, 2100, 0.5f, 1.0f},        // tile 1024 over strided rows: d0 past the 10-bit wrap, as 2 x 512
};

std::string name_of(const Case & c) {
    return std::to_string(c.rows) + " x " + std::to_string(c.cols) + " s " + std::to_string(c.s) + " b " + std::to_string(c.b);
}

}  // namespace

TEST(ScaleStream, OutputIsTheKernelsModesBitsAndTheStatedNumerics) {
    StreamContexts ctx;
    for (const Case & c : kCases) {
        SCOPED_TRACE(name_of(c));
        const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.rows * c.x_stride), 4.0f);
        const ScaleRun s = run(c, x, true, ctx);
        ASSERT_TRUE(s.st.ok) << s.st.message;
        EXPECT_FALSE(s.refused);
        const ScaleRun k = run(c, x, false, ctx);
        ASSERT_TRUE(k.st.ok) << k.st.message;
        ASSERT_EQ(0, std::memcmp(s.y.data(), k.y.data(), s.y.size() * 4)) << "stream and kernels mode differ";
        for (int64_t r = 0; r < c.rows; ++r) {
            for (int64_t i = 0; i < c.y_stride; ++i) {
                const float got = s.y[static_cast<size_t>(r * c.y_stride + i)];
                if (i >= c.cols) {
                    ASSERT_EQ(got, 777.0f) << "row " << r << " value " << i << ": written past the row";
                    continue;
                }
                const float p = xdna_test::safe_mul(x[static_cast<size_t>(r * c.x_stride + i)], c.s);
                const float want = c.b != 0.0f ? p + c.b : p;
                ASSERT_EQ(0, std::memcmp(&want, &got, 4)) << "row " << r << " value " << i << ": " << want << " vs " << got;
            }
        }
    }
}

// The stream moves x once and y once, in the rows movement's grid; its RTP words carry s and b bits.
TEST(ScaleStream, TrafficGridAndWordsAreTheDesigns) {
    const DesignRead & design = scale_design();
    ASSERT_TRUE(design.ok()) << design.error;
    struct Want {
        Case c;
        int tile, columns;
        int64_t calls_per_core, steps;
    };
    const Want wants[] = {
        {kCases[0], 1024, 2, 1, 1},
        {kCases[1], 1024, 7, 1, 1},
        {kCases[2], 256, 8, 5 * 3, 1},
        {kCases[3], 128, 8, 75, 1},
        {kCases[4], 128, 8, 263, 2},
    };
    for (const Want & t : wants) {
        const Case & c = t.c;
        SCOPED_TRACE(name_of(c));
        xdna_test::HostBuffer xb(static_cast<size_t>(c.rows * c.x_stride) * 4), yb(static_cast<size_t>(c.rows * c.y_stride) * 4);
        ScaleInvocation r;
        r.p = {c.rows, c.cols, c.x_stride, c.y_stride, c.s, c.b};
        r.x = {&xb, 0};
        r.y = {&yb, 0};
        const Invocation inv = to_invocation(r);
        EXPECT_EQ(inv.key.tile.n, t.tile);
        RowsShape shape;
        std::string err;
        ASSERT_TRUE(rows_shape_of(inv, design.design, shape, err)) << err;
        uint32_t s_bits = 0, b_bits = 0;
        std::memcpy(&s_bits, &c.s, 4);
        std::memcpy(&b_bits, &c.b, 4);
        const std::vector<std::pair<std::string, uint32_t>> words = {{"s", s_bits}, {"b", b_bits}};
        EXPECT_EQ(shape.words, words);
        const RowsSequence seq = build_rows_sequence(design.design, shape);
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.tile, t.tile);
        EXPECT_EQ(seq.traffic.columns_used, t.columns);
        EXPECT_EQ(seq.traffic.calls_per_core, t.calls_per_core);
        EXPECT_EQ(seq.traffic.steps, t.steps);
        const uint64_t bytes = static_cast<uint64_t>(c.rows * c.cols) * 4;
        EXPECT_EQ(seq.traffic.of("x"), bytes);
        EXPECT_EQ(seq.traffic.of("y"), bytes);
        EXPECT_EQ(seq.traffic.read, bytes);
        EXPECT_EQ(seq.traffic.written, bytes);
    }
}

// A shape without the words the core program reads is refused by the builder, by name: the scale's s
// must come from the invocation, never a default of 0.
TEST(ScaleStream, AShapeWithoutItsWordsIsRefused) {
    const DesignRead & design = scale_design();
    ASSERT_TRUE(design.ok()) << design.error;
    xdna_test::HostBuffer xb(4096 * 4), yb(4096 * 4);
    ScaleInvocation r;
    r.p = {1, 4096, 4096, 4096, 3.0f, 0.0f};
    r.x = {&xb, 0};
    r.y = {&yb, 0};
    RowsShape shape;
    std::string err;
    ASSERT_TRUE(rows_shape_of(to_invocation(r), design.design, shape, err)) << err;
    shape.words.pop_back();
    const RowsSequence seq = build_rows_sequence(design.design, shape);
    EXPECT_FALSE(seq.ok());
    EXPECT_NE(seq.error.find("RTP word 'b'"), std::string::npos) << seq.error;
}

// A core program whose kernel drops the bias gives other bits: the stream test sees the kernel the role
// calls with the words it read, not a copy of the kernels mode.
namespace {
void without_bias(const float * x, float * y, int32_t n, float s, float b, int32_t) { scale_f32(x, y, n, s, b, 0); }
}  // namespace

TEST(ScaleStream, ABrokenCoreProgramIsSeen) {
    StreamContexts ctx;
    const Case c = kCases[1];
    const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.rows * c.x_stride), 4.0f);
    const ScaleRun good = run(c, x, true, ctx);
    ASSERT_TRUE(good.st.ok) << good.st.message;
    const ScaleRun bad = run(c, x, true, ctx, without_bias);
    ASSERT_TRUE(bad.st.ok) << bad.st.message;
    EXPECT_NE(0, std::memcmp(good.y.data(), bad.y.data(), good.y.size() * 4));
}
