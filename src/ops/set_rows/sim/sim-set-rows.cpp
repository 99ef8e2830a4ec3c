#include "ops/set_rows/sim-set-rows.h"

#include "ops/set_rows/set-rows-invocation.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "xdna_aie/set_rows_tiles.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

// The core programs (aie/set_rows/kernels), compiled for the host.
extern "C" void f32_to_f16(const float * x, int32_t * y, int32_t n);
extern "C" void f32_to_q8_0(const float * x, uint8_t * y, int32_t n);

namespace xdna {

namespace {

using xdna_aie::kSetRowsChunk;
using xdna_aie::kSetRowsLanes;

constexpr int kColumns = 8, kCores = 32;

// y: a chunk's halves (2 KB) or Q8_0 blocks (1088 B).
struct alignas(64) CoreBuffers {
    float   x[kSetRowsChunk];
    alignas(64) uint8_t y[kSetRowsChunk * 2];
};

// What a call issues at the shortest call the design makes and at a full chunk.
struct MeasuredCalls {
    CoreOps min_call, chunk;
    // A call on n values (a multiple of 32 from kSetRowsMinCall to kSetRowsChunk): each 32 values past the
    // shortest call issue the same (interpolate_call_ops counts steps from its first length, so the
    // lengths are shifted to start there).
    CoreOps at(int64_t n) const {
        constexpr int kShift = kSetRowsMinCall - kSetRowsLanes;
        return interpolate_call_ops(min_call, chunk, n - kShift, kSetRowsLanes, kSetRowsChunk - kShift);
    }
};

// Scalar cycles per Q8_0 block the host aie_api does not count: the two divisions (compiler-rt's
// __divsf3, 60 cycles each assumed, as act_quant's) and the 16-bit store of the scale.
constexpr uint64_t kQ8ScalarCyclesPerBlock = 2 * 60 + 1;

void run_chunk(bool q8, const float * x, uint8_t * y, int32_t n) {
    if (q8) f32_to_q8_0(x, y, n);
    else f32_to_f16(x, reinterpret_cast<int32_t *>(y), n);
}

const MeasuredCalls & calls(bool q8) {
    static const std::array<MeasuredCalls, 2> m = [] {
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        // Finite values of varied magnitude (the Q8_0 program's branch for a non-finite block not taken).
        for (int i = 0; i < kSetRowsChunk; ++i) b->x[i] = static_cast<float>((i * 37) % 101) - 50.0f;
        std::array<MeasuredCalls, 2> out;
        for (int q = 0; q < 2; ++q) {
            out[q] = {measure_on_own_thread([&] { run_chunk(q == 1, b->x, b->y, kSetRowsMinCall); }),
                      measure_on_own_thread([&] { run_chunk(q == 1, b->x, b->y, kSetRowsChunk); })};
        }
        out[1].min_call.scalar += kQ8ScalarCyclesPerBlock * (kSetRowsMinCall / 32);
        out[1].chunk.scalar += kQ8ScalarCyclesPerBlock * (kSetRowsChunk / 32);
        std::free(b);
        return out;
    }();
    return m[q8 ? 1 : 0];
}

int64_t id_at(const SetRowsInvocation & s, int64_t r) {
    if (s.p.identity) return r;
    return s.p.ids_64 ? static_cast<const int64_t *>(s.ids.host())[r] : static_cast<const int32_t *>(s.ids.host())[r];
}

}  // namespace

bool set_rows_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::set_rows && key.design != nullptr && std::strcmp(key.design, kSetRowsDesign) == 0 &&
           key.variant != nullptr && (std::strcmp(key.variant, kSetRowsF16Variant) == 0 || std::strcmp(key.variant, kSetRowsQ8Variant) == 0);
}

