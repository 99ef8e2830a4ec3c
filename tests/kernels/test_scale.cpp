// The scale core program (aie/scale/kernels/scale.cc) through the simulator's scale engine (kernels
// mode: the kernel code called chunk by chunk at the design's tile) against the stated numerics written
// here (core-fp32-reference.h's safe product, one IEEE add for the bias): every output's bits, with and
// without a bias, strided rows (nothing past a row written); rows the design does not take refused
// before anything runs.
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
    constexpr int64_t rows = 3, cols = 1536, stride = 1600;  // groups of 2 chunks of 256 (768 = 3 x 256)
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
        const Invocation inv = to_invocation(s);
        EXPECT_EQ(inv.key.tile.n, 256);
        ThreadPool pool(2);
        ASSERT_TRUE(sim_run_scales({inv}, pool).ok);
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

// The design takes rows in groups of 2 chunks of one of its tiles (128 to 1024 values): the key of any
// other row has no tile, and the engine refuses it before anything runs, nothing written; so does a key
// whose tile is under the kernel's loop promise (64: 2 trips of the 4 promised) or does not divide the row.
TEST(ScaleEngine, RefusesRowsTheDesignDoesNotTake) {
    using namespace xdna;
    ThreadPool pool(2);
    struct Refused {
        int64_t cols;
        int     forced_tile;  // 0: the key's own
    };
    for (const Refused & c : {Refused{10, 0}, Refused{97, 0}, Refused{1061, 0}, Refused{128, 0}, Refused{384, 0}, Refused{256, 64},
                              Refused{768, 512}}) {
        SCOPED_TRACE(std::to_string(c.cols) + " at tile " + std::to_string(c.forced_tile));
        xdna_test::HostBuffer xb(c.cols * 4), yb(c.cols * 4);
        std::vector<float> sentinel(static_cast<size_t>(c.cols), 777.0f);
        std::memcpy(yb.host_ptr(), sentinel.data(), sentinel.size() * 4);
        ScaleInvocation s;
        s.p = {1, c.cols, c.cols, c.cols, 2.0f, 0.0f};
        s.x = {&xb, 0};
        s.y = {&yb, 0};
        Invocation inv = to_invocation(s);
        if (c.forced_tile != 0) {
            inv.key = scale_key(c.forced_tile);
        } else {
            EXPECT_EQ(inv.key.tile.n, 0);
        }
        const Status st = sim_run_scales({inv}, pool);
        EXPECT_FALSE(st.ok);
        EXPECT_NE(st.message.find("is not one the design takes"), std::string::npos) << st.message;
        EXPECT_EQ(0, std::memcmp(yb.host_ptr(), sentinel.data(), sentinel.size() * 4)) << "a refused row was written";
    }
}

// Every tile of the description keeps the one promise in scale.cc (the chunk loop of n / 32 trips), and
// the smallest row the design takes is a group of 2 of the smallest tile.
TEST(ScaleEngine, EveryTileKeepsTheKernelsLoopPromise) {
    using namespace xdna;
    const DesignRead & d = scale_design();
    ASSERT_TRUE(d.ok()) << d.error;
    const std::vector<xdna_test::LoopPromise> promises = xdna_test::kernel_loop_promises("scale/kernels/scale.cc");
    ASSERT_EQ(promises.size(), 1u);
    EXPECT_EQ(promises[0].loop, "for (int32_t i = 0; i < n; i += kLanes)");
    int smallest = 1 << 30;
    for (const DesignDescription::KernelStack & k : d.design.kernel_stacks) {
        EXPECT_GE(k.tile_n / xdna_aie::kScaleLanes, promises[0].trips) << "tile " << k.tile_n;
        EXPECT_EQ(k.tile_n % xdna_aie::kScaleLanes, 0);
        EXPECT_LE(k.tile_n, xdna_aie::kScaleChunk);
        smallest = std::min(smallest, k.tile_n);
    }
    EXPECT_EQ(smallest, kScaleMinCall);
    EXPECT_EQ(scale_tile(2 * kScaleMinCall), kScaleMinCall);
    EXPECT_EQ(scale_tile(2 * kScaleMinCall - xdna_aie::kScaleLanes), 0);
    EXPECT_EQ(scale_tile(4096), 1024);
}
