// The runtime sequence of the whole-array matmul, built on the host as NPU2 control code.
//
// One xclbin per family serves every shape: the cores read their loop counts from RTP words, and the
// shim DMAs' sizes, strides and repeat counts live in this stream, built here per shape from the
// design's description (design-description.h). It writes, in order:
//   1. per core: the RTP words (contract, output tiles, K tiles, layout version) into core memory, then
//      the barrier lock's value that lets the core acquire its barrier; the core reads the words and
//      releases the lock (aie/matmul/README.md, "The runtime-parameter barrier"), so the next
//      invocation's set is what lets it pass again;
//   2. per step (round j, token tile n), per active column: the W fill (K chunks as chained BDs, one
//      queue push on the W channel), the A fill (likewise), the C drain (one BD, pushed with a completion
//      token); two steps in flight (the design's BD slots), so the sync of step s-1 follows the pushes
//      of step s; a final sync for the last step.
// Every BD goes through control::check_shim_bd; a shape that breaks a hardware limit or the design's
// (a contract the design does not serve, K beyond its BD slots, an RTP word the core cannot hold, ...)
// is refused with the reason (never a stream an NPU would misexecute). Address patches are relative to each operand's
// kernel argument, so a stream depends on the shape only and is reused across tokens.
#pragma once

#include "control/control-ops.h"
#include "runtime/design-description.h"
#include "runtime/device.h"

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// What the stream depends on: the shape, not the buffers. And the xclbin's layout (design-description.h
// LayoutDesc): m_split steps take a group of 4 row tiles by one token tile (W split, A broadcast; the
// "token tile n" of the steps above), n_split steps one row tile by a group of 4 token tiles (W
// broadcast, A split: N must be whole groups of 4 token tiles); n_shared steps as n_split, with A
// streamed once per step by column 0 for the whole array, every column working in every round (past the
// last row tile on a copy of it) and the whole array's columns only.
struct MatmulSequenceShape {
    std::string contract;             // e.g. "mm_q4_K_a8"
    int         tile_n = 0;
    int64_t     m_tiles = 0, n_tiles = 0, k_tiles = 0;
    int64_t     out_row_stride = 0;   // floats between tokens in the output argument
    size_t      weight_tile_bytes = 0;
    size_t      act_tile_bytes = 0;
    int         columns = 0;          // array columns of the xclbin (0: the design's maximum)
    std::string layout;               // the xclbin's layout (design-description.h LayoutDesc; "": the default)
    // The xclbin serves `contract` only, its W objects of the contract's own tile (design.py --exact;
    // FamilyBuffers): no W window over-fetch, and another xclbin for every other contract.
    bool        exact = false;

    bool operator==(const MatmulSequenceShape & o) const;
};

// The DRAM bytes a sequence's DMAs move, counted from the BDs the builder emits: every pass of every
// queued task (a BD's words x its iterations, chained BDs and queue repeats included). What the timing
// model charges (sim/design-traffic.h) and what design.py --print-plan prints as "DRAM traffic".
struct SequenceTraffic {
    uint64_t w_read = 0;       // shim MM2S of the weights: W windows (the family's W object per tile)
    uint64_t w_tiles = 0;      // how many W tiles those windows deliver (w_read / window bytes)
    uint64_t a_read = 0;       // shim MM2S of the activations
    uint64_t c_written = 0;    // shim S2MM of the output (whole C tiles)
    // Per shim channel of each column (the busiest bounds the column's rate): W, A, C bytes.
    std::vector<uint64_t> column_w, column_a, column_c;
    uint64_t busiest_channel() const;
};

struct MatmulSequence {
    std::string           error;      // empty on success: why the shape was refused
    std::string           family;
    std::string           layout;     // the layout it was built for (never empty on success)
    FamilyBuffers         buffers;
    control::ControlStream stream;
    std::vector<uint32_t> words;      // encode(stream): what the NPU (and the simulator) receives
    // Bytes each argument must hold from its start: the DMAs touch exactly [0, bytes). Whole 4-row
    // groups of weight tiles plus the W window's over-read (a packed weight matrix holds them: its
    // WeightLayout::stream_bytes()); the output's whole tiles.
    uint64_t weights_bytes = 0, activations_bytes = 0, out_bytes = 0;
    // Work units: row units of the layout's row tiles per step (m_split: groups of 4; n_split: single
    // row tiles), rounds of row units over the columns, steps = rounds x token units.
    int64_t  m_groups = 0, rounds = 0, steps = 0;
    int64_t  token_units = 0;  // n_tiles / token tiles per step
    // Steps queued before the oldest is awaited: 2, or 1 where a step's K chunks would put more tasks
    // on a fill channel's queue than it holds (one task per K chunk, control/shim-bd.h).
    int      steps_in_flight = 0;
    SequenceTraffic traffic;
    // The cores' work as the RTP words give it: output tiles of the busiest core, cores and columns with work.
    int64_t  max_core_tiles = 0;
    int      cores_used = 0, columns_used = 0;
    bool ok() const { return error.empty(); }
};

// What build_matmul_sequence produces: the whole stream, or only its figures (traffic, schedule and the
// checks of every BD, no ops or words) for the timing model, which must not pay for the words.
enum class SequenceOutput { stream, figures };

// The shape of an invocation whose output argument has `out_row_stride` floats between tokens.
MatmulSequenceShape sequence_shape_of(const MatmulInvocation & inv, int64_t out_row_stride);

MatmulSequence build_matmul_sequence(const DesignDescription & design, const MatmulSequenceShape & shape,
                                     SequenceOutput output = SequenceOutput::stream);

// The core tile register that holds lock `lock`'s value (the barrier the stream releases).
uint32_t core_lock_value_offset(uint32_t lock);

}  // namespace xdna
