#include "ops/scale/sim-scale.h"

#include "ops/scale/scale-invocation.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "xdna_aie/scale_tiles.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

// aie/scale/kernels/scale.cc
extern "C" void scale_f32(const float * x, float * y, int32_t n, float s, float b, int32_t with_bias);

namespace xdna {

namespace {

using xdna_aie::kScaleChunk;

constexpr int kColumns = 8, kCores = 32;

struct alignas(64) CoreBuffers {
    float x[kScaleChunk], y[kScaleChunk];
};

// What a call issues at kScaleChunk values, with and without the bias.
struct MeasuredCalls {
    CoreOps chunk[2];
};

const MeasuredCalls & calls() {
    static const MeasuredCalls m = [] {
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        MeasuredCalls out;
        for (int bias = 0; bias < 2; ++bias) {
            out.chunk[bias] = measure_on_own_thread([&] { scale_f32(b->x, b->y, kScaleChunk, 1.0f, 1.0f, bias); });
        }
        std::free(b);
        return out;
    }();
    return m;
}

}  // namespace

bool scale_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::scale && key.design != nullptr && std::strcmp(key.design, kScaleDesign) == 0 &&
           key.variant != nullptr && std::strcmp(key.variant, kScaleVariant) == 0;
}

ModelShape scale_model_shape(const Invocation & inv) {
    const ScaleInvocation r = scale_of(inv);
    ModelShape s;
    s.kind = KernelKind::scale;
    s.weight_type = GGML_TYPE_COUNT;
    // Chunks dealt to the cores (no reduction along the row).
    const int64_t chunks = r.p.rows * scale_chunks(r.p.cols);
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(chunks, kCores));
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(kColumns, cores));
    const int bias = r.p.b != 0.0f ? 1 : 0;
    // Every chunk counted full: a row's shorter chunks cost at most a chunk each on the busiest core.
    s.core_calls[0] = {calls().chunk[bias], static_cast<double>((chunks + cores - 1) / cores)};
    s.n_core_calls = 1;
    const double bytes = static_cast<double>(r.p.rows) * static_cast<double>(r.p.cols) * sizeof(float);
    s.activation_bytes = bytes;
    s.out_bytes = bytes;
    return s;
}

Status sim_run_scales(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<ScaleInvocation> views;
    std::vector<std::pair<uint32_t, int64_t>> jobs;
    for (const Invocation & i : invs) {
        if (!scale_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's scale engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const ScaleInvocation s = scale_of(i);
        if (s.p.cols <= 0) {
            return Status::error("scale: row length " + std::to_string(s.p.cols) + " is not one the design takes");
        }
        if (!scale_calls_keep_promise(s.p.cols)) {
            // Before any row runs: the kernel's loop promises the compiler 4 trips (scale-invocation.h).
            return Status::error("scale: a row of " + std::to_string(s.p.cols) + " values would call scale_f32 on " +
                                 std::to_string(scale_chunk(s.p.cols, 0).padded) + " values, fewer than " + std::to_string(kScaleMinCall) +
                                 " (its loop promises the compiler 4 trips of 32 lanes)");
        }
        for (int64_t r = 0; r < s.p.rows; ++r) jobs.push_back({static_cast<uint32_t>(views.size()), r});
        views.push_back(s);
    }
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t j, int) {
        thread_local CoreBuffers b;
        const ScaleInvocation & s = views[jobs[j].first];
        const float * x = static_cast<const float *>(s.x.host()) + jobs[j].second * s.p.x_row_stride;
        float * y = static_cast<float *>(s.y.host()) + jobs[j].second * s.p.y_row_stride;
        for (int64_t c = 0; c < scale_chunks(s.p.cols); ++c) {
            // The DMA brings n values; the kernel runs over whole vectors, and the lanes past n (whatever the
            // buffer held) are computed but never sent back.
            const ScaleChunk k = scale_chunk(s.p.cols, c);
            std::memcpy(b.x, x + k.begin, k.n * sizeof(float));
            const CoreModes found = sim_core_modes();
            scale_f32(b.x, b.y, k.padded, s.p.s, s.p.b, s.p.b != 0.0f ? 1 : 0);
            sim_check_modes_restored(kScaleVariant, found);
            std::memcpy(y + k.begin, b.y, k.n * sizeof(float));
        }
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

}  // namespace xdna
