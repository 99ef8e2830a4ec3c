#include "runtime/options.h"

#include "runtime/runtime-log.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace xdna {

namespace {

std::string number_text(double v) {
    char buf[32];
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.0f", v);
    } else {
        std::snprintf(buf, sizeof buf, "%g", v);
    }
    return buf;
}

OptionSpec model_spec(const char * name, double lo, double hi, const char * meaning) {
    return {name, "a number from " + number_text(lo) + " to " + number_text(hi), "the preset's value", meaning, lo, hi};
}

std::vector<OptionSpec> make_options() {
    return {
        {"GGML_XDNA_DEVICE", "auto, sim, xrt", "auto",
         "auto: the NPU if one is found, else no XDNA device (one log line says why); sim: the simulated XDNA2 "
         "NPU; xrt: the NPU or an error"},
        {"GGML_XDNA_KERNELS", "a directory holding manifest.json, or a manifest file",
         "ggml-xdna-kernels/ next to libggml-xdna.so", "the compiled NPU kernels and their manifest (docs/xrt.md)"},
        {"GGML_XDNA_TIMEOUT_MS", "a whole number of milliseconds >= 1", "10000", "wait limit per submission"},
        {"GGML_XDNA_THREADS", "a whole number >= 1", "the hardware's threads",
         "host threads of the simulator and of activation quantization"},
        {"GGML_XDNA_SIM_TILES", "token-tile widths separated by commas, e.g. 4,32", "every width a contract allows",
         "token-tile widths the simulator offers, to behave like an NPU with fewer kernels installed"},
        {"GGML_XDNA_SIM_EXEC", "kernels, twin, stream", "twin",
         "what the simulator executes: kernels: the NPU core kernel code of aie/ through the simulator's aie_api "
         "implementation; twin: bit-identical fast twins of it where they exist (tested against the kernel code), "
         "the kernel code elsewhere; stream: the instruction stream built for each invocation, run by a DMA "
         "interpreter that feeds the kernel code (slow)"},
        {"GGML_XDNA_HOST_OPS", "cpu, off", "cpu",
         "ops the XDNA device does not run that still reach its backend (ggml's RPC server hands a remote device "
         "whole layers): cpu: compute them on the host with ggml's CPU backend, found through ggml's registry; "
         "off: fail that graph with an error naming the op"},
        {"GGML_XDNA_DEVICE_TYPE", "gpu, accel", "gpu (accel when GGML_XDNA_HOST_OPS=off)",
         "what llama.cpp is told the device is. gpu: -ngl gives XDNA the layers, the output layer and the KV cache; "
         "the NPU runs the matmuls, the other ops of those layers run on the host inside the backend, on the "
         "device's memory (an iGPU backend is then not chosen by default: pass --device to use both). accel: "
         "llama.cpp keeps the layers and the KV cache on the CPU and hands XDNA only the matmul weights"},
        {"GGML_XDNA_PREFILL", "int, bfp16", "int",
         "the contracts of prefill batches (more than 4 tokens) of Q4_K, Q5_K and Q6_K weights. int: the exact "
         "integer contracts of every batch; bfp16: the weight tile dequantized on the core into bfp16 and the "
         "native bfp16 matrix multiply (docs/kernels.md, \"Prefill contracts v3\"; its accuracy in README.md)"},
        {"GGML_XDNA_NPU_OPS", "none, rms_norm, glue, layer", "none",
         "ops besides the matmuls that the NPU computes when it has their kernel, in the matmuls' submission "
         "(the activations of a matmul that reads them quantized on the NPU). rms_norm: RMS_NORM, fused with the "
         "MUL by its weight (aie/rms_norm); glue: that, the residual ADD and elementwise MUL (aie/add), SwiGLU (aie/glu), ROPE (aie/rope), GET_ROWS of F32 rows (aie/get_rows), the F16 and Q8_0 KV-cache writes (SET_ROWS, and CPY from F32 to F16: aie/set_rows), SCALE (aie/scale), the Hadamard rotations of a quantized cache (aie/hadamard) and the MUL by one value per row of MoE's expert outputs by their weights (aie/row_scale); layer: that and FLASH_ATTN_EXT with an F16 or Q8_0 KV cache (aie/flash_attn), every op of a Llama layer. Simulator only"},
        {"GGML_XDNA_FA_PRODUCTS", "bfp16, fp32", "bfp16",
         "the products of FLASH_ATTN_EXT on the NPU (GGML_XDNA_NPU_OPS=layer). bfp16: q.k and p.v on the native "
         "bfp16 matrix unit, the operands split in three bfp16 parts for the scores and two for p.v (about "
         "2^-21 and 2^-14 of a block's largest value: aie/flash_attn/README.md); fp32: every product an emulated fp32 multiply (exact to fp32 rounding, "
         "several times the core cycles)"},
        {"GGML_XDNA_W_OBJECTS", "family, exact", "family",
         "the matmul xclbins the simulator runs and the timing model charges. family: one xclbin per family, its W "
         "objects sized to the family's largest tile, so a smaller type's W window reads past its tile (Q4_K +46 %: "
         "aie/matmul/README.md); exact: one xclbin per contract (scripts/build-npu-kernels.sh --exact), W objects of "
         "the contract's own tile, another xclbin at every change of contract. On an NPU the installed xclbins decide"},
        {"GGML_XDNA_MAX_BUFFER_MB", "a whole number from 1 to 4096", "4096",
         "the largest buffer the backend lets ggml allocate, in MiB (its buffer type's max size): llama.cpp's loader "
         "and graph allocator split weights, KV cache and compute buffers past it into several. 4096: a buffer is one "
         "kernel argument, and the control code addresses an operand by its offset in the argument, which must fit "
         "32 bits (Llama-3.1-8B's Q4_K_M weights, 4.6 GiB, take two buffers). Smaller: a test aid"},
        {"GGML_XDNA_SIM_FAULTS", "rate,seed: a fault rate from 0 to 1 and a whole number >= 0, e.g. 0.05,7", "no faults",
         "test aid: the simulator fails this fraction of submissions (half as submission errors, half as timeouts), "
         "drawn from a generator seeded with `seed`; the backend computes each failed submission on the CPU"},
        {"GGML_XDNA_PROFILE", "0, 1", "0",
         "1: print a per-kernel/shape table (host us, simulator us, modelled NPU us, MACs, bytes, roofline) when "
         "a backend is freed (any other value but 0 also turns it on, with an error)"},
        {"GGML_XDNA_TRACE", "a file path", "no trace",
         "write a Chrome/Perfetto trace of host preparation, submissions and modelled NPU time to this file"},
        {"GGML_XDNA_PRESET", "strix, krackan, halo", "krackan",
         "timing-model preset (docs/performance-model.md)"},
        model_spec("GGML_XDNA_MODEL_BW_GBS", 0.1, 1e4, "timing model: sustained NPU DRAM bandwidth, GB/s"),
        model_spec("GGML_XDNA_MODEL_CLOCK_GHZ", 0.01, 10, "timing model: array clock, GHz"),
        model_spec("GGML_XDNA_MODEL_EFFICIENCY", 1e-3, 1,
                   "timing model: sustained fraction of the kernels' slot-bound cycles (overrides the tier's)"),
        model_spec("GGML_XDNA_MODEL_TIER", 0, 2,
                   "timing model: efficiency tier, 0 assembly-tuned, 1 competent C++ (default), 2 first kernel"),
        model_spec("GGML_XDNA_MODEL_INT4_MACS", 512, 1024,
                   "timing model: int8 x int4 MACs per cycle per core (not published: 512 default, 1024 upper)"),
        model_spec("GGML_XDNA_MODEL_SWITCH_US", 0, 1e6,
                   "timing model: cost of a change of contract between consecutive invocations, us"),
        model_spec("GGML_XDNA_MODEL_SUBMIT_US", 0, 1e6, "timing model: cost of one submission (host round trip), us"),
        model_spec("GGML_XDNA_MODEL_INVOCATION_US", 0, 1e6,
                   "timing model: extra cost of each invocation inside a submission, us"),
        model_spec("GGML_XDNA_MODEL_SCALE_OPS", 1, 1e4,
                   "timing model: block-scale operations per cycle per core (shapes without kernel code only)"),
        model_spec("GGML_XDNA_MODEL_SCALE_GROUP", 0, 1 << 20,
                   "timing model: 0: scales per the weight format; else once per this many K (shapes without kernel code only)"),
        model_spec("GGML_XDNA_MODEL_CSTAGE_KB", 0, 1 << 20,
                   "timing model: output staging per column in the memory tile, KB (0: none)"),
    };
}

