#include "ops/glu/sim-glu.h"

#include "ops/glu/glu-invocation.h"
#include "sim/binary-rows.h"
#include "sim/rows-stream.h"
#include "swiglu-twin.h"
#include "xdna_aie/glu_tiles.h"

#include <algorithm>
#include <cstring>

extern "C" void swiglu_f32(const float * a, const float * b, float * y, int32_t n);  // aie/glu/kernels/swiglu.cc

namespace xdna {

namespace {

static_assert(xdna_aie::kGluChunk == kBinaryChunk && xdna_aie::kGluLanes == kBinaryLanes, "the glu design's chunks");
constexpr BinaryKernel kSwiglu{"swiglu_f32", swiglu_f32};
constexpr BinaryKernel kSwigluTwin{"swiglu_f32", twin_swiglu_f32};
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
    const std::shared_ptr<const RowsSequence> seq = glu_sequence_of(r.p);
    const double row = static_cast<double>(r.p.cols) * sizeof(float);
    s.n_core_calls = 1;
    if (seq->ok()) {
        s.kind_columns = seq->traffic.columns_used;
        s.kind_cores = seq->traffic.columns_used * glu_design().design.core_rows;
        s.core_calls[0] = {calls().at(seq->tile), static_cast<double>(seq->traffic.calls_per_core)};
        s.activation_bytes = static_cast<double>(seq->traffic.read);
        s.out_bytes = static_cast<double>(seq->traffic.written);
        return s;
    }
    const int64_t chunks = r.p.rows * ((r.p.cols + kBinaryMinCall - 1) / kBinaryMinCall);
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(chunks, kCores));
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(8, cores));
    s.core_calls[0] = {calls().at(kBinaryMinCall), static_cast<double>((chunks + cores - 1) / cores)};
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
        // Calls of the design's tile, as its stream makes them (the kernel code's own chunking otherwise).
        const int tile = glu_design().ok() ? rows_tile_for(glu_design().design, glu_design().design.families.front().first, g.p.cols) : 0;
        rows.push_back({static_cast<const float *>(g.a.host()), static_cast<const float *>(g.b.host()), static_cast<float *>(g.y.host()),
                        g.p.rows, g.p.cols, g.p.a_row_stride, g.p.b_row_stride, g.p.y_row_stride, tile});
    }
    return sim_run_binary_rows(exec == SimExec::twin && swiglu_twin_pays() ? kSwigluTwin : kSwiglu, rows, pool);
}

std::shared_ptr<const RowsSequence> glu_sequence_of(const GluParams & p) {
    if (!glu_design().ok()) {
        auto none = std::make_shared<RowsSequence>();
        none->error = glu_design().error;
        return none;
    }
    return cached_rows_sequence(glu_design().design, glu_rows_shape(p));
}

Status sim_run_glus_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    if (refused != nullptr) {
        *refused = false;
    }
    auto refuse = [&](size_t i, const std::string & why) {
        if (refused != nullptr) {
            *refused = true;
        }
        return Status::error("stream mode, invocation " + std::to_string(i) + " (glu): " + why);
    };
    const DesignRead & design = glu_design();
    if (!design.ok()) {
        return refuse(0, design.error);
    }
    const DesignDescription & d = design.design;
    std::vector<RowsJob> jobs;
    for (size_t i = 0; i < invs.size(); ++i) {
        if (!glu_has_kernel(invs[i].key)) {
            return refuse(i, std::string("the glu stream engine was handed a kernel of kind ") + kernel_kind_name(invs[i].kind()));
        }
        const GluInvocation g = glu_of(invs[i]);
        const GluParams & q = g.p;
        RowsJob job;
        job.seq = glu_sequence_of(q);
        if (!job.seq->ok()) {
            return refuse(i, job.seq->error);
        }
        const auto need = [&](int64_t stride) { return static_cast<uint64_t>(((q.rows - 1) * stride + q.cols) * 4); };
        auto after = [](const BufferSlice & b) { return static_cast<uint64_t>(b.buffer->size() - b.offset); };
        if (need(q.a_row_stride) > after(g.a) || need(q.b_row_stride) > after(g.b) || need(q.y_row_stride) > after(g.y)) {
            return refuse(i, "an operand ends before the rows the stream moves");
        }
        job.args = {{"a", {static_cast<uint8_t *>(g.a.host()), after(g.a)}},
                    {"b", {static_cast<uint8_t *>(g.b.host()), after(g.b)}},
                    {"y", {static_cast<uint8_t *>(g.y.host()), after(g.y)}}};
        jobs.push_back(std::move(job));
    }
    return sim_run_rows_stream(
        d, jobs, [&d](int tile) { return binary_chunk_roles(d, tile, {swiglu_f32}, "a_l2l1", "b_l2l1", "y_l1l2"); }, pool, contexts, "glu");
}

}  // namespace xdna
