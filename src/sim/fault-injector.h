// GGML_XDNA_SIM_FAULTS=rate,seed: the simulator's injected submission failures, a test aid.
//
// A real NPU fails a submission in two ways the backend must survive: the submission is refused or a
// command ends in an error state (the run is over, its outputs hold whatever it wrote), or the wait times
// out (commands may still be running). The injector draws, per submission, whether one of these happens,
// from a generator seeded by the option, so a run with faults can be repeated exactly.
#pragma once

#include "runtime/options.h"

#include <cstdint>
#include <random>

namespace xdna {

enum class InjectedFault { none, submission_error, timeout };

class FaultInjector {
public:
    explicit FaultInjector(const SimFaults & faults) : rate_(faults.rate), rng_(faults.seed) {}

    bool          active() const { return rate_ > 0; }
    // The fault of the next submission (none most of the time).
    InjectedFault draw();

    uint64_t submissions() const { return submissions_; }
    uint64_t errors() const { return errors_; }
    uint64_t timeouts() const { return timeouts_; }
    uint64_t injected() const { return errors_ + timeouts_; }

private:
    double          rate_;
    std::mt19937_64 rng_;
    uint64_t        submissions_ = 0, errors_ = 0, timeouts_ = 0;
};

}  // namespace xdna
