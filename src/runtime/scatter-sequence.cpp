#include "runtime/scatter-sequence.h"

#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "runtime/shim-task-emitter.h"

#include <algorithm>
#include <unordered_set>

namespace xdna {

bool scatter_shape_of(const Invocation & inv, const DesignDescription & d, ScatterShape & out, std::string & err) {
    out = ScatterShape{};
    if (!d.scatter_movement || inv.key.variant == nullptr) {
        err = "design " + d.design + " is not a scatter design, or the invocation names no program";
        return false;
    }
    const Operand * x = inv.operand("x");
    const Operand * ids = inv.operand("ids");  // none: a CPY, the rows in order
    const Operand * y = inv.operand("y");
    if (x == nullptr || y == nullptr || x->slice.buffer == nullptr || y->slice.buffer == nullptr ||
        (ids != nullptr && ids->slice.buffer == nullptr)) {
        err = "a scatter invocation needs its x and y operands (and its ids, if any) in memory";
        return false;
    }
    if (x->row_bytes % sizeof(float) != 0 || x->row_stride % sizeof(float) != 0 || x->rows <= 0 || y->rows <= 0) {
        err = "the scatter's x is not rows of fp32";
        return false;
    }
    out.contract = inv.key.variant;
    out.rows = x->rows;
    out.cols = static_cast<int64_t>(x->row_bytes / sizeof(float));
    out.x_stride = static_cast<int64_t>(x->row_stride / sizeof(float));
    out.y_rows = y->rows;
    out.y_row_bytes = static_cast<int64_t>(y->row_bytes);
    out.y_stride = static_cast<int64_t>(y->row_stride);
    out.ids.resize(static_cast<size_t>(out.rows));
    if (ids == nullptr) {
        for (int64_t r = 0; r < out.rows; ++r) out.ids[static_cast<size_t>(r)] = r;
        return true;
    }
    // 64- or 32-bit ids, as the operand's bytes per row of x say (ggml's SET_ROWS takes I64 or I32).
    const uint64_t width = ids->extent() / static_cast<uint64_t>(out.rows);
    if ((width != 8 && width != 4) || ids->extent() != width * static_cast<uint64_t>(out.rows)) {
        err = "the scatter's ids are not one 64- or 32-bit id per row of x";
        return false;
    }
    const void * p = ids->slice.host();
    for (int64_t r = 0; r < out.rows; ++r) {
        out.ids[static_cast<size_t>(r)] = width == 8 ? static_cast<const int64_t *>(p)[r] : static_cast<const int32_t *>(p)[r];
    }
    return true;
}

RowsSequence build_scatter_sequence(const DesignDescription & d, const ScatterShape & s) {
    RowsSequence out;
    out.family = d.family_of(s.contract);
    const int contract = d.contract_index(out.family, s.contract);
    const LayoutDesc * L = d.scatter_movement ? d.layout(out.family) : nullptr;
    if (contract < 0 || L == nullptr) {
        out.error = "design " + d.design + " has no scatter program " + s.contract;
        return out;
    }
    out.layout = L->name;
    const FifoDesc * x_fifo = L->shim_fifo_of("x");
    const FifoDesc * y_fifo = L->shim_fifo_of("y");
    const int chunks_word = d.rtp_word("chunks");
    if (x_fifo == nullptr || y_fifo == nullptr || !x_fifo->shim_mm2s || y_fifo->shim_mm2s || chunks_word < 0) {
        out.error = "design " + d.design + " does not read x and write y through the shim, or has no 'chunks' RTP word";
        return out;
    }
    if (s.rows <= 0 || s.cols <= 0 || static_cast<int64_t>(s.ids.size()) != s.rows) {
        out.error = "a scatter of " + std::to_string(s.rows) + " rows of " + std::to_string(s.cols) + " values with " +
                    std::to_string(s.ids.size()) + " ids";
        return out;
    }
    std::unordered_set<int64_t> seen;
    for (int64_t r = 0; r < s.rows; ++r) {
        const int64_t id = s.ids[static_cast<size_t>(r)];
        if (id < 0 || id >= s.y_rows) {
            out.error = "id " + std::to_string(id) + " of row " + std::to_string(r) + " is outside the " + std::to_string(s.y_rows) +
                        " rows of y";
            return out;
        }
        // Two columns' S2MM channels would write the row in no defined order (the CPU's last row wins).
        if (!seen.insert(id).second) {
            out.error = "id " + std::to_string(id) + " names two rows of x";
            return out;
        }
    }
    out.tile = rows_tile_for(d, out.family, s.cols);
    if (out.tile == 0) {
        out.error = "a row of " + std::to_string(s.cols) + " values is not a whole number of chunks of any tile the design has an xclbin for";
        return out;
    }
    // The output chunk: the tile's values in the family's format (F16 halves, Q8_0 blocks).
    const int64_t y_chunk = static_cast<int64_t>(d.unit_bytes(out.family, y_fifo->unit, out.tile)) * y_fifo->count;
    const int64_t chunks = s.cols / out.tile;
    if (y_chunk <= 0 || y_chunk % 4 != 0 || s.y_row_bytes != chunks * y_chunk) {
        out.error = "y rows of " + std::to_string(s.y_row_bytes) + " bytes are not " + std::to_string(chunks) + " chunks of " +
                    std::to_string(y_chunk) + " bytes (the " + out.family + " format at tile " + std::to_string(out.tile) +
                    ", in 32-bit words)";
        return out;
    }
    if (s.rows > 1 && (s.x_stride < s.cols || s.x_stride > static_cast<int64_t>(d.stride_max))) {
        out.error = "x's row stride " + std::to_string(s.x_stride) + " floats: rows of " + std::to_string(s.cols) +
                    " values need one of at least that and at most " + std::to_string(d.stride_max) + " words";
        return out;
    }
    if (s.y_stride % 4 != 0 || (s.y_rows > 1 && (s.y_stride < s.y_row_bytes || s.y_stride / 4 > static_cast<int64_t>(d.stride_max)))) {
        out.error = "y's row stride " + std::to_string(s.y_stride) + " bytes: rows of " + std::to_string(s.y_row_bytes) +
                    " bytes need a whole number of 32-bit words, at least the row and at most " + std::to_string(d.stride_max) + " words";
        return out;
    }
    const int avail = s.columns > 0 ? s.columns : d.max_columns;
    if (avail > d.max_columns) {
        out.error = std::to_string(avail) + " columns: the design has " + std::to_string(d.max_columns);
        return out;
    }
    const std::vector<uint32_t> * first_y = d.bd_slots.empty() ? nullptr : d.bd_slots.front().ids("y");
    const size_t runs_per_step = first_y == nullptr ? 0 : first_y->size();
    for (const BdSlot & slot : d.bd_slots) {
        const std::vector<uint32_t> * x_ids = slot.ids("x");
        const std::vector<uint32_t> * y_ids = slot.ids("y");
        if (x_ids == nullptr || x_ids->empty() || y_ids == nullptr || y_ids->size() != runs_per_step || runs_per_step == 0) {
            out.error = "design " + d.design + ": every BD slot needs an x BD and the same number of y BDs";
            return out;
        }
    }
    // y tasks queued at once: a step's runs, for every step in flight.
    if (runs_per_step * d.bd_slots.size() > control::ShimLimits::max_queue_depth) {
        out.error = "design " + d.design + ": " + std::to_string(runs_per_step) + " y tasks per step with " +
                    std::to_string(d.bd_slots.size()) + " steps in flight pass a shim channel's queue of " +
                    std::to_string(control::ShimLimits::max_queue_depth);
        return out;
    }
    std::vector<uint32_t> base;
    RowsShape words_of;  // no words from the parameter block: the program reads only its counts
    words_of.contract = s.contract;
    if (!rows_rtp_words(d, words_of, {chunks_word}, base, out.error)) {
        return out;
    }

    // The grid of the rows designs (rows-sequence.h): R row blocks x S segments of each row's chunks.
    const RowsGrid grid = rows_grid(s.rows, chunks, avail);
    const int64_t R = grid.R, S = grid.S;
    const int cols_used = grid.columns();
    ShimTaskEmitter e;

    // 1. Runtime parameters and the barrier, per used column's core (matmul-sequence.cpp says why in this
    //    order): the words, then the barrier lock's value.
    for (int c = 0; c < cols_used; ++c) {
        const int64_t seg_chunks = block_count(chunks, S, c % S);
        if (seg_chunks > static_cast<int64_t>(d.wrap_max)) {
            out.error = "a segment of " + std::to_string(seg_chunks) + " chunks: a BD's d1 wraps at " + std::to_string(d.wrap_max);
            return out;
        }
        const int64_t calls = block_count(s.rows, R, c / S) * seg_chunks;
        if (calls > static_cast<int64_t>(d.rtp_word_max)) {
            out.error = "RTP word 'chunks' of column " + std::to_string(c) + " would be " + std::to_string(calls) +
                        ": the core program reads it as an int32 (at most " + std::to_string(d.rtp_word_max) + ")";
            return out;
        }
        out.traffic.calls_per_core = std::max(out.traffic.calls_per_core, calls);
        for (int r = 0; r < d.core_rows; ++r) {
            std::vector<uint32_t> rtp = base;
            rtp[d.rtp_contract] = static_cast<uint32_t>(contract);
            rtp[chunks_word] = static_cast<uint32_t>(calls);
            rtp[d.rtp_version] = d.rtp_layout_version;
            const uint32_t row = static_cast<uint32_t>(d.first_core_row + r);
            e.stream.ops.push_back(control::BlockWrite{control::tile_address(c, row, d.rtp_core_address), rtp});
            e.stream.ops.push_back(
                control::Write32{control::tile_address(c, row, control::core_lock_value_offset(d.barrier_lock)), d.barrier_value});
        }
    }
    out.traffic.columns_used = cols_used;

    // 2. Per column: its block's rows cut into runs of consecutive ids, the runs into steps.
    struct Run {
        int64_t row, count;  // rows of x
    };
    std::vector<std::vector<std::vector<Run>>> steps(static_cast<size_t>(cols_used));  // [column][step][run]
    for (int c = 0; c < cols_used; ++c) {
        const int64_t first = block_first(s.rows, R, c / S), count = block_count(s.rows, R, c / S);
        std::vector<Run> runs;
        for (int64_t r = first; r < first + count; ++r) {
            const bool extends = !runs.empty() && runs.back().count < kScatterRunRows &&
                                 s.ids[static_cast<size_t>(r)] == s.ids[static_cast<size_t>(r - 1)] + 1;
            if (extends) {
                ++runs.back().count;
            } else {
                runs.push_back({r, 1});
            }
        }
        for (size_t i = 0; i < runs.size(); i += runs_per_step) {
            steps[static_cast<size_t>(c)].emplace_back(runs.begin() + static_cast<std::ptrdiff_t>(i),
                                                       runs.begin() + static_cast<std::ptrdiff_t>(std::min(runs.size(), i + runs_per_step)));
        }
        out.traffic.steps = std::max<int64_t>(out.traffic.steps, static_cast<int64_t>(steps[static_cast<size_t>(c)].size()));
    }
    out.traffic.bytes = {{"x", 0}, {"y", 0}};
    const int x_arg = d.operand_arg("x"), y_arg = d.operand_arg("y");
    auto sync_step = [&](int64_t step) {
        for (int c = 0; c < cols_used; ++c) {
            if (step < static_cast<int64_t>(steps[static_cast<size_t>(c)].size())) {
                e.stream.ops.push_back(control::Sync{static_cast<uint32_t>(c), static_cast<uint32_t>(d.shim_row), 0,
                                                     static_cast<uint32_t>(y_fifo->shim_channel), 1, 1});
            }
        }
    };
    for (int64_t step = 0; step < out.traffic.steps; ++step) {
        const BdSlot & slot = d.bd_slots[static_cast<size_t>(step) % d.bd_slots.size()];
        for (int c = 0; c < cols_used; ++c) {
            if (step >= static_cast<int64_t>(steps[static_cast<size_t>(c)].size())) {
                continue;
            }
            const std::vector<Run> & runs = steps[static_cast<size_t>(c)][static_cast<size_t>(step)];
            const int64_t first_chunk = block_first(chunks, S, c % S), seg_chunks = block_count(chunks, S, c % S);
            int64_t step_rows = 0;
            for (const Run & run : runs) step_rows += run.count;
            // The step's rows of x are consecutive: one task.
            const auto xbd = rows_bd(step_rows, seg_chunks * out.tile, s.x_stride, out.tile);
            const uint64_t x_offset = static_cast<uint64_t>(runs.front().row * s.x_stride + first_chunk * out.tile) * sizeof(float);
            if (!e.bd(static_cast<uint32_t>(c), slot.ids("x")->front(), xbd, x_arg, x_offset, "x rows")) {
                out.error = e.error;
                return out;
            }
            e.push(static_cast<uint32_t>(c), *x_fifo, slot.ids("x")->front(), false, 0);
            const uint64_t xb = control::shim_bd_execution_bytes(xbd.bd);
            out.traffic.bytes[0].second += xb;
            out.traffic.read += xb;
            // One y task per run, at the row its first id names; the last carries the step's token.
            for (size_t i = 0; i < runs.size(); ++i) {
                const Run & run = runs[i];
                const auto ybd = rows_bd(run.count, seg_chunks * y_chunk / 4, s.y_stride / 4, static_cast<int>(y_chunk / 4));
                const uint64_t y_offset =
                    static_cast<uint64_t>(s.ids[static_cast<size_t>(run.row)] * s.y_stride + first_chunk * y_chunk);
                if (!e.bd(static_cast<uint32_t>(c), (*slot.ids("y"))[i], ybd, y_arg, y_offset, "y rows")) {
                    out.error = e.error;
                    return out;
                }
                e.push(static_cast<uint32_t>(c), *y_fifo, (*slot.ids("y"))[i], i + 1 == runs.size(), 0);
                const uint64_t yb = control::shim_bd_execution_bytes(ybd.bd);
                out.traffic.bytes[1].second += yb;
                out.traffic.written += yb;
            }
        }
        if (step > 0) {
            sync_step(step - 1);
        }
    }
    if (out.traffic.steps > 0) {
        sync_step(out.traffic.steps - 1);
    }
    if (std::string why = control::validate(e.stream); !why.empty()) {
        out.error = "control stream: " + why;
        return out;
    }
    out.words = control::encode(e.stream);
    return out;
}

}  // namespace xdna
