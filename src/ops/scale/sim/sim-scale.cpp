#include "ops/scale/sim-scale.h"

#include "ops/scale/scale-invocation.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "sim/rows-stream.h"
#include "xdna_aie/scale_tiles.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

// aie/scale/kernels/scale.cc
extern "C" void scale_f32(const float * x, float * y, int32_t n, float s, float b, int32_t with_bias);

namespace xdna {

namespace {

using xdna_aie::kScaleChunk;

struct alignas(64) CoreBuffers {
    float x[kScaleChunk], y[kScaleChunk];
};

// What a call issues at the smallest and the largest tile, with and without the bias.
struct MeasuredCalls {
    CoreOps min_call[2], chunk[2];
    CoreOps at(int64_t n, int bias) const { return interpolate_call_ops(min_call[bias], chunk[bias], n, kScaleMinCall, kScaleChunk); }
};

const MeasuredCalls & calls() {
    static const MeasuredCalls m = [] {
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        MeasuredCalls out;
        for (int bias = 0; bias < 2; ++bias) {
            out.min_call[bias] = measure_on_own_thread([&] { scale_f32(b->x, b->y, kScaleMinCall, 1.0f, 1.0f, bias); });
            out.chunk[bias] = measure_on_own_thread([&] { scale_f32(b->x, b->y, kScaleChunk, 1.0f, 1.0f, bias); });
        }
        std::free(b);
        return out;
    }();
    return m;
}

// Whether the design has an xclbin at `tile` whose chunks make up a row of `cols` values: the calls the
// design makes, and no other (a call under kScaleMinCall would break the kernel's loop promise).
std::string tile_refusal(int tile, int64_t cols) {
    const DesignRead & d = scale_design();
    if (!d.ok()) {
        return "the scale design's description: " + d.error;
    }
    if (tile == 0 || d.design.kernel_stack(d.design.families.front().first, tile) == nullptr || tile < kScaleMinCall ||
        tile > kScaleChunk || cols % (static_cast<int64_t>(d.design.core_rows) * tile) != 0) {
        return "a row of " + std::to_string(cols) + " values at tile " + std::to_string(tile) +
               " is not one the design takes (groups of 2 chunks of one of its tiles, aie/scale/dataflow.json)";
    }
    return "";
}

class ScaleChunkRole final : public CoreRole {
public:
    ScaleChunkRole(const DesignDescription & d, const LayoutDesc & L, int tile, ScaleKernel kernel)
        : d_(d), tile_(tile), kernel_(kernel), x_(core_port(L, "x_l2l1")), y_(core_port(L, "y_l1l2")), chunks_word_(d.rtp_word("chunks")),
          s_word_(d.rtp_word("s")), b_word_(d.rtp_word("b")) {}

    std::string start(const std::vector<uint32_t> & words) override {
        if (words[d_.rtp_contract] != 0) {
            return "contract RTP " + std::to_string(words[d_.rtp_contract]) + " selects no kernel of this family";
        }
        if (x_ < 0 || y_ < 0 || chunks_word_ < 0 || s_word_ < 0 || b_word_ < 0) {
            return "the layout lacks the core FIFOs or the RTP words this core program reads";
        }
        chunks_ = words[chunks_word_];
        std::memcpy(&s_, &words[s_word_], sizeof s_);
        std::memcpy(&b_, &words[b_word_], sizeof b_);
        done_ = 0;
        return "";
    }
    uint64_t step(CorePorts & p, bool & progress) override {
        uint64_t n = 0;
        while (done_ < chunks_ && p.ready(x_) && p.ready(y_)) {
            kernel_(reinterpret_cast<const float *>(p.object(x_)), reinterpret_cast<float *>(p.object(y_)), tile_, s_, b_,
                    b_ != 0.0f ? 1 : 0);
            p.release(x_);
            p.release(y_);
            ++done_;
            ++n;
            progress = true;
        }
        return n;
    }
    bool finished() const override { return done_ >= chunks_; }
    bool begun() const override { return done_ > 0; }
    std::string state() const override { return "finished " + std::to_string(done_) + " of its " + std::to_string(chunks_) + " chunks"; }

private:
    const DesignDescription & d_;
    int tile_;
    ScaleKernel kernel_;
    int x_, y_, chunks_word_, s_word_, b_word_;
    uint32_t chunks_ = 0, done_ = 0;
    float s_ = 1.0f, b_ = 0.0f;
};

}  // namespace

bool scale_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::scale && key.design != nullptr && std::strcmp(key.design, kScaleDesign) == 0 &&
           key.variant != nullptr && std::strcmp(key.variant, kScaleVariant) == 0;
}

