#include "ops/rms_norm/sim-rms-norm.h"

#include "ops/act_quant/sim-act-quant.h"
#include "ops/rms_norm/rms-norm-invocation.h"
#include "runtime/norm-sequence.h"
#include "sim/core-state.h"
#include "sim/rows-stream.h"
#include "sim/kernel-cycles.h"
#include "xdna_aie/matmul_tiles.h"
#include "xdna_aie/rms_norm_tiles.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

// The core kernels' entry points (aie/rms_norm/kernels/rms_norm.cc), compiled for the host.
extern "C" {
void rms_norm_sumsq_f32(const float * x, float * partial, int32_t n);
void rms_norm_scale_f32(float * partial, float * scale, float inv_cols, float eps);
void rms_norm_apply_mul_f32(const float * x, const float * w, const float * scale, float * y, int32_t n);
void rms_norm_apply_f32(const float * x, const float * scale, float * y, int32_t n);
}

namespace xdna {

namespace {

using xdna_aie::kRmsNormChunk;
using xdna_aie::kRmsNormLanes;

// The design's columns: each column's core takes whole rows (aie/rms_norm/dataflow.json).
constexpr int kColumns = 8;

constexpr int kQuantTileBytes = xdna_aie::ActTileFormat{kRmsNormQuantTileN, kRmsNormQuantTileK, 32}.tile_bytes();

// One core's data memory as the design lays it out: chunk buffers of x, w and y, the partial sums and
// the row's scale (64-byte aligned, as the core's buffers are); a quantizing program's too: 256 values
// of y and the tile it makes of them.
struct alignas(64) CoreBuffers {
    float x[kRmsNormChunk];
    float w[kRmsNormChunk];
    float y[kRmsNormChunk];
    float partial[kRmsNormLanes];
    float scale[kRmsNormLanes];
    float group[kRmsNormQuantTileK];
    alignas(64) uint8_t tile[kQuantTileBytes];
};
static_assert(xdna_aie::ActTileFormat{kRmsNormQuantTileN, kRmsNormQuantTileK, 256}.tile_bytes() <= kQuantTileBytes,
              "the b256 tile fits the b32 tile's buffer");

// A kernel call with the modes checked around it (core-state.h).
template <typename F> void checked(const char * name, F && call) {
    const CoreModes found = sim_core_modes();
    call();
    sim_check_modes_restored(name, found);
}

// The quantizing programs (one row, with the weight): per 256 values of y, one call of the act_quant
// row program (the tile's token 0; its tokens 1-3, past the invocation's one row, zeros, as act_quant's
// padding rows make them) and the finished tile written out, tiles in K order.
void quantize_row(const RmsNormInvocation & r, const float * y, CoreBuffers & b) {
    ActQuantKernel quant = nullptr;
    CoreOps unused;
    act_quant_program(rms_norm_quant_program(rms_norm_key(true, r.p.cols, r.p.quant_block)), quant, unused);
    auto * tiles = static_cast<uint8_t *>(r.tiles.host());
    for (int64_t kt = 0; kt < r.p.cols / kRmsNormQuantTileK; ++kt) {
        std::memcpy(b.group, y + kt * kRmsNormQuantTileK, kRmsNormQuantTileK * sizeof(float));
        // A tile object holds what the memory last held: the program must write every byte of it.
        std::memset(b.tile, 0xA5, sizeof b.tile);
        checked("act_quant (rms_norm)", [&] { quant(b.group, b.tile, 0); });
        std::memcpy(tiles + kt * r.p.quant_tile_bytes, b.tile, r.p.quant_tile_bytes);
    }
}

void run_row(const RmsNormInvocation & r, int64_t row, CoreBuffers & b) {
    const int64_t cols = r.p.cols;
    const float * x = static_cast<const float *>(r.x.host()) + row * r.p.x_row_stride;
    const float * w = r.p.with_weight ? static_cast<const float *>(r.weight.host()) + row * r.p.w_row_stride : nullptr;
    float * y = static_cast<float *>(r.y.host()) + row * r.p.y_row_stride;
    std::memset(b.partial, 0, sizeof b.partial);  // the design clears it at load; the scale call after each row
    const int64_t chunks = xdna_aie::rms_norm_chunks(cols);
    for (int64_t c = 0; c < chunks; ++c) {
        const int32_t n = static_cast<int32_t>(xdna_aie::rms_norm_chunk_len(cols, c));
        std::memcpy(b.x, x + c * kRmsNormChunk, n * sizeof(float));
        checked("rms_norm_sumsq_f32", [&] { rms_norm_sumsq_f32(b.x, b.partial, n); });
    }
    checked("rms_norm_scale_f32", [&] { rms_norm_scale_f32(b.partial, b.scale, r.p.inv_cols, r.p.eps); });
    // The row again, from the memory tile (it was staged there once): y is written only now, so x and y
    // may be the same memory (an in-place RMS_NORM).
    for (int64_t c = 0; c < chunks; ++c) {
        const int32_t n = static_cast<int32_t>(xdna_aie::rms_norm_chunk_len(cols, c));
        std::memcpy(b.x, x + c * kRmsNormChunk, n * sizeof(float));
        if (w != nullptr) {
            std::memcpy(b.w, w + c * kRmsNormChunk, n * sizeof(float));
            checked("rms_norm_apply_mul_f32", [&] { rms_norm_apply_mul_f32(b.x, b.w, b.scale, b.y, n); });
        } else {
            checked("rms_norm_apply_f32", [&] { rms_norm_apply_f32(b.x, b.scale, b.y, n); });
        }
        std::memcpy(y + c * kRmsNormChunk, b.y, n * sizeof(float));
    }
    if (r.p.quant_block != 0) {
        quantize_row(r, y, b);
    }
}

// What each kernel issues, measured once per process on a thread of its own (the counts depend on the
// length of the chunk, not on its values), at a full chunk and at the shortest call the design makes.
struct MeasuredCalls {
    CoreOps sumsq[2], apply_mul[2], apply[2], scale;  // [0]: kRmsNormChunk values, [1]: kRmsNormMinCall
};

const MeasuredCalls & measured_calls() {
    static const MeasuredCalls m = [] {
        MeasuredCalls out;
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        const int32_t lens[2] = {kRmsNormChunk, static_cast<int32_t>(kRmsNormMinCall)};
        for (int i = 0; i < 2; ++i) {
            out.sumsq[i] = measure_on_own_thread([&] { rms_norm_sumsq_f32(b->x, b->partial, lens[i]); });
            out.apply_mul[i] = measure_on_own_thread([&] { rms_norm_apply_mul_f32(b->x, b->w, b->scale, b->y, lens[i]); });
            out.apply[i] = measure_on_own_thread([&] { rms_norm_apply_f32(b->x, b->scale, b->y, lens[i]); });
        }
        b->partial[0] = 1.0f;  // a positive sum: the counts do not depend on it, the arithmetic stays finite
        out.scale = measure_on_own_thread([&] { rms_norm_scale_f32(b->partial, b->scale, 1.0f, 1e-6f); });
        std::free(b);
        return out;
    }();
    return m;
}

// The ops of a call on n values (a multiple of 32 from kRmsNormMinCall to kRmsNormChunk), from the two
// measured lengths: each 32 lanes past the shortest call issue the same (interpolate_call_ops counts
// vectors from its first length, so the lengths are shifted to start there).
CoreOps ops_at(const CoreOps (&m)[2], int64_t n) {
    constexpr int64_t kShift = kRmsNormMinCall - kRmsNormLanes;
    return interpolate_call_ops(m[1], m[0], n - kShift, kRmsNormLanes, static_cast<int>(kRmsNormChunk - kShift));
}

// The core program of the design: per row, pass 1 over the x chunks, the scale, pass 2 over the x (and
// weight) chunks writing y. Its partial sums and scale live in core memory for as long as the design is
// loaded; the scale call clears the sums after every row.
class RmsNormCoreRole final : public CoreRole {
public:
    RmsNormCoreRole(const DesignDescription & d, const LayoutDesc & L, int tile, const RmsNormKernels & k)
        : d_(d), tile_(tile), k_(k), x_(core_port(L, "x_l2l1")), w_(core_port(L, "weight_l2l1")), y_(core_port(L, "y_l1l2")),
          rows_word_(d.rtp_word("rows")), chunks_word_(d.rtp_word("chunks")), inv_word_(d.rtp_word("inv_cols")),
          eps_word_(d.rtp_word("eps")) {
        std::memset(&mem_, 0, sizeof mem_);
    }

