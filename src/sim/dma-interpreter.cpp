#include "sim/dma-interpreter.h"

#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "runtime/matmul-sequence.h"
#include "sim/core-locks.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <unordered_map>

namespace xdna {

namespace {

constexpr uint32_t kShimBdBase = 0x1D000;  // shim BD n at 0x1D000 + 0x20 n (control/shim-bd.cpp)
constexpr uint32_t kShimBdEnd = kShimBdBase + control::kShimBdCount * 0x20;

// Device address of argument i: far apart, so a BD's base address names its argument unambiguously
// (the firmware patches real host-mapped addresses; the layout of this map is ours).
uint64_t arg_base(size_t i) { return (static_cast<uint64_t>(i) + 1) << 40; }

// A 64-byte aligned buffer: the kernels' vector loads expect the alignment of core memory.
struct AlignedBytes {
    std::unique_ptr<uint8_t[]> raw;
    uint8_t * data = nullptr;
    void resize(size_t n) {
        raw.reset(new uint8_t[n + 64]());
        data = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(raw.get()) + 63) & ~uintptr_t(63));
    }
};

// An object FIFO with the ordering its locks enforce: producer p may write object prod[p] when it is
// less than `depth` ahead of the slowest consumer; consumer c may read object cons[c] once every
// producer has written it (a join has one producer per part, a split one consumer per part).
struct Fifo {
    size_t obj_bytes = 0;
    int    depth = 0;
    std::vector<AlignedBytes> slots;
    std::vector<uint64_t> prod, cons;
    size_t fill_off = 0;   // streamed producer: bytes of object prod[0] written so far
    size_t drain_off = 0;  // streamed consumer: bytes of object cons[0] read so far

    void init(size_t bytes, int d, int producers, int consumers) {
        obj_bytes = bytes;
        depth = d;
        slots.resize(d);
        for (AlignedBytes & s : slots) {
            s.resize(bytes);
        }
        prod.assign(producers, 0);
        cons.assign(consumers, 0);
    }
    uint64_t min_prod() const { return *std::min_element(prod.begin(), prod.end()); }
    uint64_t min_cons() const { return *std::min_element(cons.begin(), cons.end()); }
    bool can_produce(int p) const { return prod[p] - min_cons() < static_cast<uint64_t>(depth); }
    bool can_consume(int c) const { return min_prod() > cons[c]; }
    uint8_t * slot(uint64_t seq) { return slots[seq % depth].data; }
};

// A BD's access pattern being walked, in words: for it, for i2, for i1, for i0.
struct Walker {
    uint8_t * base = nullptr;
    uint64_t  size[4] = {1, 1, 1, 1};    // d0, d1, d2, iterations
    uint64_t  stride[4] = {1, 0, 0, 0};  // words
    uint64_t  idx[4] = {0, 0, 0, 0};
    bool      done = true;

    uint8_t * here() const {
        uint64_t w = 0;
        for (int i = 0; i < 4; ++i) {
            w += idx[i] * stride[i];
        }
        return base + 4 * w;
    }
    // Words left in the current contiguous run.
    uint64_t run_words() const { return stride[0] == 1 ? size[0] - idx[0] : 1; }
    void advance(uint64_t words) {
        idx[0] += words;
        for (int i = 0; i < 3 && idx[i] == size[i]; ++i) {
            idx[i] = 0;
            ++idx[i + 1];
        }
        done = idx[3] == size[3];
    }
};

struct Task {
    uint32_t              first_bd = 0;
    uint32_t              repeats_left = 0;
    bool                  token = false;
    std::vector<uint32_t> chain;  // BD ids it uses (busy until it completes)
};

struct Column;

struct Channel {
    const char *     name = "";
    bool             mm2s = false;
    std::deque<Task> queue;
    bool             active = false;  // the front task is running
    uint32_t         bd = 0;           // BD being walked
    Walker           walk;
    uint64_t         tokens_done = 0, tokens_awaited = 0;
};

// A core's progress through the pass it is on; its barrier lock, RTP words and pass outlive the run
// (core-locks.h: `side`, the loaded design's).
struct Core {
    CoreSide *        side = nullptr;
    CoreProgram::Kernel kernel = nullptr;
    CoreProgram::PartKernel part_kernel = nullptr;  // where A comes in K parts
    uint32_t          out_done = 0, k_done = 0;
    int32_t           a_part = 0;  // the K part of the current K tile whose A object comes next
    bool              in_tile = false;
    bool running() const { return side->phase == CoreSide::Phase::running; }
};

struct Interp;

struct Column {
    Interp *             in = nullptr;
    int                  index = 0;
    std::unordered_map<uint32_t, uint32_t> shim_regs;  // shim tile registers by tile-local offset
    int                  bd_busy[control::kShimBdCount] = {};
    Channel              w_ch, a_ch, c_ch;
    Fifo                 w_l2, a_l2, c_l2;
    std::vector<Fifo>    w_l1, a_l1, c_l1;
    std::vector<Core>    cores;
    std::vector<Channel *> pending_syncs;
    std::string          error;
    DmaRunStats          stats;

