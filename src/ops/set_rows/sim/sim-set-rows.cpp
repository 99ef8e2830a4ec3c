#include "ops/set_rows/sim-set-rows.h"

#include "ops/set_rows/set-rows-invocation.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "xdna_aie/set_rows_tiles.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

extern "C" void f32_to_f16(const float * x, int32_t * y, int32_t n);  // aie/set_rows/kernels/f32_to_f16.cc

namespace xdna {

namespace {

using xdna_aie::kSetRowsChunk;
using xdna_aie::kSetRowsLanes;

constexpr int kColumns = 8, kCores = 32;

struct alignas(64) CoreBuffers {
    float   x[kSetRowsChunk];
    int32_t y[kSetRowsChunk / 2];
};

struct MeasuredCalls {
    CoreOps lanes, chunk;
};

const MeasuredCalls & calls() {
    static const MeasuredCalls m = [] {
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        MeasuredCalls out{measure_on_own_thread([&] { f32_to_f16(b->x, b->y, kSetRowsLanes); }),
                          measure_on_own_thread([&] { f32_to_f16(b->x, b->y, kSetRowsChunk); })};
        std::free(b);
        return out;
    }();
    return m;
}

int64_t id_at(const SetRowsInvocation & s, int64_t r) {
    if (s.p.identity) return r;
    return s.p.ids_64 ? static_cast<const int64_t *>(s.ids.host())[r] : static_cast<const int32_t *>(s.ids.host())[r];
}

}  // namespace

bool set_rows_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::set_rows && key.design != nullptr && std::strcmp(key.design, kSetRowsDesign) == 0 &&
           key.variant != nullptr && std::strcmp(key.variant, kSetRowsF16Variant) == 0;
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
    const int64_t full = r.p.cols / kSetRowsChunk, tail = r.p.cols % kSetRowsChunk;
    s.core_calls[0] = {calls().chunk, static_cast<double>(busiest * full)};
    s.n_core_calls = 1;
    if (tail > 0) {
        s.core_calls[1] = {interpolate_call_ops(calls().lanes, calls().chunk, tail, kSetRowsLanes, kSetRowsChunk),
                           static_cast<double>(busiest)};
        s.n_core_calls = 2;
    }
    s.activation_bytes = static_cast<double>(r.p.rows) * (static_cast<double>(r.p.cols) * sizeof(float) + (r.p.identity ? 0 : r.p.ids_64 ? 8 : 4));
    s.out_bytes = static_cast<double>(r.p.rows) * static_cast<double>(r.p.cols) * 2;
    return s;
}

void set_rows_poison(const Invocation & inv) {
    const SetRowsInvocation s = set_rows_of(inv);
    for (int64_t r = 0; r < s.p.rows; ++r) {
        const int64_t id = id_at(s, r);
        if (id >= 0 && id < s.p.y_rows) {
            std::memset(static_cast<ggml_fp16_t *>(s.y.host()) + id * s.p.y_row_stride, 0xff, static_cast<size_t>(s.p.cols) * sizeof(ggml_fp16_t));
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
        if (s.p.cols <= 0 || s.p.cols % kSetRowsLanes != 0) {
            return Status::error("set_rows: row length " + std::to_string(s.p.cols) + " is not one the design takes");
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
        auto * y = static_cast<ggml_fp16_t *>(s.y.host()) + id_at(s, r) * s.p.y_row_stride;
        for (int64_t c0 = 0; c0 < s.p.cols; c0 += kSetRowsChunk) {
            const int32_t n = static_cast<int32_t>(std::min<int64_t>(kSetRowsChunk, s.p.cols - c0));
            std::memcpy(b.x, x + c0, n * sizeof(float));
            const CoreModes found = sim_core_modes();
            f32_to_f16(b.x, b.y, n);
            sim_check_modes_restored(kSetRowsF16Variant, found);
            std::memcpy(y + c0, b.y, n * sizeof(ggml_fp16_t));
        }
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

}  // namespace xdna
