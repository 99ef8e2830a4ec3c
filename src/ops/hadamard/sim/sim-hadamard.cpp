#include "ops/hadamard/sim-hadamard.h"

#include "ops/hadamard/hadamard-invocation.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "xdna_aie/hadamard_tiles.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

// aie/hadamard/kernels/fwht.cc
extern "C" void fwht_f32(const float * x, float * y, int32_t rows, int32_t n, float scale);

namespace xdna {

namespace {

using xdna_aie::kHadamardChunkRows;
using xdna_aie::kHadamardMaxN;

constexpr int kColumns = 8, kCores = 32;

struct alignas(64) CoreBuffers {
    float x[kHadamardChunkRows * kHadamardMaxN], y[kHadamardChunkRows * kHadamardMaxN];
};

// 1 / sqrtf(n) as the CPU backend computes it (ggml-cpu ops.cpp ggml_compute_forward_fwht_f32), passed
// to the core as a runtime word.
float scale_of(int64_t n) { return 1.0f / sqrtf(static_cast<float>(n)); }

// What a call on one row and on a full chunk issues, per n.
struct MeasuredCalls {
    CoreOps one, chunk;
};

const MeasuredCalls & calls(int32_t n) {
    static std::mutex mutex;
    static std::map<int32_t, MeasuredCalls> measured;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = measured.find(n);
    if (it == measured.end()) {
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        MeasuredCalls m{measure_on_own_thread([&] { fwht_f32(b->x, b->y, 1, n, scale_of(n)); }),
                        measure_on_own_thread([&] { fwht_f32(b->x, b->y, kHadamardChunkRows, n, scale_of(n)); })};
        std::free(b);
        it = measured.emplace(n, m).first;
    }
    return it->second;
}

}  // namespace

bool hadamard_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::hadamard && key.design != nullptr && std::strcmp(key.design, kHadamardDesign) == 0 &&
           key.variant != nullptr && std::strcmp(key.variant, kHadamardVariant) == 0;
}

ModelShape hadamard_model_shape(const Invocation & inv) {
    const HadamardInvocation h = hadamard_of(inv);
    ModelShape s;
    s.kind = KernelKind::hadamard;
    s.weight_type = GGML_TYPE_COUNT;
    s.design_kind = h.p.host;  // linked into the set_rows and flash_attn designs: no switch of its own
    // Chunks of up to 16 rows dealt to the cores; the busiest core's chunks counted full.
    const int64_t chunks = (h.p.rows + kHadamardChunkRows - 1) / kHadamardChunkRows;
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(chunks, kCores));
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(kColumns, cores));
    const MeasuredCalls & c = calls(static_cast<int32_t>(h.p.n));
    if (chunks == 1) {
        s.core_calls[0] = {c.one, static_cast<double>(h.p.rows)};  // one chunk: its rows, one call each (the fixed part counted per row)
    } else {
        s.core_calls[0] = {c.chunk, static_cast<double>((chunks + cores - 1) / cores)};
    }
    s.n_core_calls = 1;
    const double bytes = static_cast<double>(h.p.rows) * static_cast<double>(h.p.n) * sizeof(float);
    s.activation_bytes = bytes;
    s.out_bytes = bytes;
    return s;
}

Status sim_run_hadamards(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<HadamardInvocation> views;
    std::vector<std::pair<uint32_t, int64_t>> jobs;  // (invocation, first row of the chunk)
    for (const Invocation & i : invs) {
        if (!hadamard_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's hadamard engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const HadamardInvocation h = hadamard_of(i);
        if (!xdna_aie::hadamard_n_fits(static_cast<int>(h.p.n))) {
            return Status::error("hadamard: a transform of " + std::to_string(h.p.n) + " values is not one the design takes");
        }
        for (int64_t r = 0; r < h.p.rows; r += kHadamardChunkRows) jobs.push_back({static_cast<uint32_t>(views.size()), r});
        views.push_back(h);
    }
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t j, int) {
        thread_local CoreBuffers b;
        const HadamardInvocation & h = views[jobs[j].first];
        const int64_t r0 = jobs[j].second;
        const int32_t rows = static_cast<int32_t>(std::min<int64_t>(kHadamardChunkRows, h.p.rows - r0));
        const int32_t n = static_cast<int32_t>(h.p.n);
        for (int32_t r = 0; r < rows; ++r) {
            std::memcpy(b.x + r * n, static_cast<const float *>(h.x.host()) + (r0 + r) * h.p.x_row_stride, n * sizeof(float));
        }
        const CoreModes found = sim_core_modes();
        fwht_f32(b.x, b.y, rows, n, scale_of(n));
        sim_check_modes_restored(kHadamardVariant, found);
        for (int32_t r = 0; r < rows; ++r) {
            std::memcpy(static_cast<float *>(h.y.host()) + (r0 + r) * h.p.y_row_stride, b.y + r * n, n * sizeof(float));
        }
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

}  // namespace xdna
