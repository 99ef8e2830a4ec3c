// The glu core program (aie/glu/kernels/swiglu.cc) and the simulator's glu engine against a
// reference written here from the numerics the kernel states (core-fp32-reference.h's safe product,
// the exp2 and reciprocal emulations), and against silu(x) * g in double.
#include "core-fp32-reference.h"
#include "ops/glu/glu-invocation.h"
#include "ops/glu/sim-glu.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "swiglu-twin.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

namespace {

using xdna_test::safe_mul;

float from_bits(int32_t i) {
    float f;
    std::memcpy(&f, &i, 4);
    return f;
}
int32_t to_bits(float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i;
}

float reference_swiglu(float x, float g) {
    const float kMagic = 12582912.0f;
    float z = safe_mul(x, -1.4426950408889634f);
    z = std::min(std::max(z, -126.0f), 125.0f);
    const float n = (z + kMagic) - kMagic;
    const float t = safe_mul(z - n, 0.6931471805599453f);
    const float c[7] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f};
    float p = 1.0f / 5040.0f;
    for (float ci : c) p = safe_mul(p, t) + ci;
    const float e = safe_mul(p, from_bits((static_cast<int32_t>(n) + 127) << 23));
    const float d = e + 1.0f;
    float r = from_bits(0x7EF311C3 - to_bits(d));
    for (int it = 0; it < 4; ++it) r = safe_mul(r, 2.0f - safe_mul(d, r));
    return safe_mul(safe_mul(x, r), g);
}

std::vector<float> engine(const std::vector<float> & x, const std::vector<float> & g, int64_t rows, int64_t cols,
                          xdna::SimExec exec = xdna::SimExec::kernels) {
    using namespace xdna;
    const size_t n = x.size();
    xdna_test::HostBuffer xb(n * 4), gb(n * 4), yb(n * 4);
    std::memcpy(xb.host_ptr(), x.data(), n * 4);
    std::memcpy(gb.host_ptr(), g.data(), n * 4);
    GluInvocation inv;
    inv.p = {rows, cols, cols, cols, cols};
    inv.a = {&xb, 0};
    inv.b = {&gb, 0};
    inv.y = {&yb, 0};
    ThreadPool pool(2);
    EXPECT_TRUE(sim_run_glus({to_invocation(inv)}, pool, exec).ok);
    const float * y = static_cast<const float *>(yb.host_ptr());
    return std::vector<float>(y, y + n);
}

}  // namespace

// Every output's bits are the stated numerics', on LLM-like gates and far out to both clamps.
TEST(SwigluKernel, BitsAreTheStatedNumerics) {
    constexpr int64_t rows = 3, cols = 2304;  // 18 calls of the design's tile 128
    std::vector<float> x = xdna_test::random_floats(rows * cols, 3.0f), g = xdna_test::random_floats(rows * cols, 1.0f);
    for (int i = 0; i < 64; ++i) x[static_cast<size_t>(i)] = -120.0f + 3.75f * i;  // across both clamps
    const std::vector<float> y = engine(x, g, rows, cols);
    for (size_t i = 0; i < x.size(); ++i) {
        const float want = reference_swiglu(x[i], g[i]);
        ASSERT_EQ(to_bits(want), to_bits(y[i])) << "x " << x[i] << " g " << g[i] << ": reference " << want << ", kernel " << y[i]
                                                << " (seed " << xdna_test::test_seed() << ")";
    }
}

// Against silu(x) * g in double: within 4e-6 relative for -80 <= x <= 80.
TEST(SwigluKernel, CloseToTheExactSilu) {
    constexpr int64_t cols = 1024;
    std::vector<float> x(cols), g(cols, 1.0f);
    for (int64_t i = 0; i < cols; ++i) x[static_cast<size_t>(i)] = -80.0f + 160.0f * i / (cols - 1) + xdna_test::uniform(-0.05f, 0.05f);
    const std::vector<float> y = engine(x, g, 1, cols);
    double worst = 0;
    for (int64_t i = 0; i < cols; ++i) {
        const double xi = x[static_cast<size_t>(i)], want = xi / (1.0 + std::exp(-xi));
        worst = std::max(worst, std::fabs(y[static_cast<size_t>(i)] - want) / std::max(std::fabs(want), 1e-30));
    }
    EXPECT_LE(worst, 4e-6) << "worst relative error";
}

