// The set_rows design run as an NPU runs it: the instruction stream built on the host from
// aie/set_rows/dataflow.json and the ids in device memory (runtime/scatter-sequence.h), executed by the
// simulator's DMA interpreter with the design's core program (f32_to_f16 or f32_to_q8_0 per chunk).
// Every byte of y against the kernels mode and, for F16, every value against ggml's own conversion; the
// rows no id names and the gaps between a view's rows untouched; the stream's runs, steps, columns and
// bytes against the design's rules; bad ids, two rows with one id, rows no chunk size divides and y over
// x refused before anything moves.
#include "ops/set_rows/set-rows-invocation.h"
#include "ops/set_rows/sim-set-rows.h"
#include "runtime/scatter-sequence.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "sim/sim-stream.h"
#include "test-random.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace xdna;

constexpr uint8_t kUntouched = 0xa5;

struct Case {
    const char *         name;
    bool                 q8;
    int64_t              cols, x_stride;     // floats
    int64_t              y_rows, y_stride;   // bytes between y rows (0: the row's own bytes)
    std::vector<int64_t> ids;
    bool                 identity = false;   // a CPY: no ids operand, row r to row r
    bool                 ids_32 = false;
};

int64_t row_bytes(const Case & c) { return c.q8 ? c.cols / 32 * 34 : c.cols * 2; }
int64_t y_stride(const Case & c) { return c.y_stride > 0 ? c.y_stride : row_bytes(c); }

struct ScatterRun {
    std::vector<float>   x;
    std::vector<uint8_t> y;
    Status               st;
    bool                 refused = true;
};

// x is drawn once per case and handed in, so the two modes convert the same values.
ScatterRun run(const Case & c, const std::vector<float> & x, bool stream, StreamContexts & ctx) {
    ScatterRun out;
    out.x = x;
    const int64_t rows = static_cast<int64_t>(c.ids.size());
    const size_t ny = static_cast<size_t>(c.y_rows * y_stride(c));
    xdna_test::HostBuffer xb(x.size() * 4), ib(c.ids.size() * 8), yb(ny);
    std::memcpy(xb.host_ptr(), x.data(), x.size() * 4);
    if (c.ids_32) {
        std::vector<int32_t> narrow(c.ids.begin(), c.ids.end());
        std::memcpy(ib.host_ptr(), narrow.data(), narrow.size() * 4);
    } else {
        std::memcpy(ib.host_ptr(), c.ids.data(), c.ids.size() * 8);
    }
    std::memset(yb.host_ptr(), kUntouched, ny);
    SetRowsInvocation s;
    s.p.rows = rows;
    s.p.cols = c.cols;
    s.p.y_rows = c.y_rows;
    s.p.x_row_stride = c.x_stride;
    s.p.y_q8_0 = c.q8;
    s.p.y_row_stride = c.q8 ? y_stride(c) : y_stride(c) / 2;
    s.p.ids_64 = !c.ids_32;
    s.p.identity = c.identity;
    s.x = {&xb, 0};
    s.ids = {&ib, 0};
    s.y = {&yb, 0};
    ThreadPool pool(2);
    if (stream) {
        out.st = sim_run_set_rows_stream({to_invocation(s)}, pool, ctx, &out.refused);
    } else {
        out.st = sim_run_set_rows({to_invocation(s)}, pool);
        out.refused = false;
    }
    out.y.assign(static_cast<const uint8_t *>(yb.host_ptr()), static_cast<const uint8_t *>(yb.host_ptr()) + ny);
    return out;
}

std::vector<int64_t> consecutive(int64_t first, int n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), first);
    return v;
}

std::vector<int64_t> shuffled(int64_t y_rows, int n) {
    std::vector<int64_t> all = consecutive(0, static_cast<int>(y_rows));
    std::mt19937 g(static_cast<unsigned>(xdna_test::uniform(0.0f, 1e6f)));
    std::shuffle(all.begin(), all.end(), g);
    all.resize(static_cast<size_t>(n));
    return all;
}

