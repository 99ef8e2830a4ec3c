#include "sim/binary-rows.h"

#include "sim/kernel-cycles.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace xdna {

namespace {

struct alignas(64) CoreBuffers {
    float a[kBinaryChunk], b[kBinaryChunk], y[kBinaryChunk];
};

void run_row(const BinaryKernel & k, const BinaryRows & r, int64_t row, CoreBuffers & buf) {
    const float * a = r.a + row * r.a_stride;
    const float * b = r.b + row * r.b_stride;
    float * y = r.y + row * r.y_stride;
    const int64_t chunk = r.chunk > 0 ? r.chunk : kBinaryChunk;
    for (int64_t c0 = 0; c0 < r.cols; c0 += chunk) {
        const int32_t n = static_cast<int32_t>(std::min<int64_t>(chunk, r.cols - c0));
        std::memcpy(buf.a, a + c0, n * sizeof(float));
        std::memcpy(buf.b, b + c0, n * sizeof(float));
        const CoreModes found = sim_core_modes();
        k.fn(buf.a, buf.b, buf.y, n);
        sim_check_modes_restored(k.name, found);
        std::memcpy(y + c0, buf.y, n * sizeof(float));
    }
}

}  // namespace

Status sim_run_binary_rows(const BinaryKernel & k, const std::vector<BinaryRows> & rows, ThreadPool & pool) {
    for (const BinaryRows & r : rows) {
        const int64_t chunk = r.chunk > 0 ? r.chunk : kBinaryChunk;
        const int64_t tail = r.cols % chunk;
        if (chunk > kBinaryChunk || chunk % kBinaryLanes != 0 || r.cols % kBinaryLanes != 0 || (tail != 0 && tail < k.min_call) ||
            (r.cols < k.min_call)) {
            return Status::error(std::string(k.name) + ": a row of " + std::to_string(r.cols) + " values in calls of " + std::to_string(chunk) +
                                 " would call the kernel on fewer than " + std::to_string(k.min_call) + " values (its loop promises the compiler " +
                                 std::to_string(k.min_call / kBinaryLanes) + " trip(s) of 32 lanes)");
        }
    }
    std::vector<std::pair<uint32_t, int64_t>> jobs;
    for (uint32_t v = 0; v < rows.size(); ++v) {
        for (int64_t r = 0; r < rows[v].rows; ++r) jobs.push_back({v, r});
    }
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t i, int) {
        thread_local CoreBuffers buffers;
        run_row(k, rows[jobs[i].first], jobs[i].second, buffers);
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

BinaryCallOps measure_binary_calls(const BinaryKernel & k) {
    auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
    std::memset(b, 0, sizeof *b);
    const BinaryCallOps m{measure_on_own_thread([&] { k.fn(b->a, b->b, b->y, k.min_call); }),
                          measure_on_own_thread([&] { k.fn(b->a, b->b, b->y, kBinaryChunk); }), k.min_call};
    std::free(b);
    return m;
}

CoreOps BinaryCallOps::at(int64_t n) const {
    return interpolate_call_ops(min_call, chunk, n, min_n, kBinaryChunk);
}

}  // namespace xdna