    bool fail(std::string e) {
        if (error.empty()) {
            error = "column " + std::to_string(index) + ": " + std::move(e);
        }
        return false;
    }
    std::array<uint32_t, control::kShimBdWords> bd_words(uint32_t id) {
        std::array<uint32_t, control::kShimBdWords> w{};
        for (uint32_t i = 0; i < control::kShimBdWords; ++i) {
            auto it = shim_regs.find(kShimBdBase + id * 0x20 + 4 * i);
            w[i] = it == shim_regs.end() ? 0 : it->second;
        }
        return w;
    }
    bool load_bd(Channel & ch, uint32_t id);
    bool start_task(Channel & ch);
    bool finish_bd(Channel & ch);
    size_t pull(Channel & ch, uint8_t * dst, size_t want);
    size_t push(Channel & ch, const uint8_t * src, size_t n);
    bool core_step(int r, bool & progress);
    bool next_pass(int r, bool & progress);
    bool step(bool & progress);
    // One step of this column, or of the whole array when the columns share a FIFO (Interp::step_all).
    bool advance(bool & progress);
    bool run_until_token(Channel & ch);
};

struct Interp {
    const DesignDescription & d;
    const std::vector<DmaArgument> & args;
    const CoreProgram & program;
    LoadedDesign & loaded;
    FamilyBuffers fb;
    int tile_n = 0;
    const LayoutDesc * layout = nullptr;
    bool w_split = true, a_split = false;  // the layout's memory-tile links: split over the cores, or broadcast
    // A shared by the columns (LayoutDesc::a_shared): column 0's shim and memory tile hold the array's one
    // A FIFO, whose part r goes to core row r of every column. The columns are coupled then: a part
    // moves only when that core row of every column can take it, so they run as one.
    bool a_shared = false;
    // ... with one A FIFO per core row instead (LayoutDesc::a_rows, n_rows): core row r's lives in column
    // r's shim and memory tile, its objects broadcast along the row.
    bool a_rows = false;
    std::vector<std::unique_ptr<Column>> cols;
    Interp(const DesignDescription & dd, const std::vector<DmaArgument> & a, const CoreProgram & p, LoadedDesign & l)
        : d(dd), args(a), program(p), loaded(l) {}

    // Part r of column 0's memory-tile A object (n_shared), or column r's whole object (n_rows), to core
    // row r of every column: one stream per core row, fanned out along the row, so it moves when all of
    // them have a free object.
    void share_a(bool & progress) {
        const size_t rows = cols[0]->a_l1.size();
        const size_t part = rows == 0 ? 0 : cols[0]->a_l1[0].obj_bytes;
        for (size_t r = 0; r < rows; ++r) {
            Fifo & l2 = a_rows ? cols[r]->a_l2 : cols[0]->a_l2;
            const int reader = a_rows ? 0 : static_cast<int>(r);  // the memory-tile channel that sends it
            const size_t offset = a_rows ? 0 : r * part;
            auto free_row = [&] {
                return std::all_of(cols.begin(), cols.end(), [&](const auto & c) { return c->a_l1[r].can_produce(0); });
            };
            while (l2.can_consume(reader) && free_row()) {
                for (auto & c : cols) {
                    Fifo & f = c->a_l1[r];
                    std::memcpy(f.slot(f.prod[0]), l2.slot(l2.cons[reader]) + offset, part);
                    ++f.prod[0];
                }
                ++l2.cons[reader];
                progress = true;
            }
        }
    }
    // Every column one step, then the shared A; false when a column failed.
    bool step_all(bool & progress) {
        for (auto & c : cols) {
            if (!c->step(progress)) {
                return false;
            }
        }
        share_a(progress);
        return true;
    }
};

std::string core_name(int col, int row) { return "core (" + std::to_string(col) + ", " + std::to_string(row) + ")"; }

// A core that has just passed its barrier starts the pass with the RTP words it read: the layout must be
// the core program's and the contract one of its kernels. Empty, or why not.
std::string start_pass(const Interp & in, Core & k) {
    const CoreParams & p = k.side->params;
    if (p.version != in.d.rtp_layout_version) {
        return "RTP layout version " + std::to_string(p.version) + ", the core program reads " + std::to_string(in.d.rtp_layout_version);
    }
    if (p.contract >= in.program.kernels.size() || in.program.kernels[p.contract] == nullptr) {
        return "contract RTP " + std::to_string(p.contract) + " selects no kernel of this family";
    }
    k.kernel = in.program.kernels[p.contract];
    k.part_kernel = nullptr;
    if (in.fb.a_k_parts > 1) {
        if (p.contract >= in.program.part_kernels.size() || in.program.part_kernels[p.contract] == nullptr) {
            return "contract RTP " + std::to_string(p.contract) + " selects no kernel of this family that takes A in " +
                   std::to_string(in.fb.a_k_parts) + " K parts";
        }
        k.part_kernel = in.program.part_kernels[p.contract];
    }
    k.out_done = k.k_done = 0;
    k.a_part = 0;
    k.in_tile = false;
    return "";
}

