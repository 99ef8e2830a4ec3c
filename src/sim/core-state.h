// The per-core state of the simulator's aie_api (rounding and saturation modes), reset before a core
// program's kernels run as the NPU resets a core, and the operation counters the kernels advance.
// Kept behind this small interface so that only one file of the simulator includes the aie_api
// implementation (which puts the core's type names at global scope, as the real one does).
#pragma once

#include <cstdint>
#include <string>

namespace xdna {

void sim_reset_core_state();

// ---- A kernel returns with the modes it found ----
// The rounding and saturation modes are core state that outlives a kernel call: the next kernel on the
// core (compiled believing the modes are the reset ones, or the ones it found) would compute in
// whatever a previous one left. So a kernel must restore the modes it found, and the simulator reports
// one that does not as an error of the run it belongs to, instead of letting later results differ.

// The modes as a kernel found them (opaque here: this header does not include the aie_api).
struct CoreModes {
    unsigned rounding = 0;
    unsigned saturation = 0;
};
CoreModes sim_core_modes();

// If the calling thread's modes are not `found`: records an error naming `kernel` and each changed mode
// (CoreFaultWatch) and restores `found`, so the rest of the run computes as it would have.
void sim_check_modes_restored(const char * kernel, const CoreModes & found);

// A kernel entry point as the simulator calls it: the modes checked around the call.
template <void (*Kernel)(const uint8_t *, const uint8_t *, float *), const char * Name>
void mode_checked(const uint8_t * w, const uint8_t * a, float * c) {
    const CoreModes found = sim_core_modes();
    Kernel(w, a, c);
    sim_check_modes_restored(Name, found);
}
// The same for a kernel that takes its A tile in K parts, called once per part (matmul_contract.h
// act_k_parts).
template <void (*Kernel)(const uint8_t *, const uint8_t *, float *, int32_t), const char * Name>
void mode_checked_part(const uint8_t * w, const uint8_t * a, float * c, int32_t part) {
    const CoreModes found = sim_core_modes();
    Kernel(w, a, c, part);
    sim_check_modes_restored(Name, found);
}
template <void (*Zero)(float *), const char * Name> void mode_checked_zero(float * c) {
    const CoreModes found = sim_core_modes();
    Zero(c);
    sim_check_modes_restored(Name, found);
}

// The errors sim_check_modes_restored records, on any thread, while the watch exists. A run (which
// spreads its kernel calls over a thread pool) opens one and fails when it saw an error. Errors are
// process-wide: a run alongside on another device is failed too (conservatively: its outputs are then
// recomputed on the host, never silently kept).
class CoreFaultWatch {
public:
    CoreFaultWatch();
    // True, with the first error recorded since construction (or the latest, when many were), if any.
    bool failed(std::string & message) const;

private:
    uint64_t start_;
};

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