std::vector<Case> cases() {
    std::vector<Case> out;
    for (bool q8 : {false, true}) {
        out.push_back({"a decode token's K row (8 KV heads of 128)", q8, 1024, 1024, 600, 0, {517}});
        out.push_back({"a decode token's V row of 512 into a view of a wider cache row", q8, 512, 512, 40, 4096, {39}, false, true});
        out.push_back({"a prefill ubatch's rows at consecutive cells", q8, 256, 256, 300, 0, consecutive(100, 37)});
        out.push_back({"a run longer than a step's", q8, 128, 128, 400, 0, [] {
                           std::vector<int64_t> v = consecutive(50, 300);
                           v.push_back(3);
                           return v;
                       }()});
        out.push_back({"cells in random order over 8 columns, strided x", q8, 384, 400, 90, 0, shuffled(90, 57)});
        out.push_back({"runs, reversals and jumps", q8, 640, 640, 64, 0, {5, 6, 7, 2, 3, 9, 40, 39, 38, 0, 1, 63}});
    }
    out.push_back({"a CPY of F32 rows to F16 rows", false, 256, 256, 4, 0, {0, 1, 2, 3}, true});
    return out;
}

}  // namespace

TEST(SetRowsStream, RowsAreTheKernelsModesAndGgmlsHalves) {
    StreamContexts ctx;
    for (const Case & c : cases()) {
        SCOPED_TRACE(std::string(c.name) + (c.q8 ? " (Q8_0)" : " (F16)"));
        const int64_t rows = static_cast<int64_t>(c.ids.size());
        const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>((rows - 1) * c.x_stride + c.cols), 3.0f);
        const ScatterRun s = run(c, x, true, ctx);
        ASSERT_TRUE(s.st.ok) << s.st.message;
        EXPECT_FALSE(s.refused);
        const ScatterRun k = run(c, x, false, ctx);
        ASSERT_TRUE(k.st.ok) << k.st.message;
        ASSERT_EQ(s.y.size(), k.y.size());
        for (size_t i = 0; i < s.y.size(); ++i) {
            ASSERT_EQ(s.y[i], k.y[i]) << "byte " << i << " of y (row " << i / static_cast<size_t>(y_stride(c)) << ")";
        }
        // Each row at its id, in ggml's halves; every other byte untouched.
        std::vector<int64_t> from(static_cast<size_t>(c.y_rows), -1);
        for (int64_t r = 0; r < rows; ++r) from[static_cast<size_t>(c.ids[static_cast<size_t>(r)])] = r;
        for (int64_t yr = 0; yr < c.y_rows; ++yr) {
            const uint8_t * row = s.y.data() + yr * y_stride(c);
            const int64_t src = from[static_cast<size_t>(yr)];
            for (int64_t b = 0; b < y_stride(c); ++b) {
                if (src < 0 || b >= row_bytes(c)) {
                    ASSERT_EQ(kUntouched, row[b]) << "y row " << yr << " byte " << b << ": no row of x was meant to land there";
                }
            }
            if (src < 0 || c.q8) {
                continue;
            }
            for (int64_t i = 0; i < c.cols; ++i) {
                ggml_fp16_t h;
                std::memcpy(&h, row + 2 * i, 2);
                ASSERT_EQ(ggml_fp32_to_fp16(x[static_cast<size_t>(src * c.x_stride + i)]), h) << "y row " << yr << " value " << i;
            }
        }
    }
}

