// SimExec::stream for flash_attn: each invocation's host-built stream (ops/flash_attn/flash-attn-sequence.h)
// through the DMA interpreter on the attention design, the cores running its core program
// (aie/flash_attn/dataflow.json .core_program, design.py core_program) with the kernel code of
// aie/flash_attn/kernels compiled for the host.
#include "flash-attn-kernels.h"
#include "ops/flash_attn/flash-attn-invocation.h"
#include "ops/flash_attn/flash-attn-sequence.h"
#include "ops/flash_attn/sim-flash-attn.h"
#include "runtime/design-registry.h"
#include "sim/core-state.h"
#include "sim/rows-stream.h"
#include "xdna_aie/flash_attn_tiles.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>


namespace xdna {

namespace {

using xdna_aie::kFaKvBlock;
using xdna_aie::kFaMaxHead;
using xdna_aie::kFaMaxRows;

// The core's own buffers beside its FIFO objects (design.py scratch_bytes): the query rows, the slopes,
// the scores, the bfp16 query operands, and for Q8_0 the gathered scale words and the program's scratch.
struct alignas(64) CoreScratch {
    float    q[kFaMaxRows * kFaMaxHead];
    float    slopes[kFaMaxRows];
    alignas(64) float scores[kFaMaxRows * kFaKvBlock];
    alignas(64) uint8_t qb[xdna_aie::fa_q_bfp16_bytes(kFaMaxRows, kFaMaxHead)];
    alignas(64) uint32_t words[2 * kFaMaxHead / 32 * kFaKvBlock];  // K's, then V's
    alignas(64) uint8_t scratch[xdna_aie::fa_q8_0_scratch_bytes(kFaMaxHead)];
    // The decode layout's: its kv object carries the task's one mask row, widened here (no room in place).
    alignas(64) uint16_t mask[kFaMaxRows * kFaKvBlock];
};

// The RTP words the core program reads, by name.
enum Word { wRounds, wTasks, wFirstChunk, wChunkStep, wChunks, wChunkRows, wLastRows, wPart, wParts, wBlock0, wNkv, wScale,
            wStateSteps, wMaskRatio, kWords };
const char * const kWordNames[kWords] = {"rounds", "tasks",  "first_chunk", "chunk_step", "chunks",      "chunk_rows", "last_rows",
                                         "part",   "parts",  "block0",      "n_kv",       "scale",       "state_steps", "mask_ratio"};

// One core's program (dataflow.json .core_program): per round its out object held while the q step, the
// block steps and (split) the state steps pass through its one input FIFO, in lockstep with its column.
class AttentionCoreRole final : public CoreRole {
public:
    AttentionCoreRole(const DesignDescription & d, const LayoutDesc & L, const std::string & family, int head_dim)
        : d_(d), q8_0_(family == "q8_0"), head_(head_dim), in_(-1), out_(-1) {
        for (size_t i = 0; i < L.fifos.size(); ++i) {
            if (L.fifos[i].to == "core") in_ = static_cast<int>(i);
            if (L.fifos[i].from == "core") out_ = static_cast<int>(i);
        }
        const auto * o = d.attention_objects_of(family, head_dim);
        state_bytes_ = o != nullptr ? o->state : 0;
        kv_bytes_ = d.unit_bytes(family, attention_kv_unit(L), head_dim);
        // A kv object of fewer mask rows than the core's query rows has no room to widen them in place.
        own_mask_ = L.task_tokens > 0 && L.task_tokens < kFaMaxRows;
        for (int w = 0; w < kWords; ++w) index_[w] = d.rtp_word(kWordNames[w]);
        b_.reset(static_cast<CoreScratch *>(std::aligned_alloc(64, sizeof(CoreScratch))));
        std::memset(b_.get(), 0, sizeof(CoreScratch));
    }

