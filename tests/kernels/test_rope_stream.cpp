// The rope design run as an NPU runs it: the instruction stream built on the host from
// aie/rope/dataflow.json (runtime/rope-sequence.h), executed by the simulator's DMA interpreter with the
// design's core program (per token its angle row, held for all of its heads), the angle rows written by
// the host at submission from the positions. Every output bit against the kernels mode (whose bits
// test_rope.cpp holds to the stated numerics); the gaps of strided views untouched; the stream's
// columns, steps, calls and bytes against the design's rules; a position outside the angle table and a
// row length without an xclbin refused before anything moves.
#include "ops/rope/rope-invocation.h"
#include "ops/rope/sim-rope.h"
#include "runtime/rope-sequence.h"
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

constexpr uint32_t kUntouched = 0x7f7f7f7f;

struct Case {
    const char * name;
    RopeMode     mode;
    int32_t      n_dims;
    int64_t      ne0, heads, tokens;
    int64_t      head_stride, token_stride;  // floats (x and y alike)
    bool         freq_factors;
};

struct RopeRun {
    std::vector<float> y;
    Status             st;
    bool               refused = true;
};

// x, the positions and the freq factors drawn once per case and handed in, so the two modes rotate the
// same values.
struct Inputs {
    std::vector<float>   x, ff;
    std::vector<int32_t> pos;
};

Inputs inputs(const Case & c, int32_t below) {
    Inputs in;
    in.x = xdna_test::random_floats(static_cast<size_t>(c.token_stride * c.tokens), 2.0f);
    for (int64_t t = 0; t < c.tokens; ++t) in.pos.push_back(static_cast<int32_t>(xdna_test::uniform(0.0f, static_cast<float>(below))));
    for (int i = 0; i < c.n_dims / 2; ++i) in.ff.push_back(xdna_test::uniform(1.0f, 8.0f));
    return in;
}

RopeRun run(const Case & c, const Inputs & in, bool stream, StreamContexts & ctx) {
    RopeRun out;
    const size_t n = in.x.size();
    xdna_test::HostBuffer xb(n * 4), yb(n * 4), pb(in.pos.size() * 4), fb(in.ff.size() * 4 + 4);
    std::memcpy(xb.host_ptr(), in.x.data(), n * 4);
    std::memset(yb.host_ptr(), 0x7f, n * 4);
    std::memcpy(pb.host_ptr(), in.pos.data(), in.pos.size() * 4);
    std::memcpy(fb.host_ptr(), in.ff.data(), in.ff.size() * 4);
    RopeInvocation r;
    r.p.mode = c.mode;
    r.p.angles.n_dims = c.n_dims;
    r.p.angles.n_ctx_orig = 4096;
    r.p.angles.freq_base = 500000.0f;
    r.p.angles.has_freq_factors = c.freq_factors;
    r.p.ne0 = c.ne0;
    r.p.n_heads = c.heads;
    r.p.n_tokens = c.tokens;
    r.p.x_head_stride = r.p.y_head_stride = c.head_stride;
    r.p.x_token_stride = r.p.y_token_stride = c.token_stride;
    r.x = {&xb, 0};
    r.pos = {&pb, 0};
    r.freq_factors = {&fb, 0};
    r.y = {&yb, 0};
    ThreadPool pool(2);
    if (stream) {
        out.st = sim_run_ropes_stream({to_invocation(r)}, pool, ctx, &out.refused);
    } else {
        out.st = sim_run_ropes({to_invocation(r)}, pool);
        out.refused = false;
    }
    const auto * y = static_cast<const float *>(yb.host_ptr());
    out.y.assign(y, y + n);
    return out;
}