const OptionSpec & spec(const std::string & name) {
    const OptionSpec * s = find_option(name);
    if (s == nullptr) {
        std::fprintf(stderr, "xdna: internal error: %s is not an option\n", name.c_str());
        std::abort();
    }
    return *s;
}

std::string invalid(const std::string & name, const char * text) {
    return name + "='" + text + "' is not valid; accepted values: " + spec(name).accepted;
}

// Whole number in [lo, hi]; false if `s` is anything else.
bool parse_long(const char * s, long lo, long hi, long & out) {
    errno = 0;
    char * end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < lo || v > hi) {
        return false;
    }
    out = v;
    return true;
}

bool parse_double(const char * s, double & out) {
    errno = 0;
    char * end = nullptr;
    const double v = std::strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0) {
        return false;
    }
    out = v;
    return true;
}

// The accepted words of an option ("auto, sim, xrt").
bool is_accepted_word(const std::string & name, const std::string & word) {
    const std::string & acc = spec(name).accepted;
    size_t pos = 0;
    while (pos <= acc.size()) {
        const size_t comma = acc.find(", ", pos);
        const std::string w = acc.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (w == word) {
            return true;
        }
        if (comma == std::string::npos) {
            break;
        }
        pos = comma + 2;
    }
    return false;
}

}  // namespace