bool Column::load_bd(Channel & ch, uint32_t id) {
    const std::string what = "shim BD " + std::to_string(id) + " (" + ch.name + ")";
    const control::ShimBd bd = control::decode_shim_bd(bd_words(id));
    if (!bd.valid_bd) {
        return fail(what + " is not valid (never written, or written without valid_bd)");
    }
    if (auto why = control::check_shim_bd(bd)) {
        return fail(what + ": " + *why);
    }
    if (bd.lock_acq_enable || bd.lock_rel_value != 0 || bd.enable_packet || bd.iteration_current != 0) {
        return fail(what + " uses locks, packets or a started iteration: not part of this design");
    }
    Walker w;
    if (bd.d0_wrap == 0) {  // linear: buffer_length contiguous words
        w.size[0] = bd.buffer_length;
    } else {
        w.size[0] = bd.d0_wrap;
        w.size[1] = bd.d1_wrap == 0 ? 1 : bd.d1_wrap;
        const uint64_t plane = w.size[0] * w.size[1];
        if (bd.buffer_length % plane != 0) {
            return fail(what + ": buffer length " + std::to_string(bd.buffer_length) + " words is not a whole number of d0 x d1 = " +
                        std::to_string(plane));
        }
        w.size[2] = bd.buffer_length / plane;
        w.stride[0] = bd.d0_stepsize + 1ull;
        w.stride[1] = bd.d1_stepsize + 1ull;
        w.stride[2] = bd.d2_stepsize + 1ull;
    }
    w.size[3] = bd.iteration_wrap + 1ull;
    w.stride[3] = bd.iteration_stepsize + 1ull;
    // Which argument: the patched base address lies in exactly one argument's device range.
    const uint64_t addr = bd.base_address;
    size_t arg = in->args.size();
    for (size_t i = 0; i < in->args.size(); ++i) {
        if (addr >= arg_base(i) && addr < arg_base(i) + (1ull << 40)) {
            arg = i;
        }
    }
    if (arg == in->args.size()) {
        return fail(what + ": base address 0x" + [&] {
            char b[32];
            std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(addr));
            return std::string(b);
        }() + " is in no kernel argument (missing address patch?)");
    }
    const uint64_t off = addr - arg_base(arg);
    uint64_t last = 0;
    for (int i = 0; i < 4; ++i) {
        last += (w.size[i] - 1) * w.stride[i];
    }
    const uint64_t end = off + 4 * (last + 1);
    if (end > in->args[arg].bytes) {
        return fail(what + " " + (ch.mm2s ? "reads" : "writes") + " bytes [" + std::to_string(off) + ", " + std::to_string(end) +
                    ") of argument " + std::to_string(arg) + ", which holds " + std::to_string(in->args[arg].bytes) + " bytes");
    }
    w.base = in->args[arg].data + off;
    w.done = false;
    ch.walk = w;
    ch.bd = id;
    ++stats.bds_run;
    return true;
}

bool Column::start_task(Channel & ch) {
    if (ch.active) {
        return true;
    }
    if (ch.queue.empty()) {
        return false;
    }
    ch.active = true;
    return load_bd(ch, ch.queue.front().first_bd);
}

// The walked BD is exhausted: follow the chain, repeat the task, or complete it.
bool Column::finish_bd(Channel & ch) {
    const control::ShimBd bd = control::decode_shim_bd(bd_words(ch.bd));
    if (bd.use_next_bd) {
        return load_bd(ch, bd.next_bd);
    }
    Task & t = ch.queue.front();
    if (t.repeats_left > 0) {
        --t.repeats_left;
        return load_bd(ch, t.first_bd);
    }
    for (uint32_t id : t.chain) {
        --bd_busy[id];
    }
    if (t.token) {
        ++ch.tokens_done;
    }
    ch.queue.pop_front();
    ch.active = false;
    return true;
}

// MM2S: up to `want` bytes of the channel's stream (fewer when its queue runs dry).
size_t Column::pull(Channel & ch, uint8_t * dst, size_t want) {
    size_t got = 0;
    while (got < want && error.empty()) {
        if (!ch.active && !start_task(ch)) {
            break;
        }
        if (!error.empty()) {
            break;
        }
        const size_t n = std::min<size_t>(want - got, ch.walk.run_words() * 4);
        if (n % 4 != 0) {
            fail(std::string(ch.name) + ": the receiving object is not a whole number of words");
            break;
        }
        std::memcpy(dst + got, ch.walk.here(), n);
        ch.walk.advance(n / 4);
        got += n;
        if (ch.walk.done && !finish_bd(ch)) {
            break;
        }
    }
    stats.mm2s_bytes += got;
    return got;
}

// S2MM: writes up to `n` bytes of the stream into the channel's BDs (fewer when its queue runs dry).
size_t Column::push(Channel & ch, const uint8_t * src, size_t n) {
    size_t put = 0;
    while (put < n && error.empty()) {
        if (!ch.active && !start_task(ch)) {
            break;
        }
        if (!error.empty()) {
            break;
        }
        const size_t k = std::min<size_t>(n - put, ch.walk.run_words() * 4);
        std::memcpy(ch.walk.here(), src + put, k);
        ch.walk.advance(k / 4);
        put += k;
        if (ch.walk.done && !finish_bd(ch)) {
            break;
        }
    }
    stats.s2mm_bytes += put;
    return put;
}