std::vector<Case> cases() {
    return {
        {"a decode token's 32 query heads of 128 (Llama 3 freq factors)", RopeMode::norm, 128, 128, 32, 1, 128, 4096, true},
        {"a decode token's 8 key heads, NEOX", RopeMode::neox, 128, 128, 8, 1, 128, 1024, false},
        {"a prefill ubatch of 37 tokens x 8 heads", RopeMode::norm, 128, 128, 8, 37, 128, 1024, false},
        {"300 tokens (two steps of a column) x 2 heads of 64", RopeMode::neox, 64, 64, 2, 300, 64, 128, false},
        {"partial rotation (32 of 80) with gaps between heads and tokens", RopeMode::norm, 32, 80, 3, 9, 96, 400, true},
        {"partial rotation (32 of 80), 32 heads x 2 tokens packed", RopeMode::norm, 32, 80, 32, 2, 80, 2560, false},
        {"K of a fused QKV row: heads of 96 inside a wider token row", RopeMode::neox, 96, 96, 4, 5, 96, 1152, false},
    };
}

}  // namespace

TEST(RopeStream, OutputIsTheKernelsModesBitsAndGapsAreUntouched) {
    StreamContexts ctx;
    for (const Case & c : cases()) {
        SCOPED_TRACE(c.name);
        const Inputs in = inputs(c, 100000);
        const RopeRun s = run(c, in, true, ctx);
        ASSERT_TRUE(s.st.ok) << s.st.message;
        EXPECT_FALSE(s.refused);
        const RopeRun k = run(c, in, false, ctx);
        ASSERT_TRUE(k.st.ok) << k.st.message;
        for (int64_t t = 0; t < c.tokens; ++t) {
            for (int64_t i = 0; i < c.token_stride; ++i) {
                const size_t at = static_cast<size_t>(t * c.token_stride + i);
                const int64_t h = i / c.head_stride, d = i % c.head_stride;
                uint32_t got, want;
                std::memcpy(&got, &s.y[at], 4);
                std::memcpy(&want, &k.y[at], 4);
                if (h >= c.heads || d >= c.ne0) {
                    ASSERT_EQ(kUntouched, got) << "token " << t << " value " << i << ": written outside the head rows";
                    continue;
                }
                ASSERT_EQ(want, got) << "token " << t << " head " << h << " dim " << d;
                ASSERT_NE(kUntouched, got) << "token " << t << " head " << h << " dim " << d << ": not written";
            }
        }
    }
}

// One set of contexts running the design at several row lengths in turn (xclbins of other tiles loaded
// before, as a model's runs follow each other): every run's bits are the kernels mode's.
TEST(RopeStream, XclbinsOfOtherRowLengthsRunInTurn) {
    StreamContexts ctx;
    const std::vector<Case> order = {
        {"128", RopeMode::norm, 128, 128, 32, 2, 128, 4096, false},
        {"64 neox", RopeMode::neox, 64, 64, 8, 2, 64, 512, false},
        {"80 partial", RopeMode::norm, 32, 80, 32, 2, 80, 2560, false},
        {"80 partial, 4 tokens", RopeMode::norm, 32, 80, 32, 4, 80, 2560, false},
        {"128 again", RopeMode::norm, 128, 128, 32, 2, 128, 4096, false},
    };
    for (int pass = 0; pass < 2; ++pass) {
        for (const Case & c : order) {
            SCOPED_TRACE(std::string(c.name) + " pass " + std::to_string(pass));
            const Inputs in = inputs(c, 5000);
            const RopeRun s = run(c, in, true, ctx);
            ASSERT_TRUE(s.st.ok) << s.st.message;
            const RopeRun k = run(c, in, false, ctx);
            ASSERT_EQ(0, std::memcmp(s.y.data(), k.y.data(), s.y.size() * 4));
        }
    }
}

