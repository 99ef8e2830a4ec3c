// The set_rows core programs (aie/set_rows/kernels/f32_to_f16.cc, f32_to_q8_0.cc) through the simulator's set_rows engine:
// every value's fp16 bits against ggml's own fp32 -> fp16 conversion (ggml-base, round to nearest
// even), over LLM-like values and the edges (fp16 subnormals and their ties, the overflow threshold,
// inf, NaN, -0); the rows land at their ids and nowhere else; an id outside the cache is refused.
#include "ops/set_rows/set-rows-invocation.h"
#include "kernel-loop-promises.h"
#include "ops/set_rows/sim-set-rows.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "test-random.h"

#include "ggml.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

struct Written {
    std::vector<ggml_fp16_t> y;
    xdna::Status             status;
};

constexpr ggml_fp16_t kUntouched = 0x5a5a;

Written write_rows(const std::vector<float> & x, int64_t rows, int64_t cols, int64_t y_rows, const std::vector<int64_t> & ids,
                   bool identity = false) {
    using namespace xdna;
    Written out;
    xdna_test::HostBuffer xb(x.size() * 4), ib(ids.size() * 8), yb(static_cast<size_t>(y_rows * cols) * 2);
    std::memcpy(xb.host_ptr(), x.data(), x.size() * 4);
    std::memcpy(ib.host_ptr(), ids.data(), ids.size() * 8);
    auto * y = static_cast<ggml_fp16_t *>(yb.host_ptr());
    std::fill(y, y + y_rows * cols, kUntouched);
    SetRowsInvocation s;
    s.p = {rows, cols, y_rows, cols, cols, true, identity};
    s.x = {&xb, 0};
    s.ids = {&ib, 0};
    s.y = {&yb, 0};
    ThreadPool pool(2);
    out.status = sim_run_set_rows({to_invocation(s)}, pool);
    out.y.assign(y, y + y_rows * cols);
    return out;
}

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace

TEST(SetRowsKernel, EveryValueIsGgmlsHalf) {
    constexpr int64_t cols = 2048;
    std::vector<float> x = xdna_test::random_floats(cols, 4.0f);
    std::vector<float> edges = {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e9f, std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                                std::ldexp(1.0f, -14), std::ldexp(1.0f, -15), std::ldexp(1.0f, -24), std::ldexp(1.0f, -25),
                                std::ldexp(3.0f, -26), std::ldexp(1.0f, -26), -std::ldexp(5.0f, -26), 1e-40f, -1e-40f,
                                std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25), 1.0f + std::ldexp(1.0f, -11),
                                1.0f + std::ldexp(3.0f, -11), 2049.0f, 2051.0f, from_bits(0x3F800FFFu), from_bits(0x3F801000u)};
    for (int i = 0; i < 256; ++i) edges.push_back(std::ldexp(xdna_test::uniform(-1.0f, 1.0f), -14 - i % 12));  // subnormals
    for (int i = 0; i < 128; ++i) edges.push_back(xdna_test::uniform(-70000.0f, 70000.0f));
    std::copy(edges.begin(), edges.end(), x.begin());
    const Written w = write_rows(x, 1, cols, 1, {0});
    ASSERT_TRUE(w.status.ok) << w.status.message;
    for (int64_t i = 0; i < cols; ++i) {
        const float v = x[static_cast<size_t>(i)];
        if (std::isnan(v)) {
            EXPECT_EQ(0x7E00, w.y[static_cast<size_t>(i)] & 0x7FFF) << "NaN";
            continue;
        }
        ASSERT_EQ(ggml_fp32_to_fp16(v), w.y[static_cast<size_t>(i)]) << "x " << v << " (index " << i << ")";
    }
}

TEST(SetRowsKernel, RowsLandAtTheirIds) {
    constexpr int64_t rows = 5, cols = 384, y_rows = 13;  // 3 chunks of 128
    const std::vector<float> x = xdna_test::random_floats(rows * cols, 2.0f);
    const std::vector<int64_t> ids = {7, 0, 12, 3, 8};
    const Written w = write_rows(x, rows, cols, y_rows, ids);
    ASSERT_TRUE(w.status.ok) << w.status.message;
    for (int64_t r = 0; r < y_rows; ++r) {
        int64_t from = -1;
        for (int64_t k = 0; k < rows; ++k) from = ids[static_cast<size_t>(k)] == r ? k : from;
        for (int64_t c = 0; c < cols; ++c) {
            const ggml_fp16_t want = from < 0 ? kUntouched : ggml_fp32_to_fp16(x[static_cast<size_t>(from * cols + c)]);
            ASSERT_EQ(want, w.y[static_cast<size_t>(r * cols + c)]) << "cache row " << r << " col " << c;
        }
    }
}