// One core program, as far as its FIFOs let it go.
bool Column::core_step(int r, bool & progress) {
    Core & c = cores[r];
    if (!c.running()) {
        return true;  // at its barrier
    }
    Fifo & cf = c_l1[r];
    Fifo & wf = w_l1[r];
    Fifo & af = a_l1[r];
    while (c.out_done < c.side->params.out_tiles) {
        if (!c.in_tile) {
            if (!cf.can_produce(0)) {
                return true;
            }
            if (in->program.reset != nullptr) {
                in->program.reset();  // as the kernels mode: every output tile starts in the reset modes
            }
            in->program.zero(reinterpret_cast<float *>(cf.slot(cf.prod[0])));
            c.in_tile = true;
            c.k_done = 0;
            c.a_part = 0;
            progress = true;
        }
        const int parts = in->fb.a_k_parts;
        while (c.k_done < c.side->params.k_tiles && wf.can_consume(0) && af.can_consume(0)) {
            float * ct = reinterpret_cast<float *>(cf.slot(cf.prod[0]));
            if (parts == 1) {
                c.kernel(wf.slot(wf.cons[0]), af.slot(af.cons[0]), ct);
            } else {
                // A in K parts: the W object stays acquired over its K tile's A objects.
                c.part_kernel(wf.slot(wf.cons[0]), af.slot(af.cons[0]), ct, c.a_part);
            }
            ++af.cons[0];
            ++stats.kernel_calls;
            progress = true;
            if (++c.a_part < parts) {
                continue;
            }
            c.a_part = 0;
            ++wf.cons[0];
            ++c.k_done;
        }
        if (c.k_done < c.side->params.k_tiles) {
            return true;
        }
        ++cf.prod[0];
        c.in_tile = false;
        ++c.out_done;
        progress = true;
    }
    // The pass is done; through the barrier again at once, the core goes on with the next pass (a core
    // passes at most as often as its lock lets it: core-locks.h stops one that would spin).
    return next_pass(r, progress) ? core_step(r, progress) : error.empty();
}

// Core r finished its pass: its program loops back to the barrier (core-locks.h), and passes it again at
// once if the lock lets it. True when it did.
bool Column::next_pass(int r, bool & progress) {
    Core & c = cores[r];
    const std::string core = core_name(index, in->d.first_core_row + r);
    std::string err;
    if (!barrier_pass_done(in->d, *c.side, c.out_done > 0, err)) {
        return err.empty() ? false : fail(core + ": " + err);
    }
    if (std::string why = start_pass(*in, c); !why.empty()) {
        return fail(core + " passed its barrier again at once: " + why);
    }
    progress = true;
    return true;
}

// Every actor of the column once, as far as it can go.
bool Column::step(bool & progress) {
    const int rows = static_cast<int>(cores.size());
    // Shim MM2S -> memory tile.
    for (auto [ch, f] : {std::pair<Channel *, Fifo *>{&w_ch, &w_l2}, {&a_ch, &a_l2}}) {
        while (f->can_produce(0) && error.empty()) {
            const size_t got = pull(*ch, f->slot(f->prod[0]) + f->fill_off, f->obj_bytes - f->fill_off);
            f->fill_off += got;
            if (got > 0) {
                progress = true;
            }
            if (f->fill_off < f->obj_bytes) {
                break;
            }
            f->fill_off = 0;
            ++f->prod[0];
        }
    }
    // Memory tile -> cores, as the layout links each operand: a split sends part r of each object to
    // core r on its own MM2S channel; a broadcast is one stream to every core, which moves only when all
    // of them can take the object.
    auto distribute = [&](Fifo & l2, std::vector<Fifo> & l1, bool split) {
        if (split) {
            const size_t part = l1.empty() ? 0 : l1[0].obj_bytes;
            for (int r = 0; r < rows; ++r) {
                while (l2.can_consume(r) && l1[r].can_produce(0)) {
                    std::memcpy(l1[r].slot(l1[r].prod[0]), l2.slot(l2.cons[r]) + r * part, part);
                    ++l1[r].prod[0];
                    ++l2.cons[r];
                    progress = true;
                }
            }
            return;
        }
        while (l2.can_consume(0) && std::all_of(l1.begin(), l1.end(), [](const Fifo & f) { return f.can_produce(0); })) {
            for (Fifo & f : l1) {
                std::memcpy(f.slot(f.prod[0]), l2.slot(l2.cons[0]), f.obj_bytes);
                ++f.prod[0];
            }
            ++l2.cons[0];
            progress = true;
        }
    };
    distribute(w_l2, w_l1, in->w_split);
    if (!in->a_shared) {
        distribute(a_l2, a_l1, in->a_split);  // else Interp::share_a, from column 0's memory tile
    }
    for (int r = 0; r < rows; ++r) {
        core_step(r, progress);
    }
    // Join: core r's C tile becomes part r of the memory-tile object.
    const size_t c_part = c_l1.empty() ? 0 : c_l1[0].obj_bytes;
    for (int r = 0; r < rows; ++r) {
        while (c_l1[r].can_consume(0) && c_l2.can_produce(r)) {
            std::memcpy(c_l2.slot(c_l2.prod[r]) + r * c_part, c_l1[r].slot(c_l1[r].cons[0]), c_part);
            ++c_l2.prod[r];
            ++c_l1[r].cons[0];
            progress = true;
        }
    }
    // Memory tile -> shim S2MM.
    while (c_l2.can_consume(0) && error.empty()) {
        const size_t put = push(c_ch, c_l2.slot(c_l2.cons[0]) + c_l2.drain_off, c_l2.obj_bytes - c_l2.drain_off);
        c_l2.drain_off += put;
        if (put > 0) {
            progress = true;
        }
        if (c_l2.drain_off < c_l2.obj_bytes) {
            break;
        }
        c_l2.drain_off = 0;
        ++c_l2.cons[0];
    }
    return error.empty();
}

std::string state_of(Column & c) {
    std::string s = "queued tasks W " + std::to_string(c.w_ch.queue.size()) + ", A " + std::to_string(c.a_ch.queue.size()) +
                    ", C " + std::to_string(c.c_ch.queue.size()) + "; cores (out tiles done/expected):";
    std::string barriers;
    for (size_t r = 0; r < c.cores.size(); ++r) {
        const Core & k = c.cores[r];
        s += " " + (k.running() ? std::to_string(k.out_done) + "/" + std::to_string(k.side->params.out_tiles) : std::string("at its barrier"));
        if (!k.running()) {
            barriers += "; " + core_name(c.index, c.in->d.first_core_row + static_cast<int>(r)) + " " + describe_core(c.in->d, *k.side);
        }
    }
    return s + barriers;
}