// The twin the simulator runs by default gives the kernel code's bits (NaN for NaN) on every path this
// host has: random gates at LLM scale, values across both clamps and the whole fp32 range, and the
// special values in either input.
TEST(SwigluKernel, TwinIsBitIdenticalToTheKernelCode) {
    using namespace xdna;
    constexpr int64_t rows = 2, cols = 4096;
    std::vector<float> x = xdna_test::random_floats(rows * cols, 3.0f), g = xdna_test::random_floats(rows * cols, 1.0f);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const float specials[] = {0.0f, -0.0f, inf, -inf, nan, 1e-45f, -1e-45f, 1e-38f, -3e38f, 3e38f, 87.0f, -87.0f, 88.7f, -103.0f};
    for (size_t i = 0; i < 2048; ++i) {  // log-uniform magnitudes over the whole range, both signs
        x[i] = (i % 2 ? -1.0f : 1.0f) * std::ldexp(xdna_test::uniform(1.0f, 2.0f), static_cast<int>(i % 256) - 140);
    }
    for (size_t i = 0; i < std::size(specials); ++i) {
        for (size_t j = 0; j < std::size(specials); ++j) {
            x[2048 + i * std::size(specials) + j] = specials[i];
            g[2048 + i * std::size(specials) + j] = specials[j];
        }
    }
    for (size_t i = 2400; i < 2400 + 512; ++i) x[i] = xdna_test::uniform(-130.0f, 130.0f);
    const std::vector<float> want = engine(x, g, rows, cols, SimExec::kernels);
    std::vector<TwinIsa> paths{TwinIsa::portable};
    if (swiglu_twin_isa() == TwinIsa::avx512) paths.push_back(TwinIsa::avx512);
    for (const TwinIsa isa : paths) {
        swiglu_twin_limit_isa(isa);
        const std::vector<float> got = engine(x, g, rows, cols, SimExec::twin);
        swiglu_twin_limit_isa(TwinIsa::avx512);
        for (size_t i = 0; i < x.size(); ++i) {
            const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : to_bits(want[i]) == to_bits(got[i]);
            ASSERT_TRUE(same) << twin_isa_name(isa) << ": x " << x[i] << " g " << g[i] << ": kernel " << want[i] << ", twin " << got[i]
                              << " (seed " << xdna_test::test_seed() << ")";
        }
    }
}

// The glu design through its instruction stream (aie/glu/dataflow.json, runtime/rows-sequence.h): a decode
// token's gate over 7 columns, a prefill block and rows of 128 (the smallest tile, 32, in groups of the 4
// core rows), each core reading its chunk of b's broadcast object, every output the kernel mode's bits
// (which the test above ties to the stated numerics); a row no group of the design's tiles divides is
// refused.
TEST(SwigluStream, StreamGivesTheKernelModesBits) {
    using namespace xdna;
    StreamContexts ctx;
    for (const auto & [rows, cols] : {std::pair<int64_t, int64_t>{1, 14336}, {37, 1536}, {5, 128}}) {
        SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
        const size_t n = static_cast<size_t>(rows * cols);
        const std::vector<float> x = xdna_test::random_floats(n, 3.0f), g = xdna_test::random_floats(n, 1.0f);
        const std::vector<float> want = engine(x, g, rows, cols);
        xdna_test::HostBuffer xb(n * 4), gb(n * 4), yb(n * 4);
        std::memcpy(xb.host_ptr(), x.data(), n * 4);
        std::memcpy(gb.host_ptr(), g.data(), n * 4);
        GluInvocation inv;
        inv.p = {rows, cols, cols, cols, cols};
        inv.a = {&xb, 0};
        inv.b = {&gb, 0};
        inv.y = {&yb, 0};
        ThreadPool pool(2);
        bool refused = true;
        const Status st = sim_run_glus_stream({to_invocation(inv)}, pool, ctx, &refused);
        ASSERT_TRUE(st.ok) << st.message;
        EXPECT_FALSE(refused);
        EXPECT_EQ(0, std::memcmp(want.data(), yb.host_ptr(), n * 4));
    }
    xdna_test::HostBuffer small(4 * 96);
    GluInvocation odd;
    odd.p = {1, 96, 96, 96, 96};  // not a whole group of 4 chunks of 32
    odd.a = odd.b = odd.y = {&small, 0};
    ThreadPool pool(1);
    bool refused = false;
    EXPECT_FALSE(sim_run_glus_stream({to_invocation(odd)}, pool, ctx, &refused).ok);
    EXPECT_TRUE(refused);
}
