// Cycles of one core-kernel call, from the operations the kernel's own code issues.
//
// The aie/ core kernels run on the host against the simulator's aie_api, which counts the AIE2P
// instructions each call stands for, per VLIW slot (aie_api/host/op-counts.hpp). Those counts do not
// depend on the data (no kernel branches on values; tests/timing checks it), so each kernel is run
// once per process on a zero tile and its counts are kept. A call then takes
//     max over the slots of (instructions x cycles per instruction) + loop overhead
// under the per-operation table below: the core issues one VLIW bundle per cycle and every slot
// works in parallel, so the busiest slot sets the pace of a well-scheduled loop. What a compiler
// or hand scheduling loses on top of that bound is the efficiency tier (npu-presets.h).
//
// The per-operation table (sources in brackets):
//   vector  1 instruction per cycle: mmul, elementwise multiply/MAC, accumulator add [AM020 "Functional
//           Overview": one vector unit; aie_api AIE2P mmul_8_8.hpp: 8x8x8 int8 = 512 MAC in one
//           instruction]. The int8 x int4 4x16x16 mmul (1024 MAC) takes 1024 / int4 rate cycles: 2 at
//           512 MAC/cycle (the int8 rate), 1 at 1024 (AIE-ML ran int8 x int4 at twice int8 [AM020]);
//           AMD has not published the AIE2P figure, so both are reported (NpuPreset::int4_macs_per_cycle).
//           Emulated operations (bf16 mmul, fp32 multiply) are counted as the intrinsics they issue.
//   move    1 per cycle (one register-move / shuffle slot) [llvm-aie AIE2PGenInstrInfo.td placement].
//   load    2 load units, one 512-bit load each per cycle [AM020 "Functional Overview": two load units];
//           VUNPACK (4->8, 8->16 bit) issues in the second load slot [AIE2PGenInstrInfo.td], so loads
//           and unpacks share 2 slots and unpacks alone have 1: max(ceil((load + unpack) / 2), unpack).
//   store   1 per cycle: one store unit [AM020], also taking srs / pack conversions.
//   scalar  1 per cycle; aie_api calls do not count scalar work (pointer arithmetic runs in the AGUs).
//   loops   hardware zero-overhead loops (loop start/end/count registers ls, le, lc [AM020 "Register
//           Files"]): no per-iteration branch. A call pays a fixed overhead (call and return, pointer
//           set-up, the prologue and epilogue of its modulo-scheduled loops), assumed; and optionally a
//           cost per entry of a loop the kernel asks to be software-pipelined (AIE_PREPARE_FOR_PIPELINING,
//           counted by the host aie_api; chess_prepare_for_pipelining asks Peano for nothing and counts
//           nothing): its fill and drain (default 0, a knob: NpuPreset::pipelined_loop_cycles).
#pragma once

#include "contracts/matmul-contract.h"
#include "ggml.h"
#include "sim/core-state.h"
#include "sim/npu-presets.h"

#include <cstdint>
#include <functional>

namespace xdna {

// Cycles of one call, per slot and in all.
struct SlotCycles {
    double vector = 0, move = 0, load = 0, store = 0, scalar = 0;
    double slot_max = 0;   // the busiest slot
    double overhead = 0;   // loop overhead: per call + per pipelined-loop entry
    double total = 0;      // slot_max + overhead
    const char * binding = "vector";  // the busiest slot's name
};

// The per-operation table applied to `ops` under the preset's int4 rate and loop overheads.
SlotCycles core_cycles(const CoreOps & ops, const NpuPreset & p);

// The operation counts of one call of a contract kernel and of the C-tile clear that starts each
// output tile, measured by running the kernels (once per process, on a thread of their own).
struct KernelProfile {
    const char * contract = "";
    int          tile_n = 0;
    CoreOps      call;  // mm_<contract>_n<TN>(W, A, C): one K tile (every K part's call, act_k_parts)
    CoreOps      zero;  // mm_zero_c_n<TN>(C): once per output tile
    int          calls_per_k_tile = 1;  // kernel calls in `call`: one per A object
};

// nullptr when the contract has no kernel for this token tile.
const KernelProfile * kernel_profile(const MatmulContract & contract, int tile_n);
// The same for the weight type's default contract (nullptr also when the type has none).
const KernelProfile * kernel_profile(ggml_type weight_type, int tile_n);

// Runs `kernel` once on the calling thread (core state reset first) and returns what it issued.
using ProfiledTileFn = void (*)(const uint8_t * w, const uint8_t * a, float * c);
CoreOps measure_tile_kernel(ProfiledTileFn kernel, const uint8_t * w, const uint8_t * a, float * c);

// Runs `call` once on a fresh thread of its own (fresh per-thread counters, core state reset) and
// returns what it issued: how the kinds other than matmul measure their kernels' calls, once per process.
CoreOps measure_on_own_thread(const std::function<void()> & call);

// The operations of a chunk kernel's call on n values, from its calls on `lanes` and on `chunk` values:
// a fixed part and a per-vector part (the kernels' loops issue the same per 32 lanes whatever the data).
CoreOps interpolate_call_ops(const CoreOps & at_lanes, const CoreOps & at_chunk, int64_t n, int lanes, int chunk);

// Operations of a published reference GEMM kernel for one output tile (no code of ours to run):
// every MAC in the family's mmul at one instruction per 512 MAC-lanes (the family's cycles per MAC),
// operands loaded once per two mmuls (2 x 2 register blocking, as mlir-aie's aie2p mm.cc), the tile's
// output stored once. Used for the calibration points.
CoreOps reference_tile_ops(KernelFamily family, const TileShape & tile, int64_t k_tiles, double out_bytes_per_value,
                           const NpuPreset & p);

}  // namespace xdna
