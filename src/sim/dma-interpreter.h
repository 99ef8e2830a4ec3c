// The simulator's DMA interpreter: executes an NPU2 control-code stream (the words the host built,
// decoded with control::decode, so it runs exactly the bytes an NPU would receive) against the kernel's
// buffer arguments, moving the bytes through the data movement of any design its description
// (design-description.h) gives:
//   shim BDs written by write32/blockwrite/maskwrite, address patches onto the arguments, queue pushes
//   (start BD, repeat count, completion token) -> each BD's access pattern (d0/d1/d2 wraps and strides,
//   one iteration per execution of a BD, as the hardware advances it; chained BDs; a task queue of at
//   most 4 starts per channel) streams words from an argument into the memory tile's FIFO objects ->
//   split (one part per core) / broadcast (one object to every core), as the layout links each input,
//   into the cores' buffers (a FIFO shared by the columns: through column 0 only, part r to core row r
//   of every column; one per core row: through column r, to core row r of every column) ->
//   the core program (CoreRole; the stream writes the RTP words and sets the barrier lock; the core
//   acquires it, reads the words and releases it as core-locks.h models) -> the outputs' objects joined
//   in the memory tile -> the S2MM BD pattern writes them into their argument; syncs wait for
//   completion tokens.
// The cores' programs are an argument (CoreRoleFactory; the matmul's from a CoreProgram of kernels):
// the interpreter itself (library xdna_sim_dma) links the control layer and the design description
// only, not the kernels, so it can be built and fuzzed on its own; the simulator passes the aie/ kernels
// (kernel_core_program, in xdna_sim; each op's own role in src/ops/<op>/sim).
// FIFOs are modelled at object granularity with their depths (a producer waits for a free object, a
// consumer for a full one), which is the ordering the NPU's locks enforce; cycle timing is not modelled.
// The cores' barrier locks, RTP words and program passes outlive a stream (LoadedDesign, core-locks.h):
// invocations run on one loaded design meet the cores as the previous one left them, as on an NPU.
//
// Checks that a real NPU would not make for us (each an error naming the op or BD, never a crash):
// a BD pattern outside its argument, a BD rewritten while a queued task still uses it, a sync that can
// never complete (deadlock; the cores still at their barrier are named with their lock's value), tasks
// or cores unfinished at the end of the stream, a completion token never awaited, RTP words of another
// layout, an address patch past the 5 buffer arguments the firmware translates, RTP words written while a
// core is past its barrier (it runs with other words: the previous
// invocation's when its barrier was never released), a lock value out of range, a push onto a channel
// whose task queue already holds 4 tasks not yet complete, malformed words.
#pragma once

#include "runtime/design-description.h"
#include "runtime/thread-pool.h"
#include "sim/core-locks.h"

#include <cstddef>
#include <functional>
#include <memory>
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

// A core's object FIFOs as its program sees them: port i is FIFO i of the xclbin's layout
// (LayoutDesc::fifos, core_port), an input (memory tile -> core) or an output (core -> memory tile).
class CorePorts {
public:
    virtual bool      ready(int port) const = 0;  // an input holds a full object, an output has a free one
    virtual uint8_t * object(int port) = 0;       // the object the core works on (acquired)
    virtual void      release(int port) = 0;      // an input's object read, an output's written: handed on

protected:
    ~CorePorts() = default;
};

// The index of `fifo` in the layout, as a CorePorts port; -1 when the layout has no such FIFO.
int core_port(const LayoutDesc & layout, const std::string & fifo);

// One core's program after its barrier: it runs the pass the RTP words it read describe, acquiring and
// releasing its FIFOs' objects as the NPU core's locks would let it.
class CoreRole {
public:
    virtual ~CoreRole() = default;
    // The core passed its barrier with the RTP `words` (DesignDescription::rtp_names; the layout version
    // already checked): start the pass, or say why the words select nothing this program runs.
    virtual std::string start(const std::vector<uint32_t> & words) = 0;
    // As far as the FIFOs let it; `progress` set when it acquired or released anything. Kernel calls made.
    virtual uint64_t step(CorePorts & ports, bool & progress) = 0;
    virtual bool finished() const = 0;  // the pass's work is done
    virtual bool begun() const = 0;     // some of the pass's work is done
    virtual std::string state() const = 0;  // "3/8 output tiles", for errors
};

// The xclbin a stream runs on: one family of the design at one tile, in one layout, the family's or an
// exact one (design.py --exact: one contract's).
struct XclbinId {
    std::string family;
    int         tile_n = 0;
    std::string layout;  // "": the design's default
    std::string exact;
};

// Makes the program of the core at (column, core row) of the xclbin, or nullptr with `error`.
using CoreRoleFactory = std::function<std::unique_ptr<CoreRole>(const LayoutDesc & layout, int column, int row, std::string & error)>;

// Runs `n_words` control-code words of the design's runtime sequence on `xclbin`, whose FIFO objects are
// the description's units at the xclbin's tile (the matmul's: its family's buffers, family_buffers), the
// cores running `roles`. The cores keep their state in `loaded` as run_control_stream below says. Any
// design the description parser accepts runs here.
DmaRun run_design_stream(const DesignDescription & design, const XclbinId & xclbin, const CoreRoleFactory & roles,
                         const uint32_t * words, size_t n_words, const std::vector<DmaArgument> & args, ThreadPool * pool,
                         LoadedDesign & loaded);

// The matmul's core program: what each core runs once the stream releases its barrier: `zero` on a
// fresh C tile, then one
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
