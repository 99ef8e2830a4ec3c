#include "runtime/rope-sequence.h"

#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "runtime/shim-task-emitter.h"
#include "xdna_aie/rope_tiles.h"

#include <algorithm>

namespace xdna {

bool rope_shape_of(const Invocation & inv, const DesignDescription & d, RopeShape & out, std::string & err) {
    out = RopeShape{};
    const RopeParams * p = std::get_if<RopeParams>(&inv.params);
    if (!d.rope_movement || inv.key.variant == nullptr || p == nullptr) {
        err = "design " + d.design + " is not a rope design, or the invocation is not a rope's";
        return false;
    }
    out.contract = inv.key.variant;
    out.tokens = p->n_tokens;
    out.heads = p->n_heads;
    out.ne0 = p->ne0;
    out.n_dims = p->angles.n_dims;
    out.x_head_stride = p->x_head_stride;
    out.x_token_stride = p->x_token_stride;
    out.y_head_stride = p->y_head_stride;
    out.y_token_stride = p->y_token_stride;
    return true;
}

namespace {

// A BD over `tokens` tokens x `heads` heads of rows of ne0 floats: the head row (d0), the heads (d1),
// the tokens (d2).
control::ShimBdOrError head_rows_bd(int64_t tokens, int64_t heads, int64_t ne0, int64_t head_stride, int64_t token_stride) {
    control::ShimBdPattern p;
    p.sizes = {static_cast<uint32_t>(ne0), static_cast<uint32_t>(heads), static_cast<uint32_t>(tokens)};
    p.strides = {1, static_cast<uint32_t>(heads > 1 ? head_stride : ne0), static_cast<uint32_t>(tokens > 1 ? token_stride : 0)};
    return control::shim_bd_from_pattern(p);
}

}  // namespace

RowsSequence build_rope_sequence(const DesignDescription & d, const RopeShape & s) {
    RowsSequence out;
    out.family = d.family_of(s.contract);
    const int contract = d.contract_index(out.family, s.contract);
    if (!d.rope_movement || contract < 0 || d.layouts.empty()) {
        out.error = "design " + d.design + " has no rope program " + s.contract;
        return out;
    }
    const LayoutDesc & L = d.layouts.front();
    out.layout = L.name;
    const FifoDesc * x_fifo = L.shim_fifo_of("x");
    const FifoDesc * cs_fifo = L.shim_fifo_of("cs");
    const FifoDesc * y_fifo = L.shim_fifo_of("y");
    const int tokens_word = d.rtp_word("tokens"), heads_word = d.rtp_word("heads");
    if (x_fifo == nullptr || cs_fifo == nullptr || y_fifo == nullptr || !x_fifo->shim_mm2s || !cs_fifo->shim_mm2s || y_fifo->shim_mm2s ||
        tokens_word < 0 || heads_word < 0) {
        out.error = "design " + d.design + " does not read x and cs and write y through the shim, or lacks its RTP words";
        return out;
    }
    if (s.tokens <= 0 || s.heads <= 0) {
        out.error = s.contract + " of " + std::to_string(s.tokens) + " tokens x " + std::to_string(s.heads) + " heads";
        return out;
    }
    // One object per head row and per angle row: the xclbin of the row's length.
    if (s.ne0 <= 0 || s.ne0 > (int64_t(1) << 20) || d.kernel_stack(out.family, static_cast<int>(s.ne0)) == nullptr) {
        out.error = "the design has no xclbin for head rows of " + std::to_string(s.ne0) + " values";
        return out;
    }
    out.tile = static_cast<int>(s.ne0);
    if (!xdna_aie::rope_row_fits(static_cast<int>(s.n_dims), out.tile)) {
        out.error = std::to_string(s.n_dims) + " rotated dims of " + std::to_string(s.ne0) +
                    ": the program rotates a multiple of 32 from dim 0 and copies a multiple of 16";
        return out;
    }
    for (const auto & [what, head_stride, token_stride] :
         {std::tuple<const char *, int64_t, int64_t>{"x", s.x_head_stride, s.x_token_stride},
          std::tuple<const char *, int64_t, int64_t>{"y", s.y_head_stride, s.y_token_stride}}) {
        if ((s.heads > 1 && (head_stride < s.ne0 || head_stride > static_cast<int64_t>(d.stride_max))) ||
            (s.tokens > 1 && (token_stride < 1 || token_stride > static_cast<int64_t>(d.stride_max)))) {
            out.error = std::string(what) + "'s strides (" + std::to_string(head_stride) + " between heads, " +
                        std::to_string(token_stride) + " between tokens, in floats) are not ones a BD takes for rows of " +
                        std::to_string(s.ne0) + " values (at most " + std::to_string(d.stride_max) + " words)";
            return out;
        }
    }
    // y's head rows must not overlap: the columns write them in no defined order. (x may: it is only read.)
    // Token-major rows (a token's heads, then the next token's) or head-major ones.
    const bool y_disjoint = s.tokens == 1 || s.heads == 1
                                ? s.tokens == 1 || s.y_token_stride >= s.ne0
                                : (s.y_token_stride >= (s.heads - 1) * s.y_head_stride + s.ne0) ||
                                      (s.y_head_stride >= (s.tokens - 1) * s.y_token_stride + s.ne0 && s.y_token_stride >= s.ne0);
    if (!y_disjoint) {
        out.error = "y's head rows overlap (" + std::to_string(s.y_head_stride) + " floats between heads, " +
                    std::to_string(s.y_token_stride) + " between tokens, rows of " + std::to_string(s.ne0) +
                    "): the columns would write them in no defined order";
        return out;
    }
    RowsShape words_of;  // the parameter block's words: n_dims
    words_of.contract = s.contract;
    words_of.words = {{"n_dims", static_cast<uint32_t>(s.n_dims)}};
    std::vector<uint32_t> base;
    if (!rows_rtp_words(d, words_of, {tokens_word, heads_word}, base, out.error)) {
        return out;
    }
    const int avail = s.columns > 0 ? s.columns : d.max_columns;
    if (avail > d.max_columns) {
        out.error = std::to_string(avail) + " columns: the design has " + std::to_string(d.max_columns);
        return out;
    }
    for (const BdSlot & slot : d.bd_slots) {
        for (const char * operand : {"x", "cs", "y"}) {
            if (slot.ids(operand) == nullptr || slot.ids(operand)->empty()) {
                out.error = "design " + d.design + ": a BD slot has no id for " + operand;
                return out;
            }
        }
    }

    // The grid: R token blocks x S segments of each token's heads, one column each.
    const RowsGrid grid = rows_grid(s.tokens, s.heads, avail);
    const int64_t R = grid.R, S = grid.S;
    const int cols = grid.columns();
    ShimTaskEmitter e;

    // 1. Runtime parameters and the barrier, per used column's core (matmul-sequence.cpp says why in this
    //    order): the words, then the barrier lock's value.
    for (int c = 0; c < cols; ++c) {
        const int64_t tokens = block_count(s.tokens, R, c / S), heads = block_count(s.heads, S, c % S);
        if (heads > static_cast<int64_t>(d.wrap_max) || tokens * heads > static_cast<int64_t>(d.rtp_word_max)) {
            out.error = "column " + std::to_string(c) + ": " + std::to_string(tokens) + " tokens x " + std::to_string(heads) +
                        " heads pass a BD's d1 wrap or the core's int32 words";
            return out;
        }
        out.traffic.calls_per_core = std::max(out.traffic.calls_per_core, tokens * heads);
        for (int r = 0; r < d.core_rows; ++r) {
            std::vector<uint32_t> rtp = base;
            rtp[d.rtp_contract] = static_cast<uint32_t>(contract);
            rtp[tokens_word] = static_cast<uint32_t>(tokens);
            rtp[heads_word] = static_cast<uint32_t>(heads);
            rtp[d.rtp_version] = d.rtp_layout_version;
            const uint32_t row = static_cast<uint32_t>(d.first_core_row + r);
            e.stream.ops.push_back(control::BlockWrite{control::tile_address(c, row, d.rtp_core_address), rtp});
            e.stream.ops.push_back(
                control::Write32{control::tile_address(c, row, control::core_lock_value_offset(d.barrier_lock)), d.barrier_value});
        }
    }
    out.traffic.columns_used = cols;
    out.traffic.bytes = {{"x", 0}, {"cs", 0}, {"y", 0}};
    const int x_arg = d.operand_arg("x"), cs_arg = d.operand_arg("cs"), y_arg = d.operand_arg("y");

    // 2. The steps: per column, a block of at most kRowsPerStep of its tokens.
    const int64_t steps = (block_count(s.tokens, R, 0) + kRowsPerStep - 1) / kRowsPerStep;
    out.traffic.steps = steps;
    auto sync_step = [&](int64_t step) {
        for (int c = 0; c < cols; ++c) {
            if (step * kRowsPerStep < block_count(s.tokens, R, c / S)) {
                e.stream.ops.push_back(control::Sync{static_cast<uint32_t>(c), static_cast<uint32_t>(d.shim_row), 0,
                                                     static_cast<uint32_t>(y_fifo->shim_channel), 1, 1});
            }
        }
    };
    for (int64_t step = 0; step < steps; ++step) {
        const BdSlot & slot = d.bd_slots[static_cast<size_t>(step) % d.bd_slots.size()];
        for (int c = 0; c < cols; ++c) {
            const int64_t block_tokens = block_count(s.tokens, R, c / S), done = step * kRowsPerStep;
            if (done >= block_tokens) {
                continue;
            }
            const int64_t n = std::min<int64_t>(kRowsPerStep, block_tokens - done);
            const int64_t t0 = block_first(s.tokens, R, c / S) + done;
            const int64_t h0 = block_first(s.heads, S, c % S), heads = block_count(s.heads, S, c % S);
            struct Task {
                const FifoDesc *       fifo;
                control::ShimBdOrError bd;
                uint64_t               offset;
                int                    arg, operand;
                const char *           name;
            };
            const Task tasks[] = {
                {x_fifo, head_rows_bd(n, heads, s.ne0, s.x_head_stride, s.x_token_stride),
                 static_cast<uint64_t>(t0 * s.x_token_stride + h0 * s.x_head_stride) * sizeof(float), x_arg, 0, "x"},
                {cs_fifo, rows_bd(n, s.ne0, s.ne0, out.tile), static_cast<uint64_t>(t0 * s.ne0) * sizeof(float), cs_arg, 1, "cs"},
                {y_fifo, head_rows_bd(n, heads, s.ne0, s.y_head_stride, s.y_token_stride),
                 static_cast<uint64_t>(t0 * s.y_token_stride + h0 * s.y_head_stride) * sizeof(float), y_arg, 2, "y"},
            };
            for (const Task & t : tasks) {
                const uint32_t id = slot.ids(t.name)->front();
                if (!e.bd(static_cast<uint32_t>(c), id, t.bd, t.arg, t.offset, std::string(t.name) + " rows")) {
                    out.error = e.error;
                    return out;
                }
                e.push(static_cast<uint32_t>(c), *t.fifo, id, !t.fifo->shim_mm2s, 0);
                const uint64_t b = control::shim_bd_execution_bytes(t.bd.bd);
                out.traffic.bytes[static_cast<size_t>(t.operand)].second += b;
                (t.fifo->shim_mm2s ? out.traffic.read : out.traffic.written) += b;
            }
        }
        if (step > 0) {
            sync_step(step - 1);
        }
    }
    if (steps > 0) {
        sync_step(steps - 1);
    }
    if (std::string why = control::validate(e.stream); !why.empty()) {
        out.error = "control stream: " + why;
        return out;
    }
    out.words = control::encode(e.stream);
    return out;
}

}  // namespace xdna
