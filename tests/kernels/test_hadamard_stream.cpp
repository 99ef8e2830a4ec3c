// The hadamard design run as an NPU runs it: the instruction stream built on the host from
// aie/hadamard/dataflow.json (runtime/rows-sequence.h, the rows movement with one input and one core
// row: a chunk is one row of n values), executed by the simulator's DMA interpreter with the design's
// core program calling aie/hadamard/kernels/fwht.cc. Every output against the kernels mode (the same
// kernel code called row by row without the data movement: bit for bit) and against the transform in
// double written here; the scale reaches the cores as the RTP word's fp32 bits; the stream's traffic
// and grid against the design's rules.
#include "ops/hadamard/hadamard-invocation.h"
#include "ops/hadamard/sim-hadamard.h"
#include "runtime/rows-sequence.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "sim/rows-stream.h"
#include "sim/sim-stream.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <bitset>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

extern "C" void fwht_f32(const float * x, float * y, int32_t rows, int32_t n, float scale);  // aie/hadamard/kernels/fwht.cc

namespace {

using namespace xdna;

struct Case {
    int64_t rows, n, x_stride, y_stride;
};

struct HadamardRun {
    std::vector<float> y;
    Status             st;
    bool               refused = true;
};

// 1 / sqrtf(n) as ggml's CPU backend computes it (ggml-cpu ops.cpp ggml_compute_forward_fwht_f32).
float cpu_scale(int64_t n) { return 1.0f / sqrtf(static_cast<float>(n)); }

// y starts as 777 everywhere, so a value written past a row (or a row missed) shows.
HadamardRun run(const Case & c, const std::vector<float> & x, bool stream, StreamContexts & ctx, HadamardKernel broken = nullptr) {
    const size_t xn = static_cast<size_t>(c.rows * c.x_stride), yn = static_cast<size_t>(c.rows * c.y_stride);
    xdna_test::HostBuffer xb(xn * 4), yb(yn * 4);
    std::memcpy(xb.host_ptr(), x.data(), xn * 4);
    HadamardRun out;
    out.y.assign(yn, 777.0f);
    std::memcpy(yb.host_ptr(), out.y.data(), yn * 4);
    HadamardInvocation h;
    h.p.rows = c.rows;
    h.p.n = c.n;
    h.p.x_row_stride = c.x_stride;
    h.p.y_row_stride = c.y_stride;
    h.p.scale = cpu_scale(c.n);
    h.x = {&xb, 0};
    h.y = {&yb, 0};
    const Invocation inv = to_invocation(h);
    ThreadPool pool(2);
    if (broken != nullptr) {
        out.st = sim_run_rows_invocations({inv}, hadamard_has_kernel,
                                          [&](const DesignDescription & d, int tile) { return hadamard_core_roles(d, tile, broken); },
                                          pool, ctx, &out.refused, "hadamard");
    } else if (stream) {
        out.st = sim_run_hadamards_stream({inv}, pool, ctx, &out.refused);
    } else {
        out.st = sim_run_hadamards({inv}, pool);
        out.refused = false;
    }
    std::memcpy(out.y.data(), yb.host_ptr(), yn * 4);
    return out;
}

// H x in double, from the definition (H[i][j] = (-1)^popcount(i & j) / sqrt(n)).
double exact(const float * x, int64_t n, int64_t i) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += (std::bitset<16>(static_cast<unsigned>(i & j)).count() % 2 ? -1.0 : 1.0) * x[j];
    return s / std::sqrt(static_cast<double>(n));
}

const Case kCases[] = {
    {32, 128, 128, 128},    // a decode token's 32 query heads: 4 rows per column
    {8, 128, 384, 128},     // 8 KV heads read from a fused QKV row's view (x strided), 8 columns of one row
    {3, 64, 64, 100},       // fewer rows than columns, y strided
    {1, 256, 256, 256},     // one row: one column
    {600, 256, 300, 256},   // 75 rows per column, strided x
    {2100, 64, 64, 64},     // 263 rows in column 0: 2 steps of at most 256 rows
};

std::string name_of(const Case & c) { return std::to_string(c.rows) + " x " + std::to_string(c.n); }

}  // namespace

