// The instruction stream of the attention design (aie/flash_attn: FLASH_ATTN_EXT), built on the host from
// its description: what the XRT device hands the firmware and the simulator's DMA interpreter executes
// (with the design's core program, src/ops/flash_attn/sim).
//
// The work is the engine's split (tasks of a sequence, a KV head and up to 16 query rows; a task's blocks
// of 32 KV rows in `parts` ranges when there are fewer tasks than cores), placed as aie/flash_attn/design.py
// places it: the cores of a round, column by column, take the (task, part) pairs in order (a task's parts on
// consecutive cores, in one column or two), a column's four cores in lockstep behind one input FIFO split
// over them and one output FIFO joined from them. Per round and column the stream runs phases, one
// in flight, each taking its BDs from all 16 of the shim (the host syncs on a phase before it rewrites
// them):
//   the q step      per core: its 16 slopes (from the host-written table), its query rows in runs of
//                   heads x tokens, the filler (from the table's zero region);
//   the block steps one chain per column (per core K, V, the mask rows of its task's tokens and their
//                   filler), repeated over up to 64 steps with each BD's iteration stepping to the next
//                   block, wrapping on a part of fewer blocks;
//   split rounds    the partial states drained into the partials scratch (core i's at state i, so a task's
//                   are consecutive), every column's drain synced, then read back by each task's merging
//                   core, one state step at a time;
//   the drain       the finished rows to out in runs, every other byte of the cores' objects to the
//                   scratch's discard slots.
// Every per-token value (n_kv, the blocks) is in the stream and the RTP words: the xclbin depends on the
// KV cache type, the head dim and the layout only. Two layouts: "attention", whose kv objects carry a mask
// row per query row a core holds (16), and "decode", for tasks of one token, whose kv objects carry one
// (64 bytes of mask a block step where the other moves 1024); a stream takes the layout of the fewest
// task tokens that holds its tasks (attention_layout).
#pragma once

#include "runtime/argument-places.h"
#include "runtime/design-description.h"
#include "runtime/invocation.h"
#include "runtime/rows-sequence.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xdna {

struct FlashAttnParams;

struct AttentionShape {
    std::string contract;  // the block program (a contract of the family of the KV cache type)
    int64_t     d = 0, n_kv = 0, n_tokens = 0, n_head = 0, n_head_kv = 0, n_seq = 0, n_seq_kv = 0;
    bool        has_mask = false;
    int64_t     mask_heads = 1, mask_seqs = 1;
    int64_t     q_nb[4] = {}, k_nb[4] = {}, v_nb[4] = {}, mask_nb[4] = {}, out_nb[4] = {};  // bytes
    uint32_t    scale_bits = 0;  // the fp32 scale's bits (an RTP word)
    int         columns = 0;     // 0: as many as the tasks fill, at most max_columns (design.py --cols: exactly)
    int         max_columns = 0; // the columns the split may use (0: the design's all; design.py --max-cols)
    std::string layout;          // "": the layout of the fewest task tokens that holds the largest task's
    // Per mask sequence and token (mask_seqs x n_tokens): the positions up to its last one the mask leaves
    // visible (0: none). Empty: not known when the stream is built, so every block is moved.
    std::vector<int32_t> visible;
    bool operator==(const AttentionShape & o) const;
};

// The mask's profile (AttentionShape::visible) of an invocation: read from its "mask_source" operand (a
// position counts as hidden where the value is -inf, the one value the F32 -> F16 cast and the kernel's
// all_masked agree on; anything else, a NaN included, as visible), or made from the parameters' modelled
// causal mask; empty without either.
std::vector<int32_t> attention_visible(const Invocation & inv);

// The parts of a task's context (flash_attn_split's and the stream's): with fewer tasks than `cores`, as
// many as the cores hold, every part at least one block, up to 4 or isqrt(2 blocks). A core of the design
// takes ceil(blocks / parts) block steps and ceil(parts / 2) state steps (an F16 kv object holds 2 states),
// fewest near parts = sqrt(2 blocks); past it the merging core's state steps cost more than the parts
// save. 1 when the tasks fill the cores.
int64_t attention_parts(int64_t tasks, int64_t blocks, int64_t cores);

// The shape of a flash_attn invocation from its key and parameter block (its mask's profile rounded up to
// whole blocks of KV rows); false with `err` otherwise.
bool attention_shape_of(const Invocation & inv, const DesignDescription & d, AttentionShape & out, std::string & err);
// The same from the parameter block and the program's name.
AttentionShape attention_shape(const FlashAttnParams & p, const char * contract);

// The most tokens a task of the shape holds (its tasks: up to the design's max_rows query rows of one KV
// head, in chunks as flash_attn_split makes them); 0 when the shape has no tasks.
int64_t attention_task_tokens(const DesignDescription & d, const AttentionShape & s);
// The layout a stream of the shape runs on: `s.layout` when set, else the one of the fewest task_tokens
// that holds its largest task (a decoded token's tasks hold one: the decode layout, whose kv objects carry
// one mask row); nullptr with `err` when none holds it. Its core input objects' unit: kv or kv_decode.
const LayoutDesc * attention_layout(const DesignDescription & d, const AttentionShape & s, std::string & err);
// Every layout that holds the shape's tasks, the fewest task tokens first (s.layout not consulted): a
// device without the first's xclbin takes the next (attention holds every shape the design takes).
std::vector<const LayoutDesc *> attention_layouts_holding(const DesignDescription & d, const AttentionShape & s);
std::string attention_kv_unit(const LayoutDesc & L);