TEST(SetRowsKernel, IdOutsideTheCacheIsRefused) {
    for (int64_t bad : {int64_t(-1), int64_t(4), int64_t(1) << 40}) {
        const std::vector<float> x = xdna_test::random_floats(2 * 128, 1.0f);
        const Written w = write_rows(x, 2, 128, 4, {1, bad});
        EXPECT_FALSE(w.status.ok);
        EXPECT_NE(std::string::npos, w.status.message.find("outside the 4 rows")) << w.status.message;
        for (ggml_fp16_t h : w.y) ASSERT_EQ(kUntouched, h);
    }
}

// CPY from F32 to F16 rows: the same program, row r to row r, no ids operand.
TEST(SetRowsKernel, CopyWritesRowByRow) {
    constexpr int64_t rows = 4, cols = 256;
    const std::vector<float> x = xdna_test::random_floats(rows * cols, 2.0f);
    const Written w = write_rows(x, rows, cols, rows, {0, 0, 0, 0}, true);
    ASSERT_TRUE(w.status.ok) << w.status.message;
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(ggml_fp32_to_fp16(x[i]), w.y[i]) << "value " << i;
}

// ---- SET_ROWS into a Q8_0 cache (aie/set_rows/kernels/f32_to_q8_0.cc) --------------------------------
// Against ggml's own reference quantizer (the Q8_0 type traits' from_float_ref, quantize_row_q8_0_ref:
// d = amax / 127, codes roundf(x / d)).
namespace {

constexpr int64_t kQ8Bytes = 34;

struct WrittenQ8 {
    std::vector<uint8_t> y;
    xdna::Status         status;
};

WrittenQ8 write_rows_q8(const std::vector<float> & x, int64_t rows, int64_t cols, int64_t y_rows, const std::vector<int64_t> & ids) {
    using namespace xdna;
    WrittenQ8 out;
    const int64_t row_bytes = cols / 32 * kQ8Bytes;
    xdna_test::HostBuffer xb(x.size() * 4), ib(ids.size() * 8), yb(static_cast<size_t>(y_rows * row_bytes));
    std::memcpy(xb.host_ptr(), x.data(), x.size() * 4);
    std::memcpy(ib.host_ptr(), ids.data(), ids.size() * 8);
    auto * y = static_cast<uint8_t *>(yb.host_ptr());
    std::fill(y, y + y_rows * row_bytes, uint8_t(0x5a));
    SetRowsInvocation s;
    s.p = {rows, cols, y_rows, cols, row_bytes, true, false};
    s.p.y_q8_0 = true;
    s.x = {&xb, 0};
    s.ids = {&ib, 0};
    s.y = {&yb, 0};
    ThreadPool pool(2);
    out.status = sim_run_set_rows({to_invocation(s)}, pool);
    out.y.assign(y, y + y_rows * row_bytes);
    return out;
}

std::vector<uint8_t> ggml_q8_0(const float * x, int64_t n) {
    std::vector<uint8_t> out(static_cast<size_t>(n / 32 * kQ8Bytes));
    ggml_get_type_traits(GGML_TYPE_Q8_0)->from_float_ref(x, out.data(), n);
    return out;
}

}  // namespace

