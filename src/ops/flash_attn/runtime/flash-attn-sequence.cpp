#include "ops/flash_attn/flash-attn-sequence.h"

#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "ops/flash_attn/flash-attn-invocation.h"
#include "runtime/device-buffer.h"
#include "runtime/shim-task-emitter.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <tuple>

namespace xdna {

bool AttentionShape::operator==(const AttentionShape & o) const {
    auto same = [](const int64_t a[4], const int64_t b[4]) { return std::equal(a, a + 4, b); };
    return contract == o.contract && d == o.d && n_kv == o.n_kv && n_tokens == o.n_tokens && n_head == o.n_head &&
           n_head_kv == o.n_head_kv && n_seq == o.n_seq && n_seq_kv == o.n_seq_kv && has_mask == o.has_mask &&
           mask_heads == o.mask_heads && mask_seqs == o.mask_seqs && same(q_nb, o.q_nb) && same(k_nb, o.k_nb) &&
           same(v_nb, o.v_nb) && same(mask_nb, o.mask_nb) && same(out_nb, o.out_nb) && scale_bits == o.scale_bits &&
           columns == o.columns && max_columns == o.max_columns && layout == o.layout && visible == o.visible;
}

AttentionShape attention_shape(const FlashAttnParams & p, const char * contract) {
    AttentionShape s;
    s.contract = contract != nullptr ? contract : "";
    s.d = p.d;
    s.n_kv = p.n_kv;
    s.n_tokens = p.n_tokens;
    s.n_head = p.n_head;
    s.n_head_kv = p.n_head_kv;
    s.n_seq = p.n_seq;
    s.n_seq_kv = p.n_seq_kv;
    s.has_mask = p.has_mask;
    s.mask_heads = p.mask_heads;
    s.mask_seqs = p.mask_seqs;
    std::copy(p.q_nb, p.q_nb + 4, s.q_nb);
    std::copy(p.k_nb, p.k_nb + 4, s.k_nb);
    std::copy(p.v_nb, p.v_nb + 4, s.v_nb);
    std::copy(p.mask_nb, p.mask_nb + 4, s.mask_nb);
    std::copy(p.out_nb, p.out_nb + 4, s.out_nb);
    std::memcpy(&s.scale_bits, &p.scale, sizeof s.scale_bits);
    return s;
}

bool attention_shape_of(const Invocation & inv, const DesignDescription & d, AttentionShape & out, std::string & err) {
    const FlashAttnParams * p = std::get_if<FlashAttnParams>(&inv.params);
    if (!d.attention_movement || p == nullptr || inv.key.variant == nullptr) {
        err = "design " + d.design + " is not an attention design, or the invocation is not a flash_attn's";
        return false;
    }
    out = attention_shape(*p, inv.key.variant);
    out.visible = attention_visible(inv);
    // Whole blocks are what the stream takes: a decoded token's shape (and the stream cached for it) then
    // changes once every block of positions, not with every token.
    const int64_t blk = d.attention_kv_block;
    for (int32_t & v : out.visible) v = static_cast<int32_t>(std::min<int64_t>(out.n_kv, (v + blk - 1) / blk * blk));
    return true;
}

std::vector<int32_t> attention_visible(const Invocation & inv) {
    const FlashAttnParams * p = std::get_if<FlashAttnParams>(&inv.params);
    std::vector<int32_t> out;
    if (p == nullptr || !p->has_mask || p->n_tokens < 1 || p->mask_seqs < 1) return out;
    const Operand * src = inv.operand("mask_source");
    if (src != nullptr && src->slice.buffer != nullptr && p->mask_source != FlashAttnParams::MaskSource::none) {
        const auto * base = static_cast<const uint8_t *>(src->slice.host());
        const bool f32 = p->mask_source == FlashAttnParams::MaskSource::f32;
        out.assign(static_cast<size_t>(p->mask_seqs * p->n_tokens), 0);
        for (int64_t ms = 0; ms < p->mask_seqs; ++ms) {
            for (int64_t t = 0; t < p->n_tokens; ++t) {
                const uint8_t * row = base + t * p->mask_source_nb[1] + ms * p->mask_source_nb[3];
                int64_t j = p->n_kv;
                // From the row's end: a causal row's hidden tail is what is skipped, and the scan stops at it.
                for (; j > 0; --j) {
                    const uint8_t * at = row + (j - 1) * p->mask_source_nb[0];
                    if (f32) {
                        uint32_t bits;
                        std::memcpy(&bits, at, 4);
                        if (bits != 0xff800000u) break;
                    } else {
                        uint16_t bits;
                        std::memcpy(&bits, at, 2);
                        if (bits != 0xfc00u) break;
                    }
                }
                out[static_cast<size_t>(ms * p->n_tokens + t)] = static_cast<int32_t>(j);
            }
        }
        return out;
    }
    if (p->modelled_past >= 0) {
        out.assign(static_cast<size_t>(p->mask_seqs * p->n_tokens), 0);
        for (int64_t ms = 0; ms < p->mask_seqs; ++ms) {
            for (int64_t t = 0; t < p->n_tokens; ++t) {
                out[static_cast<size_t>(ms * p->n_tokens + t)] = static_cast<int32_t>(std::min(p->n_kv, p->modelled_past + t + 1));
            }
        }
    }
    return out;
}

int64_t attention_parts(int64_t tasks, int64_t blocks, int64_t cores) {
    if (tasks < 1 || tasks >= cores) return 1;
    int64_t root = 0;  // isqrt(2 blocks)
    while ((root + 1) * (root + 1) <= 2 * blocks) ++root;
    return std::max<int64_t>(1, std::min({cores / tasks, blocks, std::max<int64_t>(4, root)}));
}

uint64_t AttentionSequence::reach_of(const std::string & operand) const {
    for (const auto & [name, bytes] : reach) {
        if (name == operand) return bytes;
    }
    return 0;
}

int64_t attention_task_tokens(const DesignDescription & d, const AttentionShape & s) {
    if (s.n_head_kv < 1 || s.n_head % s.n_head_kv != 0 || s.n_tokens < 1 || d.attention_max_rows < 1) return 0;
    // The chunks of flash_attn_split: group_rows in ceil(group_rows / max_rows) chunks of equal rows, the
    // last the rest.
    const int64_t ratio = s.n_head / s.n_head_kv, group_rows = ratio * s.n_tokens, max_rows = d.attention_max_rows;
    const int64_t chunks = (group_rows + max_rows - 1) / max_rows, chunk_rows = (group_rows + chunks - 1) / chunks;
    int64_t most = 0;
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t row0 = c * chunk_rows, rows = std::min(chunk_rows, group_rows - row0);
        most = std::max(most, (row0 + rows - 1) / ratio - row0 / ratio + 1);
    }
    return most;
}