// The stream's figures: a run per stretch of consecutive ids (at most 256 rows), two runs a step, the
// rows over the columns in blocks (one row over the columns in segments of its chunks), every row's bytes
// in and out once.
TEST(SetRowsStream, RunsStepsColumnsAndBytesAreTheDesigns) {
    const DesignRead & d = set_rows_design();
    ASSERT_TRUE(d.ok()) << d.error;
    struct Want {
        std::vector<int64_t> ids;
        int64_t              cols;
        bool                 q8;
        int                  columns;  // the builder's (0: the design's 8)
        int                  tile, used;
        int64_t              steps, calls;
    };
    const std::vector<Want> wants = {
        {{517}, 1024, false, 0, 1024, 1, 1, 1},             // one chunk: one column
        {{517}, 1536, true, 0, 512, 3, 1, 1},               // three chunks of 512: a segment each
        {{5, 6, 7, 2, 3, 9}, 896, false, 1, 128, 1, 2, 42}, // runs {5,6,7} {2,3} {9}: two steps of 7 chunks x 6 rows
        {consecutive(3, 300), 128, false, 1, 128, 1, 1, 300},  // runs of 256 and 44: one step
        {consecutive(0, 10), 256, true, 3, 256, 3, 1, 4},   // 4, 3, 3 rows, one run each
        {{9, 8, 7, 6, 5}, 128, false, 1, 128, 1, 3, 5},     // five runs of one: three steps
    };
    for (const Want & w : wants) {
        ScatterShape s;
        s.contract = w.q8 ? kSetRowsQ8Variant : kSetRowsF16Variant;
        s.rows = static_cast<int64_t>(w.ids.size());
        s.cols = w.cols;
        s.x_stride = w.cols;
        s.y_rows = 600;
        s.y_row_bytes = w.q8 ? w.cols / 32 * 34 : w.cols * 2;
        s.y_stride = s.y_row_bytes;
        s.ids = w.ids;
        s.columns = w.columns;
        const RowsSequence seq = build_scatter_sequence(d.design, s);
        SCOPED_TRACE(std::to_string(w.ids.size()) + " ids of " + std::to_string(w.cols) + (w.q8 ? " into Q8_0" : " into F16"));
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.family, w.q8 ? "q8_0" : "f16");
        EXPECT_EQ(seq.layout, seq.family);
        EXPECT_EQ(seq.tile, w.tile);
        EXPECT_EQ(seq.traffic.columns_used, w.used);
        EXPECT_EQ(seq.traffic.steps, w.steps);
        EXPECT_EQ(seq.traffic.calls_per_core, w.calls);
        EXPECT_EQ(seq.traffic.of("x"), static_cast<uint64_t>(s.rows * s.cols) * 4);
        EXPECT_EQ(seq.traffic.of("y"), static_cast<uint64_t>(s.rows * s.y_row_bytes));
        EXPECT_EQ(seq.traffic.read, seq.traffic.of("x"));
        EXPECT_EQ(seq.traffic.written, seq.traffic.of("y"));
    }
}

// What the design cannot take is refused before anything moves: y keeps every byte.
TEST(SetRowsStream, WhatTheDesignCannotTakeIsRefusedBeforeAnythingMoves) {
    StreamContexts ctx;
    const std::vector<Case> bad = {
        {"an id past the cache", false, 128, 128, 12, 0, {3, 12, 4}},
        {"a negative id", true, 128, 128, 12, 0, {-1}},
        {"two rows with one id (the columns' DMAs would race)", false, 128, 128, 12, 0, {2, 5, 2}},
        {"a row of 160 values (no chunk size divides it)", false, 160, 160, 12, 0, {1, 2}},
    };
    for (const Case & c : bad) {
        SCOPED_TRACE(c.name);
        const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.ids.size() * c.x_stride), 1.0f);
        const ScatterRun s = run(c, x, true, ctx);
        EXPECT_FALSE(s.st.ok);
        EXPECT_TRUE(s.refused);
        for (uint8_t b : s.y) ASSERT_EQ(kUntouched, b);
    }
    // y over the rows of x it is written from.
    xdna_test::HostBuffer xb(128 * 16 * 4), ib(4 * 8);
    const std::vector<int64_t> ids = {0, 1, 2, 3};
    std::memcpy(ib.host_ptr(), ids.data(), ids.size() * 8);
    SetRowsInvocation s;
    s.p = {4, 128, 8, 128, 128, true, false};
    s.x = {&xb, 0};
    s.ids = {&ib, 0};
    s.y = {&xb, 1024};
    ThreadPool pool(2);
    bool refused = false;
    const Status st = sim_run_set_rows_stream({to_invocation(s)}, pool, ctx, &refused);
    EXPECT_FALSE(st.ok);
    EXPECT_TRUE(refused);
    EXPECT_NE(st.message.find("overlaps"), std::string::npos) << st.message;
}
