#include "sim/core-state.h"

#include <aie_api/aie.hpp>

#include <atomic>
#include <mutex>

namespace xdna {

void sim_reset_core_state() { aie_host::reset_core_state(); }

namespace {

// The last few errors and how many there were.
struct FaultLog {
    static constexpr uint64_t kKept = 8;
    std::atomic<uint64_t> count{0};
    std::mutex            mutex;
    std::string           messages[kKept];  // error i (counting from 1) at (i - 1) % kKept
};

FaultLog & fault_log() {
    static FaultLog log;
    return log;
}

}  // namespace

CoreModes sim_core_modes() {
    const aie_host::CoreState & s = aie_host::core_state();
    return {static_cast<unsigned>(s.rounding), static_cast<unsigned>(s.saturation)};
}

void sim_check_modes_restored(const char * kernel, const CoreModes & found) {
    aie_host::CoreState & s = aie_host::core_state();
    const auto rnd_found = static_cast<aie::rounding_mode>(found.rounding);
    const auto sat_found = static_cast<aie::saturation_mode>(found.saturation);
    if (s.rounding == rnd_found && s.saturation == sat_found) {
        return;
    }
    std::string what;
    if (s.rounding != rnd_found) {
        what += std::string("rounding mode ") + aie_host::rounding_mode_name(s.rounding) + " (called in " +
                aie_host::rounding_mode_name(rnd_found) + ")";
    }
    if (s.saturation != sat_found) {
        what += std::string(what.empty() ? "" : " and ") + "saturation mode " + aie_host::saturation_mode_name(s.saturation) +
                " (called in " + aie_host::saturation_mode_name(sat_found) + ")";
    }
    const std::string message = std::string("core kernel ") + kernel + " returned with the " + what +
                                ": a kernel must restore the rounding and saturation modes it found";
    s.rounding = rnd_found;
    s.saturation = sat_found;
    FaultLog & log = fault_log();
    std::lock_guard<std::mutex> lock(log.mutex);
    const uint64_t n = log.count.load(std::memory_order_relaxed) + 1;
    log.messages[(n - 1) % FaultLog::kKept] = message;
    log.count.store(n, std::memory_order_release);
}

CoreFaultWatch::CoreFaultWatch() : start_(fault_log().count.load(std::memory_order_acquire)) {}

bool CoreFaultWatch::failed(std::string & message) const {
    FaultLog & log = fault_log();
    if (log.count.load(std::memory_order_acquire) == start_) {
        return false;
    }
    std::lock_guard<std::mutex> lock(log.mutex);
    const uint64_t n = log.count.load(std::memory_order_relaxed);
    const uint64_t first = n - start_ <= FaultLog::kKept ? start_ + 1 : n;
    message = log.messages[(first - 1) % FaultLog::kKept];
    return true;
}

CoreOps & CoreOps::operator+=(const CoreOps & o) {
    vector += o.vector;
    move += o.move;
    load += o.load;
    unpack += o.unpack;
    store += o.store;
    scalar += o.scalar;
    mmul_macs += o.mmul_macs;
    mmul_i8xi4 += o.mmul_i8xi4;
    pipelined_loops += o.pipelined_loops;
    return *this;
}

CoreOps & CoreOps::operator-=(const CoreOps & o) {
    vector -= o.vector;
    move -= o.move;
    load -= o.load;
    unpack -= o.unpack;
    store -= o.store;
    scalar -= o.scalar;
    mmul_macs -= o.mmul_macs;
    mmul_i8xi4 -= o.mmul_i8xi4;
    pipelined_loops -= o.pipelined_loops;
    return *this;
}

CoreOps sim_thread_core_ops() {
    const aie_host::OpCounts & c = aie_host::op_counts();
    CoreOps o;
    o.vector = c.vector;
    o.move = c.move;
    o.load = c.load;
    o.unpack = c.unpack;
    o.store = c.store;
    o.scalar = c.scalar;
    o.mmul_macs = c.mmul_macs;
    o.mmul_i8xi4 = c.mmul_calls(aie_host::mmul_shape::i8xi4_4x16x16);
    o.pipelined_loops = c.pipelined_loops;
    return o;
}

}  // namespace xdna
