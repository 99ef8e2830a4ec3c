// The core kernels and the core's rounding and saturation modes:
//  - every kernel computes the same bits whichever aie_api release compiles it (2025.1's downshifts
//    round per the current mode, 2026.1's truncate; host/config.hpp), on whole simulated invocations;
//  - every kernel returns with the modes it found, even when it found others than the reset ones;
//  - a kernel that does not is an error of its run, naming it and the mode, in every execution mode
//    that runs kernel code, and a device failure of the submission (outputs poisoned, not kept).
// GGML_XDNA_TEST_AIE_API=2025.1 runs the whole test binary under aie_api 2025.1 (ctest label
// aie-api-2025); the default is the release mlir-aie pins today (2026.1).
#include "contracts/matmul-contract.h"
#include "runtime/thread-pool.h"
#include "sim/core-state.h"
#include "sim/sim-device.h"
#include "sim/sim-matmul.h"
#include "sim/tile-kernels.h"
#include "sim-operands.h"
#include "test-random.h"

#include <aie_api/aie.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace xdna;
using aie_host::api_version;

// The whole binary's release, from the environment (read before any test runs).
const bool release_from_env = [] {
    const char * e = std::getenv("GGML_XDNA_TEST_AIE_API");
    if (e == nullptr || *e == '\0') return false;
    if (std::strcmp(e, "2025.1") == 0) aie_host::set_api_version(api_version::v2025_1);
    else if (std::strcmp(e, "2026.1") == 0) aie_host::set_api_version(api_version::v2026_1);
    else {
        std::fprintf(stderr, "GGML_XDNA_TEST_AIE_API=%s: expected 2025.1 or 2026.1\n", e);
        std::exit(2);
    }
    std::fprintf(stderr, "kernel tests under aie_api %s semantics\n", aie_host::api_version_name(aie_host::get_api_version()));
    return true;
}();

struct Case {
    const MatmulContract * contract;
    int                    tile_n;
};

std::vector<Case> kernel_cases() {
    std::vector<Case> v;
    for (const auto & c : all_matmul_contracts())
        for (int tn : c.tile_n)
            if (sim_has_tile_kernel(c, tn)) v.push_back({&c, tn});
    return v;
}

std::string case_name(const testing::TestParamInfo<Case> & info) {
    return std::string(info.param.contract->name) + "_n" + std::to_string(info.param.tile_n);
}

class KernelReleases : public ::testing::TestWithParam<Case> {};

// One invocation (two row tiles, two K tiles, a ragged token tile) through the kernel code, under each
// release: the outputs must be the same bits. This is what fails for a kernel whose shifts round
// under 2025.1 (mm_kquant_low ran its expansion and exponent shifts in conv_even).
TEST_P(KernelReleases, SameBitsUnderAieApi2025And2026) {
    const Case cs = GetParam();
    const MatmulContract & c = *cs.contract;
    const uint64_t seed = xdna_test::test_seed();
    SCOPED_TRACE(testing::Message() << c.name << " n" << cs.tile_n << " GGML_XDNA_TEST_SEED=" << seed);
    std::mt19937_64 g(seed ^ std::hash<std::string>{}(c.name) ^ cs.tile_n);
    const int64_t m = 64 + 23, n = cs.tile_n - 1;
    xdna_test::SimOperands o = xdna_test::make_sim_operands(c, cs.tile_n, m, 2, n, g, 50);
    ThreadPool pool(1);
    std::vector<std::vector<float>> out;
    for (const api_version release : {api_version::v2025_1, api_version::v2026_1}) {
        const aie_host::scoped_api_version use(release);
        xdna_test::HostBuffer buf(m * n * 4);
        o.inv.out = {&buf, 0};
        const Status st = sim_run_matmul(o.inv, pool, SimExec::kernels);
        ASSERT_TRUE(st.ok) << aie_host::api_version_name(release) << ": " << st.message;
        const auto * p = static_cast<const float *>(buf.host_ptr());
        out.emplace_back(p, p + m * n);
    }
    int finite_nonzero = 0;
    for (int64_t i = 0; i < m * n; ++i) {
        ASSERT_EQ(0, std::memcmp(&out[0][i], &out[1][i], 4))
            << "output " << i << " (token " << i / m << ", row " << i % m << "): 2025.1 " << out[0][i] << ", 2026.1 " << out[1][i];
        finite_nonzero += std::isfinite(out[0][i]) && out[0][i] != 0.0f;
    }
    EXPECT_GT(finite_nonzero, m * n / 2);  // values were compared, not zeros
}

INSTANTIATE_TEST_SUITE_P(All, KernelReleases, ::testing::ValuesIn(kernel_cases()), case_name);

// Each kernel, called in the reset modes and in two others, returns with exactly the modes it found
// (its results in the other modes are not checked: they are not the modes the kernels run in). The
// entry points are the simulator's mode-checked ones, which restore a mode a kernel left changed:
// the fault watch is what tells.
class KernelModes : public ::testing::TestWithParam<Case> {};

