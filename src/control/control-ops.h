#pragma once
// The NPU2 control code ("transaction" or TXN stream) as data, and its binary encoding.
//
// A design's runtime sequence reaches the NPU as a flat array of 32-bit words: a 4-word header, then
// operations (register writes, block writes, masked writes, address patches onto the kernel's buffer
// arguments, and syncs on DMA task completion). The host builds these words per invocation shape
// (runtime/matmul-sequence.h), the XRT device hands them to the firmware in the instructions buffer,
// and the simulator's DMA interpreter decodes the same words back (sim/dma-interpreter.h), so both
// execute exactly the bytes an NPU would receive.
//
// The word layout follows the format mlir-aie's NPU translation emits and aie-rt's transaction API
// defines (facts from Xilinx/mlir-aie lib/Targets/AIETargetNPU.cpp at cd2d77e4d821, and Xilinx/aie-rt
// driver/src/common/xaie_txn.h, driver/src/global/xaiegbl.h at 3640b761ded1). The code is ours.
//
// This layer links nothing of ours: it is plain data and bit layouts.

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace xdna::control {

// Stream header, as mlir-aie writes it for an npu2 (AIE2P) target: version 0.1, device generation 4
// (3 is npu1), 6 rows (1 shim, 1 memory tile, 4 core rows), the device model's columns (8 for npu2,
// 1 for npu2_1col), 1 memory tile row. The op count and byte size are filled in by encode().
struct TxnHeader {
    uint8_t major = 0;
    uint8_t minor = 1;
    uint8_t dev_gen = 4;
    uint8_t rows = 6;
    uint8_t cols = 8;
    uint8_t mem_tile_rows = 1;
    bool operator==(const TxnHeader &) const;
};

// One 32-bit register write.
struct Write32 {
    uint32_t address;  // tile-relative address with the column and row bits included (shim-bd.h: tile_address)
    uint32_t value;
};

// Consecutive 32-bit registers from `address` on (a shim BD is written as one 8-word block).
struct BlockWrite {
    uint32_t address;
    std::vector<uint32_t> words;
    // Word 1 of the op: column | row << 8 when the writer names the tile (mlir-aie does for a blockwrite
    // given column/row, and writes 0 for the BD writes it lowers). The address already holds the tile;
    // kept so a decoded stream encodes back to the same words.
    uint32_t tile_word = 0;
};

// register = (register & ~mask) | (value & mask)
struct MaskWrite32 {
    uint32_t address;
    uint32_t value;
    uint32_t mask;
};

// The firmware adds the device address of kernel buffer argument `arg_index` plus `arg_offset` bytes to
// the 64-bit value held by the BD's base-address registers at `address` (the BD's second word, the
// address low register; the high half follows it).
struct AddressPatch {
    uint32_t address;
    uint32_t arg_index;
    uint64_t arg_offset;
};

// Wait until the DMA tasks issued with a token on (column, row, direction, channel) have completed,
// over column_count columns and row_count rows starting there.
struct Sync {
    uint32_t column;
    uint32_t row;
    uint32_t direction;  // 0: S2MM (stream to memory, data coming back), 1: MM2S (memory to stream)
    uint32_t channel;
    uint32_t column_count;
    uint32_t row_count;
};

// Give the firmware a preemption point (level: 0 none, 1 memory tiles, 2 core tiles, 3 registers
// saved). One word. Builders of ours do not emit it; decode() accepts it because mlir-aie streams do.
struct Preempt {
    uint8_t level;
};

// Load the PDI `id` of `size` bytes from `address` (npu1 streams reconfiguring mid-run). Decoded for
// completeness; our builders do not emit it and the simulator refuses it.
struct LoadPdi {
    uint16_t id;
    uint32_t size;
    uint64_t address;
};

using ControlOp = std::variant<Write32, BlockWrite, MaskWrite32, AddressPatch, Sync, Preempt, LoadPdi>;

// With an xclbin and an instructions buffer (how we run), the firmware translates the host addresses
// of the first 5 buffer arguments only; mlir-aie folds an aperture offset into arg_offset beyond those
// (test/Targets/NPU/npu_address_patch_ddr_offset.mlir). Builders of ours patch arguments 0..4 only.
constexpr uint32_t kFirmwareTranslatedArgs = 5;

struct ControlStream {
    TxnHeader header;
    std::vector<ControlOp> ops;
};

// Empty if every op's fields fit their word encoding (sync and tile fields 8 bits, preempt level 8 bits,
// a non-empty blockwrite), else the reason naming the op index.
std::string validate(const ControlStream & stream);

// The words of a stream: header (with the op count and total byte size filled in), then every op.
// Throws std::invalid_argument with validate()'s reason if a field does not fit (a builder bug: no word
// is ever silently truncated).
std::vector<uint32_t> encode(const ControlStream & stream);

struct Decoded {
    ControlStream stream;
    std::string error;  // empty on success; otherwise names the op index and its word offset
    bool ok() const { return error.empty(); }
};

// Parses `n_words` words back into a stream. Never throws, never reads past `n_words`; an unknown
// opcode, a size field that disagrees with the op, a truncated op or a header whose op count or byte
// size disagrees with the words is an error.
Decoded decode(const uint32_t * words, size_t n_words);

// Readable one-line form of an op ("write32 0x0201d004 = 0x00000000"), for errors and dumps.
std::string describe(const ControlOp & op);

}  // namespace xdna::control
