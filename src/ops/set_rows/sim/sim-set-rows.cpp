#include "ops/set_rows/sim-set-rows.h"

#include "ops/set_rows/set-rows-invocation.h"
#include "runtime/scatter-sequence.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "sim/rows-stream.h"
#include "xdna_aie/set_rows_tiles.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

// The core programs (aie/set_rows/kernels), compiled for the host.
extern "C" void f32_to_f16(const float * x, int32_t * y, int32_t n);
extern "C" void f32_to_q8_0(const float * x, uint8_t * y, int32_t n);

namespace xdna {

namespace {

using xdna_aie::kSetRowsChunk;
using xdna_aie::kSetRowsLanes;

constexpr int kColumns = 8, kCores = 32;

// y: a chunk's halves (2 KB) or Q8_0 blocks (1088 B).
struct alignas(64) CoreBuffers {
    float   x[kSetRowsChunk];
    alignas(64) uint8_t y[kSetRowsChunk * 2];
};

// What a call issues at the shortest call the design makes and at a full chunk.
struct MeasuredCalls {
    CoreOps min_call, chunk;
    // A call on n values (a multiple of 32 from kSetRowsMinCall to kSetRowsChunk): each 32 values past the
    // shortest call issue the same (interpolate_call_ops counts steps from its first length, so the
    // lengths are shifted to start there).
    CoreOps at(int64_t n) const {
        constexpr int kShift = kSetRowsMinCall - kSetRowsLanes;
        return interpolate_call_ops(min_call, chunk, n - kShift, kSetRowsLanes, kSetRowsChunk - kShift);
    }
};

// Scalar cycles per Q8_0 block the host aie_api does not count: the two divisions (compiler-rt's
// __divsf3, 60 cycles each assumed, as act_quant's) and the 16-bit store of the scale.
constexpr uint64_t kQ8ScalarCyclesPerBlock = 2 * 60 + 1;

void run_chunk(bool q8, const float * x, uint8_t * y, int32_t n) {
    if (q8) f32_to_q8_0(x, y, n);
    else f32_to_f16(x, reinterpret_cast<int32_t *>(y), n);
}

const MeasuredCalls & calls(bool q8) {
    static const std::array<MeasuredCalls, 2> m = [] {
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        // Finite values of varied magnitude (the Q8_0 program's branch for a non-finite block not taken).
        for (int i = 0; i < kSetRowsChunk; ++i) b->x[i] = static_cast<float>((i * 37) % 101) - 50.0f;
        std::array<MeasuredCalls, 2> out;
        for (int q = 0; q < 2; ++q) {
            out[q] = {measure_on_own_thread([&] { run_chunk(q == 1, b->x, b->y, kSetRowsMinCall); }),
                      measure_on_own_thread([&] { run_chunk(q == 1, b->x, b->y, kSetRowsChunk); })};
        }
        out[1].min_call.scalar += kQ8ScalarCyclesPerBlock * (kSetRowsMinCall / 32);
        out[1].chunk.scalar += kQ8ScalarCyclesPerBlock * (kSetRowsChunk / 32);
        std::free(b);
        return out;
    }();
    return m[q8 ? 1 : 0];
}

int64_t id_at(const SetRowsInvocation & s, int64_t r) {
    if (s.p.identity) return r;
    return s.p.ids_64 ? static_cast<const int64_t *>(s.ids.host())[r] : static_cast<const int32_t *>(s.ids.host())[r];
}

// Whether the design has an xclbin at `tile` whose chunks make up a row of `cols` values: the calls the
// design makes, and no other (a call under kSetRowsMinCall would break the kernels' loop promise).
std::string tile_refusal(const char * variant, int tile, int64_t cols) {
    const DesignRead & d = set_rows_design();
    if (!d.ok()) {
        return "the set_rows design's description: " + d.error;
    }
    const std::string family = d.design.family_of(variant);
    if (tile == 0 || d.design.kernel_stack(family, tile) == nullptr || tile < kSetRowsMinCall || tile > kSetRowsChunk ||
        cols % tile != 0) {
        return "a row of " + std::to_string(cols) + " values at tile " + std::to_string(tile) + " would call " + variant +
               " on chunks the design does not make (chunks of one of its tiles, 128 to 1024 values: the kernels' loops promise " +
               "the compiler 4 trips of 32 values, aie/set_rows/dataflow.json)";
    }
    return "";
}

// The set_rows design's core program: per chunk, acquire x and y, one call of the family's kernel on
// the tile's values, release them.
class SetRowsChunkRole final : public CoreRole {
public:
    SetRowsChunkRole(const DesignDescription & d, const LayoutDesc & L, int tile, bool q8)
        : d_(d), tile_(tile), q8_(q8), x_(core_port(L, "x_l2l1")), y_(core_port(L, "y_l1l2")), chunks_word_(d.rtp_word("chunks")) {}