const std::vector<OptionSpec> & all_options() {
    static const std::vector<OptionSpec> options = make_options();
    return options;
}

const OptionSpec * find_option(const std::string & name) {
    for (const auto & o : all_options()) {
        if (o.name == name) {
            return &o;
        }
    }
    return nullptr;
}

const char * option_text(const std::string & name) {
    const char * s = std::getenv(name.c_str());
    return (s == nullptr || *s == '\0') ? nullptr : s;
}

OptionValue<DeviceChoice> device_option() {
    static const std::string name = "GGML_XDNA_DEVICE";
    OptionValue<DeviceChoice> o;
    o.value = DeviceChoice::automatic;
    const char * s = option_text(name);
    if (s == nullptr) {
        return o;
    }
    o.set = true;
    const std::string v = s;
    if (v == "auto") {
        o.value = DeviceChoice::automatic;
    } else if (v == "sim") {
        o.value = DeviceChoice::sim;
    } else if (v == "xrt") {
        o.value = DeviceChoice::xrt;
    } else {
        o.error = invalid(name, s);
    }
    return o;
}

OptionValue<bool> profile_option() {
    static const std::string name = "GGML_XDNA_PROFILE";
    OptionValue<bool> o;
    const char * s = option_text(name);
    if (s == nullptr) {
        return o;
    }
    o.set = true;
    const std::string v = s;
    o.value = v != "0";  // any other value turned profiling on before values were checked: it still does
    if (v != "0" && v != "1") {
        o.error = invalid(name, s);
    }
    return o;
}

OptionValue<std::string> trace_option() {
    OptionValue<std::string> o;
    if (const char * s = option_text("GGML_XDNA_TRACE")) {
        o.set = true;
        o.value = s;
    }
    return o;
}

