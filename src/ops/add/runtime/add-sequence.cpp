#include "ops/add/add-sequence.h"

#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "runtime/design-registry.h"

#include <algorithm>
#include <array>

namespace xdna {

namespace {

// Words one pass of a BD moves (buffer_length counts the d0 x d1 x d2 words of one iteration).
uint64_t bd_pass_bytes(const control::ShimBd & b) {
    return 4ull * b.buffer_length * (static_cast<uint64_t>(b.iteration_wrap) + 1);
}

struct Emitter {
    const DesignDescription & d;
    AddSequence &             out;
    control::ControlStream    stream;

    // One shim BD: its words, then the patch that points it at argument `arg`, `offset` bytes in.
    bool bd(uint32_t column, uint32_t id, const control::ShimBdOrError & b, int arg, uint64_t offset, const char * what) {
        if (!b.ok()) {
            out.error = std::string(what) + ": " + b.error;
            return false;
        }
        if (auto why = control::check_shim_bd(b.bd)) {
            out.error = std::string(what) + ": " + *why;
            return false;
        }
        const auto words = control::encode_shim_bd(b.bd);
        const uint32_t addr = control::shim_bd_address(column, id);
        stream.ops.push_back(control::BlockWrite{addr, std::vector<uint32_t>(words.begin(), words.end())});
        stream.ops.push_back(control::AddressPatch{addr + 4, static_cast<uint32_t>(arg), offset});
        return true;
    }
    // Queue BD `id` on the channel of shim FIFO `f`, run repeat + 1 times; returns the bytes it moves.
    uint64_t push(uint32_t column, const FifoDesc & f, uint32_t id, const control::ShimBd & b, bool token, uint32_t repeat = 0) {
        const control::QueuePush q{id, repeat, token};
        stream.ops.push_back(control::Write32{
            control::shim_queue_address(column, f.shim_mm2s ? 1u : 0u, static_cast<uint32_t>(f.shim_channel)),
            control::encode_queue_push(q)});
        return bd_pass_bytes(b) * (static_cast<uint64_t>(repeat) + 1);
    }
};

// `rows` rows of `cols` values, `stride` floats apart, as chunks of `tile` values (d0), the row's chunks
// (d1) and the rows (d2): the order the memory tile's objects take them in.
control::ShimBdOrError rows_bd(int64_t rows, int64_t cols, int64_t stride, int tile) {
    control::ShimBdPattern p;
    p.sizes = {static_cast<uint32_t>(tile), static_cast<uint32_t>(cols / tile), static_cast<uint32_t>(rows)};
    p.strides = {1, static_cast<uint32_t>(tile), static_cast<uint32_t>(rows > 1 ? stride : 0)};
    return control::shim_bd_from_pattern(p);
}

}  // namespace

const DesignRead & add_design() {
    static const DesignRead missing = [] {
        DesignRead r;
        r.error = "no built-in design 'add' (aie/add/dataflow.json)";
        return r;
    }();
    const DesignRead * d = find_design("add");
    return d != nullptr ? *d : missing;
}

int add_tile_for(const DesignDescription & d, const std::string & family, int64_t cols) {
    int best = 0;
    for (const DesignDescription::KernelStack & k : d.kernel_stacks) {
        if (k.family == family && cols > 0 && cols % (static_cast<int64_t>(d.core_rows) * k.tile_n) == 0) {
            best = std::max(best, k.tile_n);
        }
    }
    return best;
}

AddSequence build_add_sequence(const DesignDescription & d, const AddSequenceShape & s) {
    AddSequence out;
    if (d.families.empty() || d.layouts.empty()) {
        out.error = "design " + d.design + " has no family or layout";
        return out;
    }
    out.family = d.families.front().first;
    const LayoutDesc & L = d.layouts.front();
    out.layout = L.name;
    const FifoDesc * af = L.shim_fifo_of("a");
    const FifoDesc * bf = L.shim_fifo_of("b");
    const FifoDesc * yf = L.shim_fifo_of("y");
    const int chunks_word = d.rtp_word("chunks");
    if (af == nullptr || bf == nullptr || yf == nullptr || chunks_word < 0 || d.operand_arg("a") < 0 ||
        d.operand_arg("b") < 0 || d.operand_arg("y") < 0) {
        out.error = "design " + d.design + " does not move a, b and y or has no 'chunks' RTP word";
        return out;
    }
    const int contract = d.contract_index(out.family, s.multiply ? "mul_f32" : "add_f32");
    if (contract < 0) {
        out.error = "design " + d.design + " has no program " + (s.multiply ? "mul_f32" : "add_f32");
        return out;
    }
    if (s.rows <= 0 || s.cols <= 0) {
        out.error = "add of " + std::to_string(s.rows) + " x " + std::to_string(s.cols) + " values";
        return out;
    }
    const int rows_per_col = d.core_rows;
    out.tile = add_tile_for(d, out.family, s.cols);
    if (out.tile == 0) {
        out.error = "a row of " + std::to_string(s.cols) + " values is not a whole number of groups of " +
                    std::to_string(rows_per_col) + " chunks of any tile the design has an xclbin for";
        return out;
    }
    const int64_t chunks_per_row = s.cols / out.tile;           // d1 of every BD
    const int64_t calls_per_row = chunks_per_row / rows_per_col;  // per core
    if (chunks_per_row > d.wrap_max) {
        out.error = "a row of " + std::to_string(s.cols) + " values is " + std::to_string(chunks_per_row) +
                    " chunks: a BD's d1 wraps at " + std::to_string(d.wrap_max);
        return out;
    }
    for (const auto & [what, stride] : {std::pair<const char *, int64_t>{"a", s.a_row_stride}, {"b", s.b_row_stride}, {"y", s.y_row_stride}}) {
        if ((stride != 0 || std::string(what) != "b") && (stride < s.cols || stride > static_cast<int64_t>(d.stride_max))) {
            out.error = std::string(what) + "'s row stride " + std::to_string(stride) + " floats: rows of " + std::to_string(s.cols) +
                        " values need one of at least that and at most " + std::to_string(d.stride_max) + " words";
            return out;
        }
    }
    const int cols = std::min<int64_t>(s.columns > 0 ? s.columns : d.max_columns, s.rows);
    if (cols > d.max_columns) {
        out.error = std::to_string(cols) + " columns: the design has " + std::to_string(d.max_columns);
        return out;
    }
    // Column c's rows: a contiguous block, the blocks differing by one row at most.
    auto first_row = [&](int c) { return s.rows / cols * c + std::min<int64_t>(c, s.rows % cols); };
    auto rows_of = [&](int c) { return s.rows / cols + (c < s.rows % cols ? 1 : 0); };
    Emitter e{d, out, {}};

    // 1. Runtime parameters and the barrier, per core of a used column (matmul-sequence.cpp says why in
    //    this order): the words, then the barrier lock's value.
    for (int c = 0; c < cols; ++c) {
        const int64_t calls = rows_of(c) * calls_per_row;
        if (calls > static_cast<int64_t>(d.rtp_word_max)) {
            out.error = "RTP word 'chunks' of column " + std::to_string(c) + " would be " + std::to_string(calls) +
                        ": the core program reads it as an int32 (at most " + std::to_string(d.rtp_word_max) + ")";
            return out;
        }
        out.traffic.calls_per_core = std::max(out.traffic.calls_per_core, calls);
        for (int r = 0; r < rows_per_col; ++r) {
            std::vector<uint32_t> rtp(d.rtp_word_count, 0);
            rtp[d.rtp_contract] = static_cast<uint32_t>(contract);
            rtp[chunks_word] = static_cast<uint32_t>(calls);
            rtp[d.rtp_version] = d.rtp_layout_version;
            const uint32_t row = static_cast<uint32_t>(d.first_core_row + r);
            e.stream.ops.push_back(control::BlockWrite{control::tile_address(c, row, d.rtp_core_address), rtp});
            e.stream.ops.push_back(
                control::Write32{control::tile_address(c, row, control::core_lock_value_offset(d.barrier_lock)), d.barrier_value});
        }
    }
    out.traffic.columns_used = cols;

    // 2. The steps, as many in flight as the description has BD slots: per column, a block of its rows.
    const int64_t steps = (rows_of(0) + kAddRowsPerStep - 1) / kAddRowsPerStep;
    out.traffic.steps = steps;
    auto sync_step = [&](int64_t step) {
        for (int c = 0; c < cols; ++c) {
            if (step * kAddRowsPerStep < rows_of(c)) {
                e.stream.ops.push_back(control::Sync{static_cast<uint32_t>(c), static_cast<uint32_t>(d.shim_row), 0,
                                                     static_cast<uint32_t>(yf->shim_channel), 1, 1});
            }
        }
    };
    const int arg_a = d.operand_arg("a"), arg_b = d.operand_arg("b"), arg_y = d.operand_arg("y");
    for (int64_t step = 0; step < steps; ++step) {
        const BdSlot & slot = d.bd_slots[step % d.bd_slots.size()];
        const std::vector<uint32_t> * a_ids = slot.ids("a");
        const std::vector<uint32_t> * b_ids = slot.ids("b");
        const std::vector<uint32_t> * y_ids = slot.ids("y");
        if (a_ids == nullptr || b_ids == nullptr || y_ids == nullptr || a_ids->empty() || b_ids->empty() || y_ids->empty()) {
            out.error = "design " + d.design + ": a BD slot lacks an id for a, b or y";
            return out;
        }
        for (int c = 0; c < cols; ++c) {
            const int64_t done = step * kAddRowsPerStep;
            if (done >= rows_of(c)) {
                continue;
            }
            const int64_t n = std::min<int64_t>(kAddRowsPerStep, rows_of(c) - done);
            const int64_t r0 = first_row(c) + done;
            const auto a_bd = rows_bd(n, s.cols, s.a_row_stride, out.tile);
            if (!e.bd(c, a_ids->front(), a_bd, arg_a, static_cast<uint64_t>(r0 * s.a_row_stride) * sizeof(float), "a fill")) {
                return out;
            }
            out.traffic.a_read += e.push(c, *af, a_ids->front(), a_bd.bd, false);
            // b: its rows beside a's, or its one row read again for each of them (a queue-push repeat:
            // a BD stride cannot be 0, and the memory tile's FIFO hands each object on once).
            const bool one_b = s.b_row_stride == 0;
            const auto b_bd = rows_bd(one_b ? 1 : n, s.cols, s.b_row_stride, out.tile);
            if (!e.bd(c, b_ids->front(), b_bd, arg_b, one_b ? 0 : static_cast<uint64_t>(r0 * s.b_row_stride) * sizeof(float),
                      "b fill")) {
                return out;
            }
            out.traffic.b_read += e.push(c, *bf, b_ids->front(), b_bd.bd, false, one_b ? static_cast<uint32_t>(n - 1) : 0);
            const auto y_bd = rows_bd(n, s.cols, s.y_row_stride, out.tile);
            if (!e.bd(c, y_ids->front(), y_bd, arg_y, static_cast<uint64_t>(r0 * s.y_row_stride) * sizeof(float), "y drain")) {
                return out;
            }
            out.traffic.y_written += e.push(c, *yf, y_ids->front(), y_bd.bd, true);
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