std::string attention_kv_unit(const LayoutDesc & L) {
    for (const FifoDesc & f : L.fifos) {
        if (f.to == "core") return f.unit;
    }
    return "";
}

namespace {
int64_t tokens_held(const DesignDescription & d, const LayoutDesc & L) { return L.task_tokens > 0 ? L.task_tokens : d.attention_max_rows; }
}  // namespace

std::vector<const LayoutDesc *> attention_layouts_holding(const DesignDescription & d, const AttentionShape & s) {
    const int64_t tokens = attention_task_tokens(d, s);
    std::vector<const LayoutDesc *> out;
    for (const LayoutDesc & L : d.layouts) {
        if (tokens_held(d, L) >= tokens) out.push_back(&L);
    }
    std::stable_sort(out.begin(), out.end(), [&](const LayoutDesc * a, const LayoutDesc * b) { return tokens_held(d, *a) < tokens_held(d, *b); });
    return out;
}

const LayoutDesc * attention_layout(const DesignDescription & d, const AttentionShape & s, std::string & err) {
    const int64_t tokens = attention_task_tokens(d, s);
    if (!s.layout.empty()) {
        for (const LayoutDesc & L : d.layouts) {
            if (L.name != s.layout) continue;
            if (tokens_held(d, L) < tokens) {
                err = "layout " + L.name + " holds tasks of " + std::to_string(tokens_held(d, L)) + " token(s); the shape's take " +
                      std::to_string(tokens);
                return nullptr;
            }
            return &L;
        }
        err = "design " + d.design + " has no layout " + s.layout;
        return nullptr;
    }
    const std::vector<const LayoutDesc *> holding = attention_layouts_holding(d, s);
    if (holding.empty()) err = "no layout of design " + d.design + " holds tasks of " + std::to_string(tokens) + " tokens";
    return holding.empty() ? nullptr : holding.front();
}

bool attention_shape_fits(const DesignDescription & d, const AttentionShape & s, std::string & err) {
    auto no = [&](const std::string & why) {
        err = why;
        return false;
    };
    const std::string family = d.family_of(s.contract);
    if (!d.attention_movement || d.contract_index(family, s.contract) < 0) return no("design " + d.design + " has no attention program " + s.contract);
    if (d.attention_objects_of(family, static_cast<int>(s.d)) == nullptr || d.kernel_stack(family, static_cast<int>(s.d)) == nullptr) {
        return no("the design has no xclbin of family " + family + " for head dim " + std::to_string(s.d));
    }
    if (s.n_kv < 1 || s.n_tokens < 1 || s.n_head_kv < 1 || s.n_head % s.n_head_kv != 0 || s.n_seq_kv < 1 || s.n_seq % s.n_seq_kv != 0) {
        return no(std::to_string(s.n_tokens) + " token(s), " + std::to_string(s.n_head) + "/" + std::to_string(s.n_head_kv) + " heads, " +
                  std::to_string(s.n_kv) + " KV rows: not a shape the design takes");
    }
    if (s.has_mask && s.mask_heads != 1) {
        return no("a mask of " + std::to_string(s.mask_heads) + " heads: the design reads one mask row per token, shared by the heads");
    }
    if (attention_layout(d, s, err) == nullptr) return false;
    // The strides a BD steps (its d0-d2 and iteration strides count 32-bit words).
    const std::pair<int64_t, const char *> steps[] = {{s.q_nb[1], "q's token"},   {s.q_nb[2], "q's head"},    {s.k_nb[1], "k's row"},
                                                      {s.v_nb[1], "v's row"},     {s.out_nb[1], "out's head"}, {s.out_nb[2], "out's token"},
                                                      {s.has_mask ? s.mask_nb[1] : 4, "the mask's row"}};
    for (const auto & [bytes, what] : steps) {
        if (bytes <= 0 || bytes % 4 != 0 || bytes / 4 > static_cast<int64_t>(d.stride_max)) {
            return no(std::string(what) + " stride of " + std::to_string(bytes) + " bytes is not a whole number of words a BD steps (at most " +
                      std::to_string(d.stride_max) + " words)");
        }
    }
    for (const int64_t nb : {s.q_nb[3], s.k_nb[2], s.k_nb[3], s.v_nb[2], s.v_nb[3], s.out_nb[3], s.has_mask ? s.mask_nb[3] : 0}) {
        if (nb % 4 != 0) return no("an operand's head or sequence stride of " + std::to_string(nb) + " bytes is not whole words");
    }
    const int64_t blk = d.attention_kv_block;
    if (blk * (s.k_nb[1] / 4) > static_cast<int64_t>(d.stride_max) || blk * (s.v_nb[1] / 4) > static_cast<int64_t>(d.stride_max)) {
        return no("a block of K or V rows (" + std::to_string(blk) + " rows) steps past a BD's iteration stride");
    }
    if (s.d > static_cast<int64_t>(d.wrap_max) || s.n_head / s.n_head_kv > static_cast<int64_t>(d.wrap_max)) {
        return no("head dim " + std::to_string(s.d) + " or " + std::to_string(s.n_head / s.n_head_kv) + " heads per KV head pass a BD's wrap");
    }
    return true;
}