    std::string start(const std::vector<uint32_t> & words) override {
        if (words[d_.rtp_contract] != 0) {
            return "contract RTP " + std::to_string(words[d_.rtp_contract]) + " selects no kernel of this family";
        }
        if (x_ < 0 || y_ < 0 || chunks_word_ < 0) {
            return "the layout lacks the core FIFOs or the RTP words this core program reads";
        }
        chunks_ = words[chunks_word_];
        done_ = 0;
        return "";
    }
    uint64_t step(CorePorts & p, bool & progress) override {
        uint64_t n = 0;
        while (done_ < chunks_ && p.ready(x_) && p.ready(y_)) {
            const CoreModes found = sim_core_modes();
            run_chunk(q8_, reinterpret_cast<const float *>(p.object(x_)), p.object(y_), tile_);
            sim_check_modes_restored(q8_ ? kSetRowsQ8Variant : kSetRowsF16Variant, found);
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
    int  tile_;
    bool q8_;
    int  x_, y_, chunks_word_;
    uint32_t chunks_ = 0, done_ = 0;
};

}  // namespace

bool set_rows_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::set_rows && key.design != nullptr && std::strcmp(key.design, kSetRowsDesign) == 0 &&
           key.variant != nullptr && (std::strcmp(key.variant, kSetRowsF16Variant) == 0 || std::strcmp(key.variant, kSetRowsQ8Variant) == 0);
}

// What the design's stream moves and its busiest core executes, from the grid it builds (rows-sequence.h:
// R row blocks x S segments of each row's chunks, a core per column), which the ids do not change; a
// row the design does not take (the planner does not hand it over) is charged at the shortest call per
// 128 values over 32 cores, never free.
ModelShape set_rows_model_shape(const Invocation & inv) {
    const SetRowsInvocation r = set_rows_of(inv);
    ModelShape s;
    s.kind = KernelKind::set_rows;
    s.weight_type = GGML_TYPE_COUNT;
    const MeasuredCalls & c = calls(r.p.y_q8_0);
    const int tile = inv.key.tile.n;
    const DesignRead & d = set_rows_design();
    if (r.p.rows <= 0) {
        s.n_core_calls = 0;  // no rows (an empty slice): nothing moves, no core runs
        s.kind_cores = 0;
        s.kind_columns = 0;
        return s;
    }
    if (tile_refusal(inv.key.variant, tile, r.p.cols).empty()) {
        const int64_t chunks = r.p.cols / tile;
        const RowsGrid grid = rows_grid(r.p.rows, chunks, d.design.max_columns);
        s.kind_columns = grid.columns();
        s.kind_cores = s.kind_columns * d.design.core_rows;
        // The first block and segment are the largest (block_count).
        s.core_calls[0] = {c.at(tile), static_cast<double>(block_count(r.p.rows, grid.R, 0) * block_count(chunks, grid.S, 0))};
    } else {
        const int64_t calls_total = r.p.rows * ((r.p.cols + kSetRowsMinCall - 1) / kSetRowsMinCall);
        const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(calls_total, kCores));
        s.kind_cores = static_cast<int>(cores);
        s.kind_columns = static_cast<int>(std::min<int64_t>(kColumns, cores));
        s.core_calls[0] = {c.min_call, static_cast<double>((calls_total + cores - 1) / cores)};
    }
    s.n_core_calls = 1;
    // The DMAs move x in and the converted rows out; the ids are read by the host when it builds the stream.
    s.activation_bytes = static_cast<double>(r.p.rows) * static_cast<double>(r.p.cols) * sizeof(float);
    s.out_bytes = static_cast<double>(r.p.rows) * static_cast<double>(r.p.y_row_bytes());
    return s;
}

void set_rows_poison(const Invocation & inv) {
    const SetRowsInvocation s = set_rows_of(inv);
    for (int64_t r = 0; r < s.p.rows; ++r) {
        const int64_t id = id_at(s, r);
        if (id >= 0 && id < s.p.y_rows) {
            std::memset(static_cast<uint8_t *>(s.y.host()) + id * s.p.y_stride_bytes(), 0xff, static_cast<size_t>(s.p.y_row_bytes()));
        }
    }
}

Status sim_run_set_rows(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<SetRowsInvocation> views;
    std::vector<int> tiles;
    std::vector<std::pair<uint32_t, int64_t>> jobs;  // (invocation, row)
    for (const Invocation & i : invs) {
        if (!set_rows_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's set_rows engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const SetRowsInvocation s = set_rows_of(i);
        if ((std::strcmp(i.key.variant, kSetRowsQ8Variant) == 0) != s.p.y_q8_0) {
            return Status::error(std::string("set_rows: program ") + i.key.variant + " does not write the destination's type");
        }
        // Before any row runs: calls at the design's tile (its key carries it), as its stream makes them.
        if (std::string why = tile_refusal(i.key.variant, i.key.tile.n, s.p.cols); !why.empty()) {
            return Status::error("set_rows: " + why);
        }
        for (int64_t r = 0; r < s.p.rows; ++r) {
            const int64_t id = id_at(s, r);
            if (id < 0 || id >= s.p.y_rows) {
                return Status::error("set_rows: row id " + std::to_string(id) + " outside the " + std::to_string(s.p.y_rows) +
                                     " rows of the destination");
            }
            jobs.push_back({static_cast<uint32_t>(views.size()), r});
        }
        views.push_back(s);
        tiles.push_back(i.key.tile.n);
    }
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t j, int) {
        thread_local CoreBuffers b;
        const SetRowsInvocation & s = views[jobs[j].first];
        const int tile = tiles[jobs[j].first];
        const int64_t r = jobs[j].second;
        const float * x = static_cast<const float *>(s.x.host()) + r * s.p.x_row_stride;
        auto * y = static_cast<uint8_t *>(s.y.host()) + id_at(s, r) * s.p.y_stride_bytes();
        const int64_t out_bytes = s.p.y_q8_0 ? tile / 32 * 34 : tile * 2;
        for (int64_t c = 0; c < s.p.cols / tile; ++c) {
            std::memcpy(b.x, x + c * tile, static_cast<size_t>(tile) * sizeof(float));
            const CoreModes found = sim_core_modes();
            run_chunk(s.p.y_q8_0, b.x, b.y, tile);
            sim_check_modes_restored(s.p.y_q8_0 ? kSetRowsQ8Variant : kSetRowsF16Variant, found);
            std::memcpy(y + c * out_bytes, b.y, static_cast<size_t>(out_bytes));
        }
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

CoreRoleFactory set_rows_core_roles(const DesignDescription & d, const RowsSequence & seq) {
    const bool q8 = seq.family == kSetRowsQ8Family;
    const int tile = seq.tile;
    return [&d, tile, q8](const LayoutDesc & L, int, int, std::string &) -> std::unique_ptr<CoreRole> {
        return std::make_unique<SetRowsChunkRole>(d, L, tile, q8);
    };
}

Status sim_run_set_rows_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    if (refused != nullptr) {
        *refused = false;
    }
    auto refuse = [&](size_t i, const std::string & why) {
        if (refused != nullptr) {
            *refused = true;
        }
        return Status::error("stream mode, invocation " + std::to_string(i) + " (set_rows): " + why);
    };
    const DesignRead & design = set_rows_design();
    if (!design.ok()) {
        return refuse(0, design.error);
    }
    // Every stream built and every operand checked before the first one runs (sim-stream.h says why).
    std::vector<RowsJob> jobs;
    for (size_t i = 0; i < invs.size(); ++i) {
        if (!set_rows_has_kernel(invs[i].key)) {
            return refuse(i, std::string("the set_rows stream engine was handed a kernel of kind ") + kernel_kind_name(invs[i].kind()));
        }
        if (invs[i].operand("x")->rows == 0) {
            continue;  // an empty slice: no rows to move
        }
        ScatterShape shape;
        std::string err;
        if (!scatter_shape_of(invs[i], design.design, shape, err)) {
            return refuse(i, err);
        }
        // Built once per set of ids: a decode token's K and V rows go to the same cell in every layer.
        auto seq = cached_sequence(design.design, shape, build_scatter_sequence);
        if (!seq->ok()) {
            return refuse(i, seq->error);
        }
        if (seq->tile != invs[i].key.tile.n) {
            return refuse(i, "its stream runs at tile " + std::to_string(seq->tile) + ", its key names tile " +
                                 std::to_string(invs[i].key.tile.n));
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
        // The rows of x stream in while converted rows stream out: y over x would overwrite rows not yet read.
        if (operands_overlap(*x, *y)) {
            return refuse(i, "y overlaps the rows of x it is written from");
        }
        jobs.push_back(std::move(job));
    }
    if (jobs.empty()) {
        return Status::success();
    }
    const DesignDescription & d = design.design;
    return sim_run_rows_stream(
        d, jobs, [&d](const RowsSequence & seq) { return set_rows_core_roles(d, seq); }, pool, contexts, "set_rows");
}

}  // namespace xdna
