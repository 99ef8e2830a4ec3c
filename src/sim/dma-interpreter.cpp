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
constexpr uint32_t kShimBdIterationWord = 6;  // iteration_current / wrap / stepsize (control/shim-bd.cpp)

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
    std::string      name;
    bool             mm2s = false;
    std::deque<Task> queue;
    bool             active = false;  // the front task is running
    uint32_t         bd = 0;           // BD being walked
    Walker           walk;
    uint64_t         tokens_done = 0, tokens_awaited = 0;
};

// One operand's route through a column: an input from its shim channel into a memory-tile FIFO, split
// or broadcast to the cores' FIFOs; an output from the cores' FIFOs joined in a memory-tile FIFO and
// drained by its shim channel. The layout's FIFO pair (shim <-> memory tile, memory tile <-> core).
struct Route {
    const FifoDesc * shim_fifo = nullptr;  // shim <-> memory tile
    const FifoDesc * core_fifo = nullptr;  // memory tile <-> cores
    int  core_port = -1;                   // core_fifo's index in the layout (CorePorts)
    bool input = true;
    bool split = false;      // one part per core row (a split in, a join out), else one object to every core
    bool shared = false;     // one FIFO for the array, in column 0 (FifoDesc::shared_by_columns)
    bool per_row = false;    // ... one per core row r, in column r (FifoDesc::shared_per_row)
    // A forward (FifoLink::forward: no core between): the input route's memory-tile FIFO is drained by
    // the output route's shim channel; `forward_from` is that input route's index (output side), and
    // `forwarded` marks the input route (nothing goes to the cores).
    int  forward_from = -1;
    bool forwarded = false;
    // Whether column `col`'s shim channel and memory-tile FIFO are connected in this route.
    bool connected(int col, int core_rows) const { return !shared || (per_row ? col < core_rows : col == 0); }
};

// A core's progress through the pass it is on; its barrier lock, RTP words and pass outlive the run
// (core-locks.h: `side`, the loaded design's).
struct Core {
    CoreSide *                side = nullptr;
    std::unique_ptr<CoreRole> role;
    bool running() const { return side->phase == CoreSide::Phase::running; }
};

struct Interp;

struct Column {
    Interp *             in = nullptr;
    int                  index = 0;
    std::unordered_map<uint32_t, uint32_t> shim_regs;  // shim tile registers by tile-local offset
    int                  bd_busy[control::kShimBdCount] = {};
    // Each BD's iteration_current: the iteration its next execution moves. The hardware advances it
    // after every execution (shim-bd.h, ShimBdPattern); writing the BD sets it again.
    uint32_t             bd_iteration[control::kShimBdCount] = {};
    std::vector<Channel> chans;                // per route: its shim channel
    std::vector<Fifo>    l2;                   // per route: the memory-tile FIFO
    std::vector<std::vector<Fifo>> l1;         // per route, per core row: the core's FIFO
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

// Core r of a column's FIFOs as its program sees them: port i is layout FIFO i.
struct Ports final : CorePorts {
    Column & c;
    int      r;
    const std::vector<int> & route_of_port;  // layout FIFO index -> route, -1 for a FIFO no core touches
    Ports(Column & col, int row, const std::vector<int> & routes) : c(col), r(row), route_of_port(routes) {}
    Fifo & fifo(int port) const { return c.l1[route_of_port[port]][r]; }
    bool input(int port) const;
    bool valid(int port) const {
        return port >= 0 && static_cast<size_t>(port) < route_of_port.size() && route_of_port[port] >= 0;
    }
    bool ready(int port) const override {
        if (!valid(port)) return false;
        return input(port) ? fifo(port).can_consume(0) : fifo(port).can_produce(0);
    }
    uint8_t * object(int port) override {
        Fifo & f = fifo(port);
        return input(port) ? f.slot(f.cons[0]) : f.slot(f.prod[0]);
    }
    void release(int port) override {
        Fifo & f = fifo(port);
        ++(input(port) ? f.cons[0] : f.prod[0]);
    }
};

struct Interp {
    const DesignDescription & d;
    const std::vector<DmaArgument> & args;
    LoadedDesign & loaded;
    const LayoutDesc * layout = nullptr;
    std::vector<Route> routes;
    std::vector<int> route_of_port;  // layout FIFO index -> route of its core FIFO
    // Some route's FIFO is shared by the columns: the columns are coupled then (a part moves only when
    // that core row of every column can take it), so they run as one.
    bool any_shared = false;
    std::vector<std::unique_ptr<Column>> cols;
    Interp(const DesignDescription & dd, const std::vector<DmaArgument> & a, LoadedDesign & l) : d(dd), args(a), loaded(l) {}