OptionValue<std::vector<int>> sim_tiles_option() {
    static const std::string name = "GGML_XDNA_SIM_TILES";
    OptionValue<std::vector<int>> o;
    const char * s = option_text(name);
    if (s == nullptr) {
        return o;
    }
    o.set = true;
    for (const char * p = s; *p != '\0';) {
        errno = 0;
        char * end = nullptr;
        const long w = std::strtol(p, &end, 10);
        if (end == p || errno != 0 || w <= 0 || w > (1 << 20) || (*end != ',' && *end != '\0')) {
            o.value.clear();
            o.error = invalid(name, s);
            return o;
        }
        o.value.push_back(static_cast<int>(w));
        p = (*end == ',') ? end + 1 : end;
    }
    return o;
}

OptionValue<SimFaults> sim_faults_option() {
    static const std::string name = "GGML_XDNA_SIM_FAULTS";
    OptionValue<SimFaults> o;
    const char * s = option_text(name);
    if (s == nullptr) {
        return o;
    }
    o.set = true;
    const std::string v = s;
    const size_t comma = v.find(',');
    double rate = 0;
    long seed = 0;
    if (comma == std::string::npos || !parse_double(v.substr(0, comma).c_str(), rate) || !(rate >= 0 && rate <= 1) ||
        !parse_long(v.substr(comma + 1).c_str(), 0, 1L << 40, seed)) {
        o.error = invalid(name, s);
        return o;
    }
    o.value = {rate, static_cast<uint64_t>(seed)};
    return o;
}

OptionValue<int> threads_option() {
    static const std::string name = "GGML_XDNA_THREADS";
    OptionValue<int> o;
    const char * s = option_text(name);
    if (s == nullptr) {
        return o;
    }
    o.set = true;
    long n = 0;
    if (parse_long(s, 1, 1 << 16, n)) {
        o.value = static_cast<int>(n);
    } else {
        o.error = invalid(name, s);
    }
    return o;
}

OptionValue<size_t> max_buffer_option() {
    static const std::string name = "GGML_XDNA_MAX_BUFFER_MB";
    OptionValue<size_t> o;
    o.value = size_t(4096) << 20;
    const char * s = option_text(name);
    if (s == nullptr) {
        return o;
    }
    o.set = true;
    long n = 0;
    if (parse_long(s, 1, 4096, n)) {
        o.value = static_cast<size_t>(n) << 20;
    } else {
        o.error = invalid(name, s);
    }
    return o;
}

OptionValue<std::chrono::milliseconds> timeout_option() {
    static const std::string name = "GGML_XDNA_TIMEOUT_MS";
    OptionValue<std::chrono::milliseconds> o;
    o.value = std::chrono::milliseconds(10000);
    const char * s = option_text(name);
    if (s == nullptr) {
        return o;
    }
    o.set = true;
    long ms = 0;
    if (parse_long(s, 1, 1L << 40, ms)) {
        o.value = std::chrono::milliseconds(ms);
    } else {
        o.error = invalid(name, s);
    }
    return o;
}

namespace {

// An option whose value is one of the words its spec accepts; the spec's default otherwise.
OptionValue<std::string> word_option(const std::string & name) {
    OptionValue<std::string> o;
    o.value = spec(name).fallback;
    const char * s = option_text(name);
    if (s == nullptr) {
        return o;
    }
    o.set = true;
    if (is_accepted_word(name, s)) {
        o.value = s;
    } else {
        o.error = invalid(name, s);
    }
    return o;
}

}  // namespace

OptionValue<std::string> sim_exec_option() { return word_option("GGML_XDNA_SIM_EXEC"); }

OptionValue<std::string> preset_option() { return word_option("GGML_XDNA_PRESET"); }

OptionValue<std::string> host_ops_option() { return word_option("GGML_XDNA_HOST_OPS"); }

OptionValue<std::string> device_type_option() {
    OptionValue<std::string> o = word_option("GGML_XDNA_DEVICE_TYPE");
    if (!o.set || !o.error.empty()) {
        // Owning layers needs the host-op path: without it the KV cache ops could run nowhere.
        o.value = host_ops_option().value == "off" ? "accel" : "gpu";
    }
    return o;
}