// The stream's figures: the grid of token blocks x head segments, steps of at most 256 tokens, every
// head row in and out once and one angle row per token and column that takes its heads.
TEST(RopeStream, ColumnsStepsCallsAndBytesAreTheDesigns) {
    const DesignRead & d = rope_design();
    ASSERT_TRUE(d.ok()) << d.error;
    struct Want {
        int64_t tokens, heads, ne0;
        int     columns;
        int     used;
        int64_t steps, calls, cs_rows;
    };
    const std::vector<Want> wants = {
        {1, 32, 128, 0, 8, 1, 4, 8},       // one token's heads over 8 columns: 4 each, its angle row to each
        {1, 6, 64, 0, 6, 1, 1, 6},         // fewer heads than columns: one each
        {3, 8, 128, 0, 6, 1, 4, 6},        // 3 tokens x 2 segments of 4 heads
        {37, 8, 128, 0, 8, 1, 40, 37},     // blocks of 5 and 4 tokens, whole tokens
        {600, 2, 64, 1, 1, 3, 1200, 600},  // one column: steps of 256 tokens
    };
    for (const Want & w : wants) {
        RopeShape s;
        s.contract = kRopeNormVariant;
        s.tokens = w.tokens;
        s.heads = w.heads;
        s.ne0 = w.ne0;
        s.n_dims = w.ne0;
        s.x_head_stride = s.y_head_stride = w.ne0;
        s.x_token_stride = s.y_token_stride = w.ne0 * w.heads;
        s.columns = w.columns;
        const RowsSequence seq = build_rope_sequence(d.design, s);
        SCOPED_TRACE(std::to_string(w.tokens) + " tokens x " + std::to_string(w.heads) + " heads of " + std::to_string(w.ne0));
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.tile, w.ne0);
        EXPECT_EQ(seq.traffic.columns_used, w.used);
        EXPECT_EQ(seq.traffic.steps, w.steps);
        EXPECT_EQ(seq.traffic.calls_per_core, w.calls);
        const uint64_t rows = static_cast<uint64_t>(w.tokens * w.heads * w.ne0) * 4;
        EXPECT_EQ(seq.traffic.of("x"), rows);
        EXPECT_EQ(seq.traffic.of("y"), rows);
        EXPECT_EQ(seq.traffic.of("cs"), static_cast<uint64_t>(w.cs_rows * w.ne0) * 4);
    }
}

// A position outside the angle table, a row length the design has no xclbin for (48: a rotation the
// program takes, 32 rotated and 16 copied) and rotated dims the program does not take are refused before
// anything moves: y keeps its values. So is a y whose head rows overlap (two columns would write them in
// no defined order).
TEST(RopeStream, WhatTheDesignCannotTakeIsRefusedBeforeAnythingMoves) {
    StreamContexts ctx;
    {
        const Case c{"a position past the table", RopeMode::norm, 128, 128, 4, 3, 128, 512, false};
        Inputs in = inputs(c, 1000);
        in.pos[1] = 1 << 20;
        const RopeRun s = run(c, in, true, ctx);
        EXPECT_FALSE(s.st.ok);
        EXPECT_TRUE(s.refused);
        EXPECT_NE(s.st.message.find("outside the angle table"), std::string::npos) << s.st.message;
        for (float v : s.y) {
            uint32_t b;
            std::memcpy(&b, &v, 4);
            ASSERT_EQ(kUntouched, b);
        }
    }
    {
        RopeShape s;
        s.contract = kRopeNormVariant;
        s.tokens = 3;
        s.heads = 2;
        s.ne0 = s.n_dims = 64;
        s.x_head_stride = s.y_head_stride = 64;
        s.x_token_stride = 128;
        s.y_token_stride = 96;  // token t's second head over token t + 1's first
        const RowsSequence seq = build_rope_sequence(rope_design().design, s);
        EXPECT_FALSE(seq.ok());
        EXPECT_NE(seq.error.find("overlap"), std::string::npos) << seq.error;
        s.y_token_stride = 128;
        EXPECT_TRUE(build_rope_sequence(rope_design().design, s).ok());
        s.y_head_stride = 3 * 64;  // head-major rows: disjoint too
        s.y_token_stride = 64;
        EXPECT_TRUE(build_rope_sequence(rope_design().design, s).ok()) << build_rope_sequence(rope_design().design, s).error;
    }
    for (const Case & c : {Case{"rows of 48", RopeMode::norm, 32, 48, 2, 2, 48, 96, false},
                           Case{"rotated dims not a multiple of 32", RopeMode::neox, 20, 128, 2, 2, 128, 256, false}}) {
        SCOPED_TRACE(c.name);
        const RopeRun s = run(c, inputs(c, 1000), true, ctx);
        EXPECT_FALSE(s.st.ok);
        EXPECT_TRUE(s.refused);
        for (float v : s.y) {
            uint32_t b;
            std::memcpy(&b, &v, 4);
            ASSERT_EQ(kUntouched, b);
        }
    }
}
