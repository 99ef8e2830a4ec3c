// Two "models" and two contexts in one process on one XDNA device: each has its own backend (stream),
// its own weights and its own graphs, and both compute at the same time from two threads. Every result
// must equal the contract's exact value (the reference shares no code with the backend), each backend's
// figures (plans, fallbacks) must be its own, and nothing may race (this test also runs under
// ThreadSanitizer: CTest label tsan).
#include "backend-harness.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace xdna_test;

namespace {

struct Stream {
    MatmulCase                        c;
    std::vector<std::vector<uint8_t>> w;  // per round: weights (a new "model" load each round)
    std::vector<std::vector<float>>   x;  // per round: activations
    std::vector<std::string>          mismatches;
};

TEST(Concurrency, TwoBackendsOnOneDeviceComputeInParallel) {
    const int rounds = 6;
    // Different weight types, shapes and token counts: the two streams share no plan, scratch or kernel.
    Stream a{{GGML_TYPE_Q4_K, 512, 96, 7}}, b{{GGML_TYPE_Q8_0, 256, 64, 33}};
    for (Stream * s : {&a, &b}) {  // random data drawn here, in one thread
        for (int r = 0; r < rounds; ++r) {
            s->w.push_back(random_weights(s->c.wtype, s->c.k, s->c.m));
            s->x.push_back(random_floats(activation_count(s->c)));
        }
    }
    ggml_backend_t ba = ggml_backend_dev_init(xdna_device(), nullptr);
    ggml_backend_t bb = ggml_backend_dev_init(xdna_device(), nullptr);
    std::atomic<int> ready{0};
    auto work = [&](ggml_backend_t backend, Stream & s) {
        ++ready;
        while (ready.load() < 2) {
        }  // start together, to overlap as much as possible
        for (int r = 0; r < rounds; ++r) {
            const MatmulResult out = run_matmul(backend, s.c, s.w[r], s.x[r]);
            s.mismatches.push_back(contract_mismatch(s.c, s.w[r], s.x[r], out.out));
        }
    };
    std::thread ta(work, ba, std::ref(a)), tb(work, bb, std::ref(b));
    ta.join();
    tb.join();
    for (int r = 0; r < rounds; ++r) {
        EXPECT_EQ(a.mismatches[r], "") << "stream a, round " << r << ", seed " << test_seed();
        EXPECT_EQ(b.mismatches[r], "") << "stream b, round " << r << ", seed " << test_seed();
    }
    auto fallback_runs = reinterpret_cast<ggml_backend_xdna_fallback_runs_t>(
        ggml_backend_reg_get_proc_address(ggml_backend_xdna_reg(), "ggml_backend_xdna_fallback_runs"));
    ASSERT_NE(fallback_runs, nullptr);
    EXPECT_EQ(fallback_runs(ba), 0u);
    EXPECT_EQ(fallback_runs(bb), 0u);
    ggml_backend_free(ba);
    ggml_backend_free(bb);
}

TEST(Concurrency, FallbacksAreCountedPerBackend) {
    // Only the backend whose run failed counts a fallback.
    auto fail_runs = reinterpret_cast<ggml_backend_xdna_set_fail_runs_t>(
        ggml_backend_reg_get_proc_address(ggml_backend_xdna_reg(), "ggml_backend_xdna_set_fail_runs"));
    auto fallback_runs = reinterpret_cast<ggml_backend_xdna_fallback_runs_t>(
        ggml_backend_reg_get_proc_address(ggml_backend_xdna_reg(), "ggml_backend_xdna_fallback_runs"));
    ASSERT_TRUE(fail_runs != nullptr && fallback_runs != nullptr);
    ggml_backend_t ba = ggml_backend_dev_init(xdna_device(), nullptr);
    ggml_backend_t bb = ggml_backend_dev_init(xdna_device(), nullptr);
    const MatmulCase c{GGML_TYPE_Q4_0, 128, 32, 3};
    const std::vector<uint8_t> w = random_weights(c.wtype, c.k, c.m);
    const std::vector<float> x = random_floats(activation_count(c));
    ASSERT_TRUE(fail_runs(xdna_device(), true));
    const MatmulResult fa = run_matmul(ba, c, w, x);
    fail_runs(xdna_device(), false);
    const MatmulResult fb = run_matmul(bb, c, w, x);
    EXPECT_EQ(fallback_runs(ba), 1u);
    EXPECT_EQ(fallback_runs(bb), 0u);
    EXPECT_EQ(contract_mismatch(c, w, x, fa.out), "");
    EXPECT_EQ(contract_mismatch(c, w, x, fb.out), "");
    ggml_backend_free(ba);
    ggml_backend_free(bb);
}

}  // namespace
