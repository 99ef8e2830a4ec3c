// A design's data movement as its aie/<design>/dataflow.json describes it, read once for the host side.
//
// The design's design.py builds the IRON program from the same file; its instruction-stream builder
// (matmul-sequence.h, ops/add/runtime/add-sequence.h) and the simulator's DMA interpreter
// (sim/dma-interpreter.h) read it here, so the shim channels, FIFO depths, split/broadcast/join links,
// BD ids and RTP words the NPU program was built with are the ones the host drives and the simulator
// executes. The FIFO graph, operands, units, RTP words and barrier are any design's; the fields marked
// "the matmul's" belong to its data movement (matmul_movement) and are empty elsewhere.
#pragma once

#include "contracts/matmul-contract.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// Where a FIFO's objects go next: how one memory-tile FIFO feeds (or is fed by) the cores.
// forward: a memory-tile FIFO handing a shim FIFO's objects on to the shim unchanged (no core between).
enum class FifoLink { none, split, broadcast, join, forward };

struct FifoDesc {
    std::string name;       // "w_l3l2"
    std::string from, to;   // "shim", "memtile", "core"
    FifoLink    link = FifoLink::none;
    std::string peer;       // the memory-tile FIFO a split/broadcast reads or a join writes
    std::string unit;       // object unit: a name of DesignDescription::units, or the matmul's "w" / "a" / "c"
    char        tile = 0;   // the matmul's units: 'w', 'a' or 'c' (the family's W / A / C object); 0 otherwise
    int         count = 1;  // units per object
    int         depth = 0;  // resolved: a number; the memory-tile depth ("l2") or the C depth ("c") filled in
    bool        depth_is_c = false;  // depth follows the family's C depth
    std::string operand;    // shim FIFOs: the kernel operand it moves ("weights", "activations", "out")
    bool        shim_mm2s = false;   // shim FIFOs: direction of the shim channel
    int         shim_channel = -1;   // shim FIFOs: channel number, -1 otherwise
    // One FIFO for the whole array instead of one per column: the shim FIFO lives in column 0's shim and
    // memory tile, and its split link sends part r to core row r of every column.
    bool        shared_by_columns = false;
    // ("rows") One FIFO per core row instead: core row r's lives in column r's shim and memory tile and
    // is broadcast along the row to every column.
    bool        shared_per_row = false;
};

// One way of laying the work over a column's cores, with the FIFOs (and their links) it takes. Each
// layout is its own xclbin of a family and token tile (the memory tile's links are fixed in it); the
// instruction stream of a shape is built for one layout, and the timing model tells which is faster.
// Exactly one of W and A is split over the core rows, the other broadcast:
//   m_split  W split, A broadcast: a step = core_rows row tiles x 1 token tile (decode);
//   n_split  W broadcast, A split: a step = 1 row tile x core_rows token tiles (prefill);
//   n_shared as n_split, with A read once per step for the whole array (column 0's shim and memory
//            tile) and part r fanned out to core row r of every column (a_shared): every column then
//            takes every A object, so every column has a row tile in every round (the sequence builder
//            gives a column past the last row tile a copy of it), and the layout is built for the whole
//            array only.
//   n_rows   as n_shared, with core row r's A read by column r's shim into memory tile (r, 1) and
//            broadcast along the row (a_rows): the array's A over core_rows shim channels, not one.
struct LayoutDesc {
    std::string           name;
    std::vector<FifoDesc> fifos;
    int w_parts = 1, a_parts = 1;  // row tiles / token tiles of one step (the split operand's part count)
    bool a_shared = false;         // A's FIFOs are shared by the columns (FifoDesc::shared_by_columns)
    bool a_rows = false;           // ... one per core row, core row r's through column r (n_rows)
    // The attention's: the tokens a task may hold, i.e. the mask rows its kv object carries (.task_tokens;
    // 0 in other designs). A stream takes the layout of the fewest that holds its largest task.
    int task_tokens = 0;

