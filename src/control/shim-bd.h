#pragma once
// The NPU2 (AIE2P) shim tile's DMA: buffer descriptors as fields <-> their 8 register words, the
// register addresses of a column's BDs and channel start queues, the queue-push word, and the
// hardware limits a BD must respect (a checker that names the reason).
//
// Facts (bit positions, widths, addresses, limits) from Xilinx/aie-rt driver/src/global/xaie2pgbl_params.h
// and driver/src/global/xaie2pgbl_reginit.c (Aie2PShimDmaProp) at 3640b761ded1, and mlir-aie's shim BD
// encodings in test/Targets/NPU (tests/control cites file and commit per vector).
//
// Units: every size, stride and length below counts 32-bit words, as the shim DMA's registers do;
// base addresses are bytes.

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace xdna::control {

constexpr uint32_t kShimBdCount = 16;        // BDs per shim tile (ids 0..15), shared by its 4 channels
constexpr uint32_t kShimBdWords = 8;         // registers per BD
constexpr uint32_t kShimChannelsPerDir = 2;  // S2MM 0/1, MM2S 0/1

// Register address of (column, row, tile-local offset): column << 25 | row << 20 | offset (AIE2P).
uint32_t tile_address(uint32_t column, uint32_t row, uint32_t offset);

// Address of word 0 of shim BD `bd_id` in `column` (row 0); its base-address low register (the target
// of an AddressPatch) is word 1, i.e. shim_bd_address(...) + 4.
uint32_t shim_bd_address(uint32_t column, uint32_t bd_id);
// Address of the start-queue register of a shim DMA channel (direction 0: S2MM, 1: MM2S).
uint32_t shim_queue_address(uint32_t column, uint32_t direction, uint32_t channel);

// Tile-local offset of lock `lock`'s value register in an AIE2P core tile's memory module: 0x1F000 +
// 0x10 * lock (aie-rt driver/src/global/xaie2pgbl_params.h, XAIE2PGBL_MEMORY_MODULE_LOCK0_VALUE and its
// stride). A stream sets a core's runtime-parameter barrier by writing it.
constexpr uint32_t core_lock_value_offset(uint32_t lock) { return 0x1F000 + 0x10 * lock; }

// A shim BD as its register fields (values as the hardware stores them: strides minus one, wraps as
// counts, iteration wrap minus one). See ShimBdPattern for the logical access pattern.
struct ShimBd {
    uint32_t buffer_length = 0;      // words moved by one pass of the BD (d0 x d1 x d2 sizes)
    uint64_t base_address = 0;       // bytes, 4-byte aligned, 48 bits; patched at run time by an AddressPatch
    bool enable_packet = false;
    uint32_t out_of_order_id = 0;    // 6 bits
    uint32_t packet_id = 0;          // 5 bits
    uint32_t packet_type = 0;        // 3 bits
    bool secure_access = false;
    uint32_t d0_wrap = 0;            // 10 bits; 0 = linear transfer of buffer_length words
    uint32_t d0_stepsize = 0;        // 20 bits, stride - 1
    uint32_t burst_length = 0;       // 2 bits
    uint32_t d1_wrap = 0;            // 10 bits
    uint32_t d1_stepsize = 0;        // 20 bits, stride - 1
    uint32_t smid = 0;               // 4 bits
    uint32_t axcache = 0;            // 4 bits
    uint32_t axqos = 0;              // 4 bits
    uint32_t d2_stepsize = 0;        // 20 bits, stride - 1
    uint32_t iteration_current = 0;  // 6 bits
    uint32_t iteration_wrap = 0;     // 6 bits, iterations - 1
    uint32_t iteration_stepsize = 0; // 20 bits, stride - 1
    bool tlast_suppress = false;
    uint32_t next_bd = 0;            // 4 bits
    bool use_next_bd = false;
    bool valid_bd = false;
    int32_t lock_rel_value = 0;      // 7 bits, signed
    uint32_t lock_rel_id = 0;        // 4 bits
    bool lock_acq_enable = false;
    int32_t lock_acq_value = 0;      // 7 bits, signed
    uint32_t lock_acq_id = 0;        // 4 bits

    bool operator==(const ShimBd &) const;
};

// The 8 register words of a BD. A field wider than its register field is a logic error: callers check
// first (check_shim_bd); encode_shim_bd masks, so it never corrupts a neighbouring field.
std::array<uint32_t, kShimBdWords> encode_shim_bd(const ShimBd & bd);
ShimBd decode_shim_bd(const std::array<uint32_t, kShimBdWords> & words);

// Every field within its register width, the base address 4-byte aligned; empty if the BD is valid
// hardware input, else the reason ("d0_wrap 1024 exceeds its 10-bit field (max 1023)").
std::optional<std::string> check_shim_bd(const ShimBd & bd);

// The logical access pattern of one BD, in 32-bit words, dimension 0 innermost:
//   for i in iterations: for c in sizes[2]: for b in sizes[1]: for a in sizes[0]:
//       word at offset + i*iteration_stride + c*strides[2] + b*strides[1] + a*strides[0]
// (mlir-aie's npu.dma_memcpy_nd sizes/strides with the outermost dimension as the iteration.)
// The iteration dimension is not walked within one execution of the BD: each execution moves the
// d0 x d1 x d2 words of one iteration, at iteration_current x the iteration stride, and the hardware
// then advances iteration_current, wrapping after `iterations` executions (aie-rt
// driver/src/dma, the documentation of _XAie_DmaSetBdIteration: the step "applied at each execution of the BD",
// iteration_current "incremented by the hardware after BD is loaded"). So the whole pattern takes
// `iterations` executions: a queue push with repeat count iterations - 1, as mlir-aie lowers an N-deep
// npu.dma_memcpy_nd (lib/Dialect/AIEX/Transforms/AIEDmaToNpu.cpp, DmaToNpuPattern: iteration_size and
// the push's repeat_count both N - 1). A chain of such BDs interleaves them: each pass of the chain runs
// every BD of it once, one iteration each.
struct ShimBdPattern {
    uint64_t base_address = 0;                     // bytes
    std::array<uint32_t, 3> sizes{1, 1, 1};        // d0, d1, d2
    std::array<uint32_t, 3> strides{1, 0, 0};      // d0, d1, d2
    uint32_t iterations = 1;
    uint32_t iteration_stride = 0;
};

// The BD fields of a pattern (valid_bd set, no chaining, no locks), or the reason it cannot be
// expressed: a size or stride wider than its field, zero sizes, a byte count that is not a multiple of
// 4, a misaligned base. The planner splits such an invocation or refuses it with this reason.
struct ShimBdOrError {
    ShimBd bd;
    std::string error;
    bool ok() const { return error.empty(); }
};
ShimBdOrError shim_bd_from_pattern(const ShimBdPattern & pattern);
// Byte-granularity entry: a pattern given in bytes (offset, sizes, strides) must be 4-byte granular
// (d0 size, every stride, the offset); otherwise the reason. Converted to words on success.
ShimBdOrError shim_bd_from_byte_pattern(const ShimBdPattern & pattern_in_bytes);

// The start-queue push: run BD `bd_id` (and its chain) repeat_count + 1 times; with issue_token the
// completion is reported to the host (what a Sync waits for).
struct QueuePush {
    uint32_t bd_id = 0;         // 4 bits
    uint32_t repeat_count = 0;  // 8 bits: 0..255 extra repetitions
    bool issue_token = false;
};
uint32_t encode_queue_push(const QueuePush & push);
QueuePush decode_queue_push(uint32_t word);
std::optional<std::string> check_queue_push(const QueuePush & push);

// Hardware limits, for planners that split before building.
struct ShimLimits {
    static constexpr uint32_t max_wrap = (1u << 10) - 1;         // d0/d1 wrap
    static constexpr uint32_t max_stride = 1u << 20;             // words (stepsize field holds stride - 1)
    static constexpr uint32_t max_iterations = 1u << 6;          // iteration wrap holds iterations - 1
    static constexpr uint32_t max_repeat_count = 255;            // queue push
    static constexpr uint64_t max_base_address = (1ull << 48) - 1;
    // Starts a channel's task queue holds: a fifth push before one completes must wait (mlir-aie guards
    // it with a poll; test/Conversion/DmaToNpu/queue-depth-mixed-pushes.mlir at 3bbb8f6060f2).
    static constexpr uint32_t max_queue_depth = 4;
};

// Executions one whole pattern of `bd` takes (its iterations), and the bytes one execution moves.
constexpr uint32_t shim_bd_iterations(const ShimBd & bd) { return bd.iteration_wrap + 1; }
constexpr uint64_t shim_bd_execution_bytes(const ShimBd & bd) { return 4ull * bd.buffer_length; }

// Burst length field values (shim BD word 4): 0: 64 B, 1: 128 B, 2: 256 B, 3: 512 B (npu2; npu1 stops at
// 2). mlir-aie uses the largest when none is asked for (BaseNPU2TargetModel::getShimBurstEncodingsAndLengths).
constexpr uint32_t kShimBurst512 = 3;
// AxCache value mlir-aie writes into every shim BD ("enables upsizing in the NoC", AIEDmaToNpu.cpp).
constexpr uint32_t kShimAxCacheDefault = 2;

}  // namespace xdna::control
