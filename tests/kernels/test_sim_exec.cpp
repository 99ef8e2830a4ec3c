// The simulator's two execution modes give the same bits: for every contract with a twin, at both token
// tiles, whole invocations (several row, token and K tiles, ragged M and N) run once through the core
// kernel code and once through the twin, on random weights and activations. This is what licenses the
// twin as the default (GGML_XDNA_SIM_EXEC=twin).
#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"
#include "contracts/tile-codec.h"
#include "contracts/weight-layout.h"
#include "runtime/thread-pool.h"
#include "sim/sim-matmul.h"
#include "kquant-twin.h"
#include "sim-operands.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace {

using namespace xdna;

uint64_t seed() { return xdna_test::test_seed(); }

using xdna_test::HostBuffer;

struct Case {
    const MatmulContract * contract;
    int                    tile_n;
};

std::vector<Case> twin_cases() {
    std::vector<Case> v;
    for (const auto & c : all_matmul_contracts())
        for (int tn : c.tile_n)
            if (sim_has_twin(c, tn)) v.push_back({&c, tn});
    return v;
}

class SimExecIdentity : public ::testing::TestWithParam<Case> {};

TEST_P(SimExecIdentity, TwinGivesTheKernelsBits) {
    const Case cs = GetParam();
    const MatmulContract & c = *cs.contract;
    SCOPED_TRACE(testing::Message() << c.name << " n" << cs.tile_n << " seed " << seed());
    std::mt19937_64 g(seed() ^ std::hash<std::string>{}(c.name) ^ cs.tile_n);
    const int64_t m = 64 * 2 + 19, k = 3 * c.tile_k, n = cs.tile_n == 4 ? 3 : 32 + 9;
    xdna_test::SimOperands o = xdna_test::make_sim_operands(c, cs.tile_n, m, k / c.tile_k, n, g, 50);
    MatmulInvocation & inv = o.inv;
    HostBuffer obuf_k(m * n * 4), obuf_t(m * n * 4);
    ThreadPool pool(2);
    inv.out = {&obuf_k, 0};
    sim_run_matmul(inv, pool, SimExec::kernels);
    inv.out = {&obuf_t, 0};
    sim_run_matmul(inv, pool, SimExec::twin);
    const auto * a = static_cast<const float *>(obuf_k.host_ptr());
    const auto * b = static_cast<const float *>(obuf_t.host_ptr());
    int nonzero = 0;
    for (int64_t i = 0; i < m * n; ++i) {
        ASSERT_EQ(0, std::memcmp(&a[i], &b[i], 4)) << "output " << i << ": kernel " << a[i] << " twin " << b[i];
        nonzero += a[i] != 0.0f;
    }
    EXPECT_GT(nonzero, m * n / 2);  // real values were compared, not zeros
}

INSTANTIATE_TEST_SUITE_P(All, SimExecIdentity, ::testing::ValuesIn(twin_cases()), [](const auto & info) {
    return std::string(info.param.contract->name) + "_n" + std::to_string(info.param.tile_n);
});

TEST(SimExecIdentity, KQuantTwinScalarPathEqualsVectorPath) {
    if (!kquant_twin_vectorised()) GTEST_SKIP() << "no AVX-512 VNNI/VBMI on this host: only the scalar path exists";
    std::mt19937_64 g(seed());
    using Fn = void (*)(const uint8_t *, const uint8_t *, float *);
    const Fn fns[] = {twin_mm_q4_K_a8_n4, twin_mm_q4_K_a8_n32, twin_mm_q5_K_a8_n4,
                      twin_mm_q5_K_a8_n32, twin_mm_q6_K_a8_n4, twin_mm_q6_K_a8_n32};
    for (int i = 0; i < 6; ++i) {
        const int tn = i % 2 ? 32 : 4;
        alignas(64) static uint8_t w[16384], a[16384];
        for (auto & b : w) b = static_cast<uint8_t>(g());
        for (auto & b : a) b = static_cast<uint8_t>(g());
        std::vector<float> v(tn * 64), s(tn * 64);
        for (size_t j = 0; j < v.size(); ++j) v[j] = s[j] = static_cast<float>(static_cast<int>(g() % 1000)) - 500.0f;
        fns[i](w, a, v.data());
        kquant_twin_force_scalar(true);
        fns[i](w, a, s.data());
        kquant_twin_force_scalar(false);
        for (size_t j = 0; j < v.size(); ++j) {
            if (std::isnan(v[j]) && std::isnan(s[j])) continue;
            ASSERT_EQ(0, std::memcmp(&v[j], &s[j], 4)) << "function " << i << " output " << j;
        }
    }
}

}  // namespace