TEST(SetRowsKernel, Q8BlocksAreGgmlsReferenceQuantization) {
    constexpr int64_t cols = 4096;  // four chunks
    std::vector<float> x = xdna_test::random_floats(cols, 3.0f);
    // Edge blocks: all zero (d = 0), exact halfway products (d = 1: x = k + 0.5, which roundf takes away
    // from zero), tiny values (a subnormal F16 scale), a scale past F16's range (inf, as ggml stores it),
    // one large value among small ones.
    for (int i = 0; i < 32; ++i) x[i] = 0.0f;
    for (int i = 0; i < 32; ++i) x[32 + i] = i == 0 ? 127.0f : static_cast<float>(i % 2 ? -1 : 1) * (static_cast<float>(i) + 0.5f);
    for (int i = 0; i < 32; ++i) x[64 + i] = xdna_test::uniform(-1.0f, 1.0f) * 1e-6f;
    for (int i = 0; i < 32; ++i) x[96 + i] = xdna_test::uniform(-1.0f, 1.0f) * 1e7f;
    for (int i = 0; i < 32; ++i) x[128 + i] = i == 7 ? 300.0f : xdna_test::uniform(-0.01f, 0.01f);
    const WrittenQ8 w = write_rows_q8(x, 1, cols, 1, {0});
    ASSERT_TRUE(w.status.ok) << w.status.message;
    const std::vector<uint8_t> want = ggml_q8_0(x.data(), cols);
    // The scales bit for bit; a code may differ by one only where x / d lies within 2^-18 of a halfway
    // point (the core's emulated fp32 product can round the other way there): counted, and rare.
    int near_ties = 0;
    for (int64_t b = 0; b < cols / 32; ++b) {
        const uint8_t * got = w.y.data() + b * kQ8Bytes;
        const uint8_t * ref = want.data() + b * kQ8Bytes;
        ASSERT_EQ(got[0] | got[1] << 8, ref[0] | ref[1] << 8) << "scale of block " << b;
        float amax = 0;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int i = 0; i < 32; ++i) {
            const int g = static_cast<int8_t>(got[2 + i]), r = static_cast<int8_t>(ref[2 + i]);
            if (g == r) continue;
            const double p = static_cast<double>(x[b * 32 + i]) * id;
            const bool near_tie = std::fabs(std::fabs(p - std::floor(p)) - 0.5) < std::ldexp(1.0, -18) * std::max(1.0, std::fabs(p));
            ASSERT_TRUE(near_tie && std::abs(g - r) == 1) << "block " << b << " value " << i << ": " << g << " vs ggml " << r;
            ++near_ties;
        }
    }
    EXPECT_LE(near_ties, 4);
}

TEST(SetRowsKernel, Q8RowsLandAtTheirIdsAndNonFiniteBlocksReadAsNan) {
    constexpr int64_t rows = 3, cols = 128, y_rows = 6, row_bytes = cols / 32 * kQ8Bytes;
    std::vector<float> x = xdna_test::random_floats(rows * cols, 2.0f);
    x[cols + 40] = std::numeric_limits<float>::infinity();  // row 1, block 1
    x[2 * cols + 100] = std::numeric_limits<float>::quiet_NaN();  // row 2, block 3
    const std::vector<int64_t> ids = {4, 0, 2};
    const WrittenQ8 w = write_rows_q8(x, rows, cols, y_rows, ids);
    ASSERT_TRUE(w.status.ok) << w.status.message;
    for (int64_t r = 0; r < y_rows; ++r) {
        int64_t from = -1;
        for (int64_t k = 0; k < rows; ++k) from = ids[static_cast<size_t>(k)] == r ? k : from;
        const uint8_t * got = w.y.data() + r * row_bytes;
        if (from < 0) {
            for (int64_t i = 0; i < row_bytes; ++i) ASSERT_EQ(0x5a, got[i]) << "untouched cache row " << r;
            continue;
        }
        const std::vector<uint8_t> want = ggml_q8_0(x.data() + from * cols, cols);
        for (int64_t b = 0; b < cols / 32; ++b) {
            const bool bad = (from == 1 && b == 1) || (from == 2 && b == 3);
            const uint8_t * blk = got + b * kQ8Bytes;
            if (bad) {
                EXPECT_EQ(0x7E00, blk[0] | blk[1] << 8) << "row " << from << " block " << b;
                for (int i = 0; i < 32; ++i) EXPECT_EQ(0, blk[2 + i]);
                continue;
            }
            EXPECT_EQ(0, std::memcmp(blk, want.data() + b * kQ8Bytes, 2)) << "scale, row " << from << " block " << b;
            for (int i = 0; i < 32; ++i) EXPECT_LE(std::abs(int(int8_t(blk[2 + i])) - int(int8_t(want[b * kQ8Bytes + 2 + i]))), 1);
        }
    }
}

