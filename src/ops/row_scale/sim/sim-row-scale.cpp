#include "ops/row_scale/sim-row-scale.h"

#include "ops/row_scale/row-scale-invocation.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "sim/rows-stream.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

// aie/row_scale/kernels/row_scale.cc
extern "C" void row_scale_f32(const float * x, float * y, int32_t n, float w);

namespace xdna {

namespace {

using xdna_aie::kRowScaleChunk;
using xdna_aie::kRowScaleMinCall;

struct alignas(64) CoreBuffers {
    float x[kRowScaleChunk], y[kRowScaleChunk];
};

// What a call issues at the smallest and the largest tile.
struct MeasuredCalls {
    CoreOps min_call, chunk;
    CoreOps at(int64_t n) const { return interpolate_call_ops(min_call, chunk, n, kRowScaleMinCall, kRowScaleChunk); }
};

const MeasuredCalls & calls() {
    static const MeasuredCalls m = [] {
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        MeasuredCalls out;
        out.min_call = measure_on_own_thread([&] { row_scale_f32(b->x, b->y, kRowScaleMinCall, 1.0f); });
        out.chunk = measure_on_own_thread([&] { row_scale_f32(b->x, b->y, kRowScaleChunk, 1.0f); });
        std::free(b);
        return out;
    }();
    return m;
}

// Whether the design has an xclbin at `tile` whose chunks make up a row of `cols` values: the calls the
// design makes, and no other (a call under kRowScaleMinCall would break the kernel's loop promise).
std::string tile_refusal(int tile, int64_t cols) {
    const DesignRead & d = row_scale_design();
    if (!d.ok()) {
        return "the row_scale design's description: " + d.error;
    }
    if (tile == 0 || d.design.kernel_stack(d.design.families.front().first, tile) == nullptr || tile < kRowScaleMinCall ||
        tile > kRowScaleChunk || cols % (static_cast<int64_t>(d.design.core_rows) * tile) != 0) {
        return "a row of " + std::to_string(cols) + " values at tile " + std::to_string(tile) +
               " is not one the design takes (groups of 2 chunks of one of its tiles, aie/row_scale/dataflow.json)";
    }
    return "";
}

class RowScaleRole final : public CoreRole {
public:
    RowScaleRole(const DesignDescription & d, const LayoutDesc & L, int tile, RowScaleKernel kernel)
        : d_(d), tile_(tile), kernel_(kernel), x_(core_port(L, "x_l2l1")), w_(core_port(L, "v_l2l1")), y_(core_port(L, "y_l1l2")),
          rows_word_(d.rtp_word("rows")), row_chunks_word_(d.rtp_word("row_chunks")) {}

    std::string start(const std::vector<uint32_t> & words) override {
        if (words[d_.rtp_contract] != 0) {
            return "contract RTP " + std::to_string(words[d_.rtp_contract]) + " selects no kernel of this family";
        }
        if (x_ < 0 || w_ < 0 || y_ < 0 || rows_word_ < 0 || row_chunks_word_ < 0) {
            return "the layout lacks the core FIFOs or the RTP words this core program reads";
        }
        rows_ = words[rows_word_];
        row_chunks_ = words[row_chunks_word_];
        row_ = chunk_ = 0;
        return "";
    }
    uint64_t step(CorePorts & p, bool & progress) override {
        uint64_t n = 0;
        // The row's value is held (acquired) for all of the row's chunks, then released.
        while (row_ < rows_ && p.ready(w_)) {
            float w = 0.0f;
            std::memcpy(&w, p.object(w_), sizeof w);
            while (chunk_ < row_chunks_ && p.ready(x_) && p.ready(y_)) {
                kernel_(reinterpret_cast<const float *>(p.object(x_)), reinterpret_cast<float *>(p.object(y_)), tile_, w);
                p.release(x_);
                p.release(y_);
                ++chunk_;
                ++n;
                progress = true;
            }
            if (chunk_ < row_chunks_) {
                break;  // waits for x or y with the row's value held
            }
            p.release(w_);
            chunk_ = 0;
            ++row_;
            progress = true;
        }
        return n;
    }
    bool finished() const override { return row_ >= rows_; }
    bool begun() const override { return row_ > 0 || chunk_ > 0; }
    std::string state() const override {
        return "finished " + std::to_string(row_) + " of its " + std::to_string(rows_) + " rows and " + std::to_string(chunk_) + " of " +
               std::to_string(row_chunks_) + " chunks of the next";
    }

private:
    const DesignDescription & d_;
    int tile_;
    RowScaleKernel kernel_;
    int x_, w_, y_, rows_word_, row_chunks_word_;
    uint32_t rows_ = 0, row_chunks_ = 0, row_ = 0, chunk_ = 0;
};

}  // namespace

bool row_scale_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::row_scale && key.design != nullptr && std::strcmp(key.design, kRowScaleDesign) == 0 &&
           key.variant != nullptr && std::strcmp(key.variant, kRowScaleVariant) == 0;
}