    std::string start(const std::vector<uint32_t> & words) override {
        if (in_ < 0 || out_ < 0 || state_bytes_ == 0 || kv_bytes_ < state_bytes_) {
            return "the layout lacks the core FIFOs or the objects this core program reads";
        }
        for (int w = 0; w < kWords; ++w) {
            if (index_[w] < 0) return std::string("the core program reads RTP word ") + kWordNames[w] + ", which the design lacks";
            w_[w] = words[static_cast<size_t>(index_[w])];
        }
        contract_ = words[static_cast<size_t>(d_.rtp_contract)];
        if (contract_ > 1) return "contract RTP " + std::to_string(contract_) + " selects no block program of this family";
        std::memcpy(&scale_, &w_[wScale], sizeof scale_);
        const uint32_t state_steps = w_[wStateSteps];
        if (w_[wChunks] == 0 || w_[wChunkRows] > static_cast<uint32_t>(kFaMaxRows) || w_[wLastRows] > static_cast<uint32_t>(kFaMaxRows) ||
            w_[wParts] == 0 || (w_[wParts] > 1) != (state_steps > 0)) {
            return "RTP words of " + std::to_string(w_[wChunkRows]) + " rows a chunk, " + std::to_string(w_[wParts]) + " parts and " +
                   std::to_string(state_steps) + " state steps are not a pass of this program";
        }
        round_ = 0;
        stage_ = Stage::acquire_out;
        chunk_ = w_[wFirstChunk];
        calls_ = 0;
        return "";
    }

    uint64_t step(CorePorts & p, bool & progress) override {
        const uint64_t before = calls_;
        while (round_ < w_[wRounds] && advance(p)) progress = true;
        return calls_ - before;
    }
    bool finished() const override { return round_ >= w_[wRounds]; }
    bool begun() const override { return round_ > 0 || stage_ != Stage::acquire_out; }
    std::string state() const override {
        return "round " + std::to_string(round_) + " of " + std::to_string(w_[wRounds]) + ", " + stage_name() + " (step " +
               std::to_string(index_in_stage_) + ")";
    }

private:
    enum class Stage { acquire_out, q_step, blocks, second_out, states, done };

    const char * stage_name() const {
        switch (stage_) {
            case Stage::acquire_out: return "acquiring its output object";
            case Stage::q_step: return "at its q step";
            case Stage::blocks: return "at its block steps";
            case Stage::second_out: return "acquiring its second output object";
            case Stage::states: return "at its state steps";
            case Stage::done: return "finishing";
        }
        return "?";
    }
    bool active() const { return round_ < w_[wTasks]; }
    int32_t rows() const { return static_cast<int32_t>(task_chunk_ == w_[wChunks] - 1 ? w_[wLastRows] : w_[wChunkRows]); }
    float * out_state(CorePorts & p) { return reinterpret_cast<float *>(p.object(out_)); }

