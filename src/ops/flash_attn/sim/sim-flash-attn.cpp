#include "ops/flash_attn/sim-flash-attn.h"

#include "flash-attn-kernels.h"
#include "flash-attn-twin.h"
#include "ops/flash_attn/flash-attn-invocation.h"
#include "ops/flash_attn/flash-attn-sequence.h"
#include "sim/core-state.h"
#include "sim/kernel-cycles.h"
#include "xdna_aie/flash_attn_tiles.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>


namespace xdna {

namespace {

using xdna_aie::kFaKvBlock;
using xdna_aie::kFaMaxHead;
using xdna_aie::kFaMaxRows;

// The array: 8 columns of 4 cores; a group's context parts stay within one column.
constexpr int kColumns = 8, kCores = 32, kCoresPerColumn = 4;

// Scalar fp32 operations per query row and block that the host aie_api cannot count (scalar code:
// the new maximum's two comparisons, m_old - m_new, s * ms + sum; compiler-rt's soft-float on the
// core), and the cycles of each: an assumption (a soft-float add, multiply or compare is some tens of
// scalar instructions). fa_finish's 1/s is a __divsf3 per row (as act_quant's, 60 cycles assumed).
constexpr uint64_t kSoftFloatOpsPerRowBlock = 6, kSoftFloatCycles = 20, kSoftDivideCycles = 60;


// One core's data memory as the design lays it out: the chunk's query rows (and, for the bfp16 program,
// their bfp16 operands), one block of K and V rows, the chunk's mask rows for the block, the slopes, the
// score scratch, its state and a partner's state (merging); the finished rows are written over the query
// rows. The design double-buffers K, V and the mask besides, and takes a partner's state into the K
// buffers once its own blocks are done (aie/flash_attn/README.md, budgets).
struct alignas(64) CoreBuffers {
    float    q[kFaMaxRows * kFaMaxHead];
    alignas(64) uint8_t qb[xdna_aie::fa_q_bfp16_bytes(kFaMaxRows, kFaMaxHead)];
    alignas(64) uint8_t k[kFaKvBlock * kFaMaxHead * 2];  // F16 rows, or Q8_0 rows (fa_q8_0_row_bytes apart)
    alignas(64) uint8_t v[kFaKvBlock * kFaMaxHead * 2];
    // Q8_0: the words holding each row's block scales, [block][row], as the DMA gathers them beside
    // the rows (fa_q8_0_scale_word), and the bfp16 program's scratch.
    alignas(64) uint32_t k_words[kFaMaxHead / 32 * kFaKvBlock];
    alignas(64) uint32_t v_words[kFaMaxHead / 32 * kFaKvBlock];
    alignas(64) uint8_t scratch[xdna_aie::fa_q8_0_scratch_bytes(kFaMaxHead)];
    uint16_t mask[kFaMaxRows * kFaKvBlock];
    float    slope[kFaMaxRows];
    float    scores[kFaMaxRows * kFaKvBlock];
    float    state[xdna_aie::fa_state_floats(kFaMaxRows, kFaMaxHead)];
    float    partner[xdna_aie::fa_state_floats(kFaMaxRows, kFaMaxHead)];
};

struct MeasuredCalls {
    CoreOps block, init, merge, finish, prepare;
};

// What each entry point issues for `rows` query rows of head dim d: measured once per process on a
// thread of its own, on a fresh state, so the block call takes the branch that rescales every row (a
// new maximum): the dearer path of the two, charged for every block.
const MeasuredCalls & calls(int32_t rows, int32_t d, bool mask, bool bfp16, bool q8_0) {
    static std::mutex mutex;
    static std::map<std::tuple<int32_t, int32_t, bool, bool, bool>, MeasuredCalls> measured;
    std::lock_guard<std::mutex> lock(mutex);
    const auto key = std::make_tuple(rows, d, mask, bfp16, q8_0);
    auto it = measured.find(key);
    if (it == measured.end()) {
        auto * b = static_cast<CoreBuffers *>(std::aligned_alloc(64, sizeof(CoreBuffers)));
        std::memset(b, 0, sizeof *b);
        MeasuredCalls m;
        m.init = measure_on_own_thread([&] { fa_init_f32(b->state, rows, d); });
        const uint16_t * mk = mask ? b->mask : nullptr;
        const auto * k16 = reinterpret_cast<const uint16_t *>(b->k);
        const auto * v16 = reinterpret_cast<const uint16_t *>(b->v);
        if (bfp16) m.prepare = measure_on_own_thread([&] { fa_prepare_q_bfp16(b->q, b->qb, rows, d); });
        if (bfp16 && q8_0) {
            m.block = measure_on_own_thread([&] {
                fa_block_q8_0_bfp16(b->q, b->qb, b->k, b->v, b->k_words, b->v_words, mk, b->slope, b->state, b->scores, b->scratch, rows, d,
                                    kFaKvBlock, 1.0f);
            });
        } else if (bfp16) {
            m.block = measure_on_own_thread(
                [&] { fa_block_f16_bfp16(b->q, b->qb, k16, v16, mk, b->slope, b->state, b->scores, rows, d, kFaKvBlock, 1.0f); });
        } else if (q8_0) {
            m.block = measure_on_own_thread([&] { fa_block_q8_0(b->q, b->k, b->v, mk, b->slope, b->state, b->scores, rows, d, kFaKvBlock, 1.0f); });
        } else {
            m.block = measure_on_own_thread([&] { fa_block_f16(b->q, k16, v16, mk, b->slope, b->state, b->scores, rows, d, kFaKvBlock, 1.0f); });
        }
        m.block.scalar += kSoftFloatOpsPerRowBlock * kSoftFloatCycles * static_cast<uint64_t>(rows);
        fa_init_f32(b->partner, rows, d);
        m.merge = measure_on_own_thread([&] { fa_merge_f32(b->state, b->partner, rows, d); });
        m.merge.scalar += kSoftFloatOpsPerRowBlock * kSoftFloatCycles * static_cast<uint64_t>(rows);
        m.finish = measure_on_own_thread([&] { fa_finish_f32(b->state, b->q, rows, d, d); });
        m.finish.scalar += kSoftDivideCycles * static_cast<uint64_t>(rows);
        std::free(b);
        it = measured.emplace(key, m).first;
    }
    return it->second;
}

struct Job {
    uint32_t inv;
    int64_t  seq, kv_head, row0, rows;
};

// Query row i of a group: token i / ratio, head kv_head * ratio + i % ratio (the heads of a token next
// to each other, so a chunk's rows share few mask rows).
struct QueryRow {
    int64_t token, head;
};
QueryRow query_row(const FlashAttnParams & p, int64_t kv_head, int64_t i) {
    const int64_t ratio = p.n_head / p.n_head_kv;
    return {i / ratio, kv_head * ratio + i % ratio};
}

// One part of the context ([block0, block1) of 32 rows) for the job's rows into `state`.
void run_part(const FlashAttnInvocation & f, const Job & j, int64_t block0, int64_t block1, CoreBuffers & b, float * state, bool twin) {
    const FlashAttnParams & p = f.p;
    const int32_t rows = static_cast<int32_t>(j.rows), d = static_cast<int32_t>(p.d);
    const int64_t kv_seq = j.seq / (p.n_seq / p.n_seq_kv);
    if (flash_attn_bfp16(f)) {
        // Each core of a split group turns the rows into its own bfp16 operands before its first block.
        const CoreModes found = sim_core_modes();
        fa_prepare_q_bfp16(b.q, b.qb, rows, d);
        sim_check_modes_restored("fa_prepare_q_bfp16", found);
    }
    const auto * kbase = static_cast<const uint8_t *>(f.k.host()) + j.kv_head * p.k_nb[2] + kv_seq * p.k_nb[3];
    const auto * vbase = static_cast<const uint8_t *>(f.v.host()) + j.kv_head * p.v_nb[2] + kv_seq * p.v_nb[3];
    fa_init_f32(state, rows, d);
    for (int64_t blk = block0; blk < block1; ++blk) {
        const int64_t j0 = blk * kFaKvBlock;
        const int32_t n = static_cast<int32_t>(std::min<int64_t>(kFaKvBlock, p.n_kv - j0));
        const int64_t rb = p.kv_row_bytes();
        for (int32_t r = 0; r < n; ++r) {
            std::memcpy(b.k + r * rb, kbase + (j0 + r) * p.k_nb[1], rb);
            std::memcpy(b.v + r * rb, vbase + (j0 + r) * p.v_nb[1], rb);
            // Q8_0: the scale words of the block's rows (rows past n keep the previous block's words).
            for (int64_t q8b = 0; p.kv_q8_0 && q8b < p.d / 32; ++q8b) {
                const int64_t w = 4 * xdna_aie::fa_q8_0_scale_word(static_cast<int>(q8b));
                std::memcpy(b.k_words + q8b * kFaKvBlock + r, kbase + (j0 + r) * p.k_nb[1] + w, 4);
                std::memcpy(b.v_words + q8b * kFaKvBlock + r, vbase + (j0 + r) * p.v_nb[1] + w, 4);
            }
        }
        if (p.has_mask) {
            for (int32_t r = 0; r < rows; ++r) {
                const QueryRow qr = query_row(p, j.kv_head, j.row0 + r);
                const auto * m = static_cast<const uint8_t *>(f.mask.host()) + qr.token * p.mask_nb[1] +
                                 (qr.head % p.mask_heads) * p.mask_nb[2] + (j.seq % p.mask_seqs) * p.mask_nb[3];
                std::memcpy(b.mask + r * kFaKvBlock, m + j0 * 2, n * 2);
            }
        }
        const CoreModes found = sim_core_modes();
        const uint16_t * mk = p.has_mask ? b.mask : nullptr;
        const auto * k16 = reinterpret_cast<const uint16_t *>(b.k);
        const auto * v16 = reinterpret_cast<const uint16_t *>(b.v);
        if (flash_attn_bfp16(f) && p.kv_q8_0) {
            fa_block_q8_0_bfp16(b.q, b.qb, b.k, b.v, b.k_words, b.v_words, mk, b.slope, state, b.scores, b.scratch, rows, d, n, p.scale);
        } else if (flash_attn_bfp16(f)) {
            // The twin refuses (changing nothing) the blocks the kernel runs on its fp32 program.
            if (!twin || !twin_fa_block_f16_bfp16(b.q, b.qb, k16, v16, mk, b.slope, state, b.scores, rows, d, n, p.scale)) {
                fa_block_f16_bfp16(b.q, b.qb, k16, v16, mk, b.slope, state, b.scores, rows, d, n, p.scale);
            }
        } else if (p.kv_q8_0) {
            fa_block_q8_0(b.q, b.k, b.v, mk, b.slope, state, b.scores, rows, d, n, p.scale);
        } else {
            fa_block_f16(b.q, k16, v16, mk, b.slope, state, b.scores, rows, d, n, p.scale);
        }
        sim_check_modes_restored(f.variant, found);
    }
}

}  // namespace

FlashAttnSplit flash_attn_split(const FlashAttnParams & p, int64_t cores) {
    FlashAttnSplit s;
    cores = std::max<int64_t>(1, std::min<int64_t>(cores, kCores));
    const int64_t group_rows = std::max<int64_t>(1, p.group_rows());
    s.chunks = (group_rows + kFaMaxRows - 1) / kFaMaxRows;
    s.chunk_rows = (group_rows + s.chunks - 1) / s.chunks;  // chunks of equal size, at most 16 rows
    s.groups = p.n_seq * p.n_head_kv * s.chunks;
    s.blocks = (p.n_kv + kFaKvBlock - 1) / kFaKvBlock;
    // Fewer groups than cores: each group's context in parts (attention_parts, the design's rule).
    s.parts = attention_parts(s.groups, s.blocks, cores);
    return s;
}

bool flash_attn_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::flash_attn && key.design != nullptr && std::strcmp(key.design, kFlashAttnDesign) == 0 &&
           key.variant != nullptr && std::strcmp(flash_attn_key(key.variant).variant, key.variant) == 0;
}

