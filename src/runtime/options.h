// Every GGML_XDNA_* environment option, read and validated in one place.
//
// all_options() is the list (name, accepted values, default, meaning) that xdna-info prints and
// README.md documents; each option has one function here that reads it. The environment is read when
// the function is called, not cached: each caller reads its option once, when it starts (the ggml
// registry at load, a backend when it is created, the simulator when it is opened, ...).
//
// An invalid value never stops the process: the option's default applies (for GGML_XDNA_DEVICE, no
// device is registered) and `error` says so, naming the accepted values.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

struct OptionSpec {
    std::string name;      // "GGML_XDNA_DEVICE"
    std::string accepted;  // the accepted values, as an error names them: "auto, sim, xrt"
    std::string fallback;  // what applies when the variable is unset, empty or invalid
    std::string meaning;
    double      lo = 0, hi = 0;  // numeric options: the accepted range, inclusive
};

// Every option, in the order xdna-info and README.md list them.
const std::vector<OptionSpec> & all_options();

// The spec of an option by name, nullptr if there is none.
const OptionSpec * find_option(const std::string & name);

// The variable's value, or nullptr when it is unset or empty (an empty variable counts as unset).
const char * option_text(const std::string & name);

// An option as read: `value` is what applies, `set` whether the variable holds a (non-empty) value,
// and `error`, empty unless that value is not accepted:
//   "GGML_XDNA_X='value' is not valid; accepted values: <accepted>"
template <typename T>
struct OptionValue {
    T           value{};
    bool        set = false;
    std::string error;
};

enum class DeviceChoice { automatic, sim, xrt };

// GGML_XDNA_SIM_FAULTS=rate,seed (a test aid): the fraction of simulator submissions that fail.
struct SimFaults {
    double   rate = 0;
    uint64_t seed = 0;
};

OptionValue<DeviceChoice>              device_option();     // GGML_XDNA_DEVICE
OptionValue<bool>                      profile_option();    // GGML_XDNA_PROFILE
OptionValue<std::string>               trace_option();      // GGML_XDNA_TRACE (empty: no trace)
OptionValue<std::vector<int>>          sim_tiles_option();  // GGML_XDNA_SIM_TILES (empty: every width)
OptionValue<std::string>               sim_exec_option();   // GGML_XDNA_SIM_EXEC ("kernels", "twin" or "stream")
OptionValue<SimFaults>                 sim_faults_option(); // GGML_XDNA_SIM_FAULTS (rate 0: none)
OptionValue<int>                       threads_option();    // GGML_XDNA_THREADS (0: the hardware's)
OptionValue<std::chrono::milliseconds> timeout_option();    // GGML_XDNA_TIMEOUT_MS
OptionValue<size_t>                    max_buffer_option(); // GGML_XDNA_MAX_BUFFER_MB, in bytes (default 4 GiB)
OptionValue<std::string>               preset_option();     // GGML_XDNA_PRESET (a preset name)
OptionValue<std::string>               kernels_option();    // GGML_XDNA_KERNELS (empty: default location)
OptionValue<std::string>               host_ops_option();   // GGML_XDNA_HOST_OPS ("cpu" or "off")
OptionValue<std::string>               device_type_option(); // GGML_XDNA_DEVICE_TYPE ("gpu" or "accel")
OptionValue<std::string>               prefill_option();     // GGML_XDNA_PREFILL ("int" or "bfp16")
OptionValue<std::string>               npu_ops_option();     // GGML_XDNA_NPU_OPS ("none", "rms_norm", "glue" or "layer")
OptionValue<std::string>               fa_products_option(); // GGML_XDNA_FA_PRODUCTS ("bfp16" or "fp32")
OptionValue<std::string>               w_objects_option();   // GGML_XDNA_W_OBJECTS ("family" or "exact")
// GGML_XDNA_W_OBJECTS=exact: the matmuls run (simulator) and are charged (timing model) on exact xclbins.
bool exact_w_objects();

// One timing-model override, GGML_XDNA_MODEL_*: a number in the option's range. `name` must be one
// of all_options(); value 0 and set false when the variable is unset or invalid.
OptionValue<double> model_option(const std::string & name);

// The names of the GGML_XDNA_MODEL_* overrides, in all_options() order.
std::vector<std::string> model_option_names();

// The error of option `name` as its own function above reports it (empty when unset or valid): for
// listing every option at once (xdna-info). Every option of all_options() has a check here.
std::string option_error(const std::string & name);

// Report an option error (see OptionValue) through the runtime log, once per process per message,
// with what applies instead (the option's default unless `instead` says otherwise).
void report_option_error(const std::string & error, const std::string & instead = {});

}  // namespace xdna