    const FifoDesc * fifo(const std::string & name) const;
    const FifoDesc * shim_fifo_of(const std::string & operand) const;
    bool splits_m() const { return w_parts > 1; }
};

struct BdSlot {
    // Per operand (the description's names), the BD ids of one step: chained where there are several.
    std::vector<std::pair<std::string, std::vector<uint32_t>>> by_operand;
    // The matmul's: BD ids of the W / A K chunks (chained) and of the C drain.
    std::vector<uint32_t> w, a;
    uint32_t              c = 0;

    const std::vector<uint32_t> * ids(const std::string & operand) const {
        for (const auto & [name, list] : by_operand) {
            if (name == operand) return &list;
        }
        return nullptr;
    }
};

struct DesignDescription {
    std::string design, device;
    int max_columns = 0, core_rows = 0, shim_row = 0, memtile_row = 0, first_core_row = 0;
    std::vector<std::pair<std::string, std::vector<std::string>>> families;  // contract order = RTP value
    // The kernel's buffer arguments by name ("weights", "a", ...) and index; the matmul's four by name.
    std::vector<std::pair<std::string, int>> operands;
    int arg_weights = -1, arg_activations = -1, arg_out = -1, arg_params = -1;
    // Object units of a design whose objects are a fixed number of bytes per value of the tile (the
    // add design's "chunk": 4 bytes per value), or per a fixed number of values (set_rows' "q8_0": 34
    // bytes per 32 values), or a fixed number of bytes whatever the tile (row_scale's "scalar": the one
    // value of a row); the matmul sizes its "w" / "a" / "c" per family instead.
    struct Unit {
        std::string name;
        size_t      bytes = 0, values = 1;  // bytes per `values` values of the tile
        bool        fixed = false;          // `bytes` bytes per unit, at any tile
    };
    std::vector<Unit> units;
    // Which stream builder builds the design's instruction streams: the matmul's data movement (W, A and
    // C FIFOs; runtime/matmul-sequence.h, with its own core program and sizing rules), or a rows design's
    // (".movement": "rows"; runtime/rows-sequence.h), or a norm design's (".movement": "norm": whole rows
    // per core, each read twice; runtime/norm-sequence.h). A design that says none has no stream builder.
    bool matmul_movement = false;
    bool rows_movement = false;
    bool norm_movement = false;
    // (".movement": "gather") DMAs only, no cores (core_rows 0): rows read at offsets the host takes from
    // the invocation's ids at submission (runtime/gather-sequence.h).
    bool gather_movement = false;
    // (".movement": "scatter") rows converted by a core per column and written at the rows the
    // invocation's ids name, read by the host at submission (runtime/scatter-sequence.h): one layout per
    // family, named after it (the output's unit is the family's format).
    bool scatter_movement = false;
    // (".movement": "rope") head rows through a core per column with their token's row of an operand the
    // host writes at submission (runtime/rope-sequence.h: the angle rows), held for all of the token's heads.
    bool rope_movement = false;
    // (".movement": "attention") FLASH_ATTN_EXT: tasks of up to max_rows query rows through a column's
    // cores in lockstep, one input FIFO split over them (the q step, then K/V/mask blocks of kv_block
    // rows, then on a split task's merging core its parts' partial states) and one output FIFO joined from
    // them; the objects are the design's own per family and head dim (.attention.objects). Its stream
    // builder: ops/flash_attn/flash-attn-sequence.h.
    bool attention_movement = false;
    struct AttentionObjects {
        std::string family;
        int         tile = 0;              // head dim
        size_t      kv = 0, state = 0;     // bytes of the core's input ("kv") and output ("state") objects
        size_t      kv_decode = 0;         // the input object of a layout of one-token tasks (0: none)
    };
    std::vector<AttentionObjects> attention_objects;
    int attention_kv_block = 0, attention_max_rows = 0, attention_cores_per_column = 0;
    const AttentionObjects * attention_objects_of(const std::string & family, int tile) const;
    // Operands the devices hold for the run and the device writes and reads back within it
    // (.device_scratch: the attention's partial states), neither tensors of the graph nor host-written.
    std::vector<std::string> device_scratch;
    // Operands the host writes when the run is submitted (.host_written: the rope's angle rows), not
    // tensors of the graph: each device holds their memory (Invocation::host_operand gives their bytes).
    std::vector<std::string> host_written;
    bool is_host_written(const std::string & operand) const;
    // (".movement": "quant") activation rows into a matmul's activation tiles, a core per column building
    // whole tiles (runtime/quant-sequence.h); the padding rows read from a block of zeros_bytes zeros.
    bool quant_movement = false;
    size_t zeros_bytes = 0;
    // Objects whose bytes are a family's own (.objects: the quant design's group and tile), not a unit per
    // value of the tile; with the tile's shape the family's program works on.
    struct FamilyObjects {
        std::string                                 family;
        std::vector<std::pair<std::string, size_t>> bytes;  // unit -> bytes of one unit
        int tokens = 0, tile_k = 0, group_tokens = 0;
    };
    std::vector<FamilyObjects> family_objects;
    const FamilyObjects * objects_of(const std::string & family) const;
    // Whether rows-sequence.h builds its streams (a rows or a norm design).
    bool rows_stream() const { return rows_movement || norm_movement; }
    // Whether one of the described movements' builders (rows, norm, gather, quant, scatter, rope, attention) builds its
    // streams: every design with a stream builder but the matmul's.
    bool described_stream() const {
        return rows_stream() || gather_movement || quant_movement || scatter_movement || rope_movement || attention_movement;
    }
    std::vector<LayoutDesc> layouts;  // the first is the default (what a shape without a layout gets)
    std::vector<FifoDesc> fifos;      // the default layout's
    int l2_depth = 0, c_depth_max = 0;
    // The core program's runtime parameters: words of core memory the stream writes, which keep their
    // values across invocations. The core reads them as int32: no word carries more than rtp_word_max.
    uint32_t rtp_core_address = 0;
    std::vector<std::string> rtp_names;  // by word index
    // Every core program's contract and version words; the matmul's out_tiles and k_tiles (-1 elsewhere).
    int rtp_contract = 0, rtp_out_tiles = -1, rtp_k_tiles = -1, rtp_version = 0, rtp_word_count = 0;
    uint32_t rtp_layout_version = 0;
    uint32_t rtp_word_max = 0;
    // Words the core program reads as fp32 bits (core_program.rtp_float_words: the scale's s and b), by
    // word index: any 32-bit pattern; every other word is an int32 count of at most rtp_word_max.
    std::vector<bool> rtp_float;
    bool rtp_word_is_float(int word) const { return word >= 0 && static_cast<size_t>(word) < rtp_float.size() && rtp_float[word]; }
    // The barrier (core_program.barrier): the stream writes barrier_value into lock barrier_lock's value
    // register after the RTP words; the core acquires (equal: waits until the lock holds the value and
    // leaves it; greater-equal: waits until it holds at least the value and subtracts it), reads the RTP
    // words, then releases (adds barrier_release_value; 0: the core program has no release).
    uint32_t barrier_lock = 0, barrier_value = 0;
    bool     barrier_acquire_ge = false;
    uint32_t barrier_acquire_value = 0, barrier_release_value = 0;
    uint32_t lock_max_value = 0;
    // Budgets the buffers are sized against.
    size_t core_data_bytes = 0, memtile_bytes = 0, kernel_data_bytes = 0;
    // The stack each family's kernel needs at a token tile (scratch arrays + spills + frames), as the
    // kernel source's budget comment gives it; every core of the family's xclbin gets it as its stack.
    struct KernelStack {
        std::string family, source;
        int         tile_n = 0;
        size_t      bytes = 0;
    };
    std::vector<KernelStack> kernel_stacks;
    // Shim buffer descriptors.
    int shim_bds = 0, steps_in_flight = 0, max_k_chunks = 0;
    std::vector<BdSlot> bd_slots;
    // Shim BD limits the design was checked against (words).
    uint32_t wrap_max = 0, iteration_max = 0, stride_max = 0;
    uint32_t repeat_max = 255;  // queue-push repeat count (mlir-aie: at most 255)
    int params_words = 0;