// What the design takes of a shape, before any stream is built: an xclbin of its KV type and head dim, a
// layout holding its tasks, one mask row per token shared by the heads, and every stride a BD steps a
// whole number of 32-bit words within the BD's limits. The planner asks it (a shape it refuses goes to
// the host path up front, on every device: the kernels mode too, which alone could run it), and
// build_attention_sequence starts with it; false with `err` naming the rule.
bool attention_shape_fits(const DesignDescription & d, const AttentionShape & s, std::string & err);

// The host-written slopes operand (.host_written "slopes"): per KV head g, 16 + ratio fp32 values, value i
// the slope of head g x ratio + i % ratio; then, 64-byte aligned, a zero region of one kv object, the
// source of every filler read; then a stream's step words (two per round and core: its column's block
// steps, its own), which only a stream knows (bytes: the slopes' and the zeros' until a stream adds them).
struct AttentionSlopesLayout {
    int64_t  per_kv_head = 0;  // floats per KV head's table
    uint64_t zeros_offset = 0, zeros_bytes = 0, steps_offset = 0, bytes = 0;
};
// False with `err` when the design has no kv object for the family and head dim.
bool attention_slopes_layout(const DesignDescription & d, const std::string & family, int64_t head_dim, int64_t n_head,
                             int64_t n_head_kv, AttentionSlopesLayout & out, std::string & err);

struct AttentionSequence : RowsSequence {
    AttentionSlopesLayout slopes;
    uint64_t              partials_bytes = 0;  // the scratch operand: per core of the stream a partial state and a discard slot
    // Per operand the bytes past its base the stream's BDs reach (K, V and the mask read a last block of
    // fewer than 32 rows whole): the memory behind each operand must hold them.
    std::vector<std::pair<std::string, uint64_t>> reach;
    uint64_t reach_of(const std::string & operand) const;
    // The plan's figures: rounds, parts per task, block steps and state steps per round, syncs, and the
    // largest chains of a q step and a block step (BDs per column).
    int64_t rounds = 0, parts = 0, steps = 0, state_steps = 0, syncs = 0, q_chain = 0, block_chain = 0;
    int64_t chunk_rows = 0;  // query rows of a task (its last chunk's may be fewer)
    // The block steps the rounds take in lockstep: per round the most of any column (a phase syncs every
    // column before the next), summed. traffic.calls_per_core: the busiest core's block calls.
    int64_t lockstep_blocks = 0;
    // The step words (slopes.steps_offset on): per round k and core i of the stream, [2 (k cores + i)] the
    // column's block steps that round, [+1] the core's own.
    std::vector<uint32_t> step_words;
};

// The host-written operand of a run of `seq`: the invocation's slopes and zero region, then the stream's
// step words (seq.slopes.bytes in all); false with `err` when they cannot be made.
bool attention_host_bytes(const Invocation & inv, const AttentionSequence & seq, std::vector<uint8_t> & out, std::string & err);

// The stream, or the reason the design cannot take the shape (a head dim or KV type it has no xclbin for,
// a mask per head, a stride a BD cannot take, a block step's chain past the shim's 16 BDs): the caller
// then runs the invocation elsewhere. Its traffic: per operand the bytes read or written through the shim
// ("filler": the zero region's reads, "discarded": the drained bytes that are no result), the columns
// used, the busiest core's block calls.
AttentionSequence build_attention_sequence(const DesignDescription & d, const AttentionShape & s);

// The kernel's buffer arguments for one invocation (the firmware translates 5, the design has 7 operands):
// the graph's read operands grouped by the buffer they live in (an argument from their lowest offset to
// the last byte the stream reads), the written one alone (a device may stage it), then one device-held
// buffer: the slopes the host writes, then the partial states' scratch.
struct AttentionArgument {
    DeviceBuffer * buffer = nullptr;  // nullptr: the device-held one
    uint64_t       offset = 0, bytes = 0;
    bool           written = false;
};
struct AttentionArguments {
    std::vector<ArgumentPlace>     places;  // per operand of the design, by its argument index
    std::vector<AttentionArgument> args;
    uint64_t                       partials_at = 0, held_bytes = 0;  // within the device-held argument
};
// False with `err` when an operand's buffer does not hold what the stream reads of it (a last block of
// KV rows is read whole), or the operands need more arguments than the firmware translates. The stream's
// words are placed by place_arguments(seq.words, out.places, ...), by a caller that has no such stream yet
// (the XRT device keeps them per placing: a decode token's layers place alike).
bool attention_arguments(const Invocation & inv, const DesignDescription & d, const AttentionSequence & seq, AttentionArguments & out,
                         std::string & err);

}  // namespace xdna
