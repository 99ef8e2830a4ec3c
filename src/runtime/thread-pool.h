// Fixed pool of worker threads for the simulator's kernels and the host-side activation quantizer.
// The calling thread takes part, so a pool of n threads uses n-1 workers.
//
// Built with OpenMP (as ggml's CPU backend is), parallel_for runs in an OpenMP parallel region
// instead: the process then has one team of worker threads, shared with the CPU backend. With two
// separate pools, the CPU backend's workers spin-wait after each of its graph splits on the very
// cores this pool needs, which made the simulator up to 3x slower inside llama.cpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace xdna {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool & operator=(const ThreadPool &) = delete;

    int size() const { return n_threads_ > 0 ? n_threads_ : static_cast<int>(workers_.size()) + 1; }

    // Call fn(item, thread_index) for every item in [0, n_items), spread over the pool; returns when done.
    void parallel_for(int64_t n_items, const std::function<void(int64_t, int)> & fn);

    // Threads from GGML_XDNA_THREADS, else the hardware concurrency.
    static int default_threads();

private:
    void worker_loop(int index);
    void run_items(int thread_index);

    std::vector<std::thread> workers_;
    std::mutex               mutex_;
    std::condition_variable  wake_;
    std::condition_variable  done_;
    const std::function<void(int64_t, int)> * job_ = nullptr;
    int64_t                  n_items_ = 0;
    std::atomic<int64_t>     next_{0};
    int                      active_ = 0;
    uint64_t                 generation_ = 0;
    bool                     stop_ = false;
    int                      n_threads_ = 0;  // set when OpenMP runs the work
};

}  // namespace xdna