    // The default layout's FIFO `name`, and its shim FIFO of an operand ("weights", "activations", "out"),
    // nullptr if none.
    const FifoDesc * fifo(const std::string & name) const;
    const FifoDesc * shim_fifo_of(const std::string & operand) const;
    // Layout `name` ("": the default), nullptr if the design has none of that name.
    const LayoutDesc * layout(const std::string & name) const;
    // The family serving `contract`, and the contract's RTP value in it; empty / -1 if none.
    std::string family_of(const std::string & contract) const;
    int         contract_index(const std::string & family, const std::string & contract) const;
    const std::vector<std::string> * family_contracts(const std::string & family) const;
    // The family's kernel stack at tile_n, nullptr if the description gives none.
    const KernelStack * kernel_stack(const std::string & family, int tile_n) const;
    // The index of RTP word `name`, -1 if the core program has none; the argument index of `operand`, -1.
    int rtp_word(const std::string & name) const;
    int operand_arg(const std::string & operand) const;
    // Bytes of one `unit` at tile `tile_n` from .units, 0 when the design has no such unit or tile_n is
    // not a whole number of its values.
    size_t unit_bytes(const std::string & unit, int tile_n) const;
    // The same for an xclbin of `family`: the family's own object bytes (.objects, or the attention's
    // .attention.objects at head dim tile_n) where it has them.
    size_t unit_bytes(const std::string & family, const std::string & unit, int tile_n) const;
};