bool Column::advance(bool & progress) {
    return in->a_shared ? in->step_all(progress) : step(progress);
}

// A sync: run the column (the array, when the columns share a FIFO) until the channel has a completion
// token nobody has awaited yet.
bool Column::run_until_token(Channel & ch) {
    while (error.empty()) {
        if (ch.tokens_done > ch.tokens_awaited) {
            ++ch.tokens_awaited;
            return true;
        }
        bool progress = false;
        if (!advance(progress)) {
            return false;
        }
        if (!progress) {
            return fail(std::string("sync on ") + ch.name + " can never complete (" + state_of(*this) + ")");
        }
    }
    return false;
}

struct Runner {
    Interp &   in;
    ThreadPool * pool;
    std::string error;

    Column * column_of(uint32_t col, size_t op_index, const char * what) {
        if (col >= in.cols.size()) {
            error = "op " + std::to_string(op_index) + ": " + what + " to column " + std::to_string(col) + ", the array has " +
                    std::to_string(in.cols.size());
            return nullptr;
        }
        return in.cols[col].get();
    }

    // Runs every column's pending syncs (columns side by side), then reports the first error.
    bool flush() {
        std::vector<Column *> todo;
        for (auto & c : in.cols) {
            if (!c->pending_syncs.empty()) {
                todo.push_back(c.get());
            }
        }
        auto run = [&](int64_t i, int) {
            Column & c = *todo[i];
            for (Channel * ch : c.pending_syncs) {
                if (!c.run_until_token(*ch)) {
                    break;
                }
            }
            c.pending_syncs.clear();
        };
        // Columns that share a FIFO run as one (Interp::step_all), so not side by side.
        if (pool != nullptr && todo.size() > 1 && !in.a_shared) {
            pool->parallel_for(static_cast<int64_t>(todo.size()), run);
        } else {
            for (size_t i = 0; i < todo.size(); ++i) {
                run(static_cast<int64_t>(i), 0);
            }
        }
        for (auto & c : in.cols) {
            if (!c->error.empty()) {
                error = c->error;
                return false;
            }
        }
        return true;
    }

    bool write(uint32_t address, uint32_t value, size_t op_index);
    bool patch(const control::AddressPatch & p, size_t op_index);
    bool sync(const control::Sync & s, size_t op_index);
    bool read(uint32_t address, uint32_t & value);
};

std::string hex(uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", v);
    return b;
}

bool Runner::read(uint32_t address, uint32_t & value) {
    const uint32_t col = address >> 25, row = (address >> 20) & 0x1F, off = address & 0xFFFFF;
    value = 0;
    if (col >= in.cols.size()) {
        return false;
    }
    Column & c = *in.cols[col];
    if (row == static_cast<uint32_t>(in.d.shim_row)) {
        auto it = c.shim_regs.find(off);
        value = it == c.shim_regs.end() ? 0 : it->second;
    }
    return true;
}

