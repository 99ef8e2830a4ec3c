// The simulator's flash_attn engine: the query rows of each KV head dealt to cores in chunks of up to 16,
// the context split between the cores of a column when there are fewer chunks than cores, each core's
// K/V rows taken 32 at a time through aligned core buffers, as the flash_attn design moves them
// (aie/flash_attn/README.md); the core kernel code of aie/flash_attn/kernels called on them, or, for the
// bfp16 program's blocks with SimExec::twin on a host where it pays, its bit-identical twin
// (src/sim/twins/flash-attn-twin.h).
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-matmul.h"
#include "sim/sim-stream.h"
#include "sim/timing-model.h"

#include <memory>
#include <string>
#include <vector>

namespace xdna {

struct FlashAttnParams;
struct AttentionSequence;

// How the design splits one invocation: `groups` tasks of (sequence, KV head, chunk of query rows), each
// split into `parts` ranges of the context (one core each) whose partial states one core merges.
struct FlashAttnSplit {
    int64_t chunk_rows = 0;  // query rows per chunk (the last chunk of a group may have fewer)
    int64_t chunks = 0;      // chunks per (sequence, KV head)
    int64_t groups = 0;      // n_seq x n_head_kv x chunks
    int64_t blocks = 0;      // K/V blocks of 32 rows
    int64_t parts = 1;       // context parts per group
};
// `cores`: the cores the design has for the kind (the flash_attn design: the whole array, 32; a
// co-resident design gives attention fewer, aie/decode_layer/README.md).
FlashAttnSplit flash_attn_split(const FlashAttnParams & p, int64_t cores = 32);

bool flash_attn_has_kernel(const KernelKey & key);
ModelShape flash_attn_model_shape(const Invocation & inv);
// The same on `cores` cores of the array (flash_attn_split's).
ModelShape flash_attn_model_shape_on(const Invocation & inv, int64_t cores);
Status sim_run_flash_attns(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec = SimExec::kernels);

// SimExec::stream (flash-attn-stream.cpp): every invocation's stream built (cached per shape), its slopes
// written, its operands checked (the K/V/mask reads of a last short block included) and placed in the
// firmware's 5 buffer arguments as the XRT device places them (attention_arguments), before the first one
// runs (`*refused` when one is not: nothing ran); then each run through the DMA interpreter on the
// attention design as `contexts` keeps it loaded, its cores running the design's core program. `layout`:
// the layout's xclbin ("": each stream's own, attention_layout), as an XRT manifest may fix it.
Status sim_run_flash_attns_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts,
                                  bool * refused = nullptr, const std::string & layout = "");
// The core program of the attention design's xclbin of `family` at head dim `head_dim`.
CoreRoleFactory flash_attn_core_roles(const DesignDescription & d, const std::string & family, int head_dim);
// The invocation's stream (built once per shape), nullptr with `err` when the design cannot take it.
// `columns`: the stream split over that many columns' cores, taking those its tasks fill (0: the engine's
// split over the whole array, as the kernels mode computes it).
std::shared_ptr<const AttentionSequence> flash_attn_sequence_of(const Invocation & inv, std::string & err,
                                                                const std::string & layout = "", int columns = 0);

}  // namespace xdna
