#include "runtime/rows-sequence.h"

#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "runtime/norm-sequence.h"
#include "runtime/shim-task-emitter.h"

#include <algorithm>
#include <array>

namespace xdna {

control::ShimBdOrError rows_bd(int64_t rows, int64_t cols, int64_t stride, int tile) {
    // A row's segment is contiguous, so d0 may be any divisor of it: the tile, halved while it passes the
    // 10-bit d0 wrap (a tile of 1024 values as 2 x 512 words). A strided pattern needs the wraps; a
    // contiguous one is a plain length (shim_bd_from_pattern).
    int64_t d0 = tile;
    while (d0 > static_cast<int64_t>(control::ShimLimits::max_wrap) && d0 % 2 == 0) {
        d0 /= 2;
    }
    control::ShimBdPattern p;
    p.sizes = {static_cast<uint32_t>(d0), static_cast<uint32_t>(cols / d0), static_cast<uint32_t>(rows)};
    p.strides = {1, static_cast<uint32_t>(d0), static_cast<uint32_t>(rows > 1 ? stride : 0)};
    return control::shim_bd_from_pattern(p);
}

namespace {

// Whether shim FIFO `f` moves one value per row (a unit of fixed bytes: row_scale's w), not chunks of
// the row: its operand then has rows of that unit's bytes, and its BDs move one value per row.
bool moves_a_value_per_row(const DesignDescription & d, const FifoDesc & f, size_t * bytes = nullptr) {
    for (const DesignDescription::Unit & u : d.units) {
        if (u.name == f.unit && u.fixed) {
            if (bytes != nullptr) *bytes = u.bytes;
            return true;
        }
    }
    return false;
}

}  // namespace

uint64_t RowsTraffic::of(const std::string & operand) const {
    for (const auto & [name, b] : bytes) {
        if (name == operand) return b;
    }
    return 0;
}

bool rows_shape_of(const Invocation & inv, const DesignDescription & d, RowsShape & out, std::string & err) {
    out = RowsShape{};
    if (!d.rows_stream() || d.layouts.empty() || inv.key.variant == nullptr) {
        err = "design " + d.design + " is not a rows or norm design, or the invocation names no program";
        return false;
    }
    out.contract = inv.key.variant;
    const Operand * written = nullptr;
    for (const Operand & o : inv.operands()) {
        if (o.written()) {
            written = &o;
        }
    }
    if (written == nullptr || written->row_bytes % sizeof(float) != 0 || written->rows <= 0) {
        err = "the invocation writes no whole fp32 rows";
        return false;
    }
    out.rows = written->rows;
    out.cols = static_cast<int64_t>(written->row_bytes / sizeof(float));
    for (const FifoDesc & f : d.layouts.front().fifos) {
        if (f.shim_channel < 0) {
            continue;
        }
        const Operand * o = inv.operand(f.operand.c_str());
        if (o == nullptr && f.shim_mm2s && d.norm_movement) {
            continue;  // an input this program does not read (the norm without its weight): not moved
        }
        size_t value_bytes = 0;
        const bool per_row = moves_a_value_per_row(d, f, &value_bytes);
        if (o == nullptr || o->row_bytes != (per_row ? value_bytes : written->row_bytes) || o->row_stride % sizeof(float) != 0) {
            err = "operand '" + f.operand + "' of design " + d.design + " is missing or not rows of " +
                  (per_row ? "one value" : "the output's length");
            return false;
        }
        const bool one_row = o->rows == 1 && out.rows > 1 && f.shim_mm2s;
        if (!one_row && o->rows != out.rows) {
            err = "operand '" + f.operand + "' has " + std::to_string(o->rows) + " rows, the output " + std::to_string(out.rows);
            return false;
        }
        // One row: its stride never steps (the whole row, once); else the operand's own.
        const int64_t stride = one_row ? 0 : out.rows == 1 ? (per_row ? 1 : out.cols) : static_cast<int64_t>(o->row_stride / sizeof(float));
        out.operands.push_back({f.operand, stride});
    }
    out.words = inv.runtime_words();
    return true;
}

bool rows_rtp_words(const DesignDescription & d, const RowsShape & s, std::initializer_list<int> stream_words,
                    std::vector<uint32_t> & base, std::string & err) {
    base.assign(d.rtp_word_count, 0);
    std::vector<bool> given(d.rtp_word_count, false);
    given[d.rtp_contract] = given[d.rtp_version] = true;
    for (int w : stream_words) {
        given[w] = true;
    }
    for (const auto & [name, value] : s.words) {
        const int w = d.rtp_word(name);
        if (w < 0 || given[w]) {
            err = "RTP word '" + name + "' is not one design " + d.design + "'s core program takes from the invocation";
            return false;
        }
        if (!d.rtp_word_is_float(w) && value > d.rtp_word_max) {
            err = "RTP word '" + name + "' would be " + std::to_string(value) + ": the core program reads it as an int32";
            return false;
        }
        base[w] = value;
        given[w] = true;
    }
    for (int w = 0; w < d.rtp_word_count; ++w) {
        if (!given[w]) {
            err = "the invocation gives no value of RTP word '" + d.rtp_names[w] + "'";
            return false;
        }
    }
    return true;
}

int rows_tile_for(const DesignDescription & d, const std::string & family, int64_t cols) {
    int best = 0;
    for (const DesignDescription::KernelStack & k : d.kernel_stacks) {
        // A group is a chunk per core row (one chunk where the design has no cores: the gather).
        if (k.family == family && cols > 0 && cols % (static_cast<int64_t>(std::max(1, d.core_rows)) * k.tile_n) == 0) {
            best = std::max(best, k.tile_n);
        }
    }
    return best;
}

RowsSequence build_rows_sequence(const DesignDescription & d, const RowsShape & s) {
    if (d.norm_movement) {
        return build_norm_sequence(d, s);
    }
    RowsSequence out;
    out.family = d.family_of(s.contract);
    const int contract = d.contract_index(out.family, s.contract);
    if (contract < 0 || d.layouts.empty()) {
        out.error = "design " + d.design + " has no program " + s.contract;
        return out;
    }
    const LayoutDesc & L = d.layouts.front();
    out.layout = L.name;
    // The core's work: its kernel calls ("chunks"), or its rows and the chunks of each row's segment
    // ("rows", "row_chunks": a core program that holds a value per row).
    const int chunks_word = d.rtp_word("chunks"), rows_word = d.rtp_word("rows"), row_chunks_word = d.rtp_word("row_chunks");
    if (chunks_word < 0 && (rows_word < 0 || row_chunks_word < 0)) {
        out.error = "design " + d.design + " has neither a 'chunks' RTP word nor 'rows' and 'row_chunks'";
        return out;
    }
    if (s.rows <= 0 || s.cols <= 0) {
        out.error = s.contract + " of " + std::to_string(s.rows) + " x " + std::to_string(s.cols) + " values";
        return out;
    }
    // The parameter block's words (the scale's s and b), the same for every core.
    std::vector<uint32_t> base;
    if (!rows_rtp_words(d, s, chunks_word >= 0 ? std::initializer_list<int>{chunks_word} : std::initializer_list<int>{rows_word, row_chunks_word},
                        base, out.error)) {
        return out;
    }
    const int core_rows = d.core_rows;
    out.tile = rows_tile_for(d, out.family, s.cols);
    if (out.tile == 0) {
        out.error = "a row of " + std::to_string(s.cols) + " values is not a whole number of groups of " +
                    std::to_string(core_rows) + " chunks of any tile the design has an xclbin for";
        return out;
    }
    // Every shim FIFO's operand, with the invocation's stride for it.
    struct Moved {
        const FifoDesc * fifo;
        int64_t          stride;
        int              arg;
        bool             per_row;  // one value per row (moves_a_value_per_row), not the row's chunks
    };
    std::vector<Moved> moved;
    for (const FifoDesc & f : L.fifos) {
        if (f.shim_channel < 0) {
            continue;
        }
        auto it = std::find_if(s.operands.begin(), s.operands.end(), [&](const RowsOperand & o) { return o.name == f.operand; });
        if (it == s.operands.end() || d.operand_arg(f.operand) < 0) {
            out.error = "design " + d.design + " moves operand '" + f.operand + "', which the invocation does not give";
            return out;
        }
        const bool one_row = it->row_stride == 0;
        size_t value_bytes = 0;
        const bool per_row = moves_a_value_per_row(d, f, &value_bytes);
        if (per_row && value_bytes != sizeof(float)) {
            out.error = "design " + d.design + " moves " + f.operand + " as " + std::to_string(value_bytes) +
                        "-byte values per row: its BDs move one fp32 value (one word) per row";
            return out;
        }
        const int64_t row_len = per_row ? 1 : s.cols;
        if ((one_row && !f.shim_mm2s) || (per_row && !f.shim_mm2s) ||
            (!one_row && (it->row_stride < row_len || it->row_stride > static_cast<int64_t>(d.stride_max)))) {
            out.error = f.operand + "'s row stride " + std::to_string(it->row_stride) + " floats: rows of " + std::to_string(row_len) +
                        " values need one of at least that and at most " + std::to_string(d.stride_max) + " words" +
                        (f.shim_mm2s ? " (or 0: one row for every row)" : "");
            return out;
        }
        moved.push_back({&f, it->row_stride, d.operand_arg(f.operand), per_row});
        out.traffic.bytes.emplace_back(f.operand, 0);
    }
    // The grid: R row blocks x S segments of each row's groups, one column each.
    const int64_t groups = s.cols / (static_cast<int64_t>(core_rows) * out.tile);
    const int avail = s.columns > 0 ? s.columns : d.max_columns;
    if (avail > d.max_columns) {
        out.error = std::to_string(avail) + " columns: the design has " + std::to_string(d.max_columns);
        return out;
    }
    const RowsGrid grid = rows_grid(s.rows, groups, avail);
    const int64_t R = grid.R, S = grid.S;
    const int cols = grid.columns();
    ShimTaskEmitter e;

    // 1. Runtime parameters and the barrier, per core of a used column (matmul-sequence.cpp says why in
    //    this order): the words, then the barrier lock's value.
    for (int c = 0; c < cols; ++c) {
        const int64_t seg_chunks = block_count(groups, S, c % S) * core_rows;
        if (seg_chunks > static_cast<int64_t>(d.wrap_max)) {
            out.error = "a segment of " + std::to_string(seg_chunks) + " chunks: a BD's d1 wraps at " + std::to_string(d.wrap_max);
            return out;
        }
        const int64_t calls = block_count(s.rows, R, c / S) * block_count(groups, S, c % S);
        if (calls > static_cast<int64_t>(d.rtp_word_max)) {
            out.error = "RTP word 'chunks' of column " + std::to_string(c) + " would be " + std::to_string(calls) +
                        ": the core program reads it as an int32 (at most " + std::to_string(d.rtp_word_max) + ")";
            return out;
        }
        out.traffic.calls_per_core = std::max(out.traffic.calls_per_core, calls);
        for (int r = 0; r < core_rows; ++r) {
            std::vector<uint32_t> rtp = base;
            rtp[d.rtp_contract] = static_cast<uint32_t>(contract);
            if (chunks_word >= 0) {
                rtp[chunks_word] = static_cast<uint32_t>(calls);
            } else {
                rtp[rows_word] = static_cast<uint32_t>(block_count(s.rows, R, c / S));
                rtp[row_chunks_word] = static_cast<uint32_t>(block_count(groups, S, c % S));
            }
            rtp[d.rtp_version] = d.rtp_layout_version;
            const uint32_t row = static_cast<uint32_t>(d.first_core_row + r);
            e.stream.ops.push_back(control::BlockWrite{control::tile_address(c, row, d.rtp_core_address), rtp});
            e.stream.ops.push_back(
                control::Write32{control::tile_address(c, row, control::core_lock_value_offset(d.barrier_lock)), d.barrier_value});
        }
    }
    out.traffic.columns_used = cols;

    // 2. The steps: per column, a block of at most kRowsPerStep of its rows.
    const int64_t per_step = std::min<int64_t>(kRowsPerStep, static_cast<int64_t>(d.repeat_max) + 1);
    const int64_t steps = (block_count(s.rows, R, 0) + per_step - 1) / per_step;
    out.traffic.steps = steps;
    const FifoDesc * token_fifo = nullptr;
    for (const Moved & m : moved) {
        if (!m.fifo->shim_mm2s) {
            token_fifo = m.fifo;  // the output: its completion says the step's inputs were consumed too
        }
    }
    if (token_fifo == nullptr) {
        out.error = "design " + d.design + " has no output";
        return out;
    }
    auto sync_step = [&](int64_t step) {
        for (int c = 0; c < cols; ++c) {
            if (step * per_step < block_count(s.rows, R, c / S)) {
                e.stream.ops.push_back(control::Sync{static_cast<uint32_t>(c), static_cast<uint32_t>(d.shim_row), 0,
                                                     static_cast<uint32_t>(token_fifo->shim_channel), 1, 1});
            }
        }
    };
    for (int64_t step = 0; step < steps; ++step) {
        const BdSlot & slot = d.bd_slots[step % d.bd_slots.size()];
        for (int c = 0; c < cols; ++c) {
            const int64_t block_rows = block_count(s.rows, R, c / S);
            const int64_t done = step * per_step;
            if (done >= block_rows) {
                continue;
            }
            const int64_t n = std::min<int64_t>(per_step, block_rows - done);
            const int64_t r0 = block_first(s.rows, R, c / S) + done;
            const int64_t v0 = block_first(groups, S, c % S) * core_rows * out.tile;  // the segment's first value
            const int64_t seg_values = block_count(groups, S, c % S) * core_rows * out.tile;
            for (size_t i = 0; i < moved.size(); ++i) {
                const Moved & m = moved[i];
                const std::vector<uint32_t> * ids = slot.ids(m.fifo->operand);
                if (ids == nullptr || ids->empty()) {
                    out.error = "design " + d.design + ": a BD slot has no id for " + m.fifo->operand;
                    return out;
                }
                // A one-row operand is read again for each row: a queue-push repeat (a BD stride cannot
                // be 0, and a memory-tile FIFO hands each object on once).
                const bool one_row = m.stride == 0;
                // A value per row: the rows' values, one per row at its stride, whatever the segment.
                const auto bd = m.per_row ? rows_bd(one_row ? 1 : n, 1, m.stride, 1) : rows_bd(one_row ? 1 : n, seg_values, m.stride, out.tile);
                const uint64_t offset = static_cast<uint64_t>((one_row ? 0 : r0 * m.stride) + (m.per_row ? 0 : v0)) * sizeof(float);
                const std::string what = m.fifo->operand + (m.fifo->shim_mm2s ? " fill" : " drain");
                if (!e.bd(c, ids->front(), bd, m.arg, offset, what)) {
                    out.error = e.error;
                    return out;
                }
                // The rows BDs have no iteration dimension: every execution moves the whole pattern.
                const uint32_t repeat = one_row ? static_cast<uint32_t>(n - 1) : 0;
                e.push(c, *m.fifo, ids->front(), !m.fifo->shim_mm2s, repeat);
                const uint64_t b = control::shim_bd_execution_bytes(bd.bd) * (static_cast<uint64_t>(repeat) + 1);
                out.traffic.bytes[i].second += b;
                (m.fifo->shim_mm2s ? out.traffic.read : out.traffic.written) += b;
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
