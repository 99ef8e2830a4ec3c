#include "runtime/quant-sequence.h"

#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "runtime/shim-task-emitter.h"

#include <algorithm>
#include <vector>

namespace xdna {

bool quant_shape_of(const Invocation & inv, const DesignDescription & d, QuantShape & out, std::string & err) {
    out = QuantShape{};
    if (!d.quant_movement || inv.key.variant == nullptr) {
        err = "design " + d.design + " is not a quant design, or the invocation names no program";
        return false;
    }
    const DesignDescription::FamilyObjects * o = d.objects_of(d.family_of(inv.key.variant));
    const Operand * x = inv.operand("x");
    const Operand * tiles = inv.operand("tiles");
    const Operand * zeros = inv.operand("zeros");
    if (o == nullptr || x == nullptr || tiles == nullptr || zeros == nullptr || zeros->slice.buffer == nullptr) {
        err = "a quant invocation needs a program of the design and its x, tiles and zeros operands";
        return false;
    }
    if (x->row_bytes % sizeof(float) != 0 || x->row_stride % sizeof(float) != 0 || x->rows <= 0) {
        err = "x is not rows of fp32 values";
        return false;
    }
    out.contract = inv.key.variant;
    out.rows = x->rows;
    out.k = static_cast<int64_t>(x->row_bytes / sizeof(float));
    out.x_row_stride = static_cast<int64_t>(x->row_stride / sizeof(float));
    // The tiles operand is the whole output: every tile of the rows, at the family's bytes.
    const int64_t n_tiles = (out.rows + o->tokens - 1) / o->tokens;
    const int64_t k_tiles = out.k / o->tile_k;
    const size_t tile_bytes = d.unit_bytes(o->family, "tile", o->tokens);
    if (out.k % o->tile_k != 0 || tiles->extent() != static_cast<uint64_t>(n_tiles * k_tiles) * tile_bytes ||
        zeros->extent() < d.zeros_bytes) {
        err = "the tiles operand is not " + std::to_string(n_tiles) + " x " + std::to_string(k_tiles) + " tiles of " +
              std::to_string(tile_bytes) + " bytes of " + out.contract + ", or the zeros are fewer than the design's " +
              std::to_string(d.zeros_bytes) + " bytes";
        return false;
    }
    return true;
}

RowsSequence build_quant_sequence(const DesignDescription & d, const QuantShape & s) {
    RowsSequence out;
    out.family = d.family_of(s.contract);
    const int contract = d.contract_index(out.family, s.contract);
    const DesignDescription::FamilyObjects * o = d.objects_of(out.family);
    if (!d.quant_movement || contract < 0 || o == nullptr || d.layouts.empty()) {
        out.error = "design " + d.design + " has no quant program " + s.contract;
        return out;
    }
    const LayoutDesc & L = d.layouts.front();
    out.layout = L.name;
    out.tile = o->tokens;
    const FifoDesc * x_fifo = L.shim_fifo_of("x");
    const FifoDesc * t_fifo = L.shim_fifo_of("tiles");
    const int tiles_word = d.rtp_word("tiles");
    if (x_fifo == nullptr || t_fifo == nullptr || !x_fifo->shim_mm2s || t_fifo->shim_mm2s || tiles_word < 0 || d.core_rows != 1) {
        out.error = "design " + d.design + " does not read x and write tiles through the shim with one core per column";
        return out;
    }
    const int64_t tn = o->tokens, tk = o->tile_k;
    if (s.rows <= 0 || s.k <= 0 || s.k % tk != 0) {
        out.error = std::to_string(s.rows) + " rows of " + std::to_string(s.k) + " values: " + s.contract + " takes whole K tiles of " +
                    std::to_string(tk);
        return out;
    }
    if (s.rows > 1 && (s.x_row_stride < s.k || s.x_row_stride > static_cast<int64_t>(d.stride_max))) {
        out.error = "x's row stride " + std::to_string(s.x_row_stride) + " floats: rows of " + std::to_string(s.k) +
                    " values need one of at least that and at most " + std::to_string(d.stride_max) + " words";
        return out;
    }
    const size_t tile_bytes = d.unit_bytes(out.family, "tile", o->tokens);
    const int64_t n_tiles = (s.rows + tn - 1) / tn, k_tiles = s.k / tk;
    if (static_cast<size_t>(tn * n_tiles - s.rows) * static_cast<size_t>(tk) * sizeof(float) > d.zeros_bytes) {
        out.error = "the padding rows of the last token tile need more zeros than the design's " + std::to_string(d.zeros_bytes) + " bytes";
        return out;
    }
    const int avail = s.columns > 0 ? s.columns : d.max_columns;
    if (avail > d.max_columns) {
        out.error = std::to_string(avail) + " columns: the design has " + std::to_string(d.max_columns);
        return out;
    }
    for (const BdSlot & slot : d.bd_slots) {
        const std::vector<uint32_t> * x_ids = slot.ids("x");
        const std::vector<uint32_t> * t_ids = slot.ids("tiles");
        if (x_ids == nullptr || x_ids->size() != 2 || t_ids == nullptr || t_ids->empty()) {
            out.error = "design " + d.design + ": every BD slot needs two x BDs (rows, zeros) and a tiles BD";
            return out;
        }
    }
    const int64_t T = n_tiles * k_tiles;
    const int64_t C = std::min<int64_t>(T, avail);
    const int64_t groups = tn / o->group_tokens;
    const int x_arg = d.operand_arg("x"), t_arg = d.operand_arg("tiles"), z_arg = d.operand_arg("zeros");
    if (x_arg < 0 || t_arg < 0 || z_arg < 0) {
        out.error = "design " + d.design + " has no x, tiles and zeros operands";
        return out;
    }
    ShimTaskEmitter e;

    // 1. Runtime parameters and the barrier (matmul-sequence.cpp says why in this order).
    for (int64_t c = 0; c < C; ++c) {
        const int64_t count = block_count(T, C, c);
        if (count > static_cast<int64_t>(d.rtp_word_max)) {
            out.error = "RTP word 'tiles' would pass the int32 the core program reads";
            return out;
        }
        std::vector<uint32_t> rtp(d.rtp_word_count, 0);
        rtp[d.rtp_contract] = static_cast<uint32_t>(contract);
        rtp[tiles_word] = static_cast<uint32_t>(count);
        rtp[d.rtp_version] = d.rtp_layout_version;
        const uint32_t row = static_cast<uint32_t>(d.first_core_row);
        e.stream.ops.push_back(control::BlockWrite{control::tile_address(static_cast<uint32_t>(c), row, d.rtp_core_address), rtp});
        e.stream.ops.push_back(control::Write32{
            control::tile_address(static_cast<uint32_t>(c), row, control::core_lock_value_offset(d.barrier_lock)), d.barrier_value});
        out.traffic.calls_per_core = std::max(out.traffic.calls_per_core, count * groups);
    }
    out.traffic.columns_used = static_cast<int>(C);

    // 2. Per column, its block of tiles in segments of one token tile (at most iteration_max tiles).
    struct Segment {
        int64_t first, count;  // tile index t = nt * k_tiles + kt
    };
    std::vector<std::vector<Segment>> steps(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
        const int64_t first = block_first(T, C, c), end = first + block_count(T, C, c);
        for (int64_t t = first; t < end;) {
            const int64_t token_tile_end = (t / k_tiles + 1) * k_tiles;
            const int64_t count = std::min<int64_t>({end, token_tile_end, t + static_cast<int64_t>(d.iteration_max)}) - t;
            steps[static_cast<size_t>(c)].push_back({t, count});
            t += count;
        }
        out.traffic.steps = std::max<int64_t>(out.traffic.steps, static_cast<int64_t>(steps[static_cast<size_t>(c)].size()));
    }
    out.traffic.bytes = {{"x", 0}, {"zeros", 0}, {"tiles", 0}};
    auto sync_step = [&](int64_t step) {
        for (int64_t c = 0; c < C; ++c) {
            if (step < static_cast<int64_t>(steps[static_cast<size_t>(c)].size())) {
                e.stream.ops.push_back(control::Sync{static_cast<uint32_t>(c), static_cast<uint32_t>(d.shim_row), 0,
                                                     static_cast<uint32_t>(t_fifo->shim_channel), 1, 1});
            }
        }
    };
    for (int64_t step = 0; step < out.traffic.steps; ++step) {
        const BdSlot & slot = d.bd_slots[static_cast<size_t>(step) % d.bd_slots.size()];
        const std::vector<uint32_t> & x_ids = *slot.ids("x");
        for (int64_t c = 0; c < C; ++c) {
            if (step >= static_cast<int64_t>(steps[static_cast<size_t>(c)].size())) {
                continue;
            }
            const Segment seg = steps[static_cast<size_t>(c)][static_cast<size_t>(step)];
            const int64_t nt = seg.first / k_tiles, kt = seg.first % k_tiles;
            const int64_t valid = std::min<int64_t>(tn, s.rows - nt * tn);
            const uint32_t col = static_cast<uint32_t>(c);
            // The token tile's valid rows, one K tile per execution.
            control::ShimBdPattern p;
            p.sizes = {static_cast<uint32_t>(tk), static_cast<uint32_t>(valid), 1};
            p.strides = {1, static_cast<uint32_t>(valid > 1 ? s.x_row_stride : 0), 0};
            p.iterations = static_cast<uint32_t>(seg.count);
            p.iteration_stride = static_cast<uint32_t>(seg.count > 1 ? tk : 0);
            control::ShimBdOrError rows_bd = control::shim_bd_from_pattern(p);
            const bool padded = valid < tn;
            if (padded && rows_bd.ok()) {
                rows_bd.bd.use_next_bd = true;
                rows_bd.bd.next_bd = x_ids[1];
            }
            const uint64_t x_offset = static_cast<uint64_t>(nt * tn * s.x_row_stride + kt * tk) * sizeof(float);
            if (!e.bd(col, x_ids[0], rows_bd, x_arg, x_offset, "x rows")) {
                out.error = e.error;
                return out;
            }
            const uint64_t row_bytes = control::shim_bd_execution_bytes(rows_bd.bd) * static_cast<uint64_t>(seg.count);
            out.traffic.bytes[0].second += row_bytes;
            out.traffic.read += row_bytes;
            if (padded) {
                // The padding rows: zeros, the same block every execution.
                control::ShimBdPattern z;
                z.sizes = {static_cast<uint32_t>((tn - valid) * tk), 1, 1};
                if (!e.bd(col, x_ids[1], control::shim_bd_from_pattern(z), z_arg, 0, "zero rows")) {
                    out.error = e.error;
                    return out;
                }
                const uint64_t zero_bytes = static_cast<uint64_t>((tn - valid) * tk) * sizeof(float) * static_cast<uint64_t>(seg.count);
                out.traffic.bytes[1].second += zero_bytes;
                out.traffic.read += zero_bytes;
            }
            e.push(col, *x_fifo, x_ids[0], false, static_cast<uint32_t>(seg.count - 1));
            // The segment's tiles, consecutive in the output.
            control::ShimBdPattern t;
            t.sizes = {static_cast<uint32_t>(static_cast<uint64_t>(seg.count) * tile_bytes / sizeof(uint32_t)), 1, 1};
            if (!e.bd(col, slot.ids("tiles")->front(), control::shim_bd_from_pattern(t), t_arg,
                      static_cast<uint64_t>(seg.first) * tile_bytes, "tiles")) {
                out.error = e.error;
                return out;
            }
            e.push(col, *t_fifo, slot.ids("tiles")->front(), true, 0);
            const uint64_t tb = static_cast<uint64_t>(seg.count) * tile_bytes;
            out.traffic.bytes[2].second += tb;
            out.traffic.written += tb;
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