    // A shared input route: part r of column 0's memory-tile object (shared by the columns), or column
    // r's whole object (one per core row), to core row r of every column: one stream per core row,
    // fanned out along the row, so it moves when all of them have a free object.
    void share(size_t ri, bool & progress) {
        const Route & route = routes[ri];
        const size_t rows = cols[0]->l1[ri].size();
        const size_t part = rows == 0 ? 0 : cols[0]->l1[ri][0].obj_bytes;
        for (size_t r = 0; r < rows; ++r) {
            Fifo & l2 = route.per_row ? cols[r]->l2[ri] : cols[0]->l2[ri];
            const int reader = route.per_row || !route.split ? 0 : static_cast<int>(r);  // the memory-tile channel that sends it
            const size_t offset = route.split ? r * part : 0;
            auto free_row = [&] {
                return std::all_of(cols.begin(), cols.end(), [&](const auto & c) { return c->l1[ri][r].can_produce(0); });
            };
            while (l2.can_consume(reader) && free_row()) {
                for (auto & c : cols) {
                    Fifo & f = c->l1[ri][r];
                    std::memcpy(f.slot(f.prod[0]), l2.slot(l2.cons[reader]) + offset, part);
                    ++f.prod[0];
                }
                ++l2.cons[reader];
                progress = true;
            }
        }
    }
    // Every column one step, then the shared routes; false when a column failed.
    bool step_all(bool & progress) {
        for (auto & c : cols) {
            if (!c->step(progress)) {
                return false;
            }
        }
        for (size_t ri = 0; ri < routes.size(); ++ri) {
            if (routes[ri].input && routes[ri].shared) {
                share(ri, progress);
            }
        }
        return true;
    }
};

bool Ports::input(int port) const { return c.in->routes[route_of_port[port]].input; }

std::string core_name(int col, int row) { return "core (" + std::to_string(col) + ", " + std::to_string(row) + ")"; }

// A core that has just passed its barrier starts the pass with the RTP words it read: the words must be
// in the layout the core program reads, and select something its program runs. Empty, or why not.
std::string start_pass(const Interp & in, Core & k) {
    const CoreParams & p = k.side->params;
    if (p.version != in.d.rtp_layout_version) {
        return "RTP layout version " + std::to_string(p.version) + ", the core program reads " + std::to_string(in.d.rtp_layout_version);
    }
    return k.role->start(p.words);
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
    if (bd.lock_acq_enable || bd.lock_rel_value != 0 || bd.enable_packet) {
        return fail(what + " uses locks or packets: not part of this design");
    }
    if (bd_iteration[id] > bd.iteration_wrap) {
        return fail(what + " starts at iteration " + std::to_string(bd_iteration[id]) + " of " + std::to_string(bd.iteration_wrap + 1));
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
    // One execution moves one iteration: the one iteration_current names, which then advances (and
    // wraps after iteration_wrap + 1 executions).
    const uint64_t iteration_words = bd.iteration_wrap > 0 ? bd_iteration[id] * (bd.iteration_stepsize + 1ull) : 0;
    bd_iteration[id] = bd.iteration_wrap > 0 ? (bd_iteration[id] + 1) % (bd.iteration_wrap + 1) : 0;
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
    const uint64_t off = addr - arg_base(arg) + 4 * iteration_words;
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
    Ports ports(*this, r, in->route_of_port);
    stats.kernel_calls += c.role->step(ports, progress);
    if (!c.role->finished()) {
        return true;
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
    if (!barrier_pass_done(in->d, *c.side, c.role->begun(), err)) {
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
    const std::vector<Route> & routes = in->routes;
    // Shim MM2S -> memory tile.
    for (size_t ri = 0; ri < routes.size(); ++ri) {
        if (!routes[ri].input || !routes[ri].connected(index, rows)) {
            continue;
        }
        Fifo & f = l2[ri];
        while (f.can_produce(0) && error.empty()) {
            const size_t got = pull(chans[ri], f.slot(f.prod[0]) + f.fill_off, f.obj_bytes - f.fill_off);
            f.fill_off += got;
            if (got > 0) {
                progress = true;
            }
            if (f.fill_off < f.obj_bytes) {
                break;
            }
            f.fill_off = 0;
            ++f.prod[0];
        }
    }
    // Memory tile -> cores, as the layout links each input: a split sends part r of each object to core
    // r on its own MM2S channel; a broadcast is one stream to every core, which moves only when all of
    // them can take the object. (A route shared by the columns moves in Interp::share.)
    for (size_t ri = 0; ri < routes.size(); ++ri) {
        if (!routes[ri].input || routes[ri].shared || routes[ri].forwarded) {
            continue;
        }
        Fifo & src = l2[ri];
        std::vector<Fifo> & dst = l1[ri];
        if (routes[ri].split) {
            const size_t part = dst.empty() ? 0 : dst[0].obj_bytes;
            for (int r = 0; r < rows; ++r) {
                while (src.can_consume(r) && dst[r].can_produce(0)) {
                    std::memcpy(dst[r].slot(dst[r].prod[0]), src.slot(src.cons[r]) + r * part, part);
                    ++dst[r].prod[0];
                    ++src.cons[r];
                    progress = true;
                }
            }
            continue;
        }
        while (src.can_consume(0) && std::all_of(dst.begin(), dst.end(), [](const Fifo & f) { return f.can_produce(0); })) {
            for (Fifo & f : dst) {
                std::memcpy(f.slot(f.prod[0]), src.slot(src.cons[0]), f.obj_bytes);
                ++f.prod[0];
            }
            ++src.cons[0];
            progress = true;
        }
    }
    for (int r = 0; r < rows; ++r) {
        core_step(r, progress);
    }
    for (size_t ri = 0; ri < routes.size(); ++ri) {
        if (routes[ri].input) {
            continue;
        }
        // Join: core r's object becomes part r of the memory-tile object; a forward drains its input
        // route's memory-tile FIFO as it was filled.
        Fifo & dst = routes[ri].forward_from >= 0 ? l2[static_cast<size_t>(routes[ri].forward_from)] : l2[ri];
        std::vector<Fifo> & src = l1[ri];
        const size_t part = src.empty() ? 0 : src[0].obj_bytes;
        for (int r = 0; r < rows && routes[ri].forward_from < 0; ++r) {
            while (src[r].can_consume(0) && dst.can_produce(r)) {
                std::memcpy(dst.slot(dst.prod[r]) + r * part, src[r].slot(src[r].cons[0]), part);
                ++dst.prod[r];
                ++src[r].cons[0];
                progress = true;
            }
        }
        // Memory tile -> shim S2MM.
        while (dst.can_consume(0) && error.empty()) {
            const size_t put = push(chans[ri], dst.slot(dst.cons[0]) + dst.drain_off, dst.obj_bytes - dst.drain_off);
            dst.drain_off += put;
            if (put > 0) {
                progress = true;
            }
            if (dst.drain_off < dst.obj_bytes) {
                break;
            }
            dst.drain_off = 0;
            ++dst.cons[0];
        }
    }
    return error.empty();
}

std::string state_of(Column & c) {
    std::string s = "queued tasks";
    for (size_t ri = 0; ri < c.chans.size(); ++ri) {
        s += std::string(ri == 0 ? " " : ", ") + c.in->routes[ri].shim_fifo->operand + " " + std::to_string(c.chans[ri].queue.size());
    }
    s += "; cores:";
    std::string barriers;
    for (size_t r = 0; r < c.cores.size(); ++r) {
        const Core & k = c.cores[r];
        s += " " + (k.running() ? k.role->state() : std::string("at its barrier"));
        if (!k.running()) {
            barriers += "; " + core_name(c.index, c.in->d.first_core_row + static_cast<int>(r)) + " " + describe_core(c.in->d, *k.side);
        }
    }
    return s + barriers;
}

bool Column::advance(bool & progress) {
    return in->any_shared ? in->step_all(progress) : step(progress);
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
        if (pool != nullptr && todo.size() > 1 && !in.any_shared) {
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
            if ((off - kShimBdBase) % 0x20 == 4 * kShimBdIterationWord) {
                c->bd_iteration[id] = control::decode_shim_bd(c->bd_words(id)).iteration_current;
            }
            return true;
        }
        for (uint32_t dir = 0; dir < 2; ++dir) {
            for (uint32_t n = 0; n < control::kShimChannelsPerDir; ++n) {
                if (address != control::shim_queue_address(col, dir, n)) {
                    continue;
                }
                int route = -1;
                for (size_t ri = 0; ri < in.routes.size(); ++ri) {
                    const FifoDesc * f = in.routes[ri].shim_fifo;
                    if ((f->shim_mm2s ? 1u : 0u) == dir && static_cast<uint32_t>(f->shim_channel) == n) {
                        route = static_cast<int>(ri);
                    }
                }
                const bool unconnected = route >= 0 && !in.routes[route].connected(static_cast<int>(col), in.d.core_rows);
                if (route < 0 || unconnected) {
                    const Route * rt = route >= 0 ? &in.routes[route] : nullptr;
                    error = at + "queue push on shim " + (dir ? "MM2S " : "S2MM ") + std::to_string(n) + " of column " +
                            std::to_string(col) + ", a channel the design does not connect" +
                            (unconnected ? " (layout " + in.layout->name + " streams " + rt->shim_fifo->operand + " through column" +
                                               (rt->per_row ? "s 0 to " + std::to_string(in.d.core_rows - 1) : std::string(" 0")) +
                                               " only)"
                                         : "");
                    return false;
                }
                Channel * ch = &c->chans[route];
                const control::QueuePush q = control::decode_queue_push(value);
                if (auto why = control::check_queue_push(q)) {
                    error = at + *why;
                    return false;
                }
                // The channel's task queue holds max_queue_depth starts; the stream cannot know a task
                // it has not synced on has completed, so one more push than that may find the queue full
                // (mlir-aie polls before such a push). A task still queued here has not completed.
                if (ch->queue.size() >= control::ShimLimits::max_queue_depth) {
                    error = at + "queue push on " + ch->name + " of column " + std::to_string(col) + " while its task queue holds " +
                            std::to_string(ch->queue.size()) + " tasks not yet complete (the queue holds " +
                            std::to_string(control::ShimLimits::max_queue_depth) + ")";
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
    if (p.arg_index >= control::kFirmwareTranslatedArgs) {
        // Run from an xclbin with an instruction buffer, the firmware translates the host addresses of
        // the first 5 buffer arguments only (control-ops.h): a BD patched to another would read or write
        // an untranslated address.
        error = at + "names argument " + std::to_string(p.arg_index) + ": the firmware translates the addresses of arguments 0 to " +
                std::to_string(control::kFirmwareTranslatedArgs - 1) + " only";
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
        for (size_t ri = 0; ri < in.routes.size(); ++ri) {
            const FifoDesc * f = in.routes[ri].shim_fifo;
            if ((f->shim_mm2s ? 1u : 0u) == s.direction && static_cast<uint32_t>(f->shim_channel) == s.channel &&
                in.routes[ri].connected(static_cast<int>(col), in.d.core_rows)) {
                ch = &c->chans[ri];
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

// The matmul's core program: per output tile, zero C, then one kernel call per K tile (per A object
// where A comes in K parts, the W object held over its K tile's parts), C handed to the memory tile.
class MatmulCoreRole final : public CoreRole {
public:
    MatmulCoreRole(const DesignDescription & d, const CoreProgram & program, int a_k_parts, const LayoutDesc & L)
        : d_(d), program_(program), parts_(a_k_parts), w_(core_port(L, "w_l2l1")), a_(core_port(L, "a_l2l1")),
          c_(core_port(L, "c_l1l2")) {}

    std::string start(const std::vector<uint32_t> & words) override {
        contract_ = words[d_.rtp_contract];
        out_tiles_ = words[d_.rtp_out_tiles];
        k_tiles_ = words[d_.rtp_k_tiles];
        if (contract_ >= program_.kernels.size() || program_.kernels[contract_] == nullptr) {
            return "contract RTP " + std::to_string(contract_) + " selects no kernel of this family";
        }
        kernel_ = program_.kernels[contract_];
        part_kernel_ = nullptr;
        if (parts_ > 1) {
            if (contract_ >= program_.part_kernels.size() || program_.part_kernels[contract_] == nullptr) {
                return "contract RTP " + std::to_string(contract_) + " selects no kernel of this family that takes A in " +
                       std::to_string(parts_) + " K parts";
            }
            part_kernel_ = program_.part_kernels[contract_];
        }
        out_done_ = k_done_ = 0;
        a_part_ = 0;
        in_tile_ = false;
        return "";
    }

    uint64_t step(CorePorts & p, bool & progress) override {
        uint64_t calls = 0;
        while (out_done_ < out_tiles_) {
            if (!in_tile_) {
                if (!p.ready(c_)) {
                    return calls;
                }
                if (program_.reset != nullptr) {
                    program_.reset();  // as the kernels mode: every output tile starts in the reset modes
                }
                program_.zero(reinterpret_cast<float *>(p.object(c_)));
                in_tile_ = true;
                k_done_ = 0;
                a_part_ = 0;
                progress = true;
            }
            while (k_done_ < k_tiles_ && p.ready(w_) && p.ready(a_)) {
                float * ct = reinterpret_cast<float *>(p.object(c_));
                if (parts_ == 1) {
                    kernel_(p.object(w_), p.object(a_), ct);
                } else {
                    // A in K parts: the W object stays acquired over its K tile's A objects.
                    part_kernel_(p.object(w_), p.object(a_), ct, a_part_);
                }
                p.release(a_);
                ++calls;
                progress = true;
                if (++a_part_ < parts_) {
                    continue;
                }
                a_part_ = 0;
                p.release(w_);
                ++k_done_;
            }
            if (k_done_ < k_tiles_) {
                return calls;
            }
            p.release(c_);
            in_tile_ = false;
            ++out_done_;
            progress = true;
        }
        return calls;
    }
    bool finished() const override { return out_done_ >= out_tiles_; }
    bool begun() const override { return out_done_ > 0 || k_done_ > 0; }
    std::string state() const override {
        return "finished " + std::to_string(out_done_) + " of its " + std::to_string(out_tiles_) + " output tiles";
    }

private:
    const DesignDescription & d_;
    const CoreProgram & program_;
    int parts_ = 1;
    int w_, a_, c_;
    uint32_t contract_ = 0, out_tiles_ = 0, k_tiles_ = 0;
    CoreProgram::Kernel kernel_ = nullptr;
    CoreProgram::PartKernel part_kernel_ = nullptr;
    uint32_t out_done_ = 0, k_done_ = 0;
    int32_t a_part_ = 0;
    bool in_tile_ = false;
};

// Bytes of one object of `f` on the xclbin: the description's units at its tile, or the matmul's
// family buffers.
size_t object_bytes(const DesignDescription & d, const std::string & family, const FifoDesc & f, int tile_n, const FamilyBuffers * fb) {
    const size_t unit = f.tile != 0 ? (fb != nullptr ? fb->unit(f.tile) : 0) : d.unit_bytes(family, f.unit, tile_n);
    return static_cast<size_t>(f.count) * unit;
}

}  // namespace

int core_port(const LayoutDesc & layout, const std::string & fifo) {
    for (size_t i = 0; i < layout.fifos.size(); ++i) {
        if (layout.fifos[i].name == fifo) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

DmaRun run_design_stream(const DesignDescription & design, const XclbinId & xclbin, const CoreRoleFactory & roles,
                         const uint32_t * words, size_t n_words, const std::vector<DmaArgument> & args, ThreadPool * pool,
                         LoadedDesign & loaded) {
    DmaRun result;
    const control::Decoded dec = control::decode(words, n_words);
    if (!dec.ok()) {
        result.error = "control stream: " + dec.error;
        return result;
    }
    const std::string & family = xclbin.family;
    const int tile_n = xclbin.tile_n;
    const std::string & exact = xclbin.exact;
    // A layout is an xclbin of its own: its cores' state is not another layout's.
    const LayoutDesc * chosen_layout = design.layout(xclbin.layout);
    const std::string layout_name = chosen_layout != nullptr ? chosen_layout->name : xclbin.layout;
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
    Interp in(design, args, loaded);
    if (design.family_contracts(family) == nullptr) {
        result.error = "design " + design.design + " has no family '" + family + "'";
        return result;
    }
    FamilyBuffers fb;
    if (design.matmul_movement && !family_buffers(design, family, tile_n, fb, result.error, exact)) {
        return result;
    }
    if (!design.matmul_movement && design.kernel_stack(family, tile_n) == nullptr) {
        result.error = "design " + design.design + " has no xclbin of family " + family + " at tile " + std::to_string(tile_n);
        return result;
    }
    in.layout = chosen_layout;
    if (in.layout == nullptr) {
        result.error = "design " + design.design + " has no layout '" + xclbin.layout + "'";
        return result;
    }
    const LayoutDesc & L = *in.layout;
    // The routes: every core FIFO with the shim FIFO it takes from or joins into (the parser checked the
    // graph: design-description.cpp check_fifo_graph).
    in.route_of_port.assign(L.fifos.size(), -1);
    for (size_t i = 0; i < L.fifos.size(); ++i) {
        const FifoDesc & f = L.fifos[i];
        if (f.to != "core" && f.from != "core") {
            continue;
        }
        Route r;
        r.core_fifo = &f;
        r.shim_fifo = L.fifo(f.peer);
        r.core_port = static_cast<int>(i);
        r.input = f.to == "core";
        r.split = f.link != FifoLink::broadcast;
        r.shared = f.shared_by_columns;
        r.per_row = f.shared_per_row;
        if (r.shim_fifo == nullptr || r.shim_fifo->shim_channel < 0) {
            result.error = "design " + design.design + " layout " + L.name + ": fifo " + f.name + " reaches no shim channel";
            return result;
        }
        in.route_of_port[i] = static_cast<int>(in.routes.size());
        in.any_shared = in.any_shared || r.shared;
        in.routes.push_back(r);
    }
    // Forwards: the memory tile hands a shim FIFO's objects straight back to a shim channel.
    for (const FifoDesc & f : L.fifos) {
        if (f.link != FifoLink::forward) {
            continue;
        }
        Route from;
        from.shim_fifo = L.fifo(f.peer);
        from.forwarded = true;
        Route to;
        to.shim_fifo = &f;
        to.input = false;
        to.forward_from = static_cast<int>(in.routes.size());
        if (from.shim_fifo == nullptr || from.shim_fifo->shim_channel < 0 || f.shim_channel < 0) {
            result.error = "design " + design.design + " layout " + L.name + ": fifo " + f.name + " forwards between no shim channels";
            return result;
        }
        in.routes.push_back(from);
        in.routes.push_back(to);
    }
    if (in.any_shared && design.core_rows > design.max_columns &&
        std::any_of(in.routes.begin(), in.routes.end(), [](const Route & r) { return r.per_row; })) {
        result.error = "layout " + L.name + " feeds each core row from a column of its own: " + std::to_string(design.core_rows) +
                       " core rows, " + std::to_string(design.max_columns) + " columns";
        return result;
    }
    const int rows = design.core_rows;
    auto depth = [&](const FifoDesc * f) { return f->depth_is_c ? fb.c_depth : f->depth; };
    const FamilyBuffers * fbp = design.matmul_movement ? &fb : nullptr;
    for (int i = 0; i < design.max_columns; ++i) {
        auto c = std::make_unique<Column>();
        c->in = &in;
        c->index = i;
        c->chans.resize(in.routes.size());
        c->l2.resize(in.routes.size());
        c->l1.resize(in.routes.size());
        for (size_t ri = 0; ri < in.routes.size(); ++ri) {
            const Route & r = in.routes[ri];
            Channel & ch = c->chans[ri];
            ch.mm2s = r.input;
            ch.name = std::string("shim ") + (r.input ? "MM2S " : "S2MM ") + r.shim_fifo->operand;
            // Object sizes: the units times the description's counts; a split or join has one
            // memory-tile channel per core, a broadcast one stream.
            const size_t l2_bytes = object_bytes(design, family, *r.shim_fifo, tile_n, fbp);
            if (r.core_fifo == nullptr) {
                // A forward's two ends: one memory-tile FIFO (the input's), drained by the output's channel.
                if (l2_bytes == 0) {
                    result.error = "design " + design.design + ": fifo " + r.shim_fifo->name + " has objects of no bytes";
                    return result;
                }
                c->l2[ri].init(l2_bytes, depth(r.shim_fifo), 1, 1);
                continue;
            }
            const size_t l1_bytes = object_bytes(design, family, *r.core_fifo, tile_n, fbp);
            if (l2_bytes == 0 || l1_bytes == 0 || l2_bytes != (r.split && !r.per_row ? static_cast<size_t>(rows) : 1u) * l1_bytes) {
                result.error = "design " + design.design + ": a split or join object is not one part per core";
                return result;
            }
            if (r.input) {
                c->l2[ri].init(l2_bytes, depth(r.shim_fifo), 1, r.split && !r.per_row ? rows : 1);
            } else {
                c->l2[ri].init(l2_bytes, depth(r.shim_fifo), rows, 1);
            }
            c->l1[ri].resize(rows);
            for (int k = 0; k < rows; ++k) {
                c->l1[ri][k].init(l1_bytes, depth(r.core_fifo), 1, 1);
            }
        }
        c->cores.resize(rows);
        for (int r = 0; r < rows; ++r) {
            Core & k = c->cores[r];
            k.side = &loaded.core(i, r);
            std::string why;
            k.role = roles(L, i, r, why);
            if (k.role == nullptr) {
                result.error = core_name(i, design.first_core_row + r) + ": " + (why.empty() ? "no core program" : why);
                return result;
            }
            // A core that passed its barrier during an earlier invocation (one whose barrier stayed open)
            // is on that pass, with nothing of it done (else that invocation ended in error).
            if (k.running()) {
                if (std::string bad = start_pass(in, k); !bad.empty()) {
                    result.error = core_name(i, design.first_core_row + r) + ": " + bad;
                    return result;
                }
            }
        }
        in.cols.push_back(std::move(c));
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
    if (in.any_shared && run.error.empty()) {
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
        bool progress = !in.any_shared;
        while (progress && c.error.empty()) {
            progress = false;
            c.step(progress);
        }
        if (!c.error.empty()) {
            run.error = c.error;
            break;
        }
        for (Channel & ch : c.chans) {
            if (!ch.queue.empty() || ch.active) {
                run.error = "column " + std::to_string(c.index) + ": " + ch.name + " still has " + std::to_string(ch.queue.size()) +
                            " task(s) at the end of the stream (" + state_of(c) + ")";
            } else if (ch.tokens_done != ch.tokens_awaited) {
                run.error = "column " + std::to_string(c.index) + ": " + ch.name + " completed " + std::to_string(ch.tokens_done) +
                            " task(s) with a token, the stream awaited " + std::to_string(ch.tokens_awaited);
            }
        }
        // Objects left in a FIFO would be read by the next invocation in place of its own data.
        auto left = [](const Fifo & f) { return f.min_prod() != f.min_cons() || f.fill_off != 0 || f.drain_off != 0; };
        for (size_t ri = 0; ri < in.routes.size() && run.error.empty(); ++ri) {
            if (left(c.l2[ri])) {
                run.error = "column " + std::to_string(c.index) + ": data left in the memory-tile FIFO " + in.routes[ri].shim_fifo->name +
                            " at the end of the stream";
            }
        }
        for (size_t r = 0; r < c.cores.size() && run.error.empty(); ++r) {
            for (size_t ri = 0; ri < in.routes.size() && run.error.empty(); ++ri) {
                if (in.routes[ri].core_fifo != nullptr && left(c.l1[ri][r])) {
                    run.error = "column " + std::to_string(c.index) + ": data left in a FIFO of core row " + std::to_string(r) +
                                " (" + in.routes[ri].core_fifo->name + ") at the end of the stream";
                }
            }
        }
        for (size_t r = 0; r < c.cores.size() && run.error.empty(); ++r) {
            // A core part-way through a pass. One that passed its barrier again and has not yet taken an
            // object is where an NPU core would be too: it meets the next invocation in that state.
            const Core & k = c.cores[r];
            if (k.running() && k.role->begun()) {
                run.error = "column " + std::to_string(c.index) + ": core row " + std::to_string(r) + " " + k.role->state();
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
    if (!design.matmul_movement) {
        result.error = "design " + design.design + " does not move the matmul's W, A and C: its streams run with its own core program";
        return result;
    }
    FamilyBuffers fb;
    if (!family_buffers(design, family, tile_n, fb, result.error, exact)) {
        return result;
    }
    if (cores.zero == nullptr) {
        result.error = "no core program for token tile " + std::to_string(tile_n);
        return result;
    }
    const int parts = fb.a_k_parts;
    const CoreRoleFactory roles = [&](const LayoutDesc & L, int, int, std::string &) {
        return std::make_unique<MatmulCoreRole>(design, cores, parts, L);
    };
    return run_design_stream(design, XclbinId{family, tile_n, layout, exact}, roles, words, n_words, args, pool, loaded);
}

}  // namespace xdna
