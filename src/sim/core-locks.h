// The cores' side of the runtime-parameter barrier, for the DMA interpreter (dma-interpreter.h): each
// core's barrier lock, its data memory words written by the stream (the RTP words among them) and where
// its program stands, kept as the NPU keeps them for as long as an xclbin is loaded, across invocations.
//
// The core program (aie/matmul/design.py, core_fn, run by IRON's Worker in an endless loop) passes its
// barrier once per invocation: acquire, read the RTP words, release. What each step does to the lock:
//   - the stream's set (IRON WorkerRuntimeBarrier.set: aiex set_lock_value) writes the lock's value
//     register (control code Write32, matmul-sequence.h core_lock_value_offset);
//   - the core's acquire is IRON's wait_for_value, aie.use_lock(Acquire, v) (mlir-aie python/iron/worker.py,
//     WorkerRuntimeBarrier.wait_for_value), which mlir-aie lowers to the core's acquire with +v
//     (lib/Dialect/AIE/Transforms/AIECoreToStandard.cpp, AIEUseLockToStdLowering; AcquireGreaterEqual is
//     the same call with -v). With +v it is acquire_equal: it "blocks until the value in the state of the
//     lock ... becomes equal to" v and "doesn't modify the value" (AI Engine-ML Intrinsics User Guide
//     UG1583, Locks). With -v it is acquire_greater_equal (llvm-aie clang/lib/Headers/aiev2_locks.h),
//     which waits until the lock holds at least v and takes v from it (aie_api 2026.1
//     include/aie_api/detail/aie2/lock.hpp:24-31: a mutex locks with acquire_greater_equal(id, 1) and
//     unlocks with release(id, 1));
//   - the core's release is IRON's release_with_value, aie.use_lock(Release, v): release(id, v), which
//     adds v to the lock (the same mutex);
//   - a lock holds 0..63 (mlir-aie include/aie/Dialect/AIE/IR/AIETargetModel.h, AIE2TargetModel::
//     getMaxLockValue 0x3F); IRON's barrier starts at 0 (WorkerRuntimeBarrier initial_value).
// An equal acquire leaves the set value in the lock: a core program without the release passes its
// barrier at once on its next pass and reads the previous invocation's words (amd/IRON
// iron/operators/flm/gemm/README.md, "Runtime parameters"). The model reproduces that, and reports it
// as soon as it shows (the NPU would not): the stream writing RTP words that a core has already read
// for the pass it is on, or a core spinning through an open barrier with nothing to do.
#pragma once

#include "runtime/design-description.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace xdna {

// The RTP words a core read when it passed its barrier (the loop counts it runs that pass with).
struct CoreParams {
    std::vector<uint32_t> words;  // every RTP word, by index (DesignDescription::rtp_names)
    // The named ones every core program reads, and the matmul's tile counts (0 in other designs).
    uint32_t contract = 0, out_tiles = 0, k_tiles = 0, version = 0;
};

struct CoreSide {
    enum class Phase {
        waiting,   // at the acquire: the lock does not let it pass
        running,   // passed the barrier: works through `params`
        spinning,  // passes again and again without work and without changing its lock (never blocks)
    };
    Phase    phase = Phase::waiting;
    uint32_t lock = 0;                               // the barrier lock's value register
    std::unordered_map<uint32_t, uint32_t> memory;   // data memory words the stream wrote, by byte offset
    CoreParams params;                               // of the current pass (running, spinning)
    uint64_t passes = 0;                             // barrier passes since the design was loaded
    uint64_t sets = 0;                               // barrier sets by the stream since then
    uint64_t passes_at_set = 0;                      // `passes` when the stream last set the barrier
};

// A design loaded on the array (one xclbin: `family` at token tile `tile_n`) and what of it persists
// between the invocations run on it: one CoreSide per core, cores[column * rows + row].
struct LoadedDesign {
    std::string           family;
    int                   tile_n = 0;
    std::string           layout;  // the design layout the xclbin was built for (set by the interpreter)
    std::string           exact;   // the contract of an exact xclbin (set by the interpreter), "" for the family's
    int                   columns = 0, rows = 0;
    std::vector<CoreSide> cores;
    uint64_t              invocations = 0;  // control streams run on it

    bool      loaded() const { return !cores.empty(); }
    CoreSide & core(int column, int row) { return cores[static_cast<size_t>(column) * rows + row]; }
};

// Loads `family` at `tile_n`: every core at its acquire, every lock at 0, no word written.
void load_design(const DesignDescription & d, const std::string & family, int tile_n, LoadedDesign & out);

// The stream writes `value` into the barrier lock of `core`; the core then passes if the lock lets it
// (barrier_try_pass). False with `error` when the value is outside the lock's range.
bool barrier_set(const DesignDescription & d, CoreSide & core, uint32_t value, std::string & error);

// A waiting core passes its barrier if the lock lets it: acquire, read the RTP words from its memory,
// release. True when it passed (it is then running `params`); false with `error` set when the release
// would take the lock past its range, false with `error` empty when it still waits.
bool barrier_try_pass(const DesignDescription & d, CoreSide & core, std::string & error);

// The core finished its pass's work (`worked`: it ran at least one output tile) and loops back to its
// acquire: it waits, passes again at once (as a core whose barrier was not released does), or, having
// nothing to do with a lock its pass did not change, spins. True when it passed again; false with
// `error` as barrier_try_pass.
bool barrier_pass_done(const DesignDescription & d, CoreSide & core, bool worked, std::string & error);

// Why the stream may not write core data memory at byte `offset` now, or empty: the core is past its
// acquire, so it has read (or, spinning, keeps reading) the words this write changes, and will not read
// them for the pass they are meant for.
std::string core_memory_write_hazard(const DesignDescription & d, const CoreSide & core, uint32_t offset);

// "waits for lock 15 == 1 (holds 2)", "runs contract 0, 8 output tiles x 16 K tiles", "runs contract 1,
// chunks 12", ...
std::string describe_core(const DesignDescription & d, const CoreSide & core);

}  // namespace xdna