bool attention_slopes_layout(const DesignDescription & d, const std::string & family, int64_t head_dim, int64_t n_head,
                             int64_t n_head_kv, AttentionSlopesLayout & out, std::string & err) {
    const DesignDescription::AttentionObjects * o = d.attention_objects_of(family, static_cast<int>(head_dim));
    if (o == nullptr || n_head_kv < 1 || n_head % n_head_kv != 0) {
        err = "the attention design has no kv object for family " + family + " at head dim " + std::to_string(head_dim);
        return false;
    }
    out.per_kv_head = d.attention_max_rows + n_head / n_head_kv;
    const uint64_t table = static_cast<uint64_t>(n_head_kv * out.per_kv_head) * sizeof(float);
    out.zeros_offset = (table + 63) / 64 * 64;
    out.zeros_bytes = std::max(o->kv, o->kv_decode);  // the largest kv object of any layout
    out.steps_offset = out.zeros_offset + out.zeros_bytes;
    out.bytes = out.steps_offset;
    return true;
}

namespace {

// The operands a BD can name, in the traffic's order.
enum Op { kQ, kK, kV, kMask, kOut, kSlopes, kPartials, kOps };
const char * const kOpNames[kOps] = {"q", "k", "v", "mask", "out", "slopes", "partials"};
// What a BD's bytes count as in the traffic.
enum Use { uQ, uSlopes, uSteps, uK, uV, uMask, uFiller, uPartialsRead, uOut, uPartialsWritten, uDiscarded, kUses };
const char * const kUseNames[kUses] = {"q",      "slopes",        "steps", "k",         "v", "mask", "filler", "partials_read",
                                       "out",    "partials_written", "discarded"};

// One BD of a chain: its pattern in 32-bit words over operand `op`, `offset` bytes in.
struct BdSpec {
    control::ShimBdPattern pattern;
    Op                     op = kQ;
    uint64_t               offset = 0;
    Use                    use = uQ;
    const char *           what = "";
};

BdSpec linear(Op op, uint64_t offset, uint64_t bytes, Use use, const char * what) {
    BdSpec b;
    b.pattern.sizes = {static_cast<uint32_t>(bytes / 4), 1, 1};
    b.op = op;
    b.offset = offset;
    b.use = use;
    b.what = what;
    return b;
}

// A task's query rows as BD runs (design.py row_runs): per token its consecutive heads, whole tokens of
// all the KV head's heads merged into one run of tokens.
struct Run {
    int64_t token, head, heads, tokens;
};
std::vector<Run> row_runs(int64_t ratio, int64_t row0, int64_t rows) {
    std::vector<Run> per_token;
    for (int64_t i = row0; i < row0 + rows; ++i) {
        const int64_t t = i / ratio, h = i % ratio;
        if (!per_token.empty() && per_token.back().token == t) {
            ++per_token.back().heads;
        } else {
            per_token.push_back({t, h, 1, 1});
        }
    }
    std::vector<Run> runs;
    for (const Run & r : per_token) {
        const bool whole = r.head == 0 && r.heads == ratio;
        if (whole && !runs.empty() && runs.back().head == 0 && runs.back().heads == ratio) {
            ++runs.back().tokens;
        } else {
            runs.push_back(r);
        }
    }
    return runs;
}

// Blocks [first, first + n) of part i: the first blocks % parts parts one block longer.
struct PartRange {
    int64_t first, n;
};
PartRange part_range(int64_t blocks, int64_t parts, int64_t i) {
    return {blocks / parts * i + std::min(i, blocks % parts), blocks / parts + (i < blocks % parts ? 1 : 0)};
}

class Builder {
public:
    Builder(const DesignDescription & d, const AttentionShape & s, AttentionSequence & out) : d_(d), s_(s), out_(out) {}

    bool build();

private:
    struct Task {
        bool    valid = false;
        int64_t seq = 0, kv = 0, chunk = 0, row0 = 0, rows = 0, part = 0;
    };
    // The (task, part) pair core `row` of `column` takes in `round` (design.py pair_of): the round's cores,
    // column by column, take the pairs in order, so a task's parts sit on consecutive cores.
    Task task(int64_t round, int column, int row) const;
    bool fail(std::string why) {
        out_.error = std::move(why);
        return false;
    }
    bool stride_words(int64_t bytes, const char * what, uint32_t & words);
    // Emits one phase: per column its chain (split into tasks of at most 16 BDs when `may_split`, else
    // refused past 16; an empty chain: the column takes no part), each task pushed repeats[column] + 1
    // times (`repeat` + 1 for every column), then a sync on every taking column's channel.
    bool phase(const std::vector<std::vector<BdSpec>> & chains, bool mm2s, const std::vector<uint32_t> & repeats, bool may_split);
    bool phase(const std::vector<std::vector<BdSpec>> & chains, bool mm2s, uint32_t repeat, bool may_split) {
        return phase(chains, mm2s, std::vector<uint32_t>(static_cast<size_t>(columns_), repeat), may_split);
    }
    // The blocks, counted from block 0, that task `t` computes: up to the last one a visible position of its
    // tokens lies in (every block without a profile).
    int64_t need(const Task & t) const;
    // The block steps core `row` of `column` computes in `round`: its part's blocks below its task's need.
    int64_t own_steps(int64_t round, int column, int row) const;
    void reach(Op op, const BdSpec & b, uint32_t executions);