    std::string start(const std::vector<uint32_t> & words) override {
        if (x_ < 0 || w_ < 0 || y_ < 0 || rows_word_ < 0 || chunks_word_ < 0 || inv_word_ < 0 || eps_word_ < 0) {
            return "the layout lacks the core FIFOs or the RTP words this core program reads";
        }
        const uint32_t contract = words[d_.rtp_contract];
        if (contract > 1) {
            return "contract RTP " + std::to_string(contract) + " selects no program of this family";
        }
        with_weight_ = contract == 0;  // the family's order: rms_norm_mul_f32, rms_norm_f32
        rows_ = words[rows_word_];
        chunks_ = words[chunks_word_];
        std::memcpy(&inv_cols_, &words[inv_word_], sizeof inv_cols_);
        std::memcpy(&eps_, &words[eps_word_], sizeof eps_);
        row_ = chunk_ = 0;
        pass_ = 1;
        return "";
    }
    uint64_t step(CorePorts & p, bool & progress) override {
        uint64_t calls = 0;
        while (row_ < rows_) {
            if (pass_ == 1) {
                if (!p.ready(x_)) break;
                k_.sumsq(reinterpret_cast<const float *>(p.object(x_)), mem_.partial, tile_);
                p.release(x_);
                ++calls;
                if (++chunk_ == chunks_) {
                    k_.scale(mem_.partial, mem_.scale, inv_cols_, eps_);
                    ++calls;
                    chunk_ = 0;
                    pass_ = 2;
                }
            } else {
                if (!p.ready(x_) || (with_weight_ && !p.ready(w_)) || !p.ready(y_)) break;
                const auto * x = reinterpret_cast<const float *>(p.object(x_));
                auto * y = reinterpret_cast<float *>(p.object(y_));
                if (with_weight_) {
                    k_.apply_mul(x, reinterpret_cast<const float *>(p.object(w_)), mem_.scale, y, tile_);
                    p.release(w_);
                } else {
                    k_.apply(x, mem_.scale, y, tile_);
                }
                p.release(x_);
                p.release(y_);
                ++calls;
                if (++chunk_ == chunks_) {
                    chunk_ = 0;
                    pass_ = 1;
                    ++row_;
                }
            }
            progress = true;
        }
        return calls;
    }
    bool finished() const override { return row_ >= rows_; }
    bool begun() const override { return row_ > 0 || chunk_ > 0 || pass_ == 2; }
    std::string state() const override {
        return "row " + std::to_string(row_) + " of " + std::to_string(rows_) + ", pass " + std::to_string(pass_) + ", chunk " +
               std::to_string(chunk_) + " of " + std::to_string(chunks_);
    }

private:
    struct alignas(64) Memory {
        float partial[kRmsNormLanes];
        float scale[kRmsNormLanes];
    };
    const DesignDescription & d_;
    int tile_;
    RmsNormKernels k_;
    int x_, w_, y_, rows_word_, chunks_word_, inv_word_, eps_word_;
    Memory mem_;
    bool with_weight_ = true;
    uint32_t rows_ = 0, chunks_ = 0, row_ = 0, chunk_ = 0;
    int pass_ = 1;
    float inv_cols_ = 0, eps_ = 0;
};

}  // namespace

CoreRoleFactory rms_norm_core_roles(const DesignDescription & d, int tile, RmsNormKernels k) {
    if (k.sumsq == nullptr) k.sumsq = rms_norm_sumsq_f32;
    if (k.scale == nullptr) k.scale = rms_norm_scale_f32;
    if (k.apply_mul == nullptr) k.apply_mul = rms_norm_apply_mul_f32;
    if (k.apply == nullptr) k.apply = rms_norm_apply_f32;
    return [&d, tile, k](const LayoutDesc & L, int, int, std::string &) -> std::unique_ptr<CoreRole> {
        return std::make_unique<RmsNormCoreRole>(d, L, tile, k);
    };
}

Status sim_run_rms_norms_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    return sim_run_rows_invocations(
        invs, rms_norm_has_kernel, [](const DesignDescription & d, int tile) { return rms_norm_core_roles(d, tile); }, pool, contexts,
        refused, "rms_norm");
}

