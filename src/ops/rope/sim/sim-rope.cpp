#include "ops/rope/sim-rope.h"

#include "ops/rope/rope-invocation.h"
#include "ops/rope/rope-table.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "xdna_aie/rope_tiles.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

// The core kernels' entry points (aie/rope/kernels/rope.cc), compiled for the host.
extern "C" {
void rope_norm_f32(const float * x, const float * cs, float * y, int32_t n_dims, int32_t ne0);
void rope_neox_f32(const float * x, const float * cs, float * y, int32_t n_dims, int32_t ne0);
}

namespace xdna {

namespace {

using xdna_aie::kRopeMaxRow;
using RopeKernel = void (*)(const float *, const float *, float *, int32_t, int32_t);

// The design's cores: head rows dealt to the 32 cores of the array (aie/rope/README.md).
constexpr int kColumns = 8, kCores = 32;

// One core's data memory as the design lays it out: the head row in and out, its angle row.
struct alignas(64) CoreBuffers {
    float x[kRopeMaxRow];
    float y[kRopeMaxRow];
    float cs[kRopeMaxRow];
};

RopeKernel kernel_of(RopeMode mode) { return mode == RopeMode::neox ? rope_neox_f32 : rope_norm_f32; }
const char * name_of(RopeMode mode) { return mode == RopeMode::neox ? kRopeNeoxVariant : kRopeNormVariant; }

// What one call issues, by (mode, n_dims, ne0): measured once per process on a thread of its own (the
// counts depend on the lengths, not on the values).
CoreOps call_ops(RopeMode mode, int32_t n_dims, int32_t ne0) {
    static std::mutex mutex;
    static std::map<std::tuple<int, int32_t, int32_t>, CoreOps> measured;
    const auto key = std::make_tuple(static_cast<int>(mode), n_dims, ne0);
    std::lock_guard<std::mutex> lock(mutex);
    auto it = measured.find(key);
    if (it == measured.end()) {
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        const RopeKernel k = kernel_of(mode);
        it = measured.emplace(key, measure_on_own_thread([&] { k(b->x, b->cs, b->y, n_dims, ne0); })).first;
        std::free(b);
    }
    return it->second;
}

struct Job {
    const float * x;
    const float * cs;
    float *       y;
    uint32_t      inv;
};

}  // namespace

bool rope_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::rope && key.design != nullptr && std::strcmp(key.design, kRopeDesign) == 0 &&
           key.variant != nullptr &&
           (std::strcmp(key.variant, kRopeNormVariant) == 0 || std::strcmp(key.variant, kRopeNeoxVariant) == 0);
}

ModelShape rope_model_shape(const Invocation & inv) {
    const RopeInvocation r = rope_of(inv);
    ModelShape s;
    s.kind = KernelKind::rope;
    s.weight_type = GGML_TYPE_COUNT;
    const int64_t rows = r.p.n_tokens * r.p.n_heads;
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(rows, kCores));
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(kColumns, cores));
    s.core_calls[0] = {call_ops(r.p.mode, r.p.angles.n_dims, static_cast<int32_t>(r.p.ne0)),
                       static_cast<double>((rows + cores - 1) / cores)};
    s.n_core_calls = 1;
    // x and y once each; every token's angle row into each column that takes rows of it (tokens are
    // dealt to columns, so a token's row reaches more than one only when there are fewer tokens than
    // columns), the positions once.
    const double row = static_cast<double>(r.p.ne0) * sizeof(float);
    const double angle_row = static_cast<double>(r.p.angles.n_dims) * sizeof(float);
    const int64_t columns_per_token = std::max<int64_t>(1, s.kind_columns / std::max<int64_t>(1, r.p.n_tokens));
    s.activation_bytes = row * static_cast<double>(rows) + static_cast<double>(r.p.n_tokens) * sizeof(int32_t);
    s.weight_bytes = angle_row * static_cast<double>(r.p.n_tokens * columns_per_token) +
                     (r.p.angles.has_freq_factors ? angle_row / 2 : 0);
    s.out_bytes = row * static_cast<double>(rows);
    return s;
}

Status sim_run_ropes(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<RopeInvocation> views;
    std::vector<std::shared_ptr<RopeAngleTable>> tables;
    std::vector<Job> jobs;
    for (const Invocation & i : invs) {
        if (!rope_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's rope engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const RopeInvocation r = rope_of(i);
        if (!xdna_aie::rope_row_fits(r.p.angles.n_dims, static_cast<int>(r.p.ne0))) {
            return Status::error("rope: " + std::to_string(r.p.angles.n_dims) + " of " + std::to_string(r.p.ne0) +
                                 " dims is not a row the design takes");
        }
        const float * ff = r.p.angles.has_freq_factors ? static_cast<const float *>(r.freq_factors.host()) : nullptr;
        tables.push_back(rope_angle_table(r.p.angles, ff));
        const auto * pos = static_cast<const int32_t *>(r.pos.host());
        const uint32_t v = static_cast<uint32_t>(views.size());
        views.push_back(r);
        for (int64_t t = 0; t < r.p.n_tokens; ++t) {
            const float * cs = tables.back()->row(pos[t]);
            if (cs == nullptr) {
                return Status::error("rope: position " + std::to_string(pos[t]) + " is outside the angle table [0, " +
                                     std::to_string(kRopeMaxPosition) + ")");
            }
            const float * x = static_cast<const float *>(r.x.host()) + t * r.p.x_token_stride;
            float * y = static_cast<float *>(r.y.host()) + t * r.p.y_token_stride;
            for (int64_t h = 0; h < r.p.n_heads; ++h) {
                jobs.push_back({x + h * r.p.x_head_stride, cs, y + h * r.p.y_head_stride, v});
            }
        }
    }
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t i, int) {
        thread_local CoreBuffers b;
        const Job & j = jobs[i];
        const RopeParams & p = views[j.inv].p;
        std::memcpy(b.x, j.x, p.ne0 * sizeof(float));
        std::memcpy(b.cs, j.cs, p.angles.n_dims * sizeof(float));
        const CoreModes found = sim_core_modes();
        kernel_of(p.mode)(b.x, b.cs, b.y, p.angles.n_dims, static_cast<int32_t>(p.ne0));
        sim_check_modes_restored(name_of(p.mode), found);
        std::memcpy(j.y, b.y, p.ne0 * sizeof(float));
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

}  // namespace xdna