    const DesignDescription & d_;
    const AttentionShape &    s_;
    AttentionSequence &       out_;
    ShimTaskEmitter           e_;
    const FifoDesc *          in_ = nullptr;
    const FifoDesc *          drain_ = nullptr;
    std::vector<uint32_t>     ids_;
    int                       args_[kOps] = {};
    uint64_t                  use_bytes_[kUses] = {};
    uint64_t                  reach_[kOps] = {};
    int64_t                   mask_tokens_ = 0;  // the mask rows a kv object carries (the layout's task_tokens)
    int64_t                   ratio_ = 1, chunks_ = 0, chunk_rows_ = 0, groups_ = 0, blocks_ = 0, parts_ = 1, per_round_ = 0;
    // The tasks in chunk-major order (a round holds a few chunks of every KV head and sequence, whose needs
    // under a causal mask are nearly equal), else chunk fastest (a round holds consecutive chunks of one).
    bool                      chunk_major_ = false;
    int                       columns_ = 0;
    uint64_t                  kv_bytes_ = 0, state_bytes_ = 0, row_bytes_ = 0;
};

Builder::Task Builder::task(int64_t round, int column, int row) const {
    Task t;
    const int64_t i = column * d_.attention_cores_per_column + row;
    const int64_t g = round * per_round_ + i / parts_;
    if (i / parts_ >= per_round_ || g >= groups_) return t;
    t.valid = true;
    t.part = i % parts_;
    if (chunk_major_) {
        const int64_t shared = s_.n_seq * s_.n_head_kv;  // the tasks of one chunk index
        t.chunk = g / shared;
        t.kv = (g % shared) % s_.n_head_kv;
        t.seq = (g % shared) / s_.n_head_kv;
    } else {
        t.chunk = g % chunks_;
        t.kv = (g / chunks_) % s_.n_head_kv;
        t.seq = g / (chunks_ * s_.n_head_kv);
    }
    t.row0 = t.chunk * chunk_rows_;
    t.rows = std::min(chunk_rows_, ratio_ * s_.n_tokens - t.row0);
    return t;
}

bool Builder::stride_words(int64_t bytes, const char * what, uint32_t & words) {
    if (bytes <= 0 || bytes % 4 != 0 || bytes / 4 > static_cast<int64_t>(d_.stride_max)) {
        return fail(std::string(what) + " stride of " + std::to_string(bytes) + " bytes is not a whole number of words a BD steps (at most " +
                    std::to_string(d_.stride_max) + " words)");
    }
    words = static_cast<uint32_t>(bytes / 4);
    return true;
}

void Builder::reach(Op op, const BdSpec & b, uint32_t executions) {
    // The last word the pattern touches over its iterations (every execution past them wraps).
    const auto & p = b.pattern;
    uint64_t last = 0;
    for (int i = 0; i < 3; ++i) last += static_cast<uint64_t>(p.sizes[i] - 1) * (p.sizes[i] > 1 ? p.strides[i] : 0);
    const uint32_t iters = std::min(p.iterations, executions);
    last += static_cast<uint64_t>(iters - 1) * p.iteration_stride;
    reach_[op] = std::max(reach_[op], b.offset + 4 * (last + 1));
}

int64_t Builder::need(const Task & t) const {
    if (s_.visible.empty()) return blocks_;
    const int64_t t0 = t.row0 / ratio_, t1 = (t.row0 + t.rows - 1) / ratio_;
    const int64_t ms = t.seq % s_.mask_seqs;
    int64_t most = 0;
    for (int64_t tok = t0; tok <= t1; ++tok) {
        most = std::max<int64_t>(most, s_.visible[static_cast<size_t>(ms * s_.n_tokens + tok)]);
    }
    const int64_t blk = d_.attention_kv_block;
    return std::min(blocks_, (most + blk - 1) / blk);
}

int64_t Builder::own_steps(int64_t round, int column, int row) const {
    const Task t = task(round, column, row);
    if (!t.valid) return 0;
    const PartRange pr = part_range(blocks_, parts_, t.part);
    return std::clamp<int64_t>(need(t) - pr.first, 0, pr.n);
}

bool Builder::phase(const std::vector<std::vector<BdSpec>> & chains, bool mm2s, const std::vector<uint32_t> & repeats, bool may_split) {
    const FifoDesc & f = mm2s ? *in_ : *drain_;
    const size_t per_task = ids_.size();
    size_t longest = 0;
    for (const auto & c : chains) longest = std::max(longest, c.size());
    if (!may_split && longest > per_task) {
        return fail("a block step's chain of " + std::to_string(longest) + " BDs passes the shim's " + std::to_string(per_task));
    }
    for (size_t from = 0; from < longest; from += per_task) {
        std::vector<int> pushed;
        for (int c = 0; c < columns_; ++c) {
            const auto & chain = chains[static_cast<size_t>(c)];
            if (from >= chain.size()) continue;
            const uint32_t repeat = repeats[static_cast<size_t>(c)];
            const size_t n = std::min(per_task, chain.size() - from);
            for (size_t i = 0; i < n; ++i) {
                const BdSpec & b = chain[from + i];
                control::ShimBdOrError bd = control::shim_bd_from_pattern(b.pattern);
                if (bd.ok() && i + 1 < n) {
                    bd.bd.use_next_bd = true;
                    bd.bd.next_bd = ids_[i + 1];
                }
                if (!e_.bd(static_cast<uint32_t>(c), ids_[i], bd, args_[b.op], b.offset, std::string(b.what) + " of column " + std::to_string(c))) {
                    return fail(e_.error);
                }
                use_bytes_[b.use] += control::shim_bd_execution_bytes(bd.bd) * (repeat + 1);
                reach(b.op, b, repeat + 1);
            }
            e_.push(static_cast<uint32_t>(c), f, ids_[0], true, repeat);
            pushed.push_back(c);
        }
        for (int c : pushed) {
            e_.stream.ops.push_back(control::Sync{static_cast<uint32_t>(c), static_cast<uint32_t>(d_.shim_row), mm2s ? 1u : 0u,
                                                  static_cast<uint32_t>(f.shim_channel), 1, 1});
            ++out_.syncs;
        }
    }
    return true;
}

bool Builder::build() {
    out_.family = d_.family_of(s_.contract);
    const int contract = d_.contract_index(out_.family, s_.contract);
    if (!d_.attention_movement || contract < 0 || d_.layouts.empty()) {
        return fail("design " + d_.design + " has no attention program " + s_.contract);
    }
    if (!attention_shape_fits(d_, s_, out_.error)) return false;
    const LayoutDesc * layout = attention_layout(d_, s_, out_.error);
    if (layout == nullptr) return false;
    const LayoutDesc & L = *layout;
    out_.layout = L.name;
    mask_tokens_ = L.task_tokens > 0 ? L.task_tokens : d_.attention_max_rows;
    for (const FifoDesc & f : L.fifos) {
        if (f.from == "shim" && f.shim_channel >= 0) in_ = &f;
        if (f.to == "shim" && f.shim_channel >= 0) drain_ = &f;
    }
    const std::vector<uint32_t> * ids = d_.bd_slots.empty() ? nullptr : d_.bd_slots.front().ids("phase");
    if (in_ == nullptr || drain_ == nullptr || ids == nullptr || ids->empty()) {
        return fail("design " + d_.design + " has no shim input and drain FIFO or no BD ids of a phase");
    }
    ids_ = *ids;
    for (int o = 0; o < kOps; ++o) {
        args_[o] = d_.operand_arg(kOpNames[o]);
        if (args_[o] < 0) return fail("design " + d_.design + " has no operand " + kOpNames[o]);
    }
    static const char * const kWords[] = {"rounds", "tasks", "first_chunk", "chunk_step", "chunks", "chunk_rows", "last_rows", "part",
                                          "parts", "block0", "n_kv", "scale", "state_steps", "mask_ratio"};
    int word[std::size(kWords)];
    for (size_t i = 0; i < std::size(kWords); ++i) {
        word[i] = d_.rtp_word(kWords[i]);
        if (word[i] < 0) return fail(std::string("design ") + d_.design + " has no RTP word " + kWords[i]);
    }

    // The shape.
    const AttentionShape & s = s_;
    const DesignDescription::AttentionObjects * objects = d_.attention_objects_of(out_.family, static_cast<int>(s.d));
    if (objects == nullptr || d_.kernel_stack(out_.family, static_cast<int>(s.d)) == nullptr) {
        return fail("the design has no xclbin of family " + out_.family + " for head dim " + std::to_string(s.d));
    }
    out_.tile = static_cast<int>(s.d);
    kv_bytes_ = d_.unit_bytes(out_.family, attention_kv_unit(L), static_cast<int>(s.d));
    state_bytes_ = objects->state;
    row_bytes_ = out_.family == "q8_0" ? static_cast<uint64_t>(s.d / 32 * 34) : static_cast<uint64_t>(2 * s.d);
    const int64_t blk = d_.attention_kv_block, max_rows = d_.attention_max_rows, cpc = d_.attention_cores_per_column;
    if (row_bytes_ % 4 != 0 || 4 * s.d * max_rows + 4 * max_rows + 8 > static_cast<int64_t>(kv_bytes_) ||
        2 * blk * row_bytes_ + 2 * blk * mask_tokens_ > kv_bytes_ || state_bytes_ > kv_bytes_) {
        return fail("the description's kv object does not hold a q step (with its step words), a block step and a state");
    }
    if (!attention_slopes_layout(d_, out_.family, s.d, s.n_head, s.n_head_kv, out_.slopes, out_.error)) return false;

    // The split (the engine's flash_attn_split over the whole array) and the placement.
    ratio_ = s.n_head / s.n_head_kv;
    const int64_t group_rows = ratio_ * s.n_tokens;
    // The split over the columns the shape asks for (design.py --cols, --max-cols), else the whole array's:
    // the engine's flash_attn_split, whose bits the stream gives.
    const int64_t usable = s.columns > 0 ? s.columns : s.max_columns > 0 ? std::min(s.max_columns, d_.max_columns) : d_.max_columns;
    const int64_t cores = usable * cpc;
    chunks_ = (group_rows + max_rows - 1) / max_rows;
    chunk_rows_ = (group_rows + chunks_ - 1) / chunks_;
    groups_ = s.n_seq * s.n_head_kv * chunks_;
    blocks_ = (s.n_kv + blk - 1) / blk;
    parts_ = attention_parts(groups_, blocks_, cores);  // flash_attn_split's
    const int64_t fill = (groups_ * parts_ + cpc - 1) / cpc;  // the columns the pairs fill
    columns_ = s.columns > 0 ? s.columns : static_cast<int>(std::min<int64_t>(usable, fill));
    if (columns_ > d_.max_columns) return fail(std::to_string(columns_) + " columns: the design has " + std::to_string(d_.max_columns));
    per_round_ = columns_ * cpc / parts_;
    const int64_t rounds = (groups_ + per_round_ - 1) / per_round_;
    // Chunk-major where the core's chunk counting holds it (it adds chunk_step each round): a round of
    // per_round tasks then spans whole chunk indices. The phases sync every column, so a round of chunks of
    // like need (a causal mask) ends sooner than one of a KV head's consecutive chunks.
    const int64_t shared = s.n_seq * s.n_head_kv;
    chunk_major_ = rounds > 1 && per_round_ % shared == 0;
    const int64_t steps = part_range(blocks_, parts_, 0).n;
    const int64_t spo = static_cast<int64_t>(kv_bytes_ / state_bytes_);
    const int64_t state_steps = parts_ == 1 ? 0 : (parts_ + spo - 1) / spo;
    const int64_t last_rows = group_rows - (chunks_ - 1) * chunk_rows_;
    out_.rounds = rounds;
    out_.chunk_rows = chunk_rows_;
    out_.parts = parts_;
    out_.steps = steps;
    out_.state_steps = state_steps;
    out_.partials_bytes = static_cast<uint64_t>(columns_) * 8 * state_bytes_;
    out_.traffic.columns_used = columns_;

    // Strides in words.
    uint32_t q_token = 0, q_head = 0, k_row = 0, v_row = 0, mask_row = 0, out_head = 0, out_token = 0;
    if (!stride_words(s.q_nb[1], "q's token", q_token) || !stride_words(s.q_nb[2], "q's head", q_head) ||
        !stride_words(s.k_nb[1], "k's row", k_row) || !stride_words(s.v_nb[1], "v's row", v_row) ||
        !stride_words(s.out_nb[1], "out's head", out_head) || !stride_words(s.out_nb[2], "out's token", out_token) ||
        (s.has_mask && !stride_words(s.mask_nb[1], "the mask's row", mask_row))) {
        return false;
    }

    // 1. The RTP words and the barrier of every core of the used columns.
    const int64_t first_row = d_.first_core_row;
    for (int c = 0; c < columns_; ++c) {
        for (int r = 0; r < cpc; ++r) {
            const Task first = task(0, c, r);
            const bool active = first.valid;
            const int64_t part = first.part;
            int64_t tasks = 0;
            for (int64_t k = 0; k < rounds; ++k) tasks += task(k, c, r).valid ? 1 : 0;
            const PartRange pr = active ? part_range(blocks_, parts_, part) : PartRange{0, 0};
            const int64_t slot = (c * cpc + r) / parts_;
            const int64_t first_chunk = chunk_major_ ? slot / shared : slot % chunks_;
            const int64_t chunk_step = chunk_major_ ? per_round_ / shared : per_round_ % chunks_;
            const int64_t values[] = {rounds,      tasks,   first_chunk, chunk_step, chunks_, chunk_rows_,
                                      last_rows,   active ? part : 0, parts_, pr.first, s.n_kv, 0, state_steps, s.has_mask ? ratio_ : 0};
            std::vector<uint32_t> rtp(static_cast<size_t>(d_.rtp_word_count), 0);
            for (size_t i = 0; i < std::size(kWords); ++i) {
                if (values[i] < 0 || values[i] > static_cast<int64_t>(d_.rtp_word_max)) {
                    return fail(std::string("RTP word ") + kWords[i] + " of " + std::to_string(values[i]) + " passes the core's int32 words");
                }
                rtp[static_cast<size_t>(word[i])] = static_cast<uint32_t>(values[i]);
            }
            rtp[static_cast<size_t>(word[11])] = s.scale_bits;
            rtp[static_cast<size_t>(d_.rtp_contract)] = static_cast<uint32_t>(contract);
            rtp[static_cast<size_t>(d_.rtp_version)] = d_.rtp_layout_version;
            const uint32_t row = static_cast<uint32_t>(first_row + r);
            e_.stream.ops.push_back(control::BlockWrite{control::tile_address(static_cast<uint32_t>(c), row, d_.rtp_core_address), rtp});
            e_.stream.ops.push_back(control::Write32{
                control::tile_address(static_cast<uint32_t>(c), row, control::core_lock_value_offset(d_.barrier_lock)), d_.barrier_value});
        }
    }
    // The step words: per round and core its column's block steps (the most of its four cores') and its own.
    const uint64_t cores_used = static_cast<uint64_t>(columns_) * static_cast<uint64_t>(cpc);
    out_.step_words.assign(static_cast<size_t>(rounds) * cores_used * 2, 0);
    std::vector<int64_t> calls(cores_used, 0);
    // Core (c, r)'s place among a round's cores: its two step words are step_words[2 * it], [2 * it + 1].
    auto core_of_round = [&](int64_t k, int c, int r) {
        return static_cast<size_t>(k) * cores_used + static_cast<size_t>(c * cpc + r);
    };
    for (int64_t k = 0; k < rounds; ++k) {
        int64_t most = 0;
        for (int c = 0; c < columns_; ++c) {
            const size_t first = core_of_round(k, c, 0);
            int64_t column = 0;
            for (int r = 0; r < cpc; ++r) {
                const int64_t own = own_steps(k, c, r);
                out_.step_words[2 * (first + r) + 1] = static_cast<uint32_t>(own);
                calls[static_cast<size_t>(c * cpc + r)] += own;
                column = std::max(column, own);
            }
            for (int r = 0; r < cpc; ++r) out_.step_words[2 * (first + r)] = static_cast<uint32_t>(column);
            most = std::max(most, column);
        }
        out_.lockstep_blocks += most;
    }
    out_.traffic.calls_per_core = calls.empty() ? 0 : *std::max_element(calls.begin(), calls.end());
    out_.slopes.bytes = out_.slopes.steps_offset + 4 * out_.step_words.size();

    const uint64_t zeros = out_.slopes.zeros_offset;
    const uint64_t q_bytes = static_cast<uint64_t>(4 * s.d);
    auto filler = [&](uint64_t bytes, const char * what) { return linear(kSlopes, zeros, bytes, uFiller, what); };
    // 2. The rounds.
    for (int64_t k = 0; k < rounds; ++k) {
        // The q step: the slopes, the query rows, then at the end of the largest task's rows the core's two
        // step words (an idle core's too: it passes over its column's block steps).
        const uint64_t q_words_at = 4 * static_cast<uint64_t>(max_rows) + static_cast<uint64_t>(max_rows) * q_bytes;
        const uint64_t q_tail = kv_bytes_ - q_words_at - 8;
        std::vector<std::vector<BdSpec>> chains(static_cast<size_t>(columns_));
        for (int c = 0; c < columns_; ++c) {
            auto & chain = chains[static_cast<size_t>(c)];
            for (int r = 0; r < cpc; ++r) {
                const Task t = task(k, c, r);
                const BdSpec step_words = linear(kSlopes, out_.slopes.steps_offset + 8 * static_cast<uint64_t>(core_of_round(k, c, r)),
                                                 8, uSteps, "step words");
                if (!t.valid) {
                    chain.push_back(filler(q_words_at, "a q step's filler"));
                    chain.push_back(step_words);
                    if (q_tail > 0) chain.push_back(filler(q_tail, "a q step's filler"));
                    continue;
                }
                chain.push_back(linear(kSlopes, static_cast<uint64_t>(t.kv * out_.slopes.per_kv_head + t.row0 % ratio_) * 4,
                                       static_cast<uint64_t>(4 * max_rows), uSlopes, "slopes"));
                for (const Run & run : row_runs(ratio_, t.row0, t.rows)) {
                    BdSpec b;
                    b.pattern.sizes = {static_cast<uint32_t>(s.d), static_cast<uint32_t>(run.heads), static_cast<uint32_t>(run.tokens)};
                    b.pattern.strides = {1, q_head, q_token};
                    b.op = kQ;
                    b.offset = static_cast<uint64_t>(run.token * s.q_nb[1] + (t.kv * ratio_ + run.head) * s.q_nb[2] + t.seq * s.q_nb[3]);
                    b.use = uQ;
                    b.what = "query rows";
                    chain.push_back(b);
                }
                const uint64_t rows_gap = static_cast<uint64_t>(max_rows - t.rows) * q_bytes;
                if (rows_gap > 0) chain.push_back(filler(rows_gap, "a q step's filler"));
                chain.push_back(step_words);
                if (q_tail > 0) chain.push_back(filler(q_tail, "a q step's filler"));
            }
            out_.q_chain = std::max<int64_t>(out_.q_chain, static_cast<int64_t>(chain.size()));
        }
        if (!phase(chains, true, 0, true)) return false;

        // The block steps: per column its own count this round (a column of none takes no part), one chain
        // per column repeated over up to iteration_max steps a task.
        const int64_t per_task = std::max<uint32_t>(1, std::min<uint32_t>(d_.iteration_max, d_.repeat_max + 1));
        std::vector<int64_t> column_steps(static_cast<size_t>(columns_), 0);
        for (int c = 0; c < columns_; ++c) {
            column_steps[static_cast<size_t>(c)] = out_.step_words[2 * core_of_round(k, c, 0)];
        }
        const int64_t most = *std::max_element(column_steps.begin(), column_steps.end());
        for (int64_t s0 = 0; s0 < most; s0 += per_task) {
            std::vector<uint32_t> repeats(static_cast<size_t>(columns_), 0);
            for (int c = 0; c < columns_; ++c) {
                auto & chain = chains[static_cast<size_t>(c)];
                chain.clear();
                const int64_t n = std::min(per_task, column_steps[static_cast<size_t>(c)] - s0);
                if (n <= 0) continue;
                repeats[static_cast<size_t>(c)] = static_cast<uint32_t>(n - 1);
                for (int r = 0; r < cpc; ++r) {
                    const Task t = task(k, c, r);
                    const int64_t own = out_.step_words[2 * core_of_round(k, c, r) + 1];
                    if (!t.valid || own == 0) {
                        chain.push_back(filler(kv_bytes_, "a block step's filler"));
                        continue;
                    }
                    const PartRange pr = part_range(blocks_, parts_, t.part);
                    // Steps past the core's own blocks reread them: the BD's iteration wraps.
                    const int64_t base = pr.first + (s0 < own ? s0 : 0);
                    const uint32_t iters = static_cast<uint32_t>(s0 < own ? std::min(n, own - s0) : 1);
                    const int64_t kv_seq = t.seq / (s.n_seq / s.n_seq_kv);
                    for (const auto & [op, row, nb, use, what] :
                         {std::tuple<Op, uint32_t, const int64_t *, Use, const char *>{kK, k_row, s.k_nb, uK, "K rows"},
                          std::tuple<Op, uint32_t, const int64_t *, Use, const char *>{kV, v_row, s.v_nb, uV, "V rows"}}) {
                        BdSpec b;
                        b.pattern.sizes = {static_cast<uint32_t>(row_bytes_ / 4), static_cast<uint32_t>(blk), 1};
                        b.pattern.strides = {1, row, 0};
                        b.pattern.iterations = iters;
                        b.pattern.iteration_stride = static_cast<uint32_t>(blk) * row;
                        b.op = op;
                        b.offset = static_cast<uint64_t>(base * blk * nb[1] + t.kv * nb[2] + kv_seq * nb[3]);
                        b.use = use;
                        b.what = what;
                        chain.push_back(b);
                    }
                    // Past the mask rows, the object's tail (a decode layout's object holds as many states as
                    // the attention layout's, which a block step does not fill).
                    const uint64_t tail = kv_bytes_ - static_cast<uint64_t>(2 * blk) * row_bytes_ - static_cast<uint64_t>(2 * blk * mask_tokens_);
                    if (!s.has_mask) {
                        chain.push_back(filler(static_cast<uint64_t>(2 * blk * mask_tokens_) + tail, "the mask rows' zeros"));
                        continue;
                    }
                    // One mask row per token of the task, widened by the core.
                    const int64_t t0 = t.row0 / ratio_, tokens = (t.row0 + t.rows - 1) / ratio_ - t0 + 1;
                    BdSpec m;
                    m.pattern.sizes = {static_cast<uint32_t>(blk / 2), static_cast<uint32_t>(tokens), 1};
                    m.pattern.strides = {1, mask_row, 0};
                    m.pattern.iterations = iters;
                    m.pattern.iteration_stride = static_cast<uint32_t>(blk / 2);
                    m.op = kMask;
                    m.offset = static_cast<uint64_t>(t0 * s.mask_nb[1] + (t.seq % s.mask_seqs) * s.mask_nb[3] + base * blk * 2);
                    m.use = uMask;
                    m.what = "mask rows";
                    chain.push_back(m);
                    if (tokens > mask_tokens_) return fail("a task of " + std::to_string(tokens) + " tokens in layout " + L.name);
                    const uint64_t rest = static_cast<uint64_t>((mask_tokens_ - tokens) * blk * 2) + tail;
                    if (rest > 0) chain.push_back(filler(rest, "the mask rows' filler"));
                }
                out_.block_chain = std::max<int64_t>(out_.block_chain, static_cast<int64_t>(chain.size()));
            }
            if (!phase(chains, true, repeats, false)) return false;
        }

        // The scratch: the partial state of core i (column x 4 + row) at state i, so a task's parts' states
        // are consecutive wherever its cores sit; then the cores' discard slots.
        const auto discard = [&](int c, int r, uint64_t bytes) {
            return linear(kPartials, (cores_used + static_cast<uint64_t>(c * cpc + r)) * state_bytes_, bytes, uDiscarded, "discarded bytes");
        };
        if (parts_ > 1) {
            // The partial states of the column's four cores, drained into the scratch; every column's drain
            // is synced before any state step reads (a task's parts may sit in two columns).
            for (int c = 0; c < columns_; ++c) {
                chains[static_cast<size_t>(c)] = {linear(kPartials, static_cast<uint64_t>(c * cpc) * state_bytes_, static_cast<uint64_t>(cpc) * state_bytes_,
                                                         uPartialsWritten, "partial states")};
            }
            if (!phase(chains, false, 0, true)) return false;
            for (int64_t j = 0; j < state_steps; ++j) {
                for (int c = 0; c < columns_; ++c) {
                    auto & chain = chains[static_cast<size_t>(c)];
                    chain.clear();
                    for (int r = 0; r < cpc; ++r) {
                        const Task t = task(k, c, r);
                        if (!t.valid || t.part != 0) {
                            chain.push_back(filler(kv_bytes_, "a state step's filler"));
                            continue;
                        }
                        const int64_t n = std::min(spo, parts_ - j * spo);
                        const uint64_t bytes = static_cast<uint64_t>(n) * state_bytes_;
                        chain.push_back(linear(kPartials, static_cast<uint64_t>(c * cpc + r + j * spo) * state_bytes_, bytes, uPartialsRead,
                                               "partial states"));
                        if (bytes < kv_bytes_) chain.push_back(filler(kv_bytes_ - bytes, "a state step's filler"));
                    }
                }
                if (!phase(chains, true, 0, true)) return false;
            }
        }
        // The drain: the finished rows, every other byte discarded.
        for (int c = 0; c < columns_; ++c) {
            auto & chain = chains[static_cast<size_t>(c)];
            chain.clear();
            for (int r = 0; r < cpc; ++r) {
                const Task t = task(k, c, r);
                if (!t.valid || t.part != 0) {
                    chain.push_back(discard(c, r, state_bytes_));
                    continue;
                }
                for (const Run & run : row_runs(ratio_, t.row0, t.rows)) {
                    BdSpec b;
                    b.pattern.sizes = {static_cast<uint32_t>(s.d), static_cast<uint32_t>(run.heads), static_cast<uint32_t>(run.tokens)};
                    b.pattern.strides = {1, out_head, out_token};
                    b.op = kOut;
                    b.offset = static_cast<uint64_t>((t.kv * ratio_ + run.head) * s.out_nb[1] + run.token * s.out_nb[2] + t.seq * s.out_nb[3]);
                    b.use = uOut;
                    b.what = "finished rows";
                    chain.push_back(b);
                }
                const uint64_t rest = state_bytes_ - static_cast<uint64_t>(t.rows) * q_bytes;
                if (rest > 0) chain.push_back(discard(c, r, rest));
            }
        }
        if (!phase(chains, false, 0, true)) return false;
    }

    if (std::string why = control::validate(e_.stream); !why.empty()) return fail("control stream: " + why);
    out_.words = control::encode(e_.stream);
    for (int u = 0; u < kUses; ++u) out_.traffic.bytes.emplace_back(kUseNames[u], use_bytes_[u]);
    out_.traffic.read = use_bytes_[uQ] + use_bytes_[uSlopes] + use_bytes_[uSteps] + use_bytes_[uK] + use_bytes_[uV] + use_bytes_[uMask] + use_bytes_[uFiller] +
                        use_bytes_[uPartialsRead];
    out_.traffic.written = use_bytes_[uOut] + use_bytes_[uPartialsWritten] + use_bytes_[uDiscarded];
    out_.traffic.steps = rounds * (1 + state_steps) + out_.lockstep_blocks;
    for (int o = 0; o < kOps; ++o) out_.reach.emplace_back(kOpNames[o], reach_[o]);
    return true;
}

}  // namespace

