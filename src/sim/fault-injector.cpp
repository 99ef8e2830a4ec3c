#include "sim/fault-injector.h"

namespace xdna {

InjectedFault FaultInjector::draw() {
    ++submissions_;
    if (!active()) {
        return InjectedFault::none;
    }
    // Uniform in [0, 1) from the top 53 bits: the same sequence on every platform for a given seed
    // (std::uniform_real_distribution's algorithm is implementation-defined).
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    if (u >= rate_) {
        return InjectedFault::none;
    }
    // The lower half of the fault band is a submission error, the upper half a timeout.
    if (u < rate_ / 2) {
        ++errors_;
        return InjectedFault::submission_error;
    }
    ++timeouts_;
    return InjectedFault::timeout;
}

}  // namespace xdna
