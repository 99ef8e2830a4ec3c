// The core's rounding and saturation modes: control-register state that accumulator-to-vector
// conversions (srs), bfloat16 conversions and packs read.
#pragma once

#include <cstdint>

#include "op-counts.hpp"

namespace aie {

// Enumerator values are the AIE-ML/AIE2P control-register encodings (AMD UG1583 "Mode Settings":
// rnd_floor 0 ... rnd_conv_odd 13), which aie_api's rounding_mode mirrors (aie_api aie_types.hpp).
enum class rounding_mode : unsigned {
    floor = 0,            // toward negative infinity (truncation of two's complement)
    ceil = 1,             // toward positive infinity
    symmetric_floor = 2,  // toward zero
    symmetric_ceil = 3,   // away from zero
    negative_inf = 8,     // nearest, halfway toward negative infinity
    positive_inf = 9,     // nearest, halfway toward positive infinity
    symmetric_zero = 10,  // nearest, halfway toward zero
    symmetric_inf = 11,   // nearest, halfway away from zero
    conv_even = 12,       // nearest, halfway to even
    conv_odd = 13,        // nearest, halfway to odd
};

// aie_api aie_types.hpp: none = 0 (wrap: keep the low bits), saturate = 1, symmetric = 3
// (signed range [-(2^(n-1)-1), 2^(n-1)-1]); truncate is a deprecated alias of saturate.
enum class saturation_mode : unsigned {
    none = 0,
    saturate = 1,
    truncate [[deprecated("Use saturate instead")]] = 1,
    symmetric = 3,
};

}  // namespace aie

namespace aie_host {

// One core's mode registers. The NPU resets them to floor / none (AMD UG1603 "Rounding and Saturation
// Modes": both are the defaults) and aie_api never writes them on its own, so a kernel sees whatever
// the previous code on that core left. On the host the state is per thread: a simulator that runs
// several cores' kernels on one thread calls reset_core_state() before each kernel call.
struct CoreState {
    aie::rounding_mode rounding = aie::rounding_mode::floor;
    aie::saturation_mode saturation = aie::saturation_mode::none;
};

inline CoreState & core_state() {
    static thread_local CoreState state;
    return state;
}

inline void reset_core_state() { core_state() = CoreState{}; }

// Names for messages ("floor", "conv_even", "none", "saturate", ...).
inline const char * rounding_mode_name(aie::rounding_mode m) {
    using rm = aie::rounding_mode;
    switch (m) {
        case rm::floor: return "floor";
        case rm::ceil: return "ceil";
        case rm::symmetric_floor: return "symmetric_floor";
        case rm::symmetric_ceil: return "symmetric_ceil";
        case rm::negative_inf: return "negative_inf";
        case rm::positive_inf: return "positive_inf";
        case rm::symmetric_zero: return "symmetric_zero";
        case rm::symmetric_inf: return "symmetric_inf";
        case rm::conv_even: return "conv_even";
        case rm::conv_odd: return "conv_odd";
    }
    return "?";
}
inline const char * saturation_mode_name(aie::saturation_mode m) {
    switch (static_cast<unsigned>(m)) {
        case 0: return "none";
        case 1: return "saturate";
        case 3: return "symmetric";
        default: return "?";
    }
}

}  // namespace aie_host

namespace aie {

// A write of a mode is one control-register move (op-counts.hpp count_mode_access); swap_* also reads
// the old value (one more). get_* is not counted: the host's own conversions read the modes through it.
inline void set_rounding(rounding_mode m) {
    aie_host::detail::count_mode_access(1);
    aie_host::core_state().rounding = m;
}
inline rounding_mode get_rounding() { return aie_host::core_state().rounding; }
inline rounding_mode swap_rounding(rounding_mode m) {
    aie_host::detail::count_mode_access(1);
    const rounding_mode old = get_rounding();
    set_rounding(m);
    return old;
}

inline void set_saturation(saturation_mode m) {
    aie_host::detail::count_mode_access(1);
    aie_host::core_state().saturation = m;
}
inline saturation_mode get_saturation() { return aie_host::core_state().saturation; }
inline saturation_mode swap_saturation(saturation_mode m) {
    aie_host::detail::count_mode_access(1);
    const saturation_mode old = get_saturation();
    set_saturation(m);
    return old;
}

// aie_api 2026.1 tile.hpp scoped_mode: saves the mode, sets `desired`, restores the saved one at
// scope exit (three control-register accesses: read, write, write). aie_api 2025.1 has no scoped_mode:
// a kernel that must build against both uses swap_rounding / set_rounding instead.
template <typename T> class scoped_mode;
template <> class scoped_mode<rounding_mode> {
  public:
    explicit scoped_mode(rounding_mode desired) : saved_(swap_rounding(desired)) {}
    ~scoped_mode() { set_rounding(saved_); }
    scoped_mode(const scoped_mode &) = delete;
    scoped_mode & operator=(const scoped_mode &) = delete;

  private:
    rounding_mode saved_;
};
template <> class scoped_mode<saturation_mode> {
  public:
    explicit scoped_mode(saturation_mode desired) : saved_(swap_saturation(desired)) {}
    ~scoped_mode() { set_saturation(saved_); }
    scoped_mode(const scoped_mode &) = delete;
    scoped_mode & operator=(const scoped_mode &) = delete;

  private:
    saturation_mode saved_;
};
scoped_mode(rounding_mode) -> scoped_mode<rounding_mode>;
scoped_mode(saturation_mode) -> scoped_mode<saturation_mode>;

struct tile_id {
    uint16_t row;
    uint16_t col;
};

// aie_api tile.hpp: the current tile's mode registers and cycle counter. The host has no cycle counter
// (the timing model works from op counts), so cycles() is 0.
class tile {
  public:
    static tile current() { return tile(); }
    void set_rounding(rounding_mode m) { aie::set_rounding(m); }
    rounding_mode get_rounding() const { return aie::get_rounding(); }
    void set_saturation(saturation_mode m) { aie::set_saturation(m); }
    saturation_mode get_saturation() const { return aie::get_saturation(); }
    uint64_t cycles() const { return 0; }
    tile_id id() const { return {0, 0}; }
    tile_id global_id() const { return {0, 0}; }
};

}  // namespace aie
