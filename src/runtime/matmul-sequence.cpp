#include "runtime/matmul-sequence.h"

#include "control/shim-bd.h"

#include <algorithm>
#include <stdexcept>

namespace xdna {

namespace {

constexpr int kTileM = 64;

// Largest d0 <= wrap_max dividing `words`: a contiguous window split into d1 x d0 (design.py word_chunk).
uint32_t word_chunk(uint64_t words, uint32_t wrap_max) {
    for (uint64_t d0 = std::min<uint64_t>(words, wrap_max); d0 > 1; --d0) {
        if (words % d0 == 0) {
            return static_cast<uint32_t>(d0);
        }
    }
    return 1;
}

struct Builder {
    const DesignDescription & d;
    MatmulSequence &          out;
    bool                      emit = true;  // false: figures only (SequenceOutput::figures)
    // Per column, the BDs as last written (id -> BD), so a queue push counts the chain it starts.
    std::vector<std::array<control::ShimBd, control::kShimBdCount>> written;

    void op(control::ControlOp o) {
        if (emit) {
            out.stream.ops.push_back(std::move(o));
        }
    }

    // One shim BD: its 8 words, then the patch that points it into argument `arg` at `offset` bytes.
    bool bd(uint32_t column, uint32_t id, control::ShimBd b, int arg, uint64_t offset, const char * what) {
        if (auto why = control::check_shim_bd(b)) {
            out.error = std::string(what) + ": " + *why;
            return false;
        }
        written[column][id] = b;
        if (emit) {
            const auto words = control::encode_shim_bd(b);
            const uint32_t addr = control::shim_bd_address(column, id);
            op(control::BlockWrite{addr, std::vector<uint32_t>(words.begin(), words.end())});
            op(control::AddressPatch{addr + 4, static_cast<uint32_t>(arg), offset});
        }
        return true;
    }

