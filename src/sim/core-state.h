// The per-core state of the simulator's aie_api (rounding and saturation modes), reset before a core
// program's kernels run as the NPU resets a core, and the operation counters the kernels advance.
// Kept behind this small interface so that only one file of the simulator includes the aie_api
// implementation (which puts the core's type names at global scope, as the real one does).
#pragma once

#include <cstdint>

namespace xdna {

void sim_reset_core_state();

// Operations the calling thread's kernel calls issued so far, per AIE2P VLIW slot.
struct CoreOps {
    uint64_t vector = 0, move = 0, load = 0, unpack = 0, store = 0, scalar = 0, mmul_macs = 0;
    uint64_t mmul_i8xi4 = 0;            // int8 x int4 4x16x16 mmul calls (their issue rate is a parameter)
    uint64_t pipelined_loops = 0;       // entries of loops marked AIE_PREPARE_FOR_PIPELINING
    CoreOps & operator+=(const CoreOps & o);
    CoreOps & operator-=(const CoreOps & o);
};
CoreOps sim_thread_core_ops();

}  // namespace xdna
