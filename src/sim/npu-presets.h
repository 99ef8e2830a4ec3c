// Parameters of the XDNA2 timing model: the one place where hardware figures enter it.
//
// Every number in npu-presets.cpp names its source (xdna2-facts.md rows: vendor documents, papers,
// issue threads) or says that it is fitted or assumed. docs/performance-model.md explains how the
// model uses them and how well it reproduces published results it was not fitted to.
//
// Presets: "strix" (Strix Point), "krackan" (Krackan Point, the default), "halo" (Strix Halo).
// All three carry the same NPU2 array; they differ in the DRAM bandwidth the NPU reaches.
// Environment (read by preset_from_env through runtime/options.h, which holds the accepted ranges):
//   GGML_XDNA_PRESET=strix|krackan|halo       choose the preset (default krackan)
//   GGML_XDNA_MODEL_BW_GBS=<GB/s>             sustained NPU DRAM bandwidth
//   GGML_XDNA_MODEL_CLOCK_GHZ=<GHz>           array clock
//   GGML_XDNA_MODEL_EFFICIENCY=<0..1]         sustained fraction of the slot-bound cycles (overrides the tier)
//   GGML_XDNA_MODEL_TIER=0|1|2                efficiency tier: assembly-tuned, competent C++ (default), first kernel
//   GGML_XDNA_MODEL_INT4_MACS=512..1024       int8 x int4 MACs per cycle per core (not published)
//   GGML_XDNA_MODEL_SWITCH_US=<us>            cost of a change of contract between consecutive invocations
//   GGML_XDNA_MODEL_SUBMIT_US=<us>            cost of one submission (host round trip)
//   GGML_XDNA_MODEL_INVOCATION_US=<us>        extra cost of each invocation inside a submission
//   GGML_XDNA_MODEL_SCALE_OPS=<ops/cycle>     block-scale operations per cycle per core
//   GGML_XDNA_MODEL_SCALE_GROUP=<values>      0: per the weight format; else scale once per this many K
//   GGML_XDNA_MODEL_CSTAGE_KB=<KB>            published kernels: output staging per column in the memory tile (0: none)
#pragma once

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

// How a contract's kernel multiplies: which AIE2P multiply unit mode it uses and what it adds per block.
enum class KernelFamily {
    int8_plain,      // int8 x int8 GEMM without block scales (published reference kernels only)
    int8xint4,       // 4-bit weight codes (Q4_0, Q4_1, Q4_K) x int8 activations, block scales
    int8xint8,       // 5/6/8-bit (and 2/3-bit) codes expanded to int8 x int8 activations, block scales
    bfp16,           // block floating point, 8-bit mantissas with one exponent per 8 (reference only)
    bf16_emulated,   // bf16 x bf16 (mm_bf16_bf16): lowered to bfp16-emulated MACs
    f16_emulated,    // fp16 x fp16 (mm_f16_f16): each operand split into bf16 parts
    f32_emulated,    // fp32 x fp32 (mm_f32_f32): each operand split into bf16 parts
};

const char * family_name(KernelFamily f);

// How well a kernel's code is scheduled: the fraction of its slot-bound cycles (kernel-cycles.h) that
// it sustains in a large GEMM, stalls on locks and DMA and imperfect modulo schedules included. One
// fitted figure per tier, each from a published kernel of that kind (calibration-points.h).
enum class EfficiencyTier { assembly_tuned = 0, competent_cpp = 1, first_kernel = 2 };
constexpr int kEfficiencyTiers = 3;
const char * tier_name(EfficiencyTier t);

struct NpuPreset {
    std::string name;
    std::string description;

    // Array.
    int    columns = 8;
    int    rows = 4;
    double clock_ghz = 1.8;
    int    int8_macs_per_cycle = 512;     // per core
    int    bfp16_macs_per_cycle = 512;    // per core
    int    int4_macs_per_cycle = 512;     // int8 x int4 per core: not published; 512 (the int8 rate) or 1024
    // Sustained fraction of the slot-bound cycles, per tier (fitted), the tier in use, and an override
    // (GGML_XDNA_MODEL_EFFICIENCY; 0: none). efficiency() is what the model divides by.
    double tier_efficiency[kEfficiencyTiers] = {0, 0, 0};
    EfficiencyTier tier = EfficiencyTier::competent_cpp;
    double array_efficiency = 0.0;
    double efficiency() const { return array_efficiency > 0 ? array_efficiency : tier_efficiency[static_cast<int>(tier)]; }
    // Loop overhead of a kernel call (kernel-cycles.h): per call, and per entry of a pipelined loop.
    double call_overhead_cycles = 64;
    double pipelined_loop_cycles = 0;
    double scale_ops_per_cycle = 32;      // block-scale multiply-adds per cycle per core (assumed)
    int    scale_group = 0;               // 0: the weight format's own scale granularity

    // Memory.
    double dram_gbs = 0.0;                // sustained NPU DRAM bandwidth for linear streams
    double c_stage_kb = 256;              // published kernels: output tiles staged per column in its memory tile

    // Host path.
    double submit_us = 0.0;               // one submission: host -> firmware -> array -> host
    double invocation_us = 0.0;           // each invocation in a submission: its runtime arguments
    double contract_switch_us = 0.0;      // a change of contract between consecutive invocations
    double context_switch_us_per_column = 360;  // sensitivity: a hardware-context switch, per column

    // Peak MACs per cycle per core of a family (before efficiency), and the derived array rates.
    double family_macs_per_cycle(KernelFamily f) const;
    double peak_macs_per_us(KernelFamily f) const;  // whole array, efficiency 1
    double peak_tops(KernelFamily f) const;         // 2 ops per MAC
    double column_in_gbs() const;                   // DRAM ingress of one column's shim tile
};

// The built-in presets, in a fixed order (strix, krackan, halo).
const std::vector<NpuPreset> & npu_presets();

// The model's parameters with their basis and source, for generated documentation.
struct PresetParam {
    const char * name;
    const char * unit;
    const char * env;     // override variable, or "" for none
    const char * basis;   // "published", "derived", "fitted" or "assumed"
    const char * source;  // xdna2-facts.md row(s) or the reasoning
    double (*get)(const NpuPreset &);
};
const std::vector<PresetParam> & preset_params();

// Preset by name (nullptr if unknown).
const NpuPreset * find_npu_preset(const std::string & name);

// The preset GGML_XDNA_PRESET names (default krackan) with the GGML_XDNA_MODEL_* overrides applied.
// Returns false with `error` when a variable holds an unknown preset or a value out of range; `out`
// then holds the default preset with every valid override applied.
bool preset_from_env(NpuPreset & out, std::string & error);

// Kernel family of a weight format's contract.
KernelFamily family_of(ggml_type weight_type);

// Block-scale operations per output element per K value a weight format's kernel performs:
// (scale and min terms per sub-block) / (sub-block length), or / `group` when group > 0 (a kernel that
// folds the sub-block scales into the codes and rescales once per `group` K values). 0 for floats.
double scale_ops_per_k(ggml_type weight_type, int group = 0);

}  // namespace xdna