bool attention_arguments(const Invocation & inv, const DesignDescription & d, const AttentionSequence & seq, AttentionArguments & out,
                         std::string & err) {
    out = AttentionArguments{};
    out.places.assign(d.operands.size(), ArgumentPlace{});
    std::vector<std::pair<int, uint64_t>> placed;  // per graph operand: its argument index in the design, its offset
    for (const Operand & o : inv.operands()) {
        if (std::strcmp(o.role, "mask_source") == 0) continue;  // read by the host, no argument of the kernel's
        const int at = d.operand_arg(o.role);
        if (at < 0 || o.slice.buffer == nullptr) {
            err = std::string("operand ") + o.role + " is not one of design " + d.design + "'s, or not in memory";
            return false;
        }
        const uint64_t need = std::max<uint64_t>(o.extent(), seq.reach_of(o.role));
        if (o.slice.offset + need > o.slice.buffer->size()) {
            err = std::string("operand ") + o.role + " holds " + std::to_string(o.slice.buffer->size() - o.slice.offset) +
                  " bytes from its base; the stream reads " + std::to_string(need) + " (a last block of KV rows is read whole)";
            return false;
        }
        size_t a = 0;
        while (a < out.args.size() && (o.written() || out.args[a].written || out.args[a].buffer != o.slice.buffer)) ++a;
        if (a == out.args.size()) out.args.push_back({o.slice.buffer, o.slice.offset, 0, o.written()});
        AttentionArgument & arg = out.args[a];
        const uint64_t end = std::max(arg.offset + arg.bytes, o.slice.offset + need);
        arg.offset = std::min<uint64_t>(arg.offset, o.slice.offset);
        arg.bytes = end - arg.offset;
        out.places[static_cast<size_t>(at)].arg = static_cast<uint32_t>(a);
        placed.emplace_back(at, o.slice.offset);
    }
    for (const auto & [at, offset] : placed) {
        ArgumentPlace & p = out.places[static_cast<size_t>(at)];
        p.offset = offset - out.args[p.arg].offset;
    }
    const uint32_t held = static_cast<uint32_t>(out.args.size());
    out.partials_at = (seq.slopes.bytes + 63) / 64 * 64;
    out.held_bytes = out.partials_at + seq.partials_bytes;
    out.args.push_back({nullptr, 0, out.held_bytes, false});
    if (out.args.size() > control::kFirmwareTranslatedArgs) {
        err = "its operands live in " + std::to_string(held) + " buffers (the written one apart), and with the slopes and the scratch the kernel " +
              "would take " + std::to_string(out.args.size()) + " buffer arguments: the firmware translates " +
              std::to_string(control::kFirmwareTranslatedArgs);
        return false;
    }
    out.places[static_cast<size_t>(d.operand_arg("slopes"))] = {held, 0};
    out.places[static_cast<size_t>(d.operand_arg("partials"))] = {held, out.partials_at};
    return true;
}

bool attention_host_bytes(const Invocation & inv, const AttentionSequence & seq, std::vector<uint8_t> & out, std::string & err) {
    if (!inv.host_operand("slopes", out, err)) return false;
    if (out.size() > seq.slopes.steps_offset || seq.slopes.bytes != seq.slopes.steps_offset + 4 * seq.step_words.size()) {
        err = "the slopes operand (" + std::to_string(out.size()) + " bytes) and the stream's step words (from byte " +
              std::to_string(seq.slopes.steps_offset) + ") do not fit one layout";
        return false;
    }
    out.resize(seq.slopes.bytes, 0);
    if (!seq.step_words.empty()) std::memcpy(out.data() + seq.slopes.steps_offset, seq.step_words.data(), 4 * seq.step_words.size());
    return true;
}

AttentionSequence build_attention_sequence(const DesignDescription & d, const AttentionShape & s) {
    AttentionSequence out;
    Builder b(d, s, out);
    if (!b.build()) {
        out.words.clear();
        if (out.error.empty()) out.error = "the attention stream could not be built";
    }
    return out;
}

}  // namespace xdna
