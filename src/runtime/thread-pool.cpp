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

void ThreadPool::run_items(int thread_index) {
    for (int64_t i = next_.fetch_add(1); i < n_items_; i = next_.fetch_add(1)) {
        (*job_)(i, thread_index);
    }
}

void ThreadPool::parallel_for(int64_t n_items, const std::function<void(int64_t, int)> & fn) {
    if (n_items <= 0) {
        return;
    }
#ifdef _OPENMP
    if (n_threads_ > 1 && n_items > 1) {
        std::atomic<int64_t> next{0};
        const int team = static_cast<int>(std::min<int64_t>(n_threads_, n_items));
#pragma omp parallel num_threads(team)
        {
            const int thread = omp_get_thread_num();
            for (int64_t i = next.fetch_add(1); i < n_items; i = next.fetch_add(1)) {
                fn(i, thread);
            }
        }
        return;
    }
#endif
    if (workers_.empty() || n_items == 1) {
        for (int64_t i = 0; i < n_items; ++i) {
            fn(i, 0);
        }
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        job_ = &fn;
        n_items_ = n_items;
        next_ = 0;
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
