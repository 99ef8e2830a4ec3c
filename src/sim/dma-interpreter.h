// The simulator's DMA interpreter: executes an NPU2 control-code stream (the words the host built,
// decoded with control::decode, so it runs exactly the bytes an NPU would receive) against the kernel's
// buffer arguments, moving the bytes through the design's data movement (design-description.h):
//   shim BDs written by write32/blockwrite/maskwrite, address patches onto the arguments, queue pushes
//   (start BD, repeat count, completion token) -> each BD's access pattern (d0/d1/d2 wraps and strides,
//   iterations, chained BDs) streams words from an argument into the memory tile's FIFO objects ->
//   split (one part per core) / broadcast (one object to every core), as the layout links W and A,
//   into the cores' double buffers (n_shared: A only through column 0, part r to core row r of every
//   column) ->
//   the core program of aie/ (the stream writes the RTP words and sets the barrier lock; the core
//   acquires it, reads the words and releases it as core-locks.h models; zero, then one kernel call per K
//   tile) -> C tiles joined in the memory tile -> the S2MM BD pattern writes them into the output
//   argument; syncs wait for completion tokens.
// The cores' kernels are an argument (CoreProgram): the interpreter itself (library xdna_sim_dma) links
// the control layer and the design description only, not the kernels, so it can be built and fuzzed on
// its own; the simulator passes the aie/ kernels (kernel_core_program, in xdna_sim).
// FIFOs are modelled at object granularity with their depths (a producer waits for a free object, a
// consumer for a full one), which is the ordering the NPU's locks enforce; cycle timing is not modelled.
// The cores' barrier locks, RTP words and program passes outlive a stream (LoadedDesign, core-locks.h):
// invocations run on one loaded design meet the cores as the previous one left them, as on an NPU.
//
// Checks that a real NPU would not make for us (each an error naming the op or BD, never a crash):
// a BD pattern outside its argument, a BD rewritten while a queued task still uses it, a sync that can
// never complete (deadlock; the cores still at their barrier are named with their lock's value), tasks
// or cores unfinished at the end of the stream, a completion token never awaited, RTP words of another
// layout, RTP words written while a core is past its barrier (it runs with other words: the previous
// invocation's when its barrier was never released), a lock value out of range, malformed words.
#pragma once

#include "runtime/design-description.h"
#include "runtime/thread-pool.h"
#include "sim/core-locks.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// One kernel buffer argument as the NPU sees it: `bytes` bytes at `data`.
struct DmaArgument {
    uint8_t * data = nullptr;
    uint64_t  bytes = 0;
};

struct DmaRunStats {
    uint64_t ops = 0;
    uint64_t bds_run = 0;          // BD passes executed (chained and repeated ones included)
    uint64_t mm2s_bytes = 0;       // read from the arguments
    uint64_t s2mm_bytes = 0;       // written into the arguments
    uint64_t kernel_calls = 0;     // core kernel calls (zero calls excluded)
};

struct DmaRun {
    std::string error;  // empty on success
    DmaRunStats stats;
    bool ok() const { return error.empty(); }
};

// What each core runs once the stream releases its barrier: `zero` on a fresh C tile, then one
// `kernels[contract]` call per K tile, where `contract` is the RTP word selecting the family's contract
// (the index into DesignDescription::family_contracts). Where the xclbin takes A in K parts
// (FamilyBuffers::a_k_parts > 1) one `part_kernels[contract]` call per A object instead: per K tile the
// same W object with each of its parts' A objects in turn, W released after the last. `reset`, when set,
// runs before each output tile (the NPU starts every tile in the core's reset modes).
struct CoreProgram {
    using Kernel = void (*)(const uint8_t * w_tile, const uint8_t * a_tile, float * c_tile);
    using PartKernel = void (*)(const uint8_t * w_tile, const uint8_t * a_part, float * c_tile, int32_t part);
    using Zero = void (*)(float * c_tile);
    std::vector<Kernel> kernels;  // nullptr: the contract has no kernel at this token tile
    std::vector<PartKernel> part_kernels;  // per contract likewise; only where A comes in K parts
    Zero zero = nullptr;
    void (*reset)() = nullptr;
};

// Runs `n_words` control-code words of the design's runtime sequence on the xclbin of `family` at
// token tile `tile_n` (which fixes the FIFO object sizes) in `layout` (which fixes the memory tile's
// links: which of W and A is split over the cores and which broadcast; "": the design's default), the
// cores running `cores`. `pool` runs the columns side by side between syncs (columns share nothing; a layout whose A
// the columns share runs them as one, in turn);
// nullptr runs them in turn. The cores start as a freshly loaded xclbin has them (locks at 0, no RTP
// word written).
DmaRun run_control_stream(const DesignDescription & design, const std::string & family, int tile_n,
                          const CoreProgram & cores, const uint32_t * words, size_t n_words,
                          const std::vector<DmaArgument> & args, ThreadPool * pool, const std::string & layout = "",
                          const std::string & exact = "");
// `exact`: the xclbin serves that contract of the family only, its W objects of the contract's tile
// (design-description.h FamilyBuffers); "" the family's xclbin.
// The same on `loaded` (loaded on first use): its cores' locks, RTP words and passes are as the
// previous stream run on it left them, and stay for the next. A run that fails unloads it (the next one
// loads afresh, as after a context reset); a stream of another family, token tile or layout (another
// xclbin, exact or not) is refused.
DmaRun run_control_stream(const DesignDescription & design, const std::string & family, int tile_n,
                          const CoreProgram & cores, const uint32_t * words, size_t n_words,
                          const std::vector<DmaArgument> & args, ThreadPool * pool, LoadedDesign & loaded,
                          const std::string & layout = "", const std::string & exact = "");

// Defined in xdna_sim (dma-kernels.cpp), which links the kernels:
// the core program of `family` at `tile_n` from the aie/ core kernels (sim/tile-kernels.h); false with
// `error` when the token tile has no core program.
bool kernel_core_program(const DesignDescription & design, const std::string & family, int tile_n, CoreProgram & out,
                         std::string & error);
// run_control_stream with the kernel core program (exact: that contract's kernel only, as design.py
// --exact links it).
DmaRun run_control_stream(const DesignDescription & design, const std::string & family, int tile_n,
                          const uint32_t * words, size_t n_words, const std::vector<DmaArgument> & args,
                          ThreadPool * pool, const std::string & layout = "", const std::string & exact = "");
DmaRun run_control_stream(const DesignDescription & design, const std::string & family, int tile_n,
                          const uint32_t * words, size_t n_words, const std::vector<DmaArgument> & args,
                          ThreadPool * pool, LoadedDesign & loaded, const std::string & layout = "",
                          const std::string & exact = "");

}  // namespace xdna
