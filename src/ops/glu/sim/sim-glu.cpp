#include "ops/glu/sim-glu.h"

#include "ops/glu/glu-invocation.h"
#include "sim/binary-rows.h"
#include "sim/rows-stream.h"
#include "swiglu-twin.h"
#include "xdna_aie/glu_tiles.h"

#include <algorithm>
#include <cstring>

// aie/glu/kernels/swiglu.cc: b the whole group broadcast to the core rows, b_at the core's chunk in it.
extern "C" void swiglu_f32(const float * a, const float * b, float * y, int32_t n, int32_t b_at);

namespace xdna {

namespace {

// The engine's chunk calls (kernels mode) hand the kernel b at its own chunk: the offset 0.
void swiglu_chunk(const float * a, const float * b, float * y, int32_t n) { swiglu_f32(a, b, y, n, 0); }

static_assert(xdna_aie::kGluChunk == kBinaryChunk && xdna_aie::kGluLanes == kBinaryLanes, "the glu design's chunks");
// swiglu_f32's loop promises 1 trip of 32 lanes (the design's smallest tile, 32 values, takes a row of 128
// as 4 chunks of its 4 core rows).
constexpr int32_t kGluMinCall = xdna_aie::kGluLanes;
constexpr BinaryKernel kSwiglu{"swiglu_f32", swiglu_chunk, kGluMinCall};
constexpr BinaryKernel kSwigluTwin{"swiglu_f32", twin_swiglu_f32, kGluMinCall};
constexpr int kCores = 32;

const BinaryCallOps & calls() {
    static const BinaryCallOps m = measure_binary_calls(kSwiglu);
    return m;
}

}  // namespace

bool glu_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::glu && key.design != nullptr && std::strcmp(key.design, kGluDesign) == 0 &&
           key.variant != nullptr && std::strcmp(key.variant, kSwigluVariant) == 0;
}

// What the design's stream moves and its busiest core executes (sim-add.cpp's rule): a shape the
// stream refuses (the planner does not hand it over) is charged at the smallest calls, never free.
ModelShape glu_model_shape(const Invocation & inv) {
    const GluInvocation r = glu_of(inv);
    ModelShape s;
    s.kind = KernelKind::glu;
    s.weight_type = GGML_TYPE_COUNT;
    const double row = static_cast<double>(r.p.cols) * sizeof(float);
    if (rows_model_shape(inv, calls(), s)) {
        return s;
    }
    s.n_core_calls = 1;
    const int64_t chunks = r.p.rows * ((r.p.cols + kGluMinCall - 1) / kGluMinCall);
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(chunks, kCores));
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(8, cores));
    s.core_calls[0] = {calls().at(kGluMinCall), static_cast<double>((chunks + cores - 1) / cores)};
    s.activation_bytes = 2 * row * static_cast<double>(r.p.rows);
    s.out_bytes = row * static_cast<double>(r.p.rows);
    return s;
}

Status sim_run_glus(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec) {
    std::vector<BinaryRows> rows;
    for (const Invocation & i : invs) {
        if (!glu_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's glu engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const GluInvocation g = glu_of(i);
        if (g.p.cols <= 0 || g.p.cols % kBinaryLanes != 0) {
            return Status::error("glu: row length " + std::to_string(g.p.cols) + " is not one the design takes");
        }
        // Calls of the design's tile (its key carries it), as its stream makes them; the kernel code's own
        // chunking for a row no tile takes.
        const int tile = i.key.tile.n;
        rows.push_back({static_cast<const float *>(g.a.host()), static_cast<const float *>(g.b.host()), static_cast<float *>(g.y.host()),
                        g.p.rows, g.p.cols, g.p.a_row_stride, g.p.b_row_stride, g.p.y_row_stride, tile});
    }
    return sim_run_binary_rows(exec == SimExec::twin && swiglu_twin_pays() ? kSwigluTwin : kSwiglu, rows, pool);
}

Status sim_run_glus_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    return sim_run_rows_invocations(
        invs, glu_has_kernel,
        [](const DesignDescription & d, int tile) { return binary_chunk_roles_at(d, tile, {swiglu_f32}, "a_l2l1", "b_l2l1", "y_l1l2"); },
        pool, contexts, refused, "glu");
}

}  // namespace xdna