bool rms_norm_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::rms_norm && key.design != nullptr && std::strcmp(key.design, kRmsNormDesign) == 0 &&
           key.variant != nullptr &&
           (std::strcmp(key.variant, kRmsNormVariant) == 0 || std::strcmp(key.variant, kRmsNormMulVariant) == 0 ||
            rms_norm_quant_program(key) != nullptr);
}

bool rms_norm_has_stream(const KernelKey & key) {
    return rms_norm_has_kernel(key) && rms_norm_quant_program(key) == nullptr;
}

namespace {

// A quantizing program's own work on top of the norm's: one act_quant call per 256 values of its row (the
// program's measured ops, as act_quant's own invocations are charged) and the tiles it writes. Its data
// movement is not described yet: the bytes are the tiles, written once, beside the norm's own.
void add_quantization(const RmsNormInvocation & r, ModelShape & s) {
    ActQuantKernel quant = nullptr;
    CoreOps call;
    if (r.p.quant_block == 0 || !act_quant_program(rms_norm_quant_program(rms_norm_key(true, r.p.cols, r.p.quant_block)), quant, call) ||
        s.n_core_calls >= static_cast<int>(s.core_calls.size())) {
        return;
    }
    s.core_calls[static_cast<size_t>(s.n_core_calls++)] = {call, static_cast<double>(r.p.cols / kRmsNormQuantTileK)};
    s.out_bytes += static_cast<double>(r.p.quant_tile_bytes) * static_cast<double>(r.p.cols / kRmsNormQuantTileK);
}

}  // namespace

