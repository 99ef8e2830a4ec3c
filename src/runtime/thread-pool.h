// Fixed pool of worker threads for the simulator's kernels and the host-side activation quantizer.
// The calling thread takes part, so a pool of n threads uses n-1 workers.
//
// Built with OpenMP (as ggml's CPU backend is), parallel_for runs in an OpenMP parallel region
// instead: the process then has one team of worker threads, shared with the CPU backend. With two
// separate pools, the CPU backend's workers spin-wait after each of its graph splits on the very
// cores this pool needs, which made the simulator up to 3x slower inside llama.cpp.
//
// Which thread runs which item: every thread owns a contiguous range of the items and takes them in
// order; a thread whose range is done takes items from the END of the range with the most left. So
// each thread streams through consecutive items (the simulator's consecutive tile jobs are
// consecutive weight memory, which a hardware prefetcher follows), and a thread that is late or
// descheduled costs only the items it has not taken.
#pragma once

#include <atomic>
#include <cstddef>
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
    // Called from inside one of this pool's items, it runs the items on the calling thread.
    void parallel_for(int64_t n_items, const std::function<void(int64_t, int)> & fn);

    // Threads from GGML_XDNA_THREADS, else the hardware concurrency.
    static int default_threads();

private:
    void worker_loop(int index);
    void run_items(int thread_index);

    // One thread's range of items, front and back packed in one word (front in the low half).
    struct alignas(64) Range {
        std::atomic<uint64_t> bounds{0};
    };
    static void    split_ranges(Range * ranges, int64_t n_items, int team);
    static int64_t claim(Range * ranges, int self, int team);  // an item, or -1 when none is left

    std::vector<std::thread> workers_;
    std::mutex               mutex_;
    std::condition_variable  wake_;
    std::condition_variable  done_;
    const std::function<void(int64_t, int)> * job_ = nullptr;
    int                      active_ = 0;
    uint64_t                 generation_ = 0;
    bool                     stop_ = false;
    int                      n_threads_ = 0;  // set when OpenMP runs the work
    int                      team_ = 0;       // threads sharing the current job (own pool)
    Range *                  ranges_ = nullptr;  // the current job's, one per thread (own pool)
};

}  // namespace xdna
