#include "ops/hadamard/sim-hadamard.h"

#include "ops/hadamard/hadamard-invocation.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "sim/rows-stream.h"
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

using xdna_aie::kHadamardMaxN;

struct alignas(64) CoreBuffers {
    float x[kHadamardMaxN], y[kHadamardMaxN];
};

// What a call on one row of n values issues (the design's only call: a chunk is one row).
CoreOps call_ops(int64_t n) {
    static std::mutex mutex;
    static std::map<int64_t, CoreOps> measured;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = measured.find(n);
    if (it == measured.end()) {
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        const float scale = 1.0f / sqrtf(static_cast<float>(n));
        const CoreOps ops = measure_on_own_thread([&] { fwht_f32(b->x, b->y, 1, static_cast<int32_t>(n), scale); });
        std::free(b);
        it = measured.emplace(n, ops).first;
    }
    return it->second;
}

// Whether the design has an xclbin whose tile is the transform length: the calls its stream makes, and
// no other.
std::string tile_refusal(int tile, int64_t n) {
    const DesignRead & d = hadamard_design();
    if (!d.ok()) {
        return "the hadamard design's description: " + d.error;
    }
    if (tile == 0 || tile != n || !xdna_aie::hadamard_n_fits(tile) || d.design.kernel_stack(d.design.families.front().first, tile) == nullptr) {
        return "a transform of " + std::to_string(n) + " values at tile " + std::to_string(tile) +
               " is not one the design takes (one row per chunk of 64, 128 or 256 values, aie/hadamard/dataflow.json)";
    }
    return "";
}

class HadamardRowRole final : public CoreRole {
public:
    HadamardRowRole(const DesignDescription & d, const LayoutDesc & L, int tile, HadamardKernel kernel)
        : d_(d), tile_(tile), kernel_(kernel), x_(core_port(L, "x_l2l1")), y_(core_port(L, "y_l1l2")), chunks_word_(d.rtp_word("chunks")),
          scale_word_(d.rtp_word("scale")) {}

    std::string start(const std::vector<uint32_t> & words) override {
        if (words[d_.rtp_contract] != 0) {
            return "contract RTP " + std::to_string(words[d_.rtp_contract]) + " selects no kernel of this family";
        }
        if (x_ < 0 || y_ < 0 || chunks_word_ < 0 || scale_word_ < 0) {
            return "the layout lacks the core FIFOs or the RTP words this core program reads";
        }
        chunks_ = words[chunks_word_];
        std::memcpy(&scale_, &words[scale_word_], sizeof scale_);
        done_ = 0;
        return "";
    }
    uint64_t step(CorePorts & p, bool & progress) override {
        uint64_t n = 0;
        while (done_ < chunks_ && p.ready(x_) && p.ready(y_)) {
            kernel_(reinterpret_cast<const float *>(p.object(x_)), reinterpret_cast<float *>(p.object(y_)), 1, tile_, scale_);
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
    std::string state() const override { return "finished " + std::to_string(done_) + " of its " + std::to_string(chunks_) + " rows"; }

private:
    const DesignDescription & d_;
    int tile_;
    HadamardKernel kernel_;
    int x_, y_, chunks_word_, scale_word_;
    uint32_t chunks_ = 0, done_ = 0;
    float scale_ = 1.0f;
};

}  // namespace

bool hadamard_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::hadamard && key.design != nullptr && std::strcmp(key.design, kHadamardDesign) == 0 &&
           key.variant != nullptr && std::strcmp(key.variant, kHadamardVariant) == 0;
}

// What the design's stream moves and its busiest core executes; a shape the stream refuses (the planner
// does not hand it over) is charged one call per row over 8 cores, never free.
ModelShape hadamard_model_shape(const Invocation & inv) {
    const HadamardInvocation h = hadamard_of(inv);
    ModelShape s;
    s.kind = KernelKind::hadamard;
    s.weight_type = GGML_TYPE_COUNT;
    if (rows_model_shape(inv, call_ops, s)) {
        return s;
    }
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(h.p.rows, 8));
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(cores);
    s.core_calls[0] = {call_ops(std::min<int64_t>(std::max<int64_t>(h.p.n, 64), kHadamardMaxN)), static_cast<double>((h.p.rows + cores - 1) / cores)};
    s.n_core_calls = 1;
    const double bytes = static_cast<double>(h.p.rows) * static_cast<double>(h.p.n) * sizeof(float);
    s.activation_bytes = bytes;
    s.out_bytes = bytes;
    return s;
}

Status sim_run_hadamards(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<HadamardInvocation> views;
    std::vector<std::pair<uint32_t, int64_t>> jobs;  // (invocation, row)
    for (const Invocation & i : invs) {
        if (!hadamard_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's hadamard engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const HadamardInvocation h = hadamard_of(i);
        // Before any row runs: calls at the design's tile (its key carries it), as its stream makes them.
        if (std::string why = tile_refusal(i.key.tile.n, h.p.n); !why.empty()) {
            return Status::error("hadamard: " + why);
        }
        for (int64_t r = 0; r < h.p.rows; ++r) jobs.push_back({static_cast<uint32_t>(views.size()), r});
        views.push_back(h);
    }
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t j, int) {
        thread_local CoreBuffers b;
        const HadamardInvocation & h = views[jobs[j].first];
        const int64_t r = jobs[j].second;
        const int32_t n = static_cast<int32_t>(h.p.n);
        std::memcpy(b.x, static_cast<const float *>(h.x.host()) + r * h.p.x_row_stride, n * sizeof(float));
        const CoreModes found = sim_core_modes();
        fwht_f32(b.x, b.y, 1, n, h.p.scale);
        sim_check_modes_restored(kHadamardVariant, found);
        std::memcpy(static_cast<float *>(h.y.host()) + r * h.p.y_row_stride, b.y, n * sizeof(float));
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

CoreRoleFactory hadamard_core_roles(const DesignDescription & d, int tile, HadamardKernel kernel) {
    return [&d, tile, kernel = kernel != nullptr ? kernel : fwht_f32](const LayoutDesc & L, int, int, std::string &) -> std::unique_ptr<CoreRole> {
        return std::make_unique<HadamardRowRole>(d, L, tile, kernel);
    };
}

Status sim_run_hadamards_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    return sim_run_rows_invocations(
        invs, hadamard_has_kernel, [](const DesignDescription & d, int tile) { return hadamard_core_roles(d, tile); }, pool, contexts,
        refused, "hadamard");
}

}  // namespace xdna
