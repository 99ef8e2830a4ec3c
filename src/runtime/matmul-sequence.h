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

// What the stream depends on: the shape, not the buffers.
struct MatmulSequenceShape {
    std::string contract;             // e.g. "mm_q4_K_a8"
    int         tile_n = 0;
    int64_t     m_tiles = 0, n_tiles = 0, k_tiles = 0;
    int64_t     out_row_stride = 0;   // floats between tokens in the output argument
    size_t      weight_tile_bytes = 0;
    size_t      act_tile_bytes = 0;
    int         columns = 0;          // array columns of the xclbin (0: the design's maximum)

    bool operator==(const MatmulSequenceShape & o) const;
};

struct MatmulSequence {
    std::string           error;      // empty on success: why the shape was refused
    std::string           family;
    FamilyBuffers         buffers;
    control::ControlStream stream;
    std::vector<uint32_t> words;      // encode(stream): what the NPU (and the simulator) receives
    // Bytes each argument must hold from its start: the DMAs touch exactly [0, bytes). Whole 4-row
    // groups of weight tiles plus the W window's over-read (a packed weight matrix holds them: its
    // WeightLayout::stream_bytes()); the output's whole tiles.
    uint64_t weights_bytes = 0, activations_bytes = 0, out_bytes = 0;
    int64_t  m_groups = 0, rounds = 0, steps = 0;
    bool ok() const { return error.empty(); }
};

// The shape of an invocation whose output argument has `out_row_stride` floats between tokens.
MatmulSequenceShape sequence_shape_of(const MatmulInvocation & inv, int64_t out_row_stride);

MatmulSequence build_matmul_sequence(const DesignDescription & design, const MatmulSequenceShape & shape);

// The core tile register that holds lock `lock`'s value (the barrier the stream releases).
uint32_t core_lock_value_offset(uint32_t lock);

}  // namespace xdna