    // One stage's acquire, work and release; false when a FIFO holds it back.
    bool advance(CorePorts & p) {
        const int32_t d = head_;
        switch (stage_) {
            case Stage::acquire_out:
                if (!p.ready(out_)) return false;
                task_chunk_ = chunk_;  // this round's task's chunk; the next round's counted on
                chunk_ += w_[wChunkStep];
                if (chunk_ >= w_[wChunks]) chunk_ -= w_[wChunks];
                stage_ = Stage::q_step;
                return true;
            case Stage::q_step: {
                if (!p.ready(in_)) return false;
                // The round's step words, after the largest task's query rows: its column's block steps (the
                // objects to take) and its own (the blocks to compute), read by an idle core too.
                const uint8_t * words = p.object(in_) + sizeof b_->slopes + static_cast<size_t>(kFaMaxRows) * d * sizeof(float);
                std::memcpy(&column_steps_, words, 4);
                std::memcpy(&own_steps_, words + 4, 4);
                if (active()) {
                    const uint8_t * step = p.object(in_);
                    std::memcpy(b_->slopes, step, sizeof b_->slopes);
                    std::memcpy(b_->q, step + sizeof b_->slopes, static_cast<size_t>(kFaMaxRows) * d * sizeof(float));
                    if (contract_ == 0) call("fa_prepare_q_bfp16", [&] { fa_prepare_q_bfp16(b_->q, b_->qb, rows(), d); });
                    call("fa_init_f32", [&] { fa_init_f32(out_state(p), rows(), d); });
                }
                p.release(in_);
                stage_ = column_steps_ > 0 ? Stage::blocks : after_blocks(p);
                index_in_stage_ = 0;
                return true;
            }
            case Stage::blocks: {
                if (!p.ready(in_)) return false;
                if (active() && index_in_stage_ < own_steps_) block(p.object(in_), out_state(p));
                p.release(in_);
                if (++index_in_stage_ == column_steps_) {
                    stage_ = after_blocks(p);
                    index_in_stage_ = 0;
                }
                return true;
            }
            case Stage::second_out:
                if (!p.ready(out_)) return false;
                stage_ = Stage::states;
                index_in_stage_ = 0;
                return true;
            case Stage::states: {
                if (!p.ready(in_)) return false;
                if (active() && w_[wPart] == 0) {
                    // The parts' states in order: the first copied in, the others merged into it.
                    const uint32_t spo = static_cast<uint32_t>(kv_bytes_ / state_bytes_);
                    const uint8_t * step = p.object(in_);
                    for (uint32_t i = 0; i < spo; ++i) {
                        const uint32_t part = index_in_stage_ * spo + i;
                        if (part >= w_[wParts]) break;
                        const auto * st = reinterpret_cast<const float *>(step + i * state_bytes_);
                        if (part == 0) {
                            std::memcpy(out_state(p), st, state_bytes_);
                        } else {
                            call("fa_merge_f32", [&] { fa_merge_f32(out_state(p), st, rows(), d); });
                        }
                    }
                }
                p.release(in_);
                if (++index_in_stage_ == w_[wStateSteps]) {
                    finish(p);
                    p.release(out_);
                    next_round();
                }
                return true;
            }
            case Stage::done: return false;
        }
        return false;
    }

    // After the last block step: unsplit, the rows finished and the object released; split, the partial
    // state released and a second object to come.
    Stage after_blocks(CorePorts & p) {
        if (w_[wParts] == 1) {
            finish(p);
            p.release(out_);
            next_round();
            return stage_;
        }
        p.release(out_);
        return Stage::second_out;
    }
    void next_round() {
        ++round_;
        stage_ = Stage::acquire_out;
        index_in_stage_ = 0;
    }
    // fa_finish_f32 over the query rows (no longer read), copied into the output object.
    void finish(CorePorts & p) {
        if (!active() || (w_[wParts] > 1 && w_[wPart] != 0)) return;
        const int32_t d = head_, n = rows();
        call("fa_finish_f32", [&] { fa_finish_f32(out_state(p), b_->q, n, d, d); });
        std::memcpy(out_state(p), b_->q, static_cast<size_t>(n) * d * sizeof(float));
    }