ModelShape rms_norm_model_shape(const Invocation & inv) {
    const RmsNormInvocation r = rms_norm_of(inv);
    if (r.p.quant_block != 0) {
        // The norm's own work and movement as the plain program's, then the quantization's.
        RmsNormInvocation plain = r;
        plain.p.quant_block = plain.p.quant_tile_n = 0;
        plain.p.quant_tile_bytes = 0;
        plain.tiles = {};
        ModelShape s = rms_norm_model_shape(to_invocation(plain));
        add_quantization(r, s);
        return s;
    }
    const MeasuredCalls & m = measured_calls();
    ModelShape s;
    s.kind = KernelKind::rms_norm;
    s.weight_type = GGML_TYPE_COUNT;
    const CoreOps (&apply_ops)[2] = r.p.with_weight ? m.apply_mul : m.apply;
    // What the design's stream moves and makes its busiest core call (runtime/norm-sequence.h): per row
    // of that core, a sumsq and an apply per chunk of the xclbin's tile and one scale; x twice, the weight
    // row once per row, y once.
    if (const std::shared_ptr<const RowsSequence> seq = rows_sequence_of(inv); seq->ok()) {
        const double rows = static_cast<double>(seq->traffic.rows_per_core);
        const double chunks = static_cast<double>(r.p.cols / seq->tile);
        s.kind_columns = seq->traffic.columns_used;
        s.kind_cores = seq->traffic.columns_used;  // one core per column
        s.core_calls[0] = {ops_at(m.sumsq, seq->tile), rows * chunks};
        s.core_calls[1] = {m.scale, rows};
        s.core_calls[2] = {ops_at(apply_ops, seq->tile), rows * chunks};
        s.n_core_calls = 3;
        s.activation_bytes = static_cast<double>(seq->traffic.of("x"));
        s.weight_bytes = static_cast<double>(seq->traffic.of("weight"));
        s.out_bytes = static_cast<double>(seq->traffic.written);
        return s;
    }
    // A shape the design's stream refuses is not the NPU's: the planner does not claim it, and a device
    // handed one runs it on the host path. Its figures: the design's grid (a core per column, whole rows)
    // on chunks of kRmsNormChunk and a shorter last one, as the kernel code is called in kernels mode.
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(r.p.rows, kColumns));
    const int64_t busiest_rows = (r.p.rows + cores - 1) / cores;
    s.kind_cores = static_cast<int>(cores);
    s.kind_columns = static_cast<int>(cores);
    const int64_t chunks = xdna_aie::rms_norm_chunks(r.p.cols);
    const int64_t tail = xdna_aie::rms_norm_chunk_len(r.p.cols, chunks - 1);
    s.core_calls[0] = {ops_at(m.sumsq, kRmsNormChunk), static_cast<double>(busiest_rows * (chunks - 1))};
    s.core_calls[1] = {ops_at(m.sumsq, tail), static_cast<double>(busiest_rows)};
    s.core_calls[2] = {ops_at(apply_ops, kRmsNormChunk), static_cast<double>(busiest_rows * (chunks - 1))};
    s.core_calls[3] = {ops_at(apply_ops, tail), static_cast<double>(busiest_rows)};
    s.n_core_calls = 4;
    s.core_calls[1].ops += m.scale;  // one scale per row, with the tail's sumsq
    const double row_bytes = static_cast<double>(r.p.cols) * sizeof(float);
    s.activation_bytes = 2 * row_bytes * static_cast<double>(r.p.rows);  // x in both passes
    s.out_bytes = row_bytes * static_cast<double>(r.p.rows);
    s.weight_bytes = r.p.with_weight ? row_bytes * static_cast<double>(r.p.rows) : 0;
    return s;
}

