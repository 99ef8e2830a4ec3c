#include "runtime/norm-sequence.h"

#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "runtime/shim-task-emitter.h"

#include <algorithm>

namespace xdna {

namespace {

// `n` rows of `cols` values, `stride` floats apart, one row per execution: a contiguous row whose
// iteration dimension steps to the next (a single row needs none).
control::ShimBdOrError row_per_execution(int64_t n, int64_t cols, int64_t stride) {
    control::ShimBdPattern p;
    p.sizes = {static_cast<uint32_t>(cols), 1, 1};
    p.strides = {1, 0, 0};
    p.iterations = static_cast<uint32_t>(n);
    p.iteration_stride = static_cast<uint32_t>(n > 1 ? stride : 0);
    return control::shim_bd_from_pattern(p);
}

}  // namespace

RowsSequence build_norm_sequence(const DesignDescription & d, const RowsShape & s) {
    RowsSequence out;
    out.family = d.family_of(s.contract);
    const int contract = d.contract_index(out.family, s.contract);
    if (contract < 0 || d.layouts.empty()) {
        out.error = "design " + d.design + " has no program " + s.contract;
        return out;
    }
    const LayoutDesc & L = d.layouts.front();
    out.layout = L.name;
    const int rows_word = d.rtp_word("rows"), chunks_word = d.rtp_word("chunks");
    if (rows_word < 0 || chunks_word < 0 || d.core_rows != 1) {
        out.error = "design " + d.design + " is not a norm design: it needs the 'rows' and 'chunks' RTP words and one core row";
        return out;
    }
    if (s.rows <= 0 || s.cols <= 0) {
        out.error = s.contract + " of " + std::to_string(s.rows) + " x " + std::to_string(s.cols) + " values";
        return out;
    }
    out.tile = rows_tile_for(d, out.family, s.cols);
    if (out.tile == 0) {
        out.error = "a row of " + std::to_string(s.cols) + " values is not a whole number of chunks of any tile the design has an xclbin for";
        return out;
    }
    const int64_t chunks = s.cols / out.tile;

    // The core program's words: contract, rows, chunks and version from the stream; every other word it
    // reads from the shape (the parameter block's).
    std::vector<uint32_t> base;
    if (!rows_rtp_words(d, s, {rows_word, chunks_word}, base, out.error)) {
        return out;
    }
    base[d.rtp_contract] = static_cast<uint32_t>(contract);
    base[chunks_word] = static_cast<uint32_t>(chunks);
    base[d.rtp_version] = d.rtp_layout_version;

    // The operands the layout moves, with the shape's strides.
    struct Moved {
        const FifoDesc *                fifo;
        std::vector<const std::vector<uint32_t> *> ids;  // per BD slot
        int64_t                         stride;
        int                             arg;
        bool                            twice;  // the input the core reads in both passes
    };
    std::vector<Moved> moved;
    const FifoDesc * output = nullptr;
    const int slots = static_cast<int>(d.bd_slots.size());
    for (const FifoDesc & f : L.fifos) {
        if (f.shim_channel < 0) {
            continue;
        }
        auto it = std::find_if(s.operands.begin(), s.operands.end(), [&](const RowsOperand & o) { return o.name == f.operand; });
        if (it == s.operands.end()) {
            if (f.shim_mm2s) {
                continue;
            }
            out.error = "design " + d.design + " writes operand '" + f.operand + "', which the invocation does not give";
            return out;
        }
        const bool one_row = it->row_stride == 0;
        if ((one_row && !f.shim_mm2s) || (!one_row && s.rows > 1 && (it->row_stride < s.cols || it->row_stride > static_cast<int64_t>(d.stride_max)))) {
            out.error = f.operand + "'s row stride " + std::to_string(it->row_stride) + " floats: rows of " + std::to_string(s.cols) +
                        " values need one of at least that and at most " + std::to_string(d.stride_max) + " words" +
                        (f.shim_mm2s ? " (or 0: one row for every row)" : "");
            return out;
        }
        Moved m{&f, std::vector<const std::vector<uint32_t> *>(slots, nullptr), it->row_stride, d.operand_arg(f.operand), false};
        // The input read in both passes: the one whose slot holds two chained BDs.
        for (int k = 0; k < slots; ++k) {
            m.ids[k] = d.bd_slots[k].ids(f.operand);
            if (m.ids[k] == nullptr || m.ids[k]->empty() || m.arg < 0) {
                out.error = "design " + d.design + ": a BD slot has no id for " + f.operand;
                return out;
            }
        }
        m.twice = m.ids[0]->size() == 2;
        if (!f.shim_mm2s) {
            output = &f;
        }
        moved.push_back(m);
        out.traffic.bytes.emplace_back(f.operand, 0);
    }
    if (output == nullptr || std::none_of(moved.begin(), moved.end(), [](const Moved & m) { return m.twice; })) {
        out.error = "design " + d.design + " has no output, or no input read in both passes";
        return out;
    }

    // The grid: R columns, a block of consecutive rows each.
    const int avail = s.columns > 0 ? s.columns : d.max_columns;
    if (avail > d.max_columns) {
        out.error = std::to_string(avail) + " columns: the design has " + std::to_string(d.max_columns);
        return out;
    }
    const int cols = static_cast<int>(std::min<int64_t>(s.rows, avail));
    ShimTaskEmitter e;
    const uint32_t core_row = static_cast<uint32_t>(d.first_core_row);
    // 1. Runtime parameters and the barrier of each used column's core (matmul-sequence.cpp says why in
    //    this order).
    for (int c = 0; c < cols; ++c) {
        const int64_t block = block_count(s.rows, cols, c);
        if (block > static_cast<int64_t>(d.rtp_word_max) || chunks > static_cast<int64_t>(d.rtp_word_max)) {
            out.error = "RTP words 'rows' / 'chunks' would pass the int32 the core program reads";
            return out;
        }
        std::vector<uint32_t> rtp = base;
        rtp[rows_word] = static_cast<uint32_t>(block);
        e.stream.ops.push_back(control::BlockWrite{control::tile_address(c, core_row, d.rtp_core_address), rtp});
        e.stream.ops.push_back(
            control::Write32{control::tile_address(c, core_row, control::core_lock_value_offset(d.barrier_lock)), d.barrier_value});
        out.traffic.rows_per_core = std::max(out.traffic.rows_per_core, block);
    }
    out.traffic.columns_used = cols;
    out.traffic.calls_per_core = out.traffic.rows_per_core * (2 * chunks + 1);

    // 2. The steps: per column, at most per_step of its rows (an iteration dimension and a repeat count
    //    both count them).
    const int64_t per_step = std::min<int64_t>(d.iteration_max, static_cast<int64_t>(d.repeat_max) + 1);
    const int64_t steps = (block_count(s.rows, cols, 0) + per_step - 1) / per_step;
    out.traffic.steps = steps;
    auto sync_step = [&](int64_t step) {
        for (int c = 0; c < cols; ++c) {
            if (step * per_step < block_count(s.rows, cols, c)) {
                e.stream.ops.push_back(control::Sync{static_cast<uint32_t>(c), static_cast<uint32_t>(d.shim_row), 0,
                                                     static_cast<uint32_t>(output->shim_channel), 1, 1});
            }
        }
    };
    for (int64_t step = 0; step < steps; ++step) {
        const int slot = static_cast<int>(step % slots);
        for (int c = 0; c < cols; ++c) {
            const int64_t block = block_count(s.rows, cols, c), done = step * per_step;
            if (done >= block) {
                continue;
            }
            const int64_t n = std::min<int64_t>(per_step, block - done);
            const int64_t r0 = block_first(s.rows, cols, c) + done;
            for (size_t i = 0; i < moved.size(); ++i) {
                const Moved & m = moved[i];
                const bool one_row = m.stride == 0;
                const auto bd = row_per_execution(one_row ? 1 : n, s.cols, m.stride);
                const uint64_t offset = static_cast<uint64_t>(one_row ? 0 : r0 * m.stride) * sizeof(float);
                const std::string what = m.fifo->operand + (m.fifo->shim_mm2s ? " fill" : " drain");
                const std::vector<uint32_t> & ids = *m.ids[slot];
                // The input of both passes: a chain of two BDs over the same rows; each pass of the chain
                // runs each once, so row i comes twice before row i + 1.
                const size_t n_bds = m.twice ? 2 : 1;
                for (size_t b = 0; b < n_bds; ++b) {
                    control::ShimBdOrError link = bd;
                    if (b + 1 < n_bds) {
                        link.bd.use_next_bd = true;
                        link.bd.next_bd = ids[b + 1];
                    }
                    if (!e.bd(c, ids[b], link, m.arg, offset, what)) {
                        out.error = e.error;
                        return out;
                    }
                }
                const uint32_t repeat = static_cast<uint32_t>(n - 1);
                e.push(c, *m.fifo, ids[0], !m.fifo->shim_mm2s, repeat);
                const uint64_t bytes = control::shim_bd_execution_bytes(bd.bd) * n_bds * (static_cast<uint64_t>(repeat) + 1);
                out.traffic.bytes[i].second += bytes;
                (m.fifo->shim_mm2s ? out.traffic.read : out.traffic.written) += bytes;
            }
        }
        if (step + 1 >= slots) {
            sync_step(step + 1 - slots);
        }
    }
    for (int64_t step = std::max<int64_t>(0, steps + 1 - slots); step < steps; ++step) {
        sync_step(step);
    }
    if (std::string why = control::validate(e.stream); !why.empty()) {
        out.error = "control stream: " + why;
        return out;
    }
    out.words = control::encode(e.stream);
    return out;
}

}  // namespace xdna
