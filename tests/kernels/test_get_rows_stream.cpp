// The get_rows design run as an NPU runs it: the instruction stream built on the host from
// aie/get_rows/dataflow.json and the ids in device memory (runtime/gather-sequence.h), executed by the
// simulator's DMA interpreter (no cores: the memory tile forwards the source rows to the shim). Every
// row against the gather written here (y[r] = src[ids[r]], gaps between y's rows untouched) and against
// the kernels mode; the stream's runs, steps, columns and bytes against the design's rules; bad ids and
// overlapping operands refused before anything moves.
#include "ops/get_rows/get-rows-invocation.h"
#include "ops/get_rows/sim-get-rows.h"
#include "runtime/gather-sequence.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "sim/sim-stream.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace xdna;

struct Case {
    const char *         name;
    int64_t              src_rows, cols, src_stride, y_stride;
    std::vector<int32_t> ids;
};

struct GatherRun {
    std::vector<float> src, y;
    Status             st;
    bool               refused = true;
};

GatherRun run(const Case & c, bool stream, StreamContexts & ctx) {
    GatherRun out;
    out.src = xdna_test::random_floats(static_cast<size_t>(c.src_rows * c.src_stride), 3.0f);
    const size_t ny = c.ids.size() * static_cast<size_t>(c.y_stride);
    xdna_test::HostBuffer sb(out.src.size() * 4), ib(c.ids.size() * 4), yb(ny * 4);
    std::memcpy(sb.host_ptr(), out.src.data(), out.src.size() * 4);
    std::memcpy(ib.host_ptr(), c.ids.data(), c.ids.size() * 4);
    out.y.assign(ny, 777.0f);
    std::memcpy(yb.host_ptr(), out.y.data(), ny * 4);
    GetRowsInvocation g;
    g.p = {static_cast<int64_t>(c.ids.size()), c.cols, c.src_rows, c.src_stride, c.y_stride};
    g.src = {&sb, 0};
    g.ids = {&ib, 0};
    g.y = {&yb, 0};
    ThreadPool pool(2);
    if (stream) {
        out.st = sim_run_get_rows_stream({to_invocation(g)}, pool, ctx, &out.refused);
    } else {
        out.st = sim_run_get_rows({to_invocation(g)}, pool);
        out.refused = false;
    }
    std::memcpy(out.y.data(), yb.host_ptr(), ny * 4);
    return out;
}

std::vector<int32_t> consecutive(int32_t first, int n) {
    std::vector<int32_t> v;
    for (int i = 0; i < n; ++i) v.push_back(first + i);
    return v;
}

std::vector<Case> cases() {
    std::vector<Case> out;
    out.push_back({"a decode token's output row", 7, 4096, 4096, 4096, {6}});
    out.push_back({"runs, repeats and reversed ids, strided", 40, 896, 900, 904, {5, 6, 7, 2, 3, 9, 9, 39, 38, 37, 0, 1, 2, 3, 4, 20}});
    std::vector<int32_t> many = consecutive(3, 300);  // one run of 300 consecutive ids: runs of at most 256
    many.push_back(1);
    out.push_back({"a run longer than a BD's", 400, 64, 64, 64, many});
    std::vector<int32_t> scattered;
    for (int i = 0; i < 57; ++i) scattered.push_back(static_cast<int32_t>(xdna_test::uniform(0.0f, 50.0f)) % 50);
    out.push_back({"random ids over 8 columns", 50, 2080, 2080, 2080, scattered});
    return out;
}

}  // namespace

TEST(GetRowsStream, RowsAreTheGatherAndTheKernelsModes) {
    StreamContexts ctx;
    for (const Case & c : cases()) {
        SCOPED_TRACE(c.name);
        const GatherRun s = run(c, true, ctx);
        ASSERT_TRUE(s.st.ok) << s.st.message;
        EXPECT_FALSE(s.refused);
        for (size_t r = 0; r < c.ids.size(); ++r) {
            for (int64_t i = 0; i < c.y_stride; ++i) {
                const float got = s.y[r * static_cast<size_t>(c.y_stride) + static_cast<size_t>(i)];
                if (i >= c.cols) {
                    ASSERT_EQ(got, 777.0f) << "row " << r << " value " << i << ": written past the row";
                    continue;
                }
                const float want = s.src[static_cast<size_t>(c.ids[r] * c.src_stride + i)];
                ASSERT_EQ(0, std::memcmp(&want, &got, 4)) << "row " << r << " (id " << c.ids[r] << ") value " << i;
            }
        }
        const GatherRun k = run(c, false, ctx);
        ASSERT_TRUE(k.st.ok) << k.st.message;
        // The same source (random_floats differs per call): compare each to its own source above, and
        // the two modes' rows of the same ids.
        for (size_t r = 0; r < c.ids.size(); ++r) {
            ASSERT_EQ(0, std::memcmp(&k.y[r * static_cast<size_t>(c.y_stride)], &k.src[static_cast<size_t>(c.ids[r] * c.src_stride)],
                                     static_cast<size_t>(c.cols) * 4))
                << "kernels mode, row " << r;
        }
    }
}