// What the design's stream moves and its busiest core executes; a shape the stream refuses (the planner
// does not hand it over) is charged at the smallest calls over 32 cores, never free.
ModelShape scale_model_shape(const Invocation & inv) {
    const ScaleInvocation r = scale_of(inv);
    ModelShape s;
    s.kind = KernelKind::scale;
    s.weight_type = GGML_TYPE_COUNT;
    const int bias = r.p.b != 0.0f ? 1 : 0;
    if (rows_model_shape(inv, [bias](int64_t n) { return calls().at(n, bias); }, s)) {
        return s;
    }
    const int64_t chunks = r.p.rows * ((r.p.cols + kScaleMinCall - 1) / kScaleMinCall);
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(chunks, 32));
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(8, cores));
    s.core_calls[0] = {calls().min_call[bias], static_cast<double>((chunks + cores - 1) / cores)};
    s.n_core_calls = 1;
    const double bytes = static_cast<double>(r.p.rows) * static_cast<double>(r.p.cols) * sizeof(float);
    s.activation_bytes = bytes;
    s.out_bytes = bytes;
    return s;
}

Status sim_run_scales(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<ScaleInvocation> views;
    std::vector<int> tiles;
    std::vector<std::pair<uint32_t, int64_t>> jobs;
    for (const Invocation & i : invs) {
        if (!scale_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's scale engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const ScaleInvocation s = scale_of(i);
        // Before any row runs: calls at the design's tile (its key carries it), as its stream makes them.
        if (std::string why = tile_refusal(i.key.tile.n, s.p.cols); !why.empty()) {
            return Status::error("scale: " + why);
        }
        for (int64_t r = 0; r < s.p.rows; ++r) jobs.push_back({static_cast<uint32_t>(views.size()), r});
        views.push_back(s);
        tiles.push_back(i.key.tile.n);
    }
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t j, int) {
        thread_local CoreBuffers b;
        const ScaleInvocation & s = views[jobs[j].first];
        const int tile = tiles[jobs[j].first];
        const float * x = static_cast<const float *>(s.x.host()) + jobs[j].second * s.p.x_row_stride;
        float * y = static_cast<float *>(s.y.host()) + jobs[j].second * s.p.y_row_stride;
        for (int64_t at = 0; at < s.p.cols; at += tile) {
            std::memcpy(b.x, x + at, static_cast<size_t>(tile) * sizeof(float));
            const CoreModes found = sim_core_modes();
            scale_f32(b.x, b.y, tile, s.p.s, s.p.b, s.p.b != 0.0f ? 1 : 0);
            sim_check_modes_restored(kScaleVariant, found);
            std::memcpy(y + at, b.y, static_cast<size_t>(tile) * sizeof(float));
        }
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

CoreRoleFactory scale_core_roles(const DesignDescription & d, int tile, ScaleKernel kernel) {
    return [&d, tile, kernel = kernel != nullptr ? kernel : scale_f32](const LayoutDesc & L, int, int, std::string &) -> std::unique_ptr<CoreRole> {
        return std::make_unique<ScaleChunkRole>(d, L, tile, kernel);
    };
}

Status sim_run_scales_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    return sim_run_rows_invocations(
        invs, scale_has_kernel, [](const DesignDescription & d, int tile) { return scale_core_roles(d, tile); }, pool, contexts, refused,
        "scale");
}

}  // namespace xdna
