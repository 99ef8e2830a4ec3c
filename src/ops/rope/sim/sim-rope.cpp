#include "ops/rope/sim-rope.h"

#include "ops/rope/rope-invocation.h"
#include "ops/rope/rope-table.h"
#include "runtime/rope-sequence.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "sim/rows-stream.h"
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

// Whether the design has an xclbin for the invocation's head rows at the tile its key names: the calls
// the design makes, and no other.
std::string tile_refusal(const Invocation & inv, const RopeParams & p) {
    if (!rope_design().ok()) {
        return "the rope design's description: " + rope_design().error;
    }
    if (inv.key.tile.n == 0 || inv.key.tile.n != p.ne0 || !rope_row_has_xclbin(p.ne0) ||
        !xdna_aie::rope_row_fits(p.angles.n_dims, static_cast<int>(p.ne0))) {
        return std::to_string(p.angles.n_dims) + " of " + std::to_string(p.ne0) + " dims at tile " + std::to_string(inv.key.tile.n) +
               " is not a row the design takes (aie/rope/dataflow.json: one xclbin per head row length)";
    }
    return "";
}

// The rope design's core program: per token, acquire its angle row; per head, acquire x and y, one call
// of the family's kernel (n_dims the word, ne0 the tile), release them; then release the angle row.
class RopeTokenRole final : public CoreRole {
public:
    RopeTokenRole(const DesignDescription & d, const LayoutDesc & L, int tile, RopeKernel kernel)
        : d_(d), tile_(tile), kernel_(kernel), x_(core_port(L, "x_l2l1")), cs_(core_port(L, "cs_l2l1")), y_(core_port(L, "y_l1l2")),
          tokens_word_(d.rtp_word("tokens")), heads_word_(d.rtp_word("heads")), n_dims_word_(d.rtp_word("n_dims")) {}

    std::string start(const std::vector<uint32_t> & words) override {
        if (words[d_.rtp_contract] != 0) {
            return "contract RTP " + std::to_string(words[d_.rtp_contract]) + " selects no kernel of this family";
        }
        if (x_ < 0 || cs_ < 0 || y_ < 0 || tokens_word_ < 0 || heads_word_ < 0 || n_dims_word_ < 0) {
            return "the layout lacks the core FIFOs or the RTP words this core program reads";
        }
        tokens_ = words[tokens_word_];
        heads_ = words[heads_word_];
        n_dims_ = static_cast<int32_t>(words[n_dims_word_]);
        if (!xdna_aie::rope_row_fits(n_dims_, tile_)) {
            return "RTP n_dims " + std::to_string(n_dims_) + " is not a rotation of rows of " + std::to_string(tile_);
        }
        token_ = head_ = 0;
        holding_ = false;
        return "";
    }
    uint64_t step(CorePorts & p, bool & progress) override {
        uint64_t n = 0;
        while (token_ < tokens_) {
            if (!holding_) {
                if (!p.ready(cs_)) break;
                holding_ = true;  // acquired: the token's angle row, for all of its heads
                progress = true;
            }
            if (!p.ready(x_) || !p.ready(y_)) break;
            kernel_(reinterpret_cast<const float *>(p.object(x_)), reinterpret_cast<const float *>(p.object(cs_)),
                    reinterpret_cast<float *>(p.object(y_)), n_dims_, tile_);
            p.release(x_);
            p.release(y_);
            ++n;
            progress = true;
            if (++head_ == heads_) {
                p.release(cs_);
                holding_ = false;
                head_ = 0;
                ++token_;
            }
        }
        return n;
    }
    bool finished() const override { return token_ >= tokens_; }
    bool begun() const override { return token_ > 0 || head_ > 0 || holding_; }
    std::string state() const override {
        return "finished " + std::to_string(token_) + " of its " + std::to_string(tokens_) + " tokens (" + std::to_string(head_) +
               " of " + std::to_string(heads_) + " heads of the next)";
    }

private:
    const DesignDescription & d_;
    int        tile_;
    RopeKernel kernel_;
    int        x_, cs_, y_, tokens_word_, heads_word_, n_dims_word_;
    uint32_t   tokens_ = 0, heads_ = 0, token_ = 0, head_ = 0;
    int32_t    n_dims_ = 0;
    bool       holding_ = false;
};

}  // namespace

bool rope_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::rope && key.design != nullptr && std::strcmp(key.design, kRopeDesign) == 0 &&
           key.variant != nullptr &&
           (std::strcmp(key.variant, kRopeNormVariant) == 0 || std::strcmp(key.variant, kRopeNeoxVariant) == 0);
}