    void block(uint8_t * kv, float * state) {
        const int32_t d = head_, n_rows = rows();
        const int64_t left = static_cast<int64_t>(w_[wNkv]) - static_cast<int64_t>(w_[wBlock0] + index_in_stage_) * kFaKvBlock;
        const int32_t n = static_cast<int32_t>(std::min<int64_t>(kFaKvBlock, left));
        const size_t rb = q8_0_ ? static_cast<size_t>(xdna_aie::fa_q8_0_row_bytes(d)) : static_cast<size_t>(2 * d);
        uint8_t * k = kv;
        uint8_t * v = kv + kFaKvBlock * rb;
        auto * mask = reinterpret_cast<uint16_t *>(kv + 2 * kFaKvBlock * rb);
        if (own_mask_) {
            // The task's one token's row (filler zeros without a mask), copied to every query row of the
            // core's own mask buffer: the object holds one row, which the block program would read past.
            for (int32_t i = 0; i < n_rows; ++i) std::memcpy(b_->mask + i * kFaKvBlock, mask, kFaKvBlock * sizeof(uint16_t));
            mask = b_->mask;
        } else if (w_[wMaskRatio] > 0) {
            // One mask row per token arrived; widened in place to one per query row, from the last row
            // down so no token's row is overwritten before it is read.
            const uint32_t ratio = w_[wMaskRatio], row0 = task_chunk_ * w_[wChunkRows], t0 = row0 / ratio;
            for (int32_t i = n_rows - 1; i >= 0; --i) {
                const uint32_t tau = (row0 + static_cast<uint32_t>(i)) / ratio - t0;
                if (tau != static_cast<uint32_t>(i)) std::memcpy(mask + i * kFaKvBlock, mask + tau * kFaKvBlock, kFaKvBlock * sizeof(uint16_t));
            }
        }
        const auto * k16 = reinterpret_cast<const uint16_t *>(k);
        const auto * v16 = reinterpret_cast<const uint16_t *>(v);
        if (q8_0_ && contract_ == 0) {
            // The words holding each row's block scales, [block][row], gathered from the rows it holds.
            uint32_t * kw = b_->words;
            uint32_t * vw = b_->words + d / 32 * kFaKvBlock;
            for (int32_t q8b = 0; q8b < d / 32; ++q8b) {
                const size_t at = 4 * static_cast<size_t>(xdna_aie::fa_q8_0_scale_word(q8b));
                for (int32_t r = 0; r < kFaKvBlock; ++r) {
                    std::memcpy(kw + q8b * kFaKvBlock + r, k + r * rb + at, 4);
                    std::memcpy(vw + q8b * kFaKvBlock + r, v + r * rb + at, 4);
                }
            }
            call("fa_block_q8_0_bfp16", [&] {
                fa_block_q8_0_bfp16(b_->q, b_->qb, k, v, kw, vw, mask, b_->slopes, state, b_->scores, b_->scratch, n_rows, d, n, scale_);
            });
        } else if (contract_ == 0) {
            call("fa_block_f16_bfp16",
                 [&] { fa_block_f16_bfp16(b_->q, b_->qb, k16, v16, mask, b_->slopes, state, b_->scores, n_rows, d, n, scale_); });
        } else if (q8_0_) {
            call("fa_block_q8_0", [&] { fa_block_q8_0(b_->q, k, v, mask, b_->slopes, state, b_->scores, n_rows, d, n, scale_); });
        } else {
            call("fa_block_f16", [&] { fa_block_f16(b_->q, k16, v16, mask, b_->slopes, state, b_->scores, n_rows, d, n, scale_); });
        }
    }

    // A kernel call, in the core's modes as the NPU keeps them (a kernel must restore what it changes).
    template <class F>
    void call(const char * name, F && f) {
        const CoreModes found = sim_core_modes();
        f();
        sim_check_modes_restored(name, found);
        ++calls_;
    }