ModelShape flash_attn_model_shape(const Invocation & inv) { return flash_attn_model_shape_on(inv, kCores); }

ModelShape flash_attn_model_shape_on(const Invocation & inv, int64_t max_cores) {
    const FlashAttnInvocation f = flash_attn_of(inv);
    const FlashAttnParams & p = f.p;
    max_cores = std::max<int64_t>(1, std::min<int64_t>(max_cores, kCores));
    const FlashAttnSplit s = flash_attn_split(p, max_cores);
    ModelShape m;
    m.kind = KernelKind::flash_attn;
    m.weight_type = GGML_TYPE_COUNT;
    const int64_t tasks = s.groups * s.parts;
    const int64_t cores = std::max<int64_t>(1, std::min<int64_t>(tasks, max_cores));
    m.kind_cores = static_cast<int>(cores);
    m.kind_columns = static_cast<int>(std::min<int64_t>(kColumns, (cores + kCoresPerColumn - 1) / kCoresPerColumn));
    // The busiest core: its tasks (whole groups when parts == 1, one part of one group otherwise), each
    // a part's blocks at the largest chunk, and as the merging core of a split group the other parts'
    // states merged and the rows finished.
    const bool bfp16 = flash_attn_bfp16(inv.key);
    const MeasuredCalls & c = calls(static_cast<int32_t>(s.chunk_rows), static_cast<int32_t>(p.d), p.has_mask, bfp16, p.kv_q8_0);
    const double tasks_per_core = static_cast<double>((tasks + cores - 1) / cores);
    const double blocks_per_part = static_cast<double>((s.blocks + s.parts - 1) / s.parts);
    m.core_calls[0] = {c.block, tasks_per_core * blocks_per_part};
    m.core_calls[1] = {c.init, tasks_per_core};
    m.core_calls[2] = {c.merge, static_cast<double>(s.parts - 1)};
    m.core_calls[3] = {c.finish, s.parts > 1 ? 1.0 : tasks_per_core};
    m.core_calls[4] = {c.prepare, bfp16 ? tasks_per_core : 0.0};  // every core of a split group prepares its rows
    m.n_core_calls = 5;
    // DRAM: q and the output once; each chunk's part reads its K/V rows (a group's chunks read them once
    // each); each chunk reads the mask rows of its distinct (token, mask head) pairs once, the memory
    // tile repeating a row for the query rows that share it.
    const double rows = static_cast<double>(p.n_seq * p.n_head * p.n_tokens);
    const double row_bytes = static_cast<double>(p.d) * sizeof(float);
    const int64_t ratio = p.n_head / p.n_head_kv;
    const double kv_bytes = static_cast<double>(p.n_kv) * static_cast<double>(p.kv_row_bytes()) * 2;
    m.weight_bytes = kv_bytes * static_cast<double>(s.groups);
    if (p.has_mask) {
        const int64_t heads_per_mask_row = p.mask_heads == 1 ? ratio : 1;  // rows of a token sharing one mask row
        const double mask_rows = std::ceil(rows / static_cast<double>(heads_per_mask_row));
        m.weight_bytes += mask_rows * static_cast<double>(p.n_kv) * 2;
    }
    m.activation_bytes = rows * row_bytes;
    m.out_bytes = rows * row_bytes;
    // On the design's whole array its stream says what moves: every kv object whole (the filler of q and
    // state steps and idle cores), every step's 32 K and V rows, the partial states out and back, the
    // discarded bytes of the drains. (A co-resident design's attention cores are another design's.)
    // On whole columns (a co-resident design's attention columns too) its stream says what moves and what
    // the busiest core runs: its rounds of block steps (with the mask's profile, only the blocks up to the
    // last visible one: from the mask's values in a run, from a modelled causal mask in a model), each
    // round's init, prepare and finish, and on a split task's merging core the other parts' merges.
    std::string err;
    if (max_cores % kCoresPerColumn == 0) {
        const int columns = static_cast<int>(max_cores / kCoresPerColumn);
        if (const auto seq = flash_attn_sequence_of(inv, err, "", columns == kColumns ? 0 : columns)) {
            const RowsTraffic & t = seq->traffic;
            m.kind_columns = t.columns_used;
            m.kind_cores = static_cast<int>(std::min<int64_t>(kCores, static_cast<int64_t>(t.columns_used) * kCoresPerColumn));
            m.activation_bytes = static_cast<double>(t.of("q") + t.of("slopes"));
            m.weight_bytes = static_cast<double>(t.read) - m.activation_bytes;
            m.out_bytes = static_cast<double>(t.written);
            const MeasuredCalls & sc = calls(static_cast<int32_t>(seq->chunk_rows), static_cast<int32_t>(p.d), p.has_mask, bfp16, p.kv_q8_0);
            const double rounds = static_cast<double>(seq->rounds);
            // Every round's block phase lasts as long as its longest column (the phases sync every column).
            m.core_calls[0] = {sc.block, static_cast<double>(seq->lockstep_blocks)};
            m.core_calls[1] = {sc.init, rounds};
            m.core_calls[2] = {sc.merge, rounds * static_cast<double>(seq->parts - 1)};
            m.core_calls[3] = {sc.finish, rounds};
            m.core_calls[4] = {sc.prepare, bfp16 ? rounds : 0.0};
        }
    }
    return m;
}