// What the design's stream moves and its busiest core executes (the stream depends on the shape only:
// built once per shape); a row the design does not take (the planner does not hand it over) is charged
// one call per head row over 32 cores, never free.
ModelShape rope_model_shape(const Invocation & inv) {
    const RopeInvocation r = rope_of(inv);
    ModelShape s;
    s.kind = KernelKind::rope;
    s.weight_type = GGML_TYPE_COUNT;
    const CoreOps call = call_ops(r.p.mode, r.p.angles.n_dims, static_cast<int32_t>(r.p.ne0));
    RopeShape shape;
    std::string err;
    if (rope_design().ok() && tile_refusal(inv, r.p).empty() && rope_shape_of(inv, rope_design().design, shape, err)) {
        const auto seq = cached_sequence(rope_design().design, shape, build_rope_sequence);
        if (seq->ok()) {
            s.kind_columns = seq->traffic.columns_used;
            s.kind_cores = seq->traffic.columns_used * rope_design().design.core_rows;
            s.core_calls[0] = {call, static_cast<double>(seq->traffic.calls_per_core)};
            s.n_core_calls = 1;
            // x and the angle rows in (the host writes the angle rows: the positions are not moved), y out.
            s.activation_bytes = static_cast<double>(seq->traffic.of("x"));
            s.weight_bytes = static_cast<double>(seq->traffic.of("cs"));
            s.out_bytes = static_cast<double>(seq->traffic.written);
            return s;
        }
    }
    const int64_t rows = r.p.n_tokens * r.p.n_heads;
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(rows, kCores));
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(std::min<int64_t>(kColumns, cores));
    s.core_calls[0] = {call, static_cast<double>((rows + cores - 1) / cores)};
    s.n_core_calls = 1;
    const double row = static_cast<double>(r.p.ne0) * sizeof(float);
    s.activation_bytes = row * static_cast<double>(rows);
    s.weight_bytes = row * static_cast<double>(r.p.n_tokens);
    s.out_bytes = row * static_cast<double>(rows);
    return s;
}

Status sim_run_ropes(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<RopeInvocation> views;
    std::vector<std::vector<float>> angles;  // per invocation: its angle rows, as the host writes them at submission
    std::vector<Job> jobs;
    for (const Invocation & i : invs) {
        if (!rope_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's rope engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const RopeInvocation r = rope_of(i);
        // Before any row runs: calls at the design's tile (its key carries it), as its stream makes them.
        if (std::string why = tile_refusal(i, r.p); !why.empty()) {
            return Status::error("rope: " + why);
        }
        angles.emplace_back(rope_angle_bytes(i) / sizeof(float));
        std::string err;
        if (!rope_angle_rows(i, angles.back().data(), err)) {
            return Status::error("rope: " + err);
        }
        const uint32_t v = static_cast<uint32_t>(views.size());
        views.push_back(r);
        for (int64_t t = 0; t < r.p.n_tokens; ++t) {
            const float * cs = angles.back().data() + t * r.p.ne0;
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

CoreRoleFactory rope_core_roles(const DesignDescription & d, const RowsSequence & seq) {
    const RopeKernel k = seq.family == "neox" ? rope_neox_f32 : rope_norm_f32;
    const int tile = seq.tile;
    return [&d, tile, k](const LayoutDesc & L, int, int, std::string &) -> std::unique_ptr<CoreRole> {
        return std::make_unique<RopeTokenRole>(d, L, tile, k);
    };
}

Status sim_run_ropes_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    if (refused != nullptr) {
        *refused = false;
    }
    auto refuse = [&](size_t i, const std::string & why) {
        if (refused != nullptr) {
            *refused = true;
        }
        return Status::error("stream mode, invocation " + std::to_string(i) + " (rope): " + why);
    };
    const DesignRead & design = rope_design();
    if (!design.ok()) {
        return refuse(0, design.error);
    }
    // Every stream built, every angle row written and every operand checked before the first one runs
    // (sim-stream.h says why).
    std::vector<RowsJob> jobs;
    std::vector<std::vector<uint8_t>> angles(invs.size());  // the host-written cs operands, alive for the run
    for (size_t i = 0; i < invs.size(); ++i) {
        if (!rope_has_kernel(invs[i].key)) {
            return refuse(i, std::string("the rope stream engine was handed a kernel of kind ") + kernel_kind_name(invs[i].kind()));
        }
        const RopeInvocation r = rope_of(invs[i]);
        if (std::string why = tile_refusal(invs[i], r.p); !why.empty()) {
            return refuse(i, why);
        }
        RopeShape shape;
        std::string err;
        if (!rope_shape_of(invs[i], design.design, shape, err)) {
            return refuse(i, err);
        }
        auto seq = cached_sequence(design.design, shape, build_rope_sequence);
        if (!seq->ok()) {
            return refuse(i, seq->error);
        }
        // The angle rows of the positions as they are now (graph inputs, written before the graph runs).
        if (!invs[i].host_operand("cs", angles[i], err)) {
            return refuse(i, err);
        }
        const Operand * x = invs[i].operand("x");
        const Operand * y = invs[i].operand("y");
        RowsJob job;
        job.seq = seq;
        for (const Operand * o : {x, y}) {
            if (!job.add_operand(*o, err)) {
                return refuse(i, err);
            }
        }
        job.args.push_back({"cs", {angles[i].data(), angles[i].size()}});
        jobs.push_back(std::move(job));
    }
    if (jobs.empty()) {
        return Status::success();
    }
    const DesignDescription & d = design.design;
    return sim_run_rows_stream(
        d, jobs, [&d](const RowsSequence & seq) { return rope_core_roles(d, seq); }, pool, contexts, "rope");
}

}  // namespace xdna
