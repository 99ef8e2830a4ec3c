// The simulator's engines, one per kernel kind: what the simulated device and the host fallback
// dispatch an invocation to. A kind's engine says whether the simulator has its kernel, gives the
// timing model its shape, and executes it (its twin or its kernel code; in stream mode through the DMA
// interpreter). SimDevice and the host executor know no kind: adding one is its engine and a row in
// sim-kinds.cpp.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/sim-matmul.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

struct SimKindEngine {
    KernelKind kind;
    // Whether the simulator has the key's kernel (its code or a twin) at the key's tile shape.
    bool (*has_kernel)(const KernelKey & key);
    // The timing model's shape of one invocation of the kind.
    ModelShape (*model_shape)(const Invocation & inv);
    // Execute invocations of this kind (all of one kind, in batch order): the twins where `exec` is twin
    // and one exists, else the kernel code. An error before anything ran leaves the outputs as they were.
    Status (*run)(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec);
    // The same through each invocation's instruction stream (SimExec::stream); `layouts[i]` as in
    // sim_run_matmuls_stream. `*refused`: refused before anything ran.
    Status (*run_stream)(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                         const std::vector<const char *> & layouts, bool * refused);
    // What a failed run may leave in the outputs, for a kind that writes only some rows of an output
    // (a scatter: the rows its ids name) -- nullptr: every written operand's whole extent.
    void (*poison)(const Invocation & inv) = nullptr;
    // Whether run_stream has the key's program (a program with no data movement yet runs in the other
    // modes only) -- nullptr: every key has_kernel takes.
    bool (*has_stream)(const KernelKey & key) = nullptr;
};

// The engine of `kind`, nullptr if the simulator has none.
const SimKindEngine * sim_kind_engine(KernelKind kind);

// Run a batch's invocations through their kinds' engines: one call per kind, in the order the kinds
// first appear (a batch's invocations are independent, runtime/device.h). Fails before anything runs
// when some invocation's kind has no engine. `layouts` as in SimKindEngine::run_stream, per invocation
// of the batch; `stream` selects run_stream.
Status sim_run_by_kind(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec, StreamContexts * contexts,
                       const std::vector<const char *> & layouts, bool * refused);

// Run a whole batch, stage after stage (runtime/device.h): each stage through sim_run_by_kind once the
// stage before it has completed. `layouts` per invocation of the batch. A batch whose stage marks are
// not ascending within it is refused before anything runs.
Status sim_run_stages(const Batch & batch, ThreadPool & pool, SimExec exec, StreamContexts * contexts,
                      const std::vector<const char *> & layouts, bool * refused);

}  // namespace xdna
