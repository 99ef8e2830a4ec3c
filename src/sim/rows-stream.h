// SimExec::stream for the rows designs (runtime/rows-sequence.h: aie/add, aie/glu): each invocation's
// host-built stream through the DMA interpreter on the design as a StreamContexts keeps it loaded, the
// cores running the design's core program: per chunk, acquire one object of each input and of the
// output, call the kernel the contract word selects on them (an input whose object is the whole group
// broadcast: the chunk of the core's row), release them.
#pragma once

#include "runtime/device.h"
#include "runtime/rows-sequence.h"
#include "runtime/thread-pool.h"
#include "sim/binary-rows.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <functional>
#include <memory>
#include <mutex>
#include <tuple>
#include <string>
#include <vector>

namespace xdna {

// The core program of a rows design with inputs `a` and `b` and output `y` (FIFO names of its core
// side, in the layout), at tile `tile`: kernels[contract] per chunk.
CoreRoleFactory binary_chunk_roles(const DesignDescription & d, int tile, std::vector<BinaryChunkKernel> kernels,
                                   std::string a_fifo, std::string b_fifo, std::string y_fifo);
// A kernel whose b is the whole group of chunks broadcast to the core rows, told where its chunk starts
// (values): an IRON kernel call passes an acquired object's base pointer only (aie/add/design.py
// kernel_params). aie/glu's swiglu_f32.
using BinaryChunkKernelAt = void (*)(const float * a, const float * b_group, float * y, int32_t n, int32_t b_at);
// The same core program calling such kernels: b's object passed whole, with core row k's offset k x tile,
// as the design's IRON program passes them. A layout whose b is not a broadcast of the group is refused
// when the core starts (the kernel would read past its chunk).
CoreRoleFactory binary_chunk_roles_at(const DesignDescription & d, int tile, std::vector<BinaryChunkKernelAt> kernels,
                                      std::string a_fifo, std::string b_fifo, std::string y_fifo);

// The built stream of a shape, once per shape and builder (a model runs a few shapes every token, and
// the timing model asks for each invocation's stream on every run): the last 128 of each shape type.
template <class Shape, class Sequence>
std::shared_ptr<const Sequence> cached_sequence(const DesignDescription & d, const Shape & shape,
                                                Sequence (*build)(const DesignDescription &, const Shape &)) {
    static std::mutex mu;
    static std::vector<std::tuple<const DesignDescription *, Shape, std::shared_ptr<const Sequence>>> cache;
    std::lock_guard<std::mutex> lock(mu);
    for (const auto & [design, s, seq] : cache) {
        if (design == &d && s == shape) {
            return seq;
        }
    }
    auto seq = std::make_shared<const Sequence>(build(d, shape));
    if (cache.size() >= 128) {
        cache.erase(cache.begin());
    }
    cache.emplace_back(&d, shape, seq);
    return seq;
}
inline std::shared_ptr<const RowsSequence> cached_rows_sequence(const DesignDescription & d, const RowsShape & shape) {
    return cached_sequence(d, shape, build_rows_sequence);
}

// The stream of a rows invocation: its design from its key (runtime/design-registry.h), its shape from
// its key and operands (rows_shape_of), built once per shape; a sequence holding the reason when the
// design or the shape is not one the builder takes.
std::shared_ptr<const RowsSequence> rows_sequence_of(const Invocation & inv);

// What a rows invocation's stream fixes of its model shape: the columns and cores it uses, the busiest
// core's calls (`calls` at the stream's tile) and the bytes it moves in and out. False, `s` untouched,
// when the stream is refused.
bool rows_model_shape(const Invocation & inv, const BinaryCallOps & calls, ModelShape & s);
// The same with the ops of one call on n values from `call_at` (a kernel of another signature).
bool rows_model_shape(const Invocation & inv, const std::function<CoreOps(int64_t n)> & call_at, ModelShape & s);

// SimExec::stream for a rows kind: every invocation's stream built and every operand checked (its extent
// inside its buffer) before the first one runs, `*refused` set when one is not (nothing ran); then each
// run on its design as `contexts` keeps it loaded, the cores running `roles(design, tile)`. `what` names
// the kind in errors; `has_kernel` is the kind's own check of an invocation's key.
Status sim_run_rows_invocations(const std::vector<Invocation> & invs, bool (*has_kernel)(const KernelKey &),
                                const std::function<CoreRoleFactory(const DesignDescription &, int tile)> & roles,
                                ThreadPool & pool, StreamContexts & contexts, bool * refused, const std::string & what);

// One invocation ready to run: its stream and its operands' memory by the description's names.
struct RowsJob {
    std::shared_ptr<const RowsSequence> seq;
    std::vector<std::pair<std::string, DmaArgument>> args;
    // Operand `o` as the stream's argument of its role: its memory from its slice to the end of its buffer.
    // False with `err` when its extent ends past the buffer (the stream would move bytes outside it).
    bool add_operand(const Operand & o, std::string & err);
};

// Whether two operands' extents share memory (the gather and the scatter refuse a y over their source).
bool operands_overlap(const Operand & a, const Operand & b);

// Runs the jobs in order on `contexts` with `roles` (per job: the core program of its stream's xclbin,
// its family and tile); the first failure stops it with the interpreter's reason.
Status sim_run_rows_stream(const DesignDescription & d, const std::vector<RowsJob> & jobs,
                           const std::function<CoreRoleFactory(const RowsSequence &)> & roles, ThreadPool & pool,
                           StreamContexts & contexts, const std::string & what);

}  // namespace xdna