Status sim_run_rms_norms(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<RmsNormInvocation> views;
    std::vector<std::pair<uint32_t, int64_t>> rows;  // (invocation, row)
    for (const Invocation & i : invs) {
        if (i.kind() != KernelKind::rms_norm || !rms_norm_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's rms_norm engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const RmsNormInvocation r = rms_norm_of(i);
        if (r.p.cols <= 0 || r.p.cols % kRmsNormLanes != 0 || r.p.cols > xdna_aie::kRmsNormMaxCols) {
            return Status::error("rms_norm: row length " + std::to_string(r.p.cols) + " is not one the design takes");
        }
        if (!rms_norm_calls_keep_promise(r.p.cols)) {
            // Before any row runs: the kernels' loops promise the compiler kRmsNormMinCall / 32 trips, so the core would be
            // undefined on this row's last chunk (rms-norm-invocation.h).
            return Status::error("rms_norm: a row of " + std::to_string(r.p.cols) + " values would call the kernels on a last chunk of " +
                                 std::to_string(xdna_aie::rms_norm_chunk_len(r.p.cols, xdna_aie::rms_norm_chunks(r.p.cols) - 1)) +
                                 " values, fewer than " + std::to_string(kRmsNormMinCall) +
                                 " (their loops promise the compiler " + std::to_string(kRmsNormMinCall / 32) + " trip(s) of 32 lanes)");
        }
        if (r.p.quant_block != 0) {
            ActQuantKernel quant = nullptr;
            CoreOps ops;
            const char * program = rms_norm_quant_program(i.key);
            if (program == nullptr || !act_quant_program(program, quant, ops) || r.p.rows != 1 ||
                r.p.cols % kRmsNormQuantTileK != 0 || r.tiles.host() == nullptr ||
                r.p.quant_tile_bytes != static_cast<size_t>(xdna_aie::ActTileFormat{kRmsNormQuantTileN, kRmsNormQuantTileK,
                                                                                    r.p.quant_block}.tile_bytes())) {
                return Status::error("rms_norm: a quantizing program takes one row of a multiple of 256 values into a8 tiles of " +
                                     std::to_string(kRmsNormQuantTileN) + " tokens (" + std::to_string(r.p.rows) + " rows of " +
                                     std::to_string(r.p.cols) + " given)");
            }
        }
        views.push_back(r);
    }
    for (uint32_t v = 0; v < views.size(); ++v) {
        for (int64_t row = 0; row < views[v].p.rows; ++row) {
            rows.push_back({v, row});
        }
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
