#include "runtime/thread-pool.h"

#include "runtime/options.h"

#include <algorithm>
#include <cstdlib>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace xdna {

ThreadPool::ThreadPool(int n_threads) {
#ifdef _OPENMP
    n_threads_ = n_threads;  // OpenMP's team does the work; no threads of our own
#else
    for (int i = 1; i < n_threads; ++i) {
        workers_.emplace_back([this, i] { worker_loop(i); });
    }
#endif
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (auto & t : workers_) {
        t.join();
    }
}

int ThreadPool::default_threads() {
    const OptionValue<int> n = threads_option();
    report_option_error(n.error);
    if (n.value > 0) {
        return n.value;
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw > 0 ? static_cast<int>(hw) : 1;
}

namespace {
// The pool whose item the calling thread is running, if any (nested calls run inline).
thread_local const ThreadPool * tl_running = nullptr;

struct RunningGuard {
    const ThreadPool * saved;
    explicit RunningGuard(const ThreadPool * p) : saved(tl_running) { tl_running = p; }
    ~RunningGuard() { tl_running = saved; }
};

constexpr uint64_t pack(uint64_t front, uint64_t back) { return front | (back << 32); }
constexpr uint64_t front_of(uint64_t b) { return b & 0xFFFFFFFFu; }
constexpr uint64_t back_of(uint64_t b) { return b >> 32; }
}  // namespace

void ThreadPool::split_ranges(Range * ranges, int64_t n_items, int team) {
    for (int t = 0; t < team; ++t) {
        const auto lo = static_cast<uint64_t>(n_items * t / team), hi = static_cast<uint64_t>(n_items * (t + 1) / team);
        ranges[t].bounds.store(pack(lo, hi), std::memory_order_relaxed);
    }
}

int64_t ThreadPool::claim(Range * ranges, int self, int team) {
    // Own range first, from its front.
    std::atomic<uint64_t> & own = ranges[self].bounds;
    uint64_t b = own.load(std::memory_order_relaxed);
    while (front_of(b) < back_of(b)) {
        if (own.compare_exchange_weak(b, pack(front_of(b) + 1, back_of(b)), std::memory_order_acq_rel)) {
            return static_cast<int64_t>(front_of(b));
        }
    }
    // Then the back of the range with the most items left.
    for (;;) {
        int victim = -1;
        uint64_t most = 0;
        for (int t = 0; t < team; ++t) {
            const uint64_t v = ranges[t].bounds.load(std::memory_order_relaxed);
            if (back_of(v) > front_of(v) && back_of(v) - front_of(v) > most) {
                most = back_of(v) - front_of(v);
                victim = t;
            }
        }
        if (victim < 0) {
            return -1;
        }
        std::atomic<uint64_t> & r = ranges[victim].bounds;
        uint64_t v = r.load(std::memory_order_relaxed);
        while (front_of(v) < back_of(v)) {
            if (r.compare_exchange_weak(v, pack(front_of(v), back_of(v) - 1), std::memory_order_acq_rel)) {
                return static_cast<int64_t>(back_of(v) - 1);
            }
        }
    }
}

void ThreadPool::run_items(int thread_index) {
    const RunningGuard running(this);
    for (int64_t i = claim(ranges_, thread_index, team_); i >= 0; i = claim(ranges_, thread_index, team_)) {
        (*job_)(i, thread_index);
    }
}

void ThreadPool::parallel_for(int64_t n_items, const std::function<void(int64_t, int)> & fn) {
    if (n_items <= 0) {
        return;
    }
    constexpr int64_t kMaxItems = int64_t(1) << 31;  // the ranges hold 32-bit item indices
    if (n_items > kMaxItems) {
        for (int64_t base = 0; base < n_items; base += kMaxItems) {
            const int64_t count = std::min(kMaxItems, n_items - base);
            parallel_for(count, [&](int64_t i, int t) { fn(base + i, t); });
        }
        return;
    }
    // Per call, so that calls from different threads (or nested ones) never share them.
    std::vector<Range> ranges(static_cast<size_t>(std::max(1, size())));
#ifdef _OPENMP
    if (n_threads_ > 1 && n_items > 1 && tl_running != this) {
        const int team = static_cast<int>(std::min<int64_t>(n_threads_, n_items));
        split_ranges(ranges.data(), n_items, team);
#pragma omp parallel num_threads(team)
        {
            // The runtime may give fewer threads than asked: the ranges of absent ones are taken by
            // the others.
            const RunningGuard running(this);
            const int thread = omp_get_thread_num();
            for (int64_t i = claim(ranges.data(), thread, team); i >= 0; i = claim(ranges.data(), thread, team)) {
                fn(i, thread);
            }
        }
        return;
    }
#endif
    if (workers_.empty() || n_items == 1 || tl_running == this) {
        for (int64_t i = 0; i < n_items; ++i) {
            fn(i, 0);
        }
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        job_ = &fn;
        team_ = static_cast<int>(workers_.size()) + 1;
        ranges_ = ranges.data();
        split_ranges(ranges_, n_items, team_);
        active_ = static_cast<int>(workers_.size());
        ++generation_;
    }
    wake_.notify_all();
    run_items(0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return active_ == 0; });
    job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) {
                return;
            }
            seen = generation_;
        }
        run_items(index);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (--active_ == 0) {
                done_.notify_one();
            }
        }
    }
}

}  // namespace xdna