TEST(HadamardStream, OutputIsTheKernelsModesBitsAndTheTransform) {
    StreamContexts ctx;
    for (const Case & c : kCases) {
        SCOPED_TRACE(name_of(c));
        const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.rows * c.x_stride), 3.0f);
        const HadamardRun s = run(c, x, true, ctx);
        ASSERT_TRUE(s.st.ok) << s.st.message;
        EXPECT_FALSE(s.refused);
        const HadamardRun k = run(c, x, false, ctx);
        ASSERT_TRUE(k.st.ok) << k.st.message;
        ASSERT_EQ(0, std::memcmp(s.y.data(), k.y.data(), s.y.size() * 4)) << "stream and kernels mode differ";
        for (int64_t r = 0; r < c.rows; ++r) {
            const float * xr = x.data() + r * c.x_stride;
            double l1 = 0;
            for (int64_t j = 0; j < c.n; ++j) l1 += std::fabs(xr[j]);
            // One rounding per butterfly stage and the scale's: (log2 n + 2) ulps of the row's L1 norm over sqrt(n).
            const double bound = (std::log2(static_cast<double>(c.n)) + 2) * std::ldexp(l1 / std::sqrt(static_cast<double>(c.n)), -24);
            for (int64_t i = 0; i < c.y_stride; ++i) {
                const float got = s.y[static_cast<size_t>(r * c.y_stride + i)];
                if (i >= c.n) {
                    ASSERT_EQ(got, 777.0f) << "row " << r << " value " << i << ": written past the row";
                    continue;
                }
                ASSERT_NEAR(got, exact(xr, c.n, i), bound) << "row " << r << " value " << i;
            }
        }
    }
}

// The stream moves x once and y once, a row per chunk at the tile n, the rows in blocks over the
// columns; its RTP words carry the scale's bits.
TEST(HadamardStream, TrafficGridAndWordsAreTheDesigns) {
    const DesignRead & design = hadamard_design();
    ASSERT_TRUE(design.ok()) << design.error;
    struct Want {
        Case c;
        int columns;
        int64_t calls_per_core, steps;
    };
    const Want wants[] = {
        {kCases[0], 8, 4, 1},
        {kCases[1], 8, 1, 1},
        {kCases[2], 3, 1, 1},
        {kCases[3], 1, 1, 1},
        {kCases[4], 8, 75, 1},
        {kCases[5], 8, 263, 2},
    };
    for (const Want & t : wants) {
        const Case & c = t.c;
        SCOPED_TRACE(name_of(c));
        xdna_test::HostBuffer xb(static_cast<size_t>(c.rows * c.x_stride) * 4), yb(static_cast<size_t>(c.rows * c.y_stride) * 4);
        HadamardInvocation h;
        h.p.rows = c.rows;
        h.p.n = c.n;
        h.p.x_row_stride = c.x_stride;
        h.p.y_row_stride = c.y_stride;
        h.p.scale = cpu_scale(c.n);
        h.x = {&xb, 0};
        h.y = {&yb, 0};
        const Invocation inv = to_invocation(h);
        EXPECT_EQ(inv.key.tile.n, c.n);
        RowsShape shape;
        std::string err;
        ASSERT_TRUE(rows_shape_of(inv, design.design, shape, err)) << err;
        uint32_t bits = 0;
        const float scale = cpu_scale(c.n);
        std::memcpy(&bits, &scale, 4);
        const std::vector<std::pair<std::string, uint32_t>> words = {{"scale", bits}};
        EXPECT_EQ(shape.words, words);
        const RowsSequence seq = build_rows_sequence(design.design, shape);
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.tile, c.n);
        EXPECT_EQ(seq.traffic.columns_used, t.columns);
        EXPECT_EQ(seq.traffic.calls_per_core, t.calls_per_core);
        EXPECT_EQ(seq.traffic.steps, t.steps);
        const uint64_t bytes = static_cast<uint64_t>(c.rows * c.n) * 4;
        EXPECT_EQ(seq.traffic.read, bytes);
        EXPECT_EQ(seq.traffic.written, bytes);
    }
}

// A row length without an xclbin gets a key of tile 0, and the engines refuse it before any row runs.
TEST(HadamardStream, LengthsWithoutAnXclbinAreRefused) {
    EXPECT_EQ(hadamard_key(96).tile.n, 0);
    EXPECT_EQ(hadamard_key(512).tile.n, 0);
    EXPECT_EQ(hadamard_key(128).tile.n, 128);
    StreamContexts ctx;
    const Case c{4, 32, 32, 32};
    const HadamardRun s = run(c, xdna_test::random_floats(128, 1.0f), true, ctx);
    EXPECT_FALSE(s.st.ok);
    const HadamardRun k = run(c, xdna_test::random_floats(128, 1.0f), false, ctx);
    EXPECT_FALSE(k.st.ok);
}

// A core program that rotates with another scale gives other bits: the stream test sees the kernel the
// role calls with the word it read, not a copy of the kernels mode.
namespace {
void doubled_scale(const float * x, float * y, int32_t rows, int32_t n, float scale) { fwht_f32(x, y, rows, n, 2.0f * scale); }
}  // namespace

TEST(HadamardStream, ABrokenCoreProgramIsSeen) {
    StreamContexts ctx;
    const Case c = kCases[0];
    const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.rows * c.x_stride), 3.0f);
    const HadamardRun good = run(c, x, true, ctx);
    ASSERT_TRUE(good.st.ok) << good.st.message;
    const HadamardRun bad = run(c, x, true, ctx, doubled_scale);
    ASSERT_TRUE(bad.st.ok) << bad.st.message;
    EXPECT_NE(0, std::memcmp(good.y.data(), bad.y.data(), good.y.size() * 4));
}