OptionValue<std::string> prefill_option() { return word_option("GGML_XDNA_PREFILL"); }

OptionValue<std::string> npu_ops_option() { return word_option("GGML_XDNA_NPU_OPS"); }
OptionValue<std::string> fa_products_option() { return word_option("GGML_XDNA_FA_PRODUCTS"); }
OptionValue<std::string> w_objects_option() { return word_option("GGML_XDNA_W_OBJECTS"); }
bool exact_w_objects() {
    const OptionValue<std::string> o = w_objects_option();
    return o.set && o.error.empty() && o.value == "exact";
}

OptionValue<std::string> kernels_option() {
    OptionValue<std::string> o;
    if (const char * s = option_text("GGML_XDNA_KERNELS")) {
        o.set = true;
        o.value = s;
    }
    return o;
}

OptionValue<double> model_option(const std::string & name) {
    const OptionSpec & sp = spec(name);
    OptionValue<double> o;
    const char * s = option_text(name);
    if (s == nullptr) {
        return o;
    }
    double v = 0;
    if (!parse_double(s, v) || v < sp.lo || v > sp.hi) {
        o.error = invalid(name, s);
        return o;
    }
    o.set = true;
    o.value = v;
    return o;
}

std::vector<std::string> model_option_names() {
    std::vector<std::string> names;
    for (const auto & o : all_options()) {
        if (o.name.rfind("GGML_XDNA_MODEL_", 0) == 0) {
            names.push_back(o.name);
        }
    }
    return names;
}

std::string option_error(const std::string & name) {
    if (name.rfind("GGML_XDNA_MODEL_", 0) == 0 && find_option(name) != nullptr) {
        return model_option(name).error;
    }
    static const std::vector<std::pair<std::string, std::string (*)()>> checks = {
        {"GGML_XDNA_DEVICE", [] { return device_option().error; }},
        {"GGML_XDNA_KERNELS", [] { return kernels_option().error; }},
        {"GGML_XDNA_TIMEOUT_MS", [] { return timeout_option().error; }},
        {"GGML_XDNA_THREADS", [] { return threads_option().error; }},
        {"GGML_XDNA_SIM_TILES", [] { return sim_tiles_option().error; }},
        {"GGML_XDNA_SIM_EXEC", [] { return sim_exec_option().error; }},
        {"GGML_XDNA_HOST_OPS", [] { return host_ops_option().error; }},
        {"GGML_XDNA_DEVICE_TYPE", [] { return device_type_option().error; }},
        {"GGML_XDNA_PREFILL", [] { return prefill_option().error; }},
        {"GGML_XDNA_NPU_OPS", [] { return npu_ops_option().error; }},
        {"GGML_XDNA_FA_PRODUCTS", [] { return fa_products_option().error; }},
        {"GGML_XDNA_W_OBJECTS", [] { return w_objects_option().error; }},
        {"GGML_XDNA_MAX_BUFFER_MB", [] { return max_buffer_option().error; }},
        {"GGML_XDNA_SIM_FAULTS", [] { return sim_faults_option().error; }},
        {"GGML_XDNA_PROFILE", [] { return profile_option().error; }},
        {"GGML_XDNA_TRACE", [] { return trace_option().error; }},
        {"GGML_XDNA_PRESET", [] { return preset_option().error; }},
    };
    for (const auto & [n, check] : checks) {
        if (n == name) {
            return check();
        }
    }
    return "internal error: option " + name + " has no check in option_error()";
}

void report_option_error(const std::string & error, const std::string & instead) {
    if (error.empty()) {
        return;
    }
    static std::mutex            mutex;
    static std::set<std::string> reported;
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (!reported.insert(error).second) {
            return;
        }
    }
    std::string what = instead;
    if (what.empty()) {
        const OptionSpec * s = find_option(error.substr(0, error.find('=')));
        what = s != nullptr ? "the default (" + s->fallback + ")" : "the default";
    }
    runtime_log(LogLevel::error, error + "; using " + what);
}

}  // namespace xdna