struct DesignRead {
    DesignDescription design;
    std::string       error;  // empty on success: names the field that is missing or wrong
    bool ok() const { return error.empty(); }
};

// Parse the JSON text of a dataflow description. Never throws.
DesignRead parse_design_description(const std::string & json_text);
DesignRead read_design_description_file(const std::string & path);

// The matmul design's description as built into the library (the text of aie/matmul/dataflow.json
// at build time; find_design("matmul"), runtime/design-registry.h). Parsed once; a broken built-in
// file is a build defect, reported by `error`.
const DesignRead & matmul_design();

// The buffer sizes of one family's xclbin at token tile `tile_n`: every FIFO object is sized to the
// largest tile of the family's contracts that take that token tile (one xclbin serves them all), and C is double-buffered when it fits next to
// the kernel's own stack. With `exact` (a contract of the family), the xclbin that serves that contract
// only (design.py --exact): its W object is the contract's own tile, so a W window over-fetches nothing.
struct FamilyBuffers {
    size_t w_obj = 0, a_obj = 0, c_obj = 0;  // bytes of one W / A / C unit (A: one K part, act_k_parts)
    int    a_k_parts = 1;   // A objects per K tile: the core program calls the kernel once per part
    int    c_depth = 0;
    size_t stack = 0;       // the family kernel's stack at this token tile
    size_t core_bytes = 0;  // core data memory in use: 2 W + 2 A + C x depth + RTP words + stack + static data
    size_t unit(char tile) const { return tile == 'w' ? w_obj : tile == 'a' ? a_obj : c_obj; }
};
// False with `err` when the family cannot be sized, or when it does not fit a core even with one C
// buffer; in the latter case `out` still holds its figures (c_depth 1, core_bytes over the limit).
bool family_buffers(const DesignDescription & d, const std::string & family, int tile_n, FamilyBuffers & out,
                    std::string & err, const std::string & exact = "");

}  // namespace xdna
