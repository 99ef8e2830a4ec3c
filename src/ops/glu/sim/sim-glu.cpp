#include "ops/glu/sim-glu.h"

#include "ops/glu/glu-invocation.h"
#include "sim/core-state.h"
#include "xdna_aie/glu_tiles.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

extern "C" void swiglu_f32(const float * a, const float * b, float * y, int32_t n);  // aie/glu/kernels/swiglu.cc

namespace xdna {

namespace {

using xdna_aie::kGluChunk;
using xdna_aie::kGluLanes;
constexpr int kCores = 32;

struct alignas(64) CoreBuffers {
    float a[kGluChunk], b[kGluChunk], y[kGluChunk];
};

void run_row(const GluInvocation & r, int64_t row, CoreBuffers & buf) {
    const float * a = static_cast<const float *>(r.a.host()) + row * r.p.a_row_stride;
    const float * b = static_cast<const float *>(r.b.host()) + row * r.p.b_row_stride;
    float * y = static_cast<float *>(r.y.host()) + row * r.p.y_row_stride;
    for (int64_t c0 = 0; c0 < r.p.cols; c0 += kGluChunk) {
        const int32_t n = static_cast<int32_t>(std::min<int64_t>(kGluChunk, r.p.cols - c0));
        std::memcpy(buf.a, a + c0, n * sizeof(float));
        std::memcpy(buf.b, b + c0, n * sizeof(float));
        const CoreModes found = sim_core_modes();
        swiglu_f32(buf.a, buf.b, buf.y, n);
        sim_check_modes_restored("swiglu_f32", found);
        std::memcpy(y + c0, buf.y, n * sizeof(float));
    }
}

// One call's operations at a full chunk and at 32 values, measured once per process (the counts do
// not depend on the values).
struct Measured {
    CoreOps full, one;
};
const Measured & measured() {
    static const Measured m = [] {
        Measured out;
        std::thread worker([&out] {
            auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
            std::memset(b, 0, sizeof *b);
            for (int i = 0; i < 2; ++i) {
                sim_reset_core_state();
                const CoreOps before = sim_thread_core_ops();
                swiglu_f32(b->a, b->b, b->y, i == 0 ? kGluChunk : kGluLanes);
                CoreOps ops = sim_thread_core_ops();
                ops -= before;
                (i == 0 ? out.full : out.one) = ops;
            }
            std::free(b);
        });
        worker.join();
        return out;
    }();
    return m;
}

CoreOps ops_at(int64_t n) {
    const Measured & m = measured();
    auto lerp = [&](uint64_t full, uint64_t one) {
        const double per = (static_cast<double>(full) - static_cast<double>(one)) / (kGluChunk / kGluLanes - 1);
        return static_cast<uint64_t>(static_cast<double>(one) + per * (n / kGluLanes - 1) + 0.5);
    };
    CoreOps o;
    o.vector = lerp(m.full.vector, m.one.vector);
    o.move = lerp(m.full.move, m.one.move);
    o.load = lerp(m.full.load, m.one.load);
    o.store = lerp(m.full.store, m.one.store);
    o.pipelined_loops = m.one.pipelined_loops;
    return o;
}

}  // namespace

bool glu_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::glu && key.design != nullptr && std::strcmp(key.design, kGluDesign) == 0 &&
           key.variant != nullptr && std::strcmp(key.variant, kSwigluVariant) == 0;
}

ModelShape glu_model_shape(const Invocation & inv) {
    const GluInvocation r = glu_of(inv);
    ModelShape s;
    s.kind = KernelKind::glu;
    s.weight_type = GGML_TYPE_COUNT;
    // No reduction along the row: the design deals chunks, not rows, to the cores (a decode token's
    // 14336 gate values go to 14 cores).
    const int64_t per_row = (r.p.cols + kGluChunk - 1) / kGluChunk;
    const int64_t chunks = r.p.rows * per_row;
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(chunks, kCores));
    const int64_t busiest = (chunks + cores - 1) / cores;
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(8, cores));
    // Every chunk counted full: a short last chunk of a row costs at most one chunk on the busiest core.
    s.core_calls[0] = {ops_at(kGluChunk), static_cast<double>(busiest)};
    s.n_core_calls = 1;
    const double row = static_cast<double>(r.p.cols) * sizeof(float);
    s.activation_bytes = 2 * row * static_cast<double>(r.p.rows);
    s.out_bytes = row * static_cast<double>(r.p.rows);
    return s;
}

Status sim_run_glus(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<GluInvocation>                views;
    std::vector<std::pair<uint32_t, int64_t>> rows;
    for (const Invocation & i : invs) {
        if (!glu_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's glu engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const GluInvocation a = glu_of(i);
        if (a.p.cols <= 0 || a.p.cols % kGluLanes != 0) {
            return Status::error("glu: row length " + std::to_string(a.p.cols) + " is not one the design takes");
        }
        views.push_back(a);
    }
    for (uint32_t v = 0; v < views.size(); ++v) {
        for (int64_t r = 0; r < views[v].p.rows; ++r) rows.push_back({v, r});
    }
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(rows.size()), [&](int64_t i, int) {
        thread_local CoreBuffers buffers;
        run_row(views[rows[i].first], rows[i].second, buffers);
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

}  // namespace xdna