// What the design's stream moves and its busiest core executes; a shape the stream refuses (the planner
// does not hand it over) is charged at the smallest calls over 32 cores, never free.
ModelShape row_scale_model_shape(const Invocation & inv) {
    const RowScaleInvocation r = row_scale_of(inv);
    ModelShape s;
    s.kind = KernelKind::row_scale;
    s.weight_type = GGML_TYPE_COUNT;
    if (rows_model_shape(inv, [](int64_t n) { return calls().at(n); }, s)) {
        return s;
    }
    const int64_t chunks = r.p.rows * ((r.p.cols + kRowScaleMinCall - 1) / kRowScaleMinCall);
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(chunks, 32));
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(8, cores));
    s.core_calls[0] = {calls().min_call, static_cast<double>((chunks + cores - 1) / cores)};
    s.n_core_calls = 1;
    const double bytes = static_cast<double>(r.p.rows) * static_cast<double>(r.p.cols) * sizeof(float);
    s.activation_bytes = bytes + static_cast<double>(r.p.rows) * sizeof(float);
    s.out_bytes = bytes;
    return s;
}

Status sim_run_row_scales(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<RowScaleInvocation> views;
    std::vector<int> tiles;
    std::vector<std::pair<uint32_t, int64_t>> jobs;
    for (const Invocation & i : invs) {
        if (!row_scale_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's row_scale engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const RowScaleInvocation r = row_scale_of(i);
        // Before any row runs: calls at the design's tile (its key carries it), as its stream makes them.
        if (std::string why = tile_refusal(i.key.tile.n, r.p.cols); !why.empty()) {
            return Status::error("row_scale: " + why);
        }
        for (int64_t row = 0; row < r.p.rows; ++row) jobs.push_back({static_cast<uint32_t>(views.size()), row});
        views.push_back(r);
        tiles.push_back(i.key.tile.n);
    }
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t j, int) {
        thread_local CoreBuffers b;
        const RowScaleInvocation & r = views[jobs[j].first];
        const int tile = tiles[jobs[j].first];
        const int64_t row = jobs[j].second;
        const float * x = static_cast<const float *>(r.x.host()) + row * r.p.x_row_stride;
        const float   w = static_cast<const float *>(r.w.host())[row * r.p.w_stride];
        float * y = static_cast<float *>(r.y.host()) + row * r.p.y_row_stride;
        for (int64_t at = 0; at < r.p.cols; at += tile) {
            std::memcpy(b.x, x + at, static_cast<size_t>(tile) * sizeof(float));
            const CoreModes found = sim_core_modes();
            row_scale_f32(b.x, b.y, tile, w);
            sim_check_modes_restored(kRowScaleVariant, found);
            std::memcpy(y + at, b.y, static_cast<size_t>(tile) * sizeof(float));
        }
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

CoreRoleFactory row_scale_core_roles(const DesignDescription & d, int tile, RowScaleKernel kernel) {
    return [&d, tile, kernel = kernel != nullptr ? kernel : row_scale_f32](const LayoutDesc & L, int, int, std::string &) -> std::unique_ptr<CoreRole> {
        return std::make_unique<RowScaleRole>(d, L, tile, kernel);
    };
}

Status sim_run_row_scales_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    return sim_run_rows_invocations(
        invs, row_scale_has_kernel, [](const DesignDescription & d, int tile) { return row_scale_core_roles(d, tile); }, pool, contexts,
        refused, "row_scale");
}

}  // namespace xdna