Status sim_run_flash_attns(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec) {
    const bool twin = exec == SimExec::twin && flash_attn_twin_pays();
    std::vector<FlashAttnInvocation> views;
    std::vector<FlashAttnSplit> splits;
    std::vector<Job> jobs;
    for (const Invocation & i : invs) {
        if (!flash_attn_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's flash_attn engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const FlashAttnInvocation f = flash_attn_of(i);
        const FlashAttnParams & p = f.p;
        if (flash_attn_q8_0(i.key) != p.kv_q8_0) {
            return Status::error(std::string("flash_attn: program ") + i.key.variant + " handed a KV cache of " + (p.kv_q8_0 ? "Q8_0" : "F16"));
        }
        if (!xdna_aie::fa_head_fits(static_cast<int>(p.d)) || (p.kv_q8_0 && !xdna_aie::fa_q8_0_head_fits(static_cast<int>(p.d))) || p.n_head_kv < 1 || p.n_head % p.n_head_kv != 0 ||
            p.n_seq_kv < 1 || p.n_seq % p.n_seq_kv != 0 || p.n_kv < 1 || (p.has_mask && (p.mask_heads < 1 || p.mask_seqs < 1))) {
            return Status::error("flash_attn: head dim " + std::to_string(p.d) + ", " + std::to_string(p.n_head) + "/" +
                                 std::to_string(p.n_head_kv) + " heads and " + std::to_string(p.n_kv) +
                                 " KV rows are not a shape the design takes");
        }
        const FlashAttnSplit s = flash_attn_split(p);
        const uint32_t v = static_cast<uint32_t>(views.size());
        for (int64_t seq = 0; seq < p.n_seq; ++seq) {
            for (int64_t g = 0; g < p.n_head_kv; ++g) {
                for (int64_t c = 0; c < s.chunks; ++c) {
                    const int64_t row0 = c * s.chunk_rows;
                    const int64_t rows = std::min<int64_t>(s.chunk_rows, p.group_rows() - row0);
                    if (rows > 0) jobs.push_back({v, seq, g, row0, rows});
                }
            }
        }
        views.push_back(f);
        splits.push_back(s);
    }
    const CoreFaultWatch watch;
    pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t ji, int) {
        thread_local CoreBuffers b;
        const Job & j = jobs[ji];
        const FlashAttnInvocation & f = views[j.inv];
        const FlashAttnParams & p = f.p;
        const FlashAttnSplit & s = splits[j.inv];
        const int32_t d = static_cast<int32_t>(p.d), rows = static_cast<int32_t>(j.rows);
        for (int32_t r = 0; r < rows; ++r) {
            const QueryRow qr = query_row(p, j.kv_head, j.row0 + r);
            const auto * q = static_cast<const uint8_t *>(f.q.host()) + qr.token * p.q_nb[1] + qr.head * p.q_nb[2] + j.seq * p.q_nb[3];
            std::memcpy(b.q + r * d, q, d * sizeof(float));
            b.slope[r] = flash_attn_slope(p, qr.head);
        }
        // Part 0 on the merging core; parts 1.. on the other cores of its column, their states merged in
        // order. The first blocks % parts parts take one block more.
        int64_t next = 0;
        for (int64_t part = 0; part < s.parts; ++part) {
            const int64_t n = s.blocks / s.parts + (part < s.blocks % s.parts ? 1 : 0);
            run_part(f, j, next, next + n, b, part == 0 ? b.state : b.partner, twin);
            next += n;
            if (part == 0) continue;
            const CoreModes found = sim_core_modes();
            fa_merge_f32(b.state, b.partner, rows, d);
            sim_check_modes_restored("fa_merge_f32", found);
        }
        const CoreModes found = sim_core_modes();
        fa_finish_f32(b.state, b.q, rows, d, d);  // over the query rows, no longer read
        sim_check_modes_restored("fa_finish_f32", found);
        for (int32_t r = 0; r < rows; ++r) {
            const QueryRow qr = query_row(p, j.kv_head, j.row0 + r);
            auto * out = static_cast<uint8_t *>(f.out.host()) + qr.head * p.out_nb[1] + qr.token * p.out_nb[2] + j.seq * p.out_nb[3];
            std::memcpy(out, b.q + r * d, d * sizeof(float));
        }
    });
    std::string fault;
    return watch.failed(fault) ? Status::error(fault) : Status::success();
}

}  // namespace xdna
