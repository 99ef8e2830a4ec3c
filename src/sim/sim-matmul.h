// The simulator's matmul engine: executes a MatmulInvocation tile by tile the way the NPU does, by
// calling the core kernel code of aie/matmul/kernels (compiled for the host against the simulator's
// aie_api implementation) on the packed weight and activation tiles, or a bit-identical twin of it.
#pragma once

#include "runtime/device.h"
#include "runtime/thread-pool.h"

#include <string>
#include <vector>

namespace xdna {

// What executes the tiles (GGML_XDNA_SIM_EXEC).
enum class SimExec {
    kernels,  // the core kernel code itself, through the host aie_api implementation
    twin,     // a fast twin where one exists and is tested bit-identical to the kernel; kernel code elsewhere
    stream,   // the NPU instruction stream built for the invocation, run by the DMA interpreter, which
              // hands the core buffers to the kernel code (sim/dma-interpreter.h)
};

// Parse "kernels" / "twin" / "stream"; false for anything else.
bool parse_sim_exec(const char * text, SimExec & out);
const char * sim_exec_name(SimExec e);

// Whether the kernel code (and which twin) exists for this contract at this token tile.
bool sim_has_tile_kernel(const MatmulContract & contract, int tile_n);
bool sim_has_twin(const MatmulContract & contract, int tile_n);

Status sim_run_matmul(const MatmulInvocation & inv, ThreadPool & pool, SimExec exec);

// Run the matmul invocations of a batch as one parallel job over all their tiles (one "submission").
// An error when a core kernel returned with other rounding or saturation modes than it found
// (sim/core-state.h): the outputs are then not what the NPU would compute.
Status sim_run_matmuls(const std::vector<Invocation> & invs, ThreadPool & pool, SimExec exec);

// SimExec::stream: per invocation, the runtime sequence built on the host (runtime/matmul-sequence.h,
// cached per shape) executed by the DMA interpreter. Arguments the DMAs would over-run (whole 4-row
// weight groups, the W window past the last tile, whole output tiles) are staged, as an NPU run needs.
// `layouts[i]`, when given, is the design layout (the xclbin) invocation i runs in, as the timing
// model chose it (ModelledTime::layout); otherwise, or when empty, the design's default layout.
// An error names the invocation and what the builder or the interpreter refused.
Status sim_run_matmuls_stream(const std::vector<Invocation> & invs, ThreadPool & pool,
                              const std::vector<const char *> & layouts = {});

}  // namespace xdna
