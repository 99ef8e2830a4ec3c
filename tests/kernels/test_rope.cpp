// The rope core programs (aie/rope/kernels/rope.cc) through the simulator's rope engine, against a
// reference written here from the numerics the kernel states (core-fp32-reference.h's safe product,
// one rounding per add); the angle table against the rotation angles in double; bad positions refused.
#include "core-fp32-reference.h"
#include "kernel-loop-promises.h"
#include "ops/rope/rope-invocation.h"
#include "ops/rope/rope-table.h"
#include "ops/rope/sim-rope.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include "xdna_aie/rope_tiles.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

using xdna_test::safe_mul;

int32_t to_bits(float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i;
}

struct Case {
    xdna::RopeMode mode;
    int32_t        n_dims;
    int64_t        ne0, heads, tokens;
    int64_t        head_stride;  // floats; >= ne0 (a view with a gap between heads)
    bool           freq_factors;
};

struct RopeRun {
    std::vector<float>   x, y, ff;
    std::vector<int32_t> pos;
    xdna::Status         status;
};

RopeRun run_engine(const Case & c, std::vector<int32_t> pos) {
    using namespace xdna;
    RopeRun out;
    const int64_t token_stride = c.head_stride * c.heads;
    const size_t n = static_cast<size_t>(token_stride * c.tokens);
    out.x = xdna_test::random_floats(n, 2.0f);
    out.pos = std::move(pos);
    for (int i = 0; i < c.n_dims / 2; ++i) out.ff.push_back(xdna_test::uniform(1.0f, 8.0f));
    xdna_test::HostBuffer xb(n * 4), yb(n * 4), pb(out.pos.size() * 4), fb(out.ff.size() * 4);
    std::memcpy(xb.host_ptr(), out.x.data(), n * 4);
    std::memset(yb.host_ptr(), 0x7f, n * 4);
    std::memcpy(pb.host_ptr(), out.pos.data(), out.pos.size() * 4);
    std::memcpy(fb.host_ptr(), out.ff.data(), out.ff.size() * 4);
    RopeInvocation inv;
    inv.p.mode = c.mode;
    inv.p.angles.n_dims = c.n_dims;
    inv.p.angles.n_ctx_orig = 4096;
    inv.p.angles.freq_base = 500000.0f;
    inv.p.angles.has_freq_factors = c.freq_factors;
    inv.p.ne0 = c.ne0;
    inv.p.n_heads = c.heads;
    inv.p.n_tokens = c.tokens;
    inv.p.x_head_stride = inv.p.y_head_stride = c.head_stride;
    inv.p.x_token_stride = inv.p.y_token_stride = token_stride;
    inv.x = {&xb, 0};
    inv.pos = {&pb, 0};
    inv.freq_factors = {&fb, 0};
    inv.y = {&yb, 0};
    ThreadPool pool(2);
    out.status = sim_run_ropes({to_invocation(inv)}, pool);
    const float * y = static_cast<const float *>(yb.host_ptr());
    out.y.assign(y, y + n);
    return out;
}

// The rotation as the kernel states it, given the angle row of the token: products x first, one
// rounding per add; dims past n_dims copied.
void check_bits(const Case & c, const RopeRun & r) {
    xdna::RopeAngles a;
    a.n_dims = c.n_dims;
    a.n_ctx_orig = 4096;
    a.freq_base = 500000.0f;
    a.has_freq_factors = c.freq_factors;
    std::vector<float> cs(static_cast<size_t>(c.n_dims));
    const int half = c.n_dims / 2;
    for (int64_t t = 0; t < c.tokens; ++t) {
        xdna::rope_angle_row(a, c.freq_factors ? r.ff.data() : nullptr, r.pos[static_cast<size_t>(t)], cs.data());
        for (int64_t h = 0; h < c.heads; ++h) {
            const size_t base = static_cast<size_t>((t * c.heads + h) * c.head_stride);
            for (int i = 0; i < half; ++i) {
                const size_t i0 = base + (c.mode == xdna::RopeMode::neox ? i : 2 * i);
                const size_t i1 = base + (c.mode == xdna::RopeMode::neox ? i + half : 2 * i + 1);
                const float cv = cs[static_cast<size_t>(i)], sv = cs[static_cast<size_t>(half + i)];
                const float want0 = safe_mul(r.x[i0], cv) - safe_mul(r.x[i1], sv);
                const float want1 = safe_mul(r.x[i0], sv) + safe_mul(r.x[i1], cv);
                ASSERT_EQ(to_bits(want0), to_bits(r.y[i0])) << "token " << t << " head " << h << " pair " << i;
                ASSERT_EQ(to_bits(want1), to_bits(r.y[i1])) << "token " << t << " head " << h << " pair " << i;
            }
            for (int64_t d = c.n_dims; d < c.ne0; ++d) {
                ASSERT_EQ(to_bits(r.x[base + static_cast<size_t>(d)]), to_bits(r.y[base + static_cast<size_t>(d)])) << "copied dim " << d;
            }
        }
    }
}

