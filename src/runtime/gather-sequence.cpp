#include "runtime/gather-sequence.h"

#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "runtime/shim-task-emitter.h"

#include <algorithm>

namespace xdna {

bool gather_shape_of(const Invocation & inv, const DesignDescription & d, GatherShape & out, std::string & err) {
    out = GatherShape{};
    if (!d.gather_movement || inv.key.variant == nullptr) {
        err = "design " + d.design + " is not a gather design, or the invocation names no program";
        return false;
    }
    const Operand * src = inv.operand("src");
    const Operand * ids = inv.operand("ids");
    const Operand * y = inv.operand("y");
    if (src == nullptr || ids == nullptr || y == nullptr || src->slice.buffer == nullptr || ids->slice.buffer == nullptr) {
        err = "a gather invocation needs its src, ids and y operands in memory";
        return false;
    }
    if (y->row_bytes != src->row_bytes || y->row_bytes % sizeof(float) != 0 || y->row_stride % sizeof(float) != 0 ||
        src->row_stride % sizeof(float) != 0 || y->rows <= 0 || ids->extent() < static_cast<uint64_t>(y->rows) * sizeof(int32_t)) {
        err = "the gather's src and y are not rows of one fp32 length, or its ids do not name every row of y";
        return false;
    }
    out.contract = inv.key.variant;
    out.rows = y->rows;
    out.cols = static_cast<int64_t>(y->row_bytes / sizeof(float));
    out.src_rows = src->rows;
    out.src_stride = static_cast<int64_t>(src->row_stride / sizeof(float));
    out.y_stride = static_cast<int64_t>(y->row_stride / sizeof(float));
    const auto * id = static_cast<const int32_t *>(ids->slice.host());
    out.ids.assign(id, id + out.rows);
    return true;
}

RowsSequence build_gather_sequence(const DesignDescription & d, const GatherShape & s) {
    RowsSequence out;
    out.family = d.family_of(s.contract);
    if (!d.gather_movement || d.contract_index(out.family, s.contract) < 0 || d.layouts.empty()) {
        out.error = "design " + d.design + " has no gather program " + s.contract;
        return out;
    }
    const LayoutDesc & L = d.layouts.front();
    out.layout = L.name;
    const FifoDesc * src_fifo = L.shim_fifo_of("src");
    const FifoDesc * y_fifo = L.shim_fifo_of("y");
    if (src_fifo == nullptr || y_fifo == nullptr || !src_fifo->shim_mm2s || y_fifo->shim_mm2s) {
        out.error = "design " + d.design + " does not read src and write y through the shim";
        return out;
    }
    if (s.rows <= 0 || s.cols <= 0 || static_cast<int64_t>(s.ids.size()) != s.rows) {
        out.error = "a gather of " + std::to_string(s.rows) + " rows of " + std::to_string(s.cols) + " values with " +
                    std::to_string(s.ids.size()) + " ids";
        return out;
    }
    for (int64_t r = 0; r < s.rows; ++r) {
        if (s.ids[static_cast<size_t>(r)] < 0 || s.ids[static_cast<size_t>(r)] >= s.src_rows) {
            out.error = "id " + std::to_string(s.ids[static_cast<size_t>(r)]) + " of row " + std::to_string(r) + " is outside the " +
                        std::to_string(s.src_rows) + " rows of the source";
            return out;
        }
    }
    out.tile = rows_tile_for(d, out.family, s.cols);
    if (out.tile == 0) {
        out.error = "a row of " + std::to_string(s.cols) + " values is not a whole number of chunks of any tile the design has an xclbin for";
        return out;
    }
    for (const auto & [what, stride, rows] : {std::tuple<const char *, int64_t, int64_t>{"src", s.src_stride, s.src_rows},
                                              std::tuple<const char *, int64_t, int64_t>{"y", s.y_stride, s.rows}}) {
        if (rows > 1 && (stride < s.cols || stride > static_cast<int64_t>(d.stride_max))) {
            out.error = std::string(what) + "'s row stride " + std::to_string(stride) + " floats: rows of " + std::to_string(s.cols) +
                        " values need one of at least that and at most " + std::to_string(d.stride_max) + " words";
            return out;
        }
    }
    const int avail = s.columns > 0 ? s.columns : d.max_columns;
    if (avail > d.max_columns) {
        out.error = std::to_string(avail) + " columns: the design has " + std::to_string(d.max_columns);
        return out;
    }
    const std::vector<uint32_t> * first_src = d.bd_slots.front().ids("src");
    const size_t runs_per_step = first_src == nullptr ? 0 : first_src->size();
    for (const BdSlot & slot : d.bd_slots) {
        const std::vector<uint32_t> * src_ids = slot.ids("src");
        const std::vector<uint32_t> * y_ids = slot.ids("y");
        if (src_ids == nullptr || src_ids->size() != runs_per_step || runs_per_step == 0 || y_ids == nullptr || y_ids->empty()) {
            out.error = "design " + d.design + ": every BD slot needs the same number of src BDs and a y BD";
            return out;
        }
    }
    // Source tasks queued at once: a step's runs, for every step in flight.
    if (runs_per_step * d.bd_slots.size() > control::ShimLimits::max_queue_depth) {
        out.error = "design " + d.design + ": " + std::to_string(runs_per_step) + " source tasks per step with " +
                    std::to_string(d.bd_slots.size()) + " steps in flight pass a shim channel's queue of " + std::to_string(control::ShimLimits::max_queue_depth);
        return out;
    }

    // Per column: its block of rows cut into runs of consecutive ids, the runs into steps.
    struct Run {
        int64_t row, count;  // rows of y
    };
    const int64_t R = std::min<int64_t>(s.rows, avail);
    std::vector<std::vector<std::vector<Run>>> steps(static_cast<size_t>(R));  // [column][step][run]
    for (int64_t c = 0; c < R; ++c) {
        const int64_t first = block_first(s.rows, R, c), count = block_count(s.rows, R, c);
        std::vector<Run> runs;
        for (int64_t r = first; r < first + count; ++r) {
            const bool extends = !runs.empty() && runs.back().count < kGatherRunRows &&
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
    out.traffic.columns_used = static_cast<int>(R);
    out.traffic.bytes = {{"src", 0}, {"y", 0}};
    const int src_arg = d.operand_arg("src"), y_arg = d.operand_arg("y");

    ShimTaskEmitter e;
    auto sync_step = [&](int64_t step) {
        for (int64_t c = 0; c < R; ++c) {
            if (step < static_cast<int64_t>(steps[static_cast<size_t>(c)].size())) {
                e.stream.ops.push_back(control::Sync{static_cast<uint32_t>(c), static_cast<uint32_t>(d.shim_row), 0,
                                                     static_cast<uint32_t>(y_fifo->shim_channel), 1, 1});
            }
        }
    };
    for (int64_t step = 0; step < out.traffic.steps; ++step) {
        const BdSlot & slot = d.bd_slots[static_cast<size_t>(step) % d.bd_slots.size()];
        for (int64_t c = 0; c < R; ++c) {
            if (step >= static_cast<int64_t>(steps[static_cast<size_t>(c)].size())) {
                continue;
            }
            const std::vector<Run> & runs = steps[static_cast<size_t>(c)][static_cast<size_t>(step)];
            int64_t step_rows = 0;
            for (size_t i = 0; i < runs.size(); ++i) {
                const Run & run = runs[i];
                const auto bd = rows_bd(run.count, s.cols, s.src_stride, out.tile);
                const uint64_t offset = static_cast<uint64_t>(s.ids[static_cast<size_t>(run.row)]) * s.src_stride * sizeof(float);
                if (!e.bd(static_cast<uint32_t>(c), (*slot.ids("src"))[i], bd, src_arg, offset, "src rows")) {
                    out.error = e.error;
                    return out;
                }
                e.push(static_cast<uint32_t>(c), *src_fifo, (*slot.ids("src"))[i], false, 0);
                const uint64_t b = control::shim_bd_execution_bytes(bd.bd);
                out.traffic.bytes[0].second += b;
                out.traffic.read += b;
                step_rows += run.count;
            }
            // The step's rows of y are consecutive: one task, the token the stream syncs on.
            const auto bd = rows_bd(step_rows, s.cols, s.y_stride, out.tile);
            const uint64_t offset = static_cast<uint64_t>(runs.front().row) * s.y_stride * sizeof(float);
            if (!e.bd(static_cast<uint32_t>(c), slot.ids("y")->front(), bd, y_arg, offset, "y rows")) {
                out.error = e.error;
                return out;
            }
            e.push(static_cast<uint32_t>(c), *y_fifo, slot.ids("y")->front(), true, 0);
            const uint64_t b = control::shim_bd_execution_bytes(bd.bd);
            out.traffic.bytes[1].second += b;
            out.traffic.written += b;
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