    // Queue BD `bd_id` of `column` on the channel of shim FIFO `f`, run as many times as its pattern has
    // iterations (each execution moves one: control/shim-bd.h), and count that traffic to the FIFO's
    // operand. The BDs of this builder are never chained.
    void push(uint32_t column, const FifoDesc & f, uint32_t bd_id, bool token) {
        const control::ShimBd & b = written[column][bd_id];
        const uint32_t repeat = control::shim_bd_iterations(b) - 1;
        const uint64_t bytes = control::shim_bd_execution_bytes(b) * (static_cast<uint64_t>(repeat) + 1);
        SequenceTraffic & t = out.traffic;
        if (f.operand == "weights") {
            t.w_read += bytes;
            t.column_w[column] += bytes;
        } else if (f.operand == "activations") {
            t.a_read += bytes;
            t.column_a[column] += bytes;
        } else {
            t.c_written += bytes;
            t.column_c[column] += bytes;
        }
        const control::QueuePush q{bd_id, repeat, token};
        op(control::Write32{control::shim_queue_address(column, f.shim_mm2s ? 1u : 0u, static_cast<uint32_t>(f.shim_channel)),
                            control::encode_queue_push(q)});
    }
};

// A BD pattern in words (base address 0: the address patch supplies argument + offset).
control::ShimBdOrError pattern_bd(std::array<uint32_t, 3> sizes, std::array<uint32_t, 3> strides, uint32_t iterations,
                                  uint32_t iteration_stride) {
    control::ShimBdPattern p;
    p.sizes = sizes;
    p.strides = strides;
    p.iterations = iterations;
    p.iteration_stride = iteration_stride;
    return control::shim_bd_from_pattern(p);
}

}  // namespace

uint64_t SequenceTraffic::busiest_channel() const {
    uint64_t m = 0;
    for (const std::vector<uint64_t> * v : {&column_w, &column_a, &column_c}) {
        for (uint64_t b : *v) {
            m = std::max(m, b);
        }
    }
    return m;
}

bool MatmulSequenceShape::operator==(const MatmulSequenceShape & o) const {
    return contract == o.contract && tile_n == o.tile_n && m_tiles == o.m_tiles && n_tiles == o.n_tiles &&
           k_tiles == o.k_tiles && out_row_stride == o.out_row_stride && weight_tile_bytes == o.weight_tile_bytes &&
           act_tile_bytes == o.act_tile_bytes && columns == o.columns && layout == o.layout && exact == o.exact;
}

MatmulSequenceShape sequence_shape_of(const MatmulInvocation & inv, int64_t out_row_stride) {
    MatmulSequenceShape s;
    s.contract = inv.contract != nullptr ? inv.contract->name : "";
    s.tile_n = inv.tile.n;
    s.m_tiles = inv.m_tiles;
    s.n_tiles = inv.n_tiles;
    s.k_tiles = inv.k_tiles;
    s.out_row_stride = out_row_stride;
    s.weight_tile_bytes = inv.weight_tile_bytes;
    s.act_tile_bytes = inv.act_tile_bytes;
    return s;
}

uint32_t core_lock_value_offset(uint32_t lock) { return control::core_lock_value_offset(lock); }

MatmulSequence build_matmul_sequence(const DesignDescription & d, const MatmulSequenceShape & s, SequenceOutput output) {
    MatmulSequence out;
    out.family = d.family_of(s.contract);
    if (out.family.empty()) {
        out.error = "design " + d.design + " serves no contract '" + s.contract + "'";
        return out;
    }
    // The xclbin of a token tile holds the family's contracts that take it (Q6_K has no 64-token program).
    if (const MatmulContract * c = matmul_contract_named(s.contract.c_str());
        c != nullptr && !contract_allows_tile(*c, c->tile(s.tile_n))) {
        out.error = "contract " + s.contract + " has no program at token tile " + std::to_string(s.tile_n);
        return out;
    }
    if (!family_buffers(d, out.family, s.tile_n, out.buffers, out.error, s.exact ? s.contract : std::string())) {
        return out;
    }
    const LayoutDesc * L = d.layout(s.layout);
    if (L == nullptr) {
        out.error = "design " + d.design + " has no layout '" + s.layout + "'";
        return out;
    }
    out.layout = L->name;
    const int rows = d.core_rows;
    const int cols = s.columns > 0 ? s.columns : d.max_columns;
    const FamilyBuffers & fb = out.buffers;
    const uint64_t T = s.weight_tile_bytes, A = s.act_tile_bytes, W = fb.w_obj;
    if (rows <= 0 || kWeightRowTileGroup % rows != 0) {
        // Packed weights hold whole groups of kWeightRowTileGroup row tiles (weight-layout.h): a column
        // of another height would fetch row tiles past them.
        out.error = "design " + d.design + " has " + std::to_string(rows) + " core rows per column; packed weights come in groups of " +
                    std::to_string(kWeightRowTileGroup) + " row tiles";
        return out;
    }
    if (cols > d.max_columns) {
        out.error = std::to_string(cols) + " columns: the design has " + std::to_string(d.max_columns);
        return out;
    }
    // A shared by the columns is fanned out to every column of the xclbin, which is built for the whole
    // array: a stream on fewer columns would leave columns whose cores never take the A objects.
    if (L->a_shared && cols != d.max_columns) {
        out.error = "layout " + L->name + " shares A by all " + std::to_string(d.max_columns) + " columns; " +
                    std::to_string(cols) + " columns asked";
        return out;
    }
    if (s.m_tiles <= 0 || s.n_tiles <= 0 || s.k_tiles <= 0) {
        out.error = "empty shape";
        return out;
    }
    // The memory tile and the cores receive objects of the xclbin's sizes: the family's largest tile, or
    // (exact) the contract's own.
    if (T == 0 || T > W || T % 4 != 0 || W % 4 != 0) {
        out.error = "W tile of " + std::to_string(T) + " bytes does not fit the xclbin's " + std::to_string(W) + "-byte window";
        return out;
    }
    // A per K tile: a_k_parts objects of the xclbin's A size, consecutive in memory.
    const int64_t P = fb.a_k_parts;
    if (A != fb.a_obj * static_cast<uint64_t>(P) || fb.a_obj % 4 != 0) {
        out.error = "activation tile of " + std::to_string(A) + " bytes, the family's cores take " + std::to_string(P) + " x " +
                    std::to_string(fb.a_obj);
        return out;
    }
    // A step takes w_parts row tiles (m_split: a group of `rows`) by a_parts token tiles (n_split).
    const int64_t pw = L->w_parts, pa = L->a_parts;
    const int64_t m_rows = (s.m_tiles + pw - 1) / pw * pw;  // row tiles moved: whole row units
    out.m_groups = m_rows / pw;
    if (s.n_tiles % pa != 0) {
        out.error = "layout " + L->name + " takes token tiles in groups of " + std::to_string(pa) + "; " +
                    std::to_string(s.n_tiles) + " is not a whole number of them";
        return out;
    }
    out.token_units = s.n_tiles / pa;
    if (s.out_row_stride < m_rows * kTileM) {
        out.error = "output row stride " + std::to_string(s.out_row_stride) + " floats is below the " +
                    std::to_string(m_rows * kTileM) + " rows of whole row units the C drain writes";
        return out;
    }
    // The strided A transfer of a token group (n_split, n_shared) iterates over the K parts of its K
    // tiles: kc x P iterations. A linear A run (m_split, n_rows) is one iteration whatever P.
    const int64_t a_iterations_per_k = pa > 1 && !L->a_rows ? P : 1;
    const int64_t k_chunk = std::min<int64_t>(s.k_tiles, d.iteration_max / a_iterations_per_k);
    const int64_t chunks = (s.k_tiles + k_chunk - 1) / k_chunk;
    if (chunks > d.max_k_chunks) {
        out.error = "K of " + std::to_string(s.k_tiles) + " tiles needs " + std::to_string(chunks) +
                    " chunks of at most " + std::to_string(k_chunk) + " (the BD iteration limit " + std::to_string(d.iteration_max) +
                    (a_iterations_per_k > 1 ? " over K tiles x " + std::to_string(P) + " A parts" : std::string()) +
                    "); the design's BD slots hold " +
                    std::to_string(d.max_k_chunks);
        return out;
    }
    out.rounds = (out.m_groups + cols - 1) / cols;
    // The row unit column c works on in round j. With A shared by the columns every column takes every A
    // object, so a column past the last row unit recomputes the last one: the same W, the same A, the
    // same kernel, hence the same values written to the same place as the column that owns it.
    auto unit_of = [&](int64_t j, int c) -> int64_t {
        const int64_t q = j * cols + c;
        return q < out.m_groups ? q : (L->a_shared ? out.m_groups - 1 : -1);
    };
    auto rounds_of_column = [&](int c) {
        int64_t n = 0;
        for (int64_t j = 0; j < out.rounds; ++j) {
            n += unit_of(j, c) >= 0 ? 1 : 0;
        }
        return n;
    };
    out.steps = out.rounds * out.token_units;
    out.weights_bytes = static_cast<uint64_t>(m_rows) * s.k_tiles * T + (W - T);
    out.activations_bytes = static_cast<uint64_t>(s.n_tiles) * s.k_tiles * A;
    out.out_bytes = (static_cast<uint64_t>(s.n_tiles * s.tile_n - 1) * s.out_row_stride + m_rows * kTileM) * sizeof(float);

    const FifoDesc * wf = L->shim_fifo_of("weights");
    const FifoDesc * af = L->shim_fifo_of("activations");
    const FifoDesc * cf = L->shim_fifo_of("out");

    // The BD patterns of this shape (base 0), checked once; only base offsets differ per step.
    const uint64_t win_words = W / 4, a_words = fb.a_obj / 4;
    const uint32_t d0 = word_chunk(win_words, d.wrap_max);
    const uint32_t a_d0 = word_chunk(a_words, d.wrap_max);
    std::vector<control::ShimBd> w_bds, a_bds;
    for (int64_t c = 0; c < chunks; ++c) {
        const uint32_t kc = static_cast<uint32_t>(std::min(k_chunk, s.k_tiles - c * k_chunk));
        // [kc][pw][window]: per K tile the windows of the step's pw row tiles back to back (one
        // memory-tile object; m_split: the 4 cores' row tiles, n_split: the one row tile they share).
        auto w = pattern_bd({d0, static_cast<uint32_t>(win_words / d0), static_cast<uint32_t>(pw)},
                            {1, d0, static_cast<uint32_t>(s.k_tiles * T / 4)}, kc, static_cast<uint32_t>(T / 4));
        if (!w.ok()) {
            out.error = "W fill of K chunk " + std::to_string(c) + ": " + w.error;
            return out;
        }
        // One token tile: its K run is contiguous (linear, its K parts included); pa token tiles:
        // [kc][P][pa][A object], the 4 cores' A objects of each K part back to back (one memory-tile
        // object). A K tile's parts are consecutive objects, so K tiles and parts are one iteration.
        // n_rows: column r streams token tile 4g + r's K run alone (linear), into its own memory tile.
        auto a = pa == 1 || L->a_rows ? pattern_bd({static_cast<uint32_t>(kc * A / 4), 1, 1}, {1, 0, 0}, 1, 0)
                         : pattern_bd({a_d0, static_cast<uint32_t>(a_words / a_d0), static_cast<uint32_t>(pa)},
                                      {1, a_d0, static_cast<uint32_t>(s.k_tiles * A / 4)}, static_cast<uint32_t>(kc * P),
                                      static_cast<uint32_t>(a_words));
        if (!a.ok()) {
            out.error = "A fill of K chunk " + std::to_string(c) + ": " + a.error;
            return out;
        }
        w_bds.push_back(w.bd);
        a_bds.push_back(a.bd);
    }
    // The joined C object [rows][TN][64] floats. m_split: part r is row tile r of the group (64 floats
    // further), token t; n_split: part r is token tile r of the group, so the object is 4 x TN
    // consecutive tokens of one row tile.
    const uint32_t stride_words = static_cast<uint32_t>(std::min<int64_t>(s.out_row_stride, UINT32_MAX));
    auto c_pat = pw > 1 ? pattern_bd({kTileM, static_cast<uint32_t>(s.tile_n), static_cast<uint32_t>(rows)}, {1, stride_words, kTileM}, 1, 0)
                        : pattern_bd({kTileM, static_cast<uint32_t>(pa * s.tile_n), 1}, {1, stride_words, 0}, 1, 0);
    if (!c_pat.ok()) {
        out.error = "C drain: " + c_pat.error;
        return out;
    }
    out.stream.header.cols = static_cast<uint8_t>(d.max_columns);
    Builder b{d, out, output == SequenceOutput::stream, {}};
    b.written.resize(cols);
    out.traffic.column_w.assign(cols, 0);
    out.traffic.column_a.assign(cols, 0);
    out.traffic.column_c.assign(cols, 0);

    // The cores' work: column c owns row unit q = j * cols + c of every round j; each of its cores one
    // output tile per (round, token unit).
    for (int c = 0; c < cols; ++c) {
        const int64_t col_rounds = rounds_of_column(c);
        out.max_core_tiles = std::max<int64_t>(out.max_core_tiles, col_rounds * out.token_units);
        out.columns_used += col_rounds > 0 ? 1 : 0;
        out.cores_used += col_rounds > 0 ? rows : 0;
    }

    // 1. Runtime parameters and the barrier, per core: the RTP words into core memory, then the barrier
    //    lock's value, which lets the core acquire it (it then reads the words and releases the lock:
    //    design.py core_fn; the simulator's model is sim/core-locks.h). The core reads each word as an
    //    int32 loop count or selector: a value past rtp_word_max is refused, never wrapped.
    const int contract_index = d.contract_index(out.family, s.contract);
    for (int c = 0; c < cols; ++c) {
        const int64_t out_tiles = rounds_of_column(c) * out.token_units;  // per core: one per (round, token unit)
        for (const auto & [what, v] : {std::pair<const char *, int64_t>{"contract", contract_index}, {"output tiles", out_tiles},
                                       {"K tiles", s.k_tiles}, {"layout version", d.rtp_layout_version}}) {
            if (v < 0 || v > static_cast<int64_t>(d.rtp_word_max)) {
                out.error = std::string("RTP word '") + what + "' of column " + std::to_string(c) + " would be " + std::to_string(v) +
                            ": the core program reads it as an int32 (at most " + std::to_string(d.rtp_word_max) + ")";
                return out;
            }
        }
        for (int r = 0; r < rows; ++r) {
            std::vector<uint32_t> rtp(d.rtp_word_count, 0);
            rtp[d.rtp_contract] = static_cast<uint32_t>(contract_index);
            rtp[d.rtp_out_tiles] = static_cast<uint32_t>(out_tiles);
            rtp[d.rtp_k_tiles] = static_cast<uint32_t>(s.k_tiles);
            rtp[d.rtp_version] = d.rtp_layout_version;
            const uint32_t row = static_cast<uint32_t>(d.first_core_row + r);
            b.op(control::BlockWrite{control::tile_address(c, row, d.rtp_core_address), rtp});
            b.op(control::Write32{control::tile_address(c, row, core_lock_value_offset(d.barrier_lock)), d.barrier_value});
        }
    }

    // 2. The steps, in flight as the channels' task queues allow: a fill pushes one task per K chunk
    //    (its BD run once per K tile of the chunk; chained BDs with iterations would interleave their
    //    K tiles), so a step puts `chunks` tasks on the W and A queues, and a queue holds
    //    max_queue_depth (4). Step s's drain is awaited once step s + in_flight - 1 is queued: step s's
    //    BDs are then free, since its output came from all its inputs.
    const int64_t in_flight = std::max<int64_t>(
        1, std::min<int64_t>(static_cast<int64_t>(d.bd_slots.size()), control::ShimLimits::max_queue_depth / chunks));
    out.steps_in_flight = static_cast<int>(in_flight);
    auto sync_step = [&](int64_t step) {
        const int64_t j = step / out.token_units;
        for (int c = 0; c < cols; ++c) {
            if (unit_of(j, c) >= 0) {
                b.op(control::Sync{static_cast<uint32_t>(c), static_cast<uint32_t>(d.shim_row), 0,
                                   static_cast<uint32_t>(cf->shim_channel), 1, 1});
            }
        }
    };
    for (int64_t step = 0; step < out.steps; ++step) {
        const int64_t j = step / out.token_units, u = step % out.token_units;
        const BdSlot & slot = d.bd_slots[step % in_flight];
        for (int c = 0; c < cols; ++c) {
            const int64_t q = unit_of(j, c);
            if (q < 0) {
                continue;
            }
            // The step's first row tile and first token tile.
            const uint64_t m0 = static_cast<uint64_t>(pw * q), n0 = static_cast<uint64_t>(pa * u);
            for (int64_t ch = 0; ch < chunks; ++ch) {
                const uint64_t w_off = (m0 * s.k_tiles + ch * k_chunk) * T;
                if (!b.bd(c, slot.w[ch], w_bds[ch], d.arg_weights, w_off, "W fill")) {
                    return out;
                }
                b.push(c, *wf, slot.w[ch], false);
            }
            // A shared by the columns: column 0's shim streams it once for the whole array (n_shared), or
            // column r < core rows the token tile of core row r (n_rows).
            if (!L->a_shared || (L->a_rows ? c < rows : c == 0)) {
                const uint64_t a_tile = n0 + (L->a_rows ? static_cast<uint64_t>(c) : 0);
                for (int64_t ch = 0; ch < chunks; ++ch) {
                    const uint64_t a_off = (a_tile * s.k_tiles + ch * k_chunk) * A;
                    if (!b.bd(c, slot.a[ch], a_bds[ch], d.arg_activations, a_off, "A fill")) {
                        return out;
                    }
                    b.push(c, *af, slot.a[ch], false);
                }
            }
            const uint64_t c_off = (n0 * s.tile_n * s.out_row_stride + m0 * kTileM) * sizeof(float);
            if (!b.bd(c, slot.c, c_pat.bd, d.arg_out, c_off, "C drain")) {
                return out;
            }
            b.push(c, *cf, slot.c, true);
        }
        if (step + 1 >= in_flight) {
            sync_step(step + 1 - in_flight);
        }
    }
    for (int64_t step = std::max<int64_t>(0, out.steps + 1 - in_flight); step < out.steps; ++step) {
        sync_step(step);
    }
    out.traffic.w_tiles = W > 0 ? out.traffic.w_read / W : 0;
    if (output == SequenceOutput::figures) {
        return out;
    }
    if (std::string why = control::validate(out.stream); !why.empty()) {
        out.error = "control stream: " + why;
        return out;
    }
    out.words = control::encode(out.stream);
    return out;
}

}  // namespace xdna