// The kernels' loops promise the compiler 4 trips of 32 values (f32_to_f16.cc, f32_to_q8_0.cc): a call
// on fewer than 128 values is undefined on the core. The design's calls are its chunks (128 to 1024
// values, aie/set_rows/dataflow.json), so rows no chunk size divides (32, 64 and 96 values, which would
// be one short call, and 160 or 1056, which would end in one) are refused before anything runs, nothing
// written. The shortest row the design takes (128) and rows of odd numbers of chunks (1152 = 9 x 128,
// 2176 = 17 x 128) give ggml's bits, into F16 and Q8_0 rows.
TEST(SetRowsEngine, RefusesRowsThatWouldCallTheKernelsUnderTheirLoopPromise) {
    for (int64_t cols : {32, 64, 96, 160, 1056}) {
        EXPECT_EQ(0, xdna::set_rows_tile(cols)) << cols;
        const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(2 * cols), 1.0f);
        const Written w = write_rows(x, 2, cols, 2, {1, 0});
        EXPECT_FALSE(w.status.ok) << cols;
        EXPECT_NE(std::string::npos, w.status.message.find("promise the compiler 4 trips")) << w.status.message;
        for (ggml_fp16_t h : w.y) ASSERT_EQ(kUntouched, h) << "a refused row was written, cols " << cols;
        if (cols % 64 != 0) continue;
        const WrittenQ8 q = write_rows_q8(x, 2, cols, 2, {1, 0});
        EXPECT_FALSE(q.status.ok) << cols;
        for (uint8_t b : q.y) ASSERT_EQ(0x5a, b) << "a refused Q8_0 row was written, cols " << cols;
    }
    for (int64_t cols : {128, 1152, 2176}) {
        ASSERT_EQ(128, xdna::set_rows_tile(cols)) << cols;
        const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(2 * cols), 3.0f);
        const Written w = write_rows(x, 2, cols, 2, {1, 0});
        ASSERT_TRUE(w.status.ok) << w.status.message;
        for (int64_t r = 0; r < 2; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
                ASSERT_EQ(ggml_fp32_to_fp16(x[static_cast<size_t>(r * cols + c)]), w.y[static_cast<size_t>((1 - r) * cols + c)])
                    << "cols " << cols << " row " << r << " value " << c;
            }
        }
        const WrittenQ8 q = write_rows_q8(x, 2, cols, 2, {1, 0});
        ASSERT_TRUE(q.status.ok) << q.status.message;
        const int64_t row_bytes = cols / 32 * kQ8Bytes;
        for (int64_t r = 0; r < 2; ++r) {
            const std::vector<uint8_t> want = ggml_q8_0(x.data() + r * cols, cols);
            const uint8_t * got = q.y.data() + (1 - r) * row_bytes;
            for (int64_t b = 0; b < cols / 32; ++b) {
                ASSERT_EQ(0, std::memcmp(got + b * kQ8Bytes, want.data() + b * kQ8Bytes, 2)) << "scale, cols " << cols << " block " << b;
                for (int i = 0; i < 32; ++i) ASSERT_LE(std::abs(int(int8_t(got[b * kQ8Bytes + 2 + i])) - int(int8_t(want[b * kQ8Bytes + 2 + i]))), 1);
            }
        }
    }
}

// Every chunk size the design has xclbins for keeps the kernels' loop promise (at least 128 values, at
// most what a core's buffers hold, whole 32-value steps), and the tile a row takes divides it: every call
// of every row length (to 64 K values) is a whole chunk of at least 128 values. The promises in both
// kernels, on their chunk loops of n / 32 trips, are at most kSetRowsMinCall / 32.
TEST(SetRowsEngine, EveryCallKeepsTheKernelsLoopPromise) {
    using namespace xdna;
    const DesignRead & d = set_rows_design();
    ASSERT_TRUE(d.ok()) << d.error;
    int stacks = 0;
    for (const DesignDescription::KernelStack & k : d.design.kernel_stacks) {
        EXPECT_GE(k.tile_n, kSetRowsMinCall) << k.family;
        EXPECT_LE(k.tile_n, xdna_aie::kSetRowsChunk) << k.family;
        EXPECT_EQ(0, k.tile_n % xdna_aie::kSetRowsLanes) << k.family;
        ++stacks;
    }
    EXPECT_EQ(stacks, 8);  // two families at 128, 256, 512 and 1024
    for (int64_t cols = xdna_aie::kSetRowsLanes; cols <= 64 * xdna_aie::kSetRowsChunk; cols += xdna_aie::kSetRowsLanes) {
        const int tile = set_rows_tile(cols);
        if (tile == 0) {
            ASSERT_NE(0, cols % kSetRowsMinCall) << cols;
            continue;
        }
        ASSERT_EQ(0, cols % tile) << cols;
        ASSERT_GE(tile, kSetRowsMinCall) << cols;
    }
    for (const char * kernel : {"set_rows/kernels/f32_to_f16.cc", "set_rows/kernels/f32_to_q8_0.cc"}) {
        const std::vector<xdna_test::LoopPromise> promises = xdna_test::kernel_loop_promises(kernel);
        ASSERT_EQ(promises.size(), 1u) << kernel;
        EXPECT_TRUE(promises[0].loop == "for (int32_t i = 0; i < n; i += xdna_aie::kSetRowsLanes)" ||
                    promises[0].loop == "for (int32_t i = 0; i < n; i += kLanes)")
            << kernel << ": " << promises[0].loop;
        EXPECT_LE(promises[0].trips, kSetRowsMinCall / xdna_aie::kSetRowsLanes) << kernel;
    }
}
