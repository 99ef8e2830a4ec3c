// The thread pool hands out every item exactly once, with a thread index inside the pool, however
// the items divide among the threads (own ranges, then stealing from the back of others').
#include "runtime/thread-pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using xdna::ThreadPool;

void expect_each_item_once(ThreadPool & pool, int64_t n, bool slow_thread) {
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    std::atomic<int> bad_thread{0};
    pool.parallel_for(n, [&](int64_t i, int t) {
        if (t < 0 || t >= pool.size()) bad_thread.fetch_add(1);
        // One thread lags, so the others must take items of its range.
        if (slow_thread && t == pool.size() - 1) std::this_thread::sleep_for(std::chrono::microseconds(50));
        seen[static_cast<size_t>(i)].fetch_add(1);
    });
    EXPECT_EQ(bad_thread.load(), 0);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "item " << i << " of " << n;
}

TEST(ThreadPool, EveryItemExactlyOnce) {
    for (int threads : {1, 2, 3, 4}) {
        ThreadPool pool(threads);
        for (int64_t n : {1, 2, 3, 5, 7, 64, 1000, 4099}) {
            SCOPED_TRACE(testing::Message() << threads << " threads, " << n << " items");
            expect_each_item_once(pool, n, false);
            if (n <= 1000) expect_each_item_once(pool, n, true);
        }
    }
}

TEST(ThreadPool, ZeroItemsRunNothing) {
    ThreadPool pool(2);
    std::atomic<int> calls{0};
    pool.parallel_for(0, [&](int64_t, int) { calls.fetch_add(1); });
    pool.parallel_for(-3, [&](int64_t, int) { calls.fetch_add(1); });
    EXPECT_EQ(calls.load(), 0);
}

// A job of a job (as when a pool's user calls another parallel routine) still covers every item.
TEST(ThreadPool, NestedCallsCoverEveryItem) {
    ThreadPool pool(2);
    std::vector<std::atomic<int>> seen(16 * 16);
    pool.parallel_for(16, [&](int64_t i, int) {
        pool.parallel_for(16, [&](int64_t j, int) { seen[static_cast<size_t>(16 * i + j)].fetch_add(1); });
    });
    for (auto & s : seen) ASSERT_EQ(s.load(), 1);
}

}  // namespace