    struct Free {
        void operator()(CoreScratch * p) const { std::free(p); }
    };
    const DesignDescription &              d_;
    bool                                   q8_0_;
    int32_t                                head_;
    int                                    in_, out_;
    size_t                                 state_bytes_ = 0, kv_bytes_ = 0;
    bool                                   own_mask_ = false;
    int                                    index_[kWords] = {};
    uint32_t                               w_[kWords] = {};
    uint32_t                               contract_ = 0, round_ = 0, chunk_ = 0, task_chunk_ = 0, index_in_stage_ = 0;
    uint32_t                               column_steps_ = 0, own_steps_ = 0;  // this round's, from its q step
    float                                  scale_ = 0.0f;
    Stage                                  stage_ = Stage::acquire_out;
    uint64_t                               calls_ = 0;
    std::unique_ptr<CoreScratch, Free>     b_;
};

const DesignRead & attention_design() { return built_in_design(kFlashAttnDesign); }

}  // namespace

CoreRoleFactory flash_attn_core_roles(const DesignDescription & d, const std::string & family, int head_dim) {
    return [&d, family, head_dim](const LayoutDesc & L, int, int, std::string &) -> std::unique_ptr<CoreRole> {
        return std::make_unique<AttentionCoreRole>(d, L, family, head_dim);
    };
}

std::shared_ptr<const AttentionSequence> flash_attn_sequence_of(const Invocation & inv, std::string & err, const std::string & layout,
                                                                int columns) {
    const DesignRead & design = attention_design();
    AttentionShape shape;
    if (!design.ok()) {
        err = design.error;
        return nullptr;
    }
    if (!attention_shape_of(inv, design.design, shape, err)) return nullptr;
    shape.layout = layout;
    shape.max_columns = columns;
    auto seq = cached_sequence(design.design, shape, build_attention_sequence);
    if (!seq->ok()) {
        err = seq->error;
        return nullptr;
    }
    return seq;
}

Status sim_run_flash_attns_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused,
                                  const std::string & layout) {
    if (refused != nullptr) *refused = false;
    auto refuse = [&](size_t i, const std::string & why) {
        if (refused != nullptr) *refused = true;
        return Status::error("stream mode, invocation " + std::to_string(i) + " (flash_attn): " + why);
    };
    const DesignRead & design = attention_design();
    if (!design.ok()) return refuse(0, design.error);
    const DesignDescription & d = design.design;
    // Every stream built, every host-written operand made, every operand checked and placed before the
    // first one runs (sim-stream.h says why).
    struct Job {
        std::shared_ptr<const AttentionSequence> seq;
        std::vector<uint32_t>                    words;  // the stream with its operands placed
        std::vector<DmaArgument>                 args;
        std::vector<uint8_t>                     aux;    // the slopes, then the partial states' scratch
    };
    std::vector<Job> jobs(invs.size());
    for (size_t i = 0; i < invs.size(); ++i) {
        Job & job = jobs[i];
        if (!flash_attn_has_kernel(invs[i].key)) {
            return refuse(i, std::string("the flash_attn stream engine was handed a kernel of kind ") + kernel_kind_name(invs[i].kind()));
        }
        std::string err;
        job.seq = flash_attn_sequence_of(invs[i], err, layout);
        if (job.seq == nullptr) return refuse(i, err);
        std::vector<uint8_t> slopes;  // and the stream's step words
        if (!attention_host_bytes(invs[i], *job.seq, slopes, err)) return refuse(i, err);
        // The operands in the firmware's 5 translated arguments, as the XRT device places them.
        AttentionArguments placed;
        if (!attention_arguments(invs[i], d, *job.seq, placed, err) || !place_arguments(job.seq->words, placed.places, job.words, err)) {
            return refuse(i, err);
        }
        job.aux.assign(placed.held_bytes, 0);  // the slopes the host writes, then the scratch
        std::copy(slopes.begin(), slopes.end(), job.aux.begin());
        for (const AttentionArgument & a : placed.args) {
            job.args.push_back(a.buffer != nullptr ? DmaArgument{static_cast<uint8_t *>(a.buffer->host_ptr()) + a.offset, a.bytes}
                                                   : DmaArgument{job.aux.data(), job.aux.size()});
        }
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
        const AttentionSequence & seq = *jobs[i].seq;
        DmaRun run;
        {
            std::lock_guard<std::mutex> lock(contexts.mutex());
            run = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""}, flash_attn_core_roles(d, seq.family, seq.tile),
                                    jobs[i].words.data(), jobs[i].words.size(), jobs[i].args, &pool,
                                    contexts.design(d.design + ":" + seq.family, seq.tile, seq.layout));
        }
        if (!run.ok()) return Status::error("stream mode, invocation " + std::to_string(i) + " (flash_attn): " + run.error);
    }
    return Status::success();
}

}  // namespace xdna
