// The simulator's act_quant engine: each activation tile as the act_quant design's core makes it
// (aie/act_quant): four tokens' 256 values at a time copied into an aligned core buffer (rows past the
// valid ones as zeros), the core kernel code of aie/act_quant/kernels called on them, the finished tile
// copied out; with SimExec::twin their bit-identical twins (sim/twins/act-quant-twin.h).
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-matmul.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <vector>

namespace xdna {

bool act_quant_has_kernel(const KernelKey & key);
ModelShape act_quant_model_shape(const Invocation & inv);
Status sim_run_act_quants(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec = SimExec::kernels);

// The act_quant design's core program for an xclbin of `family` (aie/act_quant/dataflow.json
// core_program): per tile, acquire a tile object; per group of its tokens, acquire x, one call of the
// family's program (x, tile, group), release x; then release the tile. `kernel` replaces the program's
// kernel code (tests break it on purpose); nullptr: the kernel code.
using ActQuantKernel = void (*)(const float * x, uint8_t * tile, int32_t group);

// A program of aie/act_quant's kernels that another design's core program links, by its name
// ("act_quant_a8_b32_n4_row", "act_quant_a8_b256_n4_row": one token's row into a tile of 4 tokens, the
// others zeros; the norm that quantizes its output, ops/rms_norm): its kernel code and what one call
// issues (measured, with its scalar divisions, as act_quant's own calls are charged). False when there is
// no such program.
bool act_quant_program(const char * name, ActQuantKernel & kernel, CoreOps & call_ops);

CoreRoleFactory act_quant_core_roles(const DesignDescription & d, const std::string & family, ActQuantKernel kernel = nullptr);

// SimExec::stream: every stream built (runtime/quant-sequence.h) and every operand checked first
// (`*refused` when one is not the design's: nothing ran), then each run on the act_quant design as
// `contexts` keeps it loaded. `kernel` as above.
Status sim_run_act_quants_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused,
                                 ActQuantKernel kernel = nullptr);

}  // namespace xdna