TEST_P(KernelModes, ReturnsWithTheModesItFound) {
    const Case cs = GetParam();
    const TileEntry * e = find_tile_entry(*cs.contract, cs.tile_n);
    ASSERT_NE(e, nullptr);
    alignas(64) static uint8_t w[65536], a[65536];  // more than any tile
    alignas(64) static float c[32 * 64];
    std::mt19937_64 g(xdna_test::test_seed());
    for (auto & b : w) b = static_cast<uint8_t>(g());
    for (auto & b : a) b = static_cast<uint8_t>(g());
    struct Entry {
        aie::rounding_mode rnd;
        aie::saturation_mode sat;
    };
    for (const Entry m : {Entry{aie::rounding_mode::floor, aie::saturation_mode::none},
                          Entry{aie::rounding_mode::conv_even, aie::saturation_mode::saturate},
                          Entry{aie::rounding_mode::symmetric_inf, aie::saturation_mode::symmetric}}) {
        for (const api_version release : {api_version::v2025_1, api_version::v2026_1}) {
            const aie_host::scoped_api_version use(release);
            const CoreFaultWatch watch;
            aie_host::reset_core_state();
            aie_host::core_state().rounding = m.rnd;
            aie_host::core_state().saturation = m.sat;
            std::memset(c, 0, sizeof c);
            e->kernel(w, a, c);
            EXPECT_EQ(aie::get_rounding(), m.rnd) << aie_host::rounding_mode_name(m.rnd);
            EXPECT_EQ(aie::get_saturation(), m.sat) << aie_host::saturation_mode_name(m.sat);
            std::string fault;
            EXPECT_FALSE(watch.failed(fault)) << fault;
        }
    }
    aie_host::reset_core_state();
}

INSTANTIATE_TEST_SUITE_P(All, KernelModes, ::testing::ValuesIn(kernel_cases()), case_name);

// ---------------------------------------------------------------------------------------------
// Bad input: a kernel that leaves a mode changed

// Adds nothing to C and leaves conv_even behind (as mm_kquant_low would have without its restore).
void leaves_conv_even(const uint8_t *, const uint8_t *, float *) { aie::set_rounding(aie::rounding_mode::conv_even); }
// Leaves saturation on.
void leaves_saturate(const uint8_t *, const uint8_t *, float *) { aie::set_saturation(aie::saturation_mode::saturate); }
// Changes both modes and puts them back: not an error.
void restores(const uint8_t *, const uint8_t *, float *) {
    const aie::rounding_mode r = aie::swap_rounding(aie::rounding_mode::conv_even);
    const aie::saturation_mode s = aie::swap_saturation(aie::saturation_mode::saturate);
    aie::set_saturation(s);
    aie::set_rounding(r);
}

const MatmulContract & q4_0() {
    const MatmulContract * c = matmul_contract_for(GGML_TYPE_Q4_0);
    EXPECT_NE(c, nullptr);
    return *c;
}

class MisbehavingKernel : public ::testing::Test {
protected:
    void SetUp() override {
        std::mt19937_64 g(xdna_test::test_seed());
        ops_ = std::make_unique<xdna_test::SimOperands>(xdna_test::make_sim_operands(q4_0(), 4, 64, 2, 3, g));
        out_ = std::make_unique<xdna_test::HostBuffer>(64 * 3 * 4);
        ops_->inv.out = {out_.get(), 0};
    }
    std::unique_ptr<xdna_test::SimOperands> ops_;
    std::unique_ptr<xdna_test::HostBuffer>  out_;
};

TEST_F(MisbehavingKernel, FailsTheRunNamingTheKernelAndTheMode) {
    ThreadPool pool(2);
    {
        const ScopedTileKernelOverride bad(q4_0(), 4, leaves_conv_even, "leaves_conv_even");
        for (const SimExec exec : {SimExec::kernels, SimExec::stream}) {
            const Status st = exec == SimExec::stream ? sim_run_matmuls_stream({to_invocation(ops_->inv)}, pool)
                                                      : sim_run_matmul(ops_->inv, pool, exec);
            ASSERT_FALSE(st.ok) << sim_exec_name(exec);
            EXPECT_NE(st.message.find("leaves_conv_even"), std::string::npos) << st.message;
            EXPECT_NE(st.message.find("rounding mode conv_even (called in floor)"), std::string::npos) << st.message;
            EXPECT_NE(st.message.find("must restore"), std::string::npos) << st.message;
        }
    }
    {
        const ScopedTileKernelOverride bad(q4_0(), 4, leaves_saturate, "leaves_saturate");
        const Status st = sim_run_matmul(ops_->inv, pool, SimExec::kernels);
        ASSERT_FALSE(st.ok);
        EXPECT_NE(st.message.find("leaves_saturate returned with the saturation mode saturate (called in none)"), std::string::npos)
            << st.message;
    }
    {
        const ScopedTileKernelOverride good(q4_0(), 4, restores, "restores");
        const Status st = sim_run_matmul(ops_->inv, pool, SimExec::kernels);
        EXPECT_TRUE(st.ok) << st.message;
    }
    // And the real kernel, as before.
    EXPECT_TRUE(sim_run_matmul(ops_->inv, pool, SimExec::kernels).ok);
    EXPECT_TRUE(sim_run_matmuls_stream({to_invocation(ops_->inv)}, pool).ok);
}

TEST_F(MisbehavingKernel, IsADeviceFailureOfTheSubmission) {
    SimDevice dev(1);
    dev.set_exec(SimExec::kernels);
    Batch batch;
    batch.invocations.push_back(to_invocation(ops_->inv));
    ASSERT_TRUE(dev.run(batch, std::chrono::milliseconds(0)).ok);
    const float good = static_cast<const float *>(out_->host_ptr())[0];
    EXPECT_TRUE(std::isfinite(good));
    const ScopedTileKernelOverride bad(q4_0(), 4, leaves_conv_even, "leaves_conv_even");
    const Status st = dev.run(batch, std::chrono::milliseconds(0));
    ASSERT_FALSE(st.ok);
    EXPECT_NE(st.message.find("leaves_conv_even"), std::string::npos) << st.message;
    // What the failed run left is poisoned, so a caller that used it anyway would see NaN.
    EXPECT_TRUE(std::isnan(static_cast<const float *>(out_->host_ptr())[0]));
}

}  // namespace
