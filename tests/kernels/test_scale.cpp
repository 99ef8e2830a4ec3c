// The scale core program (aie/scale/kernels/scale.cc) through the simulator's scale engine against the
// stated numerics written here (core-fp32-reference.h's safe product, one IEEE add for the bias): every
// output's bits, with and without a bias, rows of a length that is not a multiple of 32 (nothing past a
// row written).
#include "core-fp32-reference.h"
#include "ops/scale/scale-invocation.h"
#include "ops/scale/sim-scale.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

TEST(ScaleEngine, BitsAreTheStatedNumerics) {
    using namespace xdna;
    constexpr int64_t rows = 3, cols = 1061, stride = 1100;  // two chunks, the second short and not a multiple of 32
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