ModelShape set_rows_model_shape(const Invocation & inv) {
    const SetRowsInvocation r = set_rows_of(inv);
    ModelShape s;
    s.kind = KernelKind::set_rows;
    s.weight_type = GGML_TYPE_COUNT;
    // Rows dealt to the cores; a decode token's single row (n_embd_k_gqa values) goes to one core.
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(r.p.rows, kCores));
    const int64_t busiest = (r.p.rows + cores - 1) / cores;
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(kColumns, cores));
    // A row's chunks are of at most two lengths, the longer first (set-rows-invocation.h).
    const MeasuredCalls & c = calls(r.p.y_q8_0);
    const int64_t chunks = set_rows_chunks(r.p.cols);
    const int32_t first = set_rows_chunk(r.p.cols, 0).n, last = set_rows_chunk(r.p.cols, chunks - 1).n;
    int64_t longer = 0;
    for (int64_t k = 0; k < chunks; ++k) longer += set_rows_chunk(r.p.cols, k).n == first ? 1 : 0;
    s.core_calls[0] = {c.at(first), static_cast<double>(busiest * longer)};
    s.n_core_calls = 1;
    if (longer < chunks) {
        s.core_calls[1] = {c.at(last), static_cast<double>(busiest * (chunks - longer))};
        s.n_core_calls = 2;
    }
    s.activation_bytes = static_cast<double>(r.p.rows) * (static_cast<double>(r.p.cols) * sizeof(float) + (r.p.identity ? 0 : r.p.ids_64 ? 8 : 4));
    s.out_bytes = static_cast<double>(r.p.rows) * static_cast<double>(r.p.y_row_bytes());
    return s;
}

void set_rows_poison(const Invocation & inv) {
    const SetRowsInvocation s = set_rows_of(inv);
    for (int64_t r = 0; r < s.p.rows; ++r) {
        const int64_t id = id_at(s, r);
        if (id >= 0 && id < s.p.y_rows) {
            std::memset(static_cast<uint8_t *>(s.y.host()) + id * s.p.y_stride_bytes(), 0xff, static_cast<size_t>(s.p.y_row_bytes()));
        }
    }
}

Status sim_run_set_rows(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<SetRowsInvocation> views;
    std::vector<std::pair<uint32_t, int64_t>> jobs;  // (invocation, row)
    for (const Invocation & i : invs) {
        if (!set_rows_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's set_rows engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const SetRowsInvocation s = set_rows_of(i);
        if (s.p.cols <= 0 || s.p.cols % kSetRowsLanes != 0 || (std::strcmp(i.key.variant, kSetRowsQ8Variant) == 0) != s.p.y_q8_0) {
            return Status::error("set_rows: row length " + std::to_string(s.p.cols) + " is not one the design takes");
        }
        if (!set_rows_calls_keep_promise(s.p.cols)) {
            // Before any row runs: the kernels' loops promise the compiler 4 trips (set-rows-invocation.h).
            return Status::error("set_rows: a row of " + std::to_string(s.p.cols) + " values would call " + i.key.variant +
                                 " on fewer than " + std::to_string(kSetRowsMinCall) +
                                 " values (its loop promises the compiler 4 trips of 32 values)");
        }
        for (int64_t r = 0; r < s.p.rows; ++r) {
            const int64_t id = id_at(s, r);
            if (id < 0 || id >= s.p.y_rows) {
                return Status::error("set_rows: row id " + std::to_string(id) + " outside the " + std::to_string(s.p.y_rows) +
                                     " rows of the destination");
            }
            jobs.push_back({static_cast<uint32_t>(views.size()), r});
        }
        views.push_back(s);
    }
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t j, int) {
        thread_local CoreBuffers b;
        const SetRowsInvocation & s = views[jobs[j].first];
        const int64_t r = jobs[j].second;
        const float * x = static_cast<const float *>(s.x.host()) + r * s.p.x_row_stride;
        auto * y = static_cast<uint8_t *>(s.y.host()) + id_at(s, r) * s.p.y_stride_bytes();
        for (int64_t c = 0; c < set_rows_chunks(s.p.cols); ++c) {
            const SetRowsChunk k = set_rows_chunk(s.p.cols, c);
            std::memcpy(b.x, x + k.begin, k.n * sizeof(float));
            const CoreModes found = sim_core_modes();
            run_chunk(s.p.y_q8_0, b.x, b.y, k.n);
            sim_check_modes_restored(s.p.y_q8_0 ? kSetRowsQ8Variant : kSetRowsF16Variant, found);
            const int64_t out_bytes = s.p.y_q8_0 ? k.n / 32 * 34 : k.n * 2, at = s.p.y_q8_0 ? k.begin / 32 * 34 : k.begin * 2;
            std::memcpy(y + at, b.y, static_cast<size_t>(out_bytes));
        }
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

}  // namespace xdna