bool Runner::write(uint32_t address, uint32_t value, size_t op_index) {
    const uint32_t col = address >> 25, row = (address >> 20) & 0x1F, off = address & 0xFFFFF;
    Column * c = column_of(col, op_index, "a write");
    if (c == nullptr) {
        return false;
    }
    const std::string at = "op " + std::to_string(op_index) + " (write " + hex(address) + "): ";
    if (row == static_cast<uint32_t>(in.d.shim_row)) {
        if (off >= kShimBdBase && off < kShimBdEnd) {
            const uint32_t id = (off - kShimBdBase) / 0x20;
            if (c->bd_busy[id] > 0) {
                error = at + "shim BD " + std::to_string(id) + " of column " + std::to_string(col) +
                        " is rewritten while a queued task still uses it";
                return false;
            }
            c->shim_regs[off] = value;
            return true;
        }
        for (uint32_t dir = 0; dir < 2; ++dir) {
            for (uint32_t n = 0; n < control::kShimChannelsPerDir; ++n) {
                if (address != control::shim_queue_address(col, dir, n)) {
                    continue;
                }
                Channel * ch = nullptr;
                for (Channel * k : {&c->w_ch, &c->a_ch, &c->c_ch}) {
                    const FifoDesc * f = in.layout->shim_fifo_of(k == &c->w_ch ? "weights" : k == &c->a_ch ? "activations" : "out");
                    if ((f->shim_mm2s ? 1u : 0u) == dir && static_cast<uint32_t>(f->shim_channel) == n) {
                        ch = k;
                    }
                }
                const bool a_unconnected =
                    ch == &c->a_ch && in.a_shared && (in.a_rows ? col >= static_cast<uint32_t>(in.d.core_rows) : col != 0);
                if (ch == nullptr || a_unconnected) {
                    error = at + "queue push on shim " + (dir ? "MM2S " : "S2MM ") + std::to_string(n) + " of column " +
                            std::to_string(col) + ", a channel the design does not connect" +
                            (ch != nullptr ? " (layout " + in.layout->name + " streams A through column" +
                                                 (in.a_rows ? "s 0 to " + std::to_string(in.d.core_rows - 1) : std::string(" 0")) +
                                                 " only)"
                                           : "");
                    return false;
                }
                const control::QueuePush q = control::decode_queue_push(value);
                if (auto why = control::check_queue_push(q)) {
                    error = at + *why;
                    return false;
                }
                Task t{q.bd_id, q.repeat_count, q.issue_token, {}};
                // The BDs the task runs: busy until it completes (a rewrite would change a queued transfer).
                for (uint32_t id = q.bd_id; t.chain.size() <= control::kShimBdCount;) {
                    t.chain.push_back(id);
                    const control::ShimBd bd = control::decode_shim_bd(c->bd_words(id));
                    if (!bd.valid_bd) {
                        error = at + "queue push starts a chain through shim BD " + std::to_string(id) + " of column " +
                                std::to_string(col) + ", which is not valid";
                        return false;
                    }
                    if (!bd.use_next_bd) {
                        break;
                    }
                    id = bd.next_bd;
                    if (std::find(t.chain.begin(), t.chain.end(), id) != t.chain.end()) {
                        error = at + "the BD chain from " + std::to_string(q.bd_id) + " loops back to BD " + std::to_string(id);
                        return false;
                    }
                }
                for (uint32_t id : t.chain) {
                    ++c->bd_busy[id];
                }
                ch->queue.push_back(std::move(t));
                return true;
            }
        }
        c->shim_regs[off] = value;  // other shim registers: kept, not modelled
        return true;
    }
    const int first = in.d.first_core_row;
    if (row >= static_cast<uint32_t>(first) && row < static_cast<uint32_t>(first + in.d.core_rows)) {
        Core & k = c->cores[row - first];
        const std::string core = core_name(static_cast<int>(col), static_cast<int>(row));
        if (off < in.d.core_data_bytes) {
            if (std::string why = core_memory_write_hazard(in.d, *k.side, off); !why.empty()) {
                error = at + core + ": " + why;
                return false;
            }
            k.side->memory[off] = value;
            return true;
        }
        if (off == core_lock_value_offset(in.d.barrier_lock)) {
            const bool was_running = k.running();
            std::string why;
            if (!barrier_set(in.d, *k.side, value, why)) {
                error = at + core + ": " + why;
                return false;
            }
            if (!was_running && k.running()) {
                if (std::string bad = start_pass(in, k); !bad.empty()) {
                    error = at + core + ": " + bad;
                    return false;
                }
            }
            return true;
        }
        return true;  // other core registers: not modelled
    }
    return true;  // memory tile and other rows: configured by the xclbin, not modelled
}

bool Runner::patch(const control::AddressPatch & p, size_t op_index) {
    const uint32_t col = p.address >> 25, row = (p.address >> 20) & 0x1F, off = p.address & 0xFFFFF;
    const std::string at = "op " + std::to_string(op_index) + " (address patch " + hex(p.address) + "): ";
    Column * c = column_of(col, op_index, "an address patch");
    if (c == nullptr) {
        return false;
    }
    if (row != static_cast<uint32_t>(in.d.shim_row) || off < kShimBdBase || off >= kShimBdEnd || (off - kShimBdBase) % 0x20 != 4) {
        error = at + "not the base-address register of a shim BD";
        return false;
    }
    if (p.arg_index >= in.args.size()) {
        error = at + "names argument " + std::to_string(p.arg_index) + ", the kernel has " + std::to_string(in.args.size());
        return false;
    }
    const uint32_t id = (off - kShimBdBase) / 0x20;
    if (c->bd_busy[id] > 0) {
        error = at + "shim BD " + std::to_string(id) + " is patched while a queued task still uses it";
        return false;
    }
    control::ShimBd bd = control::decode_shim_bd(c->bd_words(id));
    bd.base_address += arg_base(p.arg_index) + p.arg_offset;
    const auto w = control::encode_shim_bd(bd);
    c->shim_regs[kShimBdBase + id * 0x20 + 4] = w[1];
    c->shim_regs[kShimBdBase + id * 0x20 + 8] = w[2];
    return true;
}

bool Runner::sync(const control::Sync & s, size_t op_index) {
    const std::string at = "op " + std::to_string(op_index) + " (sync): ";
    if (s.row != static_cast<uint32_t>(in.d.shim_row) || s.row_count != 1) {
        error = at + "waits on row " + std::to_string(s.row) + ": only shim channels report completion here";
        return false;
    }
    for (uint32_t col = s.column; col < s.column + s.column_count; ++col) {
        Column * c = column_of(col, op_index, "a sync");
        if (c == nullptr) {
            return false;
        }
        Channel * ch = nullptr;
        for (Channel * k : {&c->w_ch, &c->a_ch, &c->c_ch}) {
            const FifoDesc * f = in.layout->shim_fifo_of(k == &c->w_ch ? "weights" : k == &c->a_ch ? "activations" : "out");
            if ((f->shim_mm2s ? 1u : 0u) == s.direction && static_cast<uint32_t>(f->shim_channel) == s.channel) {
                ch = k;
            }
        }
        if (ch == nullptr) {
            error = at + "waits on a channel the design does not connect";
            return false;
        }
        c->pending_syncs.push_back(ch);
    }
    return true;
}

}  // namespace

DmaRun run_control_stream(const DesignDescription & design, const std::string & family, int tile_n, const CoreProgram & cores,
                          const uint32_t * words, size_t n_words, const std::vector<DmaArgument> & args, ThreadPool * pool,
                          const std::string & layout, const std::string & exact) {
    LoadedDesign fresh;
    return run_control_stream(design, family, tile_n, cores, words, n_words, args, pool, fresh, layout, exact);
}

