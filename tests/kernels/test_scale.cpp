// The scale core program (aie/scale/kernels/scale.cc) through the simulator's scale engine against the
// stated numerics written here (core-fp32-reference.h's safe product, one IEEE add for the bias): every
// output's bits, with and without a bias, rows of a length that is not a multiple of 32 (nothing past a
// row written).
#include "core-fp32-reference.h"
#include "kernel-loop-promises.h"
#include "ops/scale/scale-invocation.h"
#include "ops/scale/sim-scale.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

TEST(ScaleEngine, BitsAreTheStatedNumerics) {
    using namespace xdna;
    constexpr int64_t rows = 3, cols = 1061, stride = 1100;  // two chunks of 17 vectors, the second ending mid-vector
    const size_t n = static_cast<size_t>(rows * stride);
    std::vector<float> x = xdna_test::random_floats(n, 5.0f);
    for (float bias : {0.0f, 0.375f}) {
        xdna_test::HostBuffer xb(n * 4), yb(n * 4);
        std::memcpy(xb.host_ptr(), x.data(), n * 4);
        std::vector<float> init(n, 777.0f);
        std::memcpy(yb.host_ptr(), init.data(), n * 4);
        ScaleInvocation s;
        s.p = {rows, cols, stride, stride, -1.7f, bias};
        s.x = {&xb, 0};
        s.y = {&yb, 0};
        ThreadPool pool(2);
        ASSERT_TRUE(sim_run_scales({to_invocation(s)}, pool).ok);
        const float * y = static_cast<const float *>(yb.host_ptr());
        for (int64_t r = 0; r < rows; ++r) {
            for (int64_t i = 0; i < stride; ++i) {
                const size_t at = static_cast<size_t>(r * stride + i);
                const float want = i >= cols ? 777.0f : bias != 0.0f ? xdna_test::safe_mul(x[at], -1.7f) + bias : xdna_test::safe_mul(x[at], -1.7f);
                ASSERT_EQ(0, std::memcmp(&want, &y[at], 4)) << "row " << r << " value " << i << " bias " << bias << ": " << want << " vs " << y[at];
            }
        }
    }
}

// The kernel's loop promises the compiler 4 trips of 32 lanes (scale.cc): a call on fewer than 128
// values (its chunk padded to whole vectors) is undefined on the core. A row of 96 values or fewer would
// be such a call: refused before anything runs, nothing written. The shortest row the design takes (97
// values: one call of 128) and rows whose last 1024-value chunk would have been short (1025, 1061: now
// two chunks of 17 vectors) run with the stated numerics' bits.
TEST(ScaleEngine, RefusesRowsThatWouldCallTheKernelUnderItsLoopPromise) {
    using namespace xdna;
    ThreadPool pool(2);
    for (int64_t cols : {1, 10, 32, 96}) {
        EXPECT_FALSE(scale_calls_keep_promise(cols)) << cols;
        xdna_test::HostBuffer xb(cols * 4), yb(cols * 4);
        std::vector<float> sentinel(static_cast<size_t>(cols), 777.0f);
        std::memcpy(yb.host_ptr(), sentinel.data(), sentinel.size() * 4);
        ScaleInvocation s;
        s.p = {1, cols, cols, cols, 2.0f, 0.0f};
        s.x = {&xb, 0};
        s.y = {&yb, 0};
        const Status st = sim_run_scales({to_invocation(s)}, pool);
        EXPECT_FALSE(st.ok) << cols;
        EXPECT_NE(st.message.find("promises the compiler 4 trips"), std::string::npos) << st.message;
        EXPECT_EQ(0, std::memcmp(yb.host_ptr(), sentinel.data(), sentinel.size() * 4)) << "a refused row was written, cols " << cols;
    }
    for (int64_t cols : {97, 128, 1025, 1061, 2049}) {
        ASSERT_TRUE(scale_calls_keep_promise(cols)) << cols;
        const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(cols), 4.0f);
        xdna_test::HostBuffer xb(cols * 4), yb(cols * 4);
        std::memcpy(xb.host_ptr(), x.data(), x.size() * 4);
        ScaleInvocation s;
        s.p = {1, cols, cols, cols, 0.625f, -1.5f};
        s.x = {&xb, 0};
        s.y = {&yb, 0};
        const Status st = sim_run_scales({to_invocation(s)}, pool);
        ASSERT_TRUE(st.ok) << st.message;
        const float * y = static_cast<const float *>(yb.host_ptr());
        for (int64_t i = 0; i < cols; ++i) {
            const float want = xdna_test::safe_mul(x[i], 0.625f) + -1.5f;
            ASSERT_EQ(0, std::memcmp(&want, &y[i], 4)) << "cols " << cols << " value " << i << ": " << want << " vs " << y[i];
        }
    }
}

// The chunks of every row length the design takes (to 64 chunks) cover the row once, in order, each
// at most kScaleChunk values and each call on at least kScaleMinCall (whole vectors up to its end); and
// the one promise in scale.cc, on the chunk loop of n / 32 trips, is at most kScaleMinCall / 32.
TEST(ScaleEngine, EveryCallKeepsTheKernelsLoopPromise) {
    using namespace xdna;
    for (int64_t cols = 1; cols <= 64 * xdna_aie::kScaleChunk; ++cols) {
        if (!scale_calls_keep_promise(cols)) {
            ASSERT_LE(cols, 96);
            continue;
        }
        int64_t next = 0;
        for (int64_t c = 0; c < scale_chunks(cols); ++c) {
            const ScaleChunk k = scale_chunk(cols, c);
            ASSERT_EQ(k.begin, next) << cols;
            ASSERT_EQ(k.begin % xdna_aie::kScaleLanes, 0) << cols;
            ASSERT_GE(k.padded, kScaleMinCall) << "cols " << cols << " chunk " << c;
            ASSERT_LE(k.padded, xdna_aie::kScaleChunk) << cols;
            ASSERT_EQ(k.padded % xdna_aie::kScaleLanes, 0) << cols;
            ASSERT_TRUE(k.n > k.padded - xdna_aie::kScaleLanes && k.n <= k.padded) << cols;
            next += k.n;
        }
        ASSERT_EQ(next, cols);
        ASSERT_EQ(scale_chunks(cols), (cols + xdna_aie::kScaleChunk - 1) / xdna_aie::kScaleChunk) << "the fewest chunks";
    }
    const std::vector<xdna_test::LoopPromise> promises = xdna_test::kernel_loop_promises("scale/kernels/scale.cc");
    ASSERT_EQ(promises.size(), 1u);
    EXPECT_EQ(promises[0].loop, "for (int32_t i = 0; i < n; i += kLanes)");
    EXPECT_LE(promises[0].trips, kScaleMinCall / xdna_aie::kScaleLanes);
}