// The stream's figures: a run per stretch of consecutive ids (at most 256 rows), two runs a step, the
// rows over the columns in blocks, every row's bytes in and out once.
TEST(GetRowsStream, RunsStepsAndBytesAreTheDesigns) {
    const DesignRead & d = get_rows_design();
    ASSERT_TRUE(d.ok()) << d.error;
    struct Want {
        std::vector<int32_t> ids;
        int64_t              cols;
        int                  columns;  // the builder's (0: the design's 8)
        int                  tile, used;
        int64_t              steps;
    };
    const std::vector<Want> wants = {
        {{6}, 4096, 0, 1024, 1, 1},
        {{5, 6, 7, 2, 3, 9}, 896, 1, 128, 1, 2},           // runs {5,6,7} {2,3} {9}: two steps
        {consecutive(3, 300), 64, 1, 64, 1, 1},            // runs of 256 and 44: one step
        {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 96, 3, 32, 3, 1}, // 4, 3, 3 rows, one run each
        {{9, 8, 7, 6, 5}, 32, 1, 32, 1, 3},                // five runs of one: three steps
    };
    for (const Want & w : wants) {
        GatherShape s;
        s.contract = kGetRowsVariant;
        s.rows = static_cast<int64_t>(w.ids.size());
        s.cols = w.cols;
        s.src_rows = 400;
        s.src_stride = w.cols;
        s.y_stride = w.cols;
        s.ids = w.ids;
        s.columns = w.columns;
        const RowsSequence seq = build_gather_sequence(d.design, s);
        SCOPED_TRACE(std::to_string(w.ids.size()) + " ids of " + std::to_string(w.cols));
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.tile, w.tile);
        EXPECT_EQ(seq.traffic.columns_used, w.used);
        EXPECT_EQ(seq.traffic.steps, w.steps);
        const uint64_t bytes = static_cast<uint64_t>(s.rows * s.cols) * 4;
        EXPECT_EQ(seq.traffic.of("src"), bytes);
        EXPECT_EQ(seq.traffic.of("y"), bytes);
        EXPECT_EQ(seq.traffic.read, bytes);
        EXPECT_EQ(seq.traffic.written, bytes);
    }
}

// An id outside the source, a row of no tile and y over its own source are refused before anything
// moves: y keeps its values.
TEST(GetRowsStream, WhatTheDesignCannotTakeIsRefusedBeforeAnythingMoves) {
    StreamContexts ctx;
    for (const Case & c : {Case{"id past the source", 12, 64, 64, 64, {3, 12, 4}}, Case{"negative id", 12, 64, 64, 64, {-1}},
                           Case{"a row of 48 values", 12, 48, 48, 48, {1, 2}}}) {
        SCOPED_TRACE(c.name);
        const GatherRun s = run(c, true, ctx);
        EXPECT_FALSE(s.st.ok);
        EXPECT_TRUE(s.refused);
        for (float v : s.y) ASSERT_EQ(v, 777.0f);
    }
    // y inside the source's own rows.
    xdna_test::HostBuffer sb(64 * 16 * 4), ib(4 * 4);
    const std::vector<int32_t> ids = {0, 1, 2, 3};
    std::memcpy(ib.host_ptr(), ids.data(), 16);
    GetRowsInvocation g;
    g.p = {4, 64, 16, 64, 64};
    g.src = {&sb, 0};
    g.ids = {&ib, 0};
    g.y = {&sb, 8 * 64 * 4};
    ThreadPool pool(2);
    bool refused = false;
    const Status st = sim_run_get_rows_stream({to_invocation(g)}, pool, ctx, &refused);
    EXPECT_FALSE(st.ok);
    EXPECT_TRUE(refused);
    EXPECT_NE(st.message.find("overlaps"), std::string::npos) << st.message;
}