std::vector<int32_t> random_positions(int64_t n, int32_t below) {
    std::vector<int32_t> p;
    for (int64_t i = 0; i < n; ++i) p.push_back(static_cast<int32_t>(xdna_test::uniform(0.0f, static_cast<float>(below))));
    return p;
}

}  // namespace

TEST(RopeKernel, NormBitsAreTheStatedNumerics) {
    const Case c{xdna::RopeMode::norm, 128, 128, 8, 5, 128, false};
    const RopeRun r = run_engine(c, random_positions(c.tokens, 100000));
    ASSERT_TRUE(r.status.ok) << r.status.message;
    check_bits(c, r);
}

TEST(RopeKernel, NeoxBitsAreTheStatedNumerics) {
    const Case c{xdna::RopeMode::neox, 64, 64, 7, 4, 64, false};
    const RopeRun r = run_engine(c, random_positions(c.tokens, 5000));
    ASSERT_TRUE(r.status.ok) << r.status.message;
    check_bits(c, r);
}

// Partial rotation (StableLM: 32 of 80 dims), freq factors (Llama 3), heads a view with gaps.
TEST(RopeKernel, PartialRotationFreqFactorsAndStrides) {
    for (xdna::RopeMode mode : {xdna::RopeMode::norm, xdna::RopeMode::neox}) {
        const Case c{mode, 32, 80, 3, 6, 96, true};
        const RopeRun r = run_engine(c, random_positions(c.tokens, 70000));
        ASSERT_TRUE(r.status.ok) << r.status.message;
        check_bits(c, r);
        // The gaps between heads are not written.
        for (int64_t row = 0; row < c.heads * c.tokens; ++row) {
            for (int64_t d = c.ne0; d < c.head_stride; ++d) {
                ASSERT_EQ(0x7f7f7f7f, to_bits(r.y[static_cast<size_t>(row * c.head_stride + d)]));
            }
        }
    }
}

// The table's angles are pos * base^(-2i/n_dims) (no YaRN), accumulated in float by multiplication as
// ggml's CPU backend does: pair i's angle carries i roundings of the product and i times the rounding
// of base^(-2/n_dims), so its cos and sin are within (2i + 8) ulp of theta of those in double.
TEST(RopeTable, AnglesMatchDouble) {
    xdna::RopeAngles a;
    a.n_dims = 128;
    a.freq_base = 500000.0f;
    std::vector<float> row(128);
    for (int64_t p : {0, 1, 17, 4095, 19999, 99999}) {
        xdna::rope_angle_row(a, nullptr, p, row.data());
        for (int i = 0; i < 64; ++i) {
            const double theta = static_cast<double>(p) * std::pow(500000.0, -2.0 * i / 128);
            const double tol = (2 * i + 8) * theta * std::ldexp(1.0, -24) + 1e-6;
            EXPECT_NEAR(std::cos(theta), row[static_cast<size_t>(i)], tol) << "pos " << p << " pair " << i;
            EXPECT_NEAR(std::sin(theta), row[static_cast<size_t>(64 + i)], tol) << "pos " << p << " pair " << i;
        }
    }
}

// A position the table does not cover fails the run (the backend then computes it on the host); nothing
// is written.
TEST(RopeKernel, PositionOutsideTheTableIsRefused) {
    for (int32_t bad : {-1, static_cast<int32_t>(xdna::kRopeMaxPosition)}) {
        const Case c{xdna::RopeMode::neox, 64, 64, 2, 3, 64, false};
        std::vector<int32_t> pos{5, bad, 7};
        const RopeRun r = run_engine(c, pos);
        EXPECT_FALSE(r.status.ok);
        EXPECT_NE(std::string::npos, r.status.message.find("outside the angle table")) << r.status.message;
        for (float v : r.y) ASSERT_EQ(0x7f7f7f7f, to_bits(v));
    }
}

// rope.cc's loop promises against the fewest trips of a call the design makes: both rotation loops make
// n_dims / 32 trips (NORM: 32 dims per step; NEOX: 16 of each half), and the fewest rotated dims the
// design takes is 32 (xdna_aie::rope_row_fits): one trip, so each promises at most 1.
TEST(RopeKernelSource, LoopPromisesHoldForEveryCallTheDesignMakes) {
    int n_dims_min = 0;
    for (int n = xdna_aie::kRopeMaxRow; n >= 1; --n) n_dims_min = xdna_aie::rope_row_fits(n, xdna_aie::kRopeMaxRow) ? n : n_dims_min;
    ASSERT_EQ(n_dims_min, 32);
    const std::vector<xdna_test::LoopPromise> promises = xdna_test::kernel_loop_promises("rope/kernels/rope.cc");
    ASSERT_EQ(promises.size(), 2u);
    EXPECT_EQ(promises[0].loop, "for (int32_t j = 0; j < n_dims; j += 2 * kLanes)");
    EXPECT_EQ(promises[1].loop, "for (int32_t i = 0; i < half; i += kLanes)");
    for (const xdna_test::LoopPromise & p : promises) EXPECT_LE(p.trips, n_dims_min / xdna_aie::kRopePairLanes) << p.loop;
}
