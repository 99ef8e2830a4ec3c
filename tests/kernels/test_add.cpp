// The add core program (aie/add/kernels/add.cc) and the simulator's add engine against IEEE fp32 adds
// done here: every output's bits, with a shared b row and one per row, strided rows, NaN and Inf. The
// design's second program (mul.cc, MUL) against the core's safe product (core-fp32-reference.h).
#include "core-fp32-reference.h"
#include "ops/add/add-invocation.h"
#include "ops/add/sim-add.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

TEST(AddEngine, EveryOutputIsTheIeeeSum) {
    using namespace xdna;
    constexpr int64_t cols = 2304, rows = 5, stride = 2320;  // 18 calls of the design's tile 128
    const size_t n = static_cast<size_t>(rows * stride);
    std::vector<float> a = xdna_test::random_floats(n, 4.0f), b = xdna_test::random_floats(n, 1e-3f);
    a[3] = std::numeric_limits<float>::quiet_NaN();
    a[stride + 7] = std::numeric_limits<float>::infinity();
    b[stride + 8] = -std::numeric_limits<float>::infinity();
    for (bool b_row : {false, true}) {
        xdna_test::HostBuffer ab(n * 4), bb(n * 4), yb(n * 4);
        std::memcpy(ab.host_ptr(), a.data(), n * 4);
        std::memcpy(bb.host_ptr(), b.data(), n * 4);
        std::vector<float> init(n, 777.0f);
        std::memcpy(yb.host_ptr(), init.data(), n * 4);
        AddInvocation r;
        r.p = {rows, cols, stride, b_row ? 0 : stride, stride};
        r.a = {&ab, 0};
        r.b = {&bb, 0};
        r.y = {&yb, 0};
        ThreadPool pool(2);
        ASSERT_TRUE(sim_run_adds({to_invocation(r)}, pool).ok);
        const float * y = static_cast<const float *>(yb.host_ptr());
        for (int64_t row = 0; row < rows; ++row) {
            for (int64_t i = 0; i < stride; ++i) {
                const size_t at = static_cast<size_t>(row * stride + i);
                if (i >= cols) {
                    ASSERT_EQ(y[at], 777.0f) << "past the row";
                    continue;
                }
                const float want = a[at] + b[b_row ? static_cast<size_t>(i) : at];
                uint32_t w, g;
                std::memcpy(&w, &want, 4);
                std::memcpy(&g, &y[at], 4);
                if (std::isnan(want)) {
                    ASSERT_TRUE(std::isnan(y[at])) << row << " " << i;
                } else {
                    ASSERT_EQ(w, g) << "row " << row << " value " << i << (b_row ? " (b row)" : "");
                }
            }
        }
    }
}

TEST(AddEngine, RefusesRowsTheDesignDoesNotTake) {
    using namespace xdna;
    xdna_test::HostBuffer buf(4096);
    AddInvocation r;
    r.p = {1, 40, 40, 0, 40};
    r.a = r.b = r.y = {&buf, 0};
    ThreadPool pool(1);
    EXPECT_FALSE(sim_run_adds({to_invocation(r)}, pool).ok);
}

// MUL: every output's bits are the core's safe product (a first), ADD and MUL in one engine call.
TEST(AddEngine, MulIsTheSafeProduct) {
    using namespace xdna;
    constexpr int64_t cols = 1280, rows = 3;  // 10 calls of the design's tile 128
    const size_t n = static_cast<size_t>(rows * cols);
    const std::vector<float> a = xdna_test::random_floats(n, 4.0f), b = xdna_test::random_floats(n, 2.0f);
    xdna_test::HostBuffer ab(n * 4), bb(n * 4), yb(n * 4), zb(n * 4);
    std::memcpy(ab.host_ptr(), a.data(), n * 4);
    std::memcpy(bb.host_ptr(), b.data(), n * 4);
    AddInvocation m;
    m.p = {rows, cols, cols, cols, cols, true};
    m.a = {&ab, 0};
    m.b = {&bb, 0};
    m.y = {&yb, 0};
    AddInvocation s = m;
    s.p.multiply = false;
    s.y = {&zb, 0};
    ThreadPool pool(2);
    ASSERT_TRUE(sim_run_adds({to_invocation(m), to_invocation(s)}, pool).ok);
    const float * y = static_cast<const float *>(yb.host_ptr());
    const float * z = static_cast<const float *>(zb.host_ptr());
    for (size_t i = 0; i < n; ++i) {
        const float want = xdna_test::safe_mul(a[i], b[i]), sum = a[i] + b[i];
        ASSERT_EQ(0, std::memcmp(&want, &y[i], 4)) << "value " << i << ": " << want << " vs " << y[i];
        ASSERT_EQ(0, std::memcmp(&sum, &z[i], 4)) << "value " << i;
    }
}