DmaRun run_control_stream(const DesignDescription & design, const std::string & family, int tile_n, const CoreProgram & cores,
                          const uint32_t * words, size_t n_words, const std::vector<DmaArgument> & args, ThreadPool * pool,
                          LoadedDesign & loaded, const std::string & layout, const std::string & exact) {
    DmaRun result;
    const control::Decoded dec = control::decode(words, n_words);
    if (!dec.ok()) {
        result.error = "control stream: " + dec.error;
        return result;
    }
    // A layout is an xclbin of its own: its cores' state is not another layout's.
    const LayoutDesc * chosen_layout = design.layout(layout);
    const std::string layout_name = chosen_layout != nullptr ? chosen_layout->name : layout;
    auto xclbin_name = [](const std::string & fam, int tn, const std::string & lay, const std::string & ex) {
        return (ex.empty() ? fam : ex + " (exact, of " + fam + ")") + " at TN " + std::to_string(tn) + " in layout " + lay;
    };
    if (!loaded.loaded()) {
        load_design(design, family, tile_n, loaded);
        loaded.layout = layout_name;
        loaded.exact = exact;
    } else if (loaded.family != family || loaded.tile_n != tile_n || loaded.layout != layout_name || loaded.exact != exact ||
               loaded.columns != design.max_columns || loaded.rows != design.core_rows) {
        result.error = "a stream for " + xclbin_name(family, tile_n, layout_name, exact) + " on the loaded design of " +
                       xclbin_name(loaded.family, loaded.tile_n, loaded.layout, loaded.exact);
        return result;
    }
    // Whatever goes wrong in the run leaves the array in a state no invocation can build on: the next
    // one starts from a freshly loaded design, as after a context reset.
    struct ResetOnError {
        LoadedDesign & loaded;
        const DmaRun & result;
        ~ResetOnError() {
            if (!result.ok()) {
                loaded = LoadedDesign{};
            } else {
                ++loaded.invocations;
            }
        }
    } reset_on_error{loaded, result};
    Interp in(design, args, cores, loaded);
    in.tile_n = tile_n;
    if (!family_buffers(design, family, tile_n, in.fb, result.error, exact)) {
        return result;
    }
    if (cores.zero == nullptr) {
        result.error = "no core program for token tile " + std::to_string(tile_n);
        return result;
    }
    in.layout = design.layout(layout);
    if (in.layout == nullptr) {
        result.error = "design " + design.design + " has no layout '" + layout + "'";
        return result;
    }
    const LayoutDesc & L = *in.layout;
    const FifoDesc * fw = L.fifo("w_l3l2");
    const FifoDesc * fa = L.fifo("a_l3l2");
    const FifoDesc * fc = L.fifo("c_l2l3");
    const FifoDesc * fw1 = L.fifo("w_l2l1");
    const FifoDesc * fa1 = L.fifo("a_l2l1");
    const FifoDesc * fc1 = L.fifo("c_l1l2");
    if (!fw || !fa || !fc || !fw1 || !fa1 || !fc1) {
        result.error = "design " + design.design + " layout " + L.name + " lacks a FIFO of the matmul data movement";
        return result;
    }
    in.w_split = fw1->link == FifoLink::split;
    in.a_split = fa1->link == FifoLink::split;
    in.a_shared = L.a_shared;
    in.a_rows = L.a_rows;
    if (in.a_rows && design.core_rows > design.max_columns) {
        result.error = "layout " + L.name + " feeds each core row from a column of its own: " + std::to_string(design.core_rows) +
                       " core rows, " + std::to_string(design.max_columns) + " columns";
        return result;
    }
    auto depth = [&](const FifoDesc * f) { return f->depth_is_c ? in.fb.c_depth : f->depth; };
    const int rows = design.core_rows;
    for (int i = 0; i < design.max_columns; ++i) {
        auto c = std::make_unique<Column>();
        c->in = &in;
        c->index = i;
        c->w_ch.name = "shim MM2S W";
        c->a_ch.name = "shim MM2S A";
        c->c_ch.name = "shim S2MM C";
        c->w_ch.mm2s = c->a_ch.mm2s = true;
        // Object sizes: the family's units times the description's counts; a split or join has one
        // memory-tile channel per core, a broadcast one stream.
        c->w_l2.init(fw->count * in.fb.unit(fw->tile), depth(fw), 1, in.w_split ? rows : 1);
        c->a_l2.init(fa->count * in.fb.unit(fa->tile), depth(fa), 1, in.a_split ? rows : 1);
        c->c_l2.init(fc->count * in.fb.unit(fc->tile), depth(fc), rows, 1);
        c->w_l1.resize(rows);
        c->a_l1.resize(rows);
        c->c_l1.resize(rows);
        for (int r = 0; r < rows; ++r) {
            c->w_l1[r].init(fw1->count * in.fb.unit(fw1->tile), depth(fw1), 1, 1);
            c->a_l1[r].init(fa1->count * in.fb.unit(fa1->tile), depth(fa1), 1, 1);
            c->c_l1[r].init(fc1->count * in.fb.unit(fc1->tile), depth(fc1), 1, 1);
        }
        c->cores.resize(rows);
        for (int r = 0; r < rows; ++r) {
            Core & k = c->cores[r];
            k.side = &loaded.core(i, r);
            // A core that passed its barrier during an earlier invocation (one whose barrier stayed open)
            // is on that pass, with nothing of it done (else that invocation ended in error).
            if (k.running()) {
                if (std::string why = start_pass(in, k); !why.empty()) {
                    result.error = core_name(i, design.first_core_row + r) + ": " + why;
                    return result;
                }
            }
        }
        in.cols.push_back(std::move(c));
    }
    auto parts_ok = [&](const Fifo & l2, const Fifo & l1, bool split) {
        return l2.obj_bytes == (split ? static_cast<size_t>(rows) : 1u) * l1.obj_bytes;
    };
    const Column & c0 = *in.cols[0];
    if (!parts_ok(c0.w_l2, c0.w_l1[0], in.w_split) || !parts_ok(c0.a_l2, c0.a_l1[0], in.a_split) ||
        !parts_ok(c0.c_l2, c0.c_l1[0], true)) {
        result.error = "design " + design.design + ": a split or join object is not one part per core";
        return result;
    }

    Runner run{in, pool, {}};
    const auto & ops = dec.stream.ops;
    for (size_t i = 0; i < ops.size() && run.error.empty(); ++i) {
        const control::ControlOp & op = ops[i];
        const bool is_sync = std::holds_alternative<control::Sync>(op);
        if (!is_sync && !run.flush()) {
            break;
        }
        if (const auto * w = std::get_if<control::Write32>(&op)) {
            run.write(w->address, w->value, i);
        } else if (const auto * b = std::get_if<control::BlockWrite>(&op)) {
            for (size_t k = 0; k < b->words.size() && run.error.empty(); ++k) {
                run.write(b->address + 4 * static_cast<uint32_t>(k), b->words[k], i);
            }
        } else if (const auto * m = std::get_if<control::MaskWrite32>(&op)) {
            uint32_t old = 0;
            run.read(m->address, old);
            run.write(m->address, (old & ~m->mask) | (m->value & m->mask), i);
        } else if (const auto * p = std::get_if<control::AddressPatch>(&op)) {
            run.patch(*p, i);
        } else if (const auto * s = std::get_if<control::Sync>(&op)) {
            run.sync(*s, i);
        } else if (std::holds_alternative<control::Preempt>(op)) {
            // A preemption point: nothing to do for a single context.
        } else {
            run.error = "op " + std::to_string(i) + ": " + control::describe(op) + " is not supported by the simulator";
        }
        ++result.stats.ops;
    }
    if (run.error.empty()) {
        run.flush();
    }
    // The end of the stream: whatever was queued must have run and been awaited.
    if (in.a_shared && run.error.empty()) {
        bool progress = true;
        while (progress) {
            progress = false;
            if (!in.step_all(progress)) {
                break;
            }
        }
    }
    for (auto & cp : in.cols) {
        Column & c = *cp;
        if (!run.error.empty()) {
            break;
        }
        bool progress = !in.a_shared;
        while (progress && c.error.empty()) {
            progress = false;
            c.step(progress);
        }
        if (!c.error.empty()) {
            run.error = c.error;
            break;
        }
        for (Channel * ch : {&c.w_ch, &c.a_ch, &c.c_ch}) {
            if (!ch->queue.empty() || ch->active) {
                run.error = "column " + std::to_string(c.index) + ": " + ch->name + " still has " + std::to_string(ch->queue.size()) +
                            " task(s) at the end of the stream (" + state_of(c) + ")";
            } else if (ch->tokens_done != ch->tokens_awaited) {
                run.error = "column " + std::to_string(c.index) + ": " + ch->name + " completed " + std::to_string(ch->tokens_done) +
                            " task(s) with a token, the stream awaited " + std::to_string(ch->tokens_awaited);
            }
        }
        // Objects left in a FIFO would be read by the next invocation in place of its own data.
        auto left = [](const Fifo & f) { return f.min_prod() != f.min_cons() || f.fill_off != 0 || f.drain_off != 0; };
        for (const auto & [fifo, name] : std::vector<std::pair<const Fifo *, std::string>>{
                 {&c.w_l2, "memory-tile W"}, {&c.a_l2, "memory-tile A"}, {&c.c_l2, "memory-tile C"}}) {
            if (run.error.empty() && left(*fifo)) {
                run.error = "column " + std::to_string(c.index) + ": data left in the " + name + " FIFO at the end of the stream";
            }
        }
        for (size_t r = 0; r < c.cores.size() && run.error.empty(); ++r) {
            if (left(c.w_l1[r]) || left(c.a_l1[r]) || left(c.c_l1[r])) {
                run.error = "column " + std::to_string(c.index) + ": data left in a FIFO of core row " + std::to_string(r) +
                            " at the end of the stream";
            }
        }
        for (size_t r = 0; r < c.cores.size() && run.error.empty(); ++r) {
            // A core part-way through a pass. One that passed its barrier again and has not yet taken an
            // object is where an NPU core would be too: it meets the next invocation in that state.
            const Core & k = c.cores[r];
            if (k.running() && (k.out_done > 0 || k.k_done > 0)) {
                run.error = "column " + std::to_string(c.index) + ": core row " + std::to_string(r) + " finished " +
                            std::to_string(k.out_done) + " of its " + std::to_string(k.side->params.out_tiles) + " output tiles";
            }
        }
        result.stats.bds_run += c.stats.bds_run;
        result.stats.mm2s_bytes += c.stats.mm2s_bytes;
        result.stats.s2mm_bytes += c.stats.s2mm_bytes;
        result.stats.kernel_calls += c.stats.kernel_calls;
    }
    result.error = run.error;
    return result;
}

}  // namespace xdna
