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
//   GGML_XDNA_MODEL_EFFICIENCY=<0..1]         sustained fraction of the MAC peak in a large GEMM
//   GGML_XDNA_MODEL_SUBMIT_US=<us>            cost of one submission (host round trip)
//   GGML_XDNA_MODEL_INVOCATION_US=<us>        extra cost of each invocation inside a submission
//   GGML_XDNA_MODEL_SCALE_OPS=<ops/cycle>     block-scale operations per cycle per core
//   GGML_XDNA_MODEL_SCALE_GROUP=<values>      0: per the weight format; else scale once per this many K
//   GGML_XDNA_MODEL_CSTAGE_KB=<KB>            output staging per column in the memory tile (0: none)
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

struct NpuPreset {
    std::string name;
    std::string description;

    // Array.
    int    columns = 8;
    int    rows = 4;
    double clock_ghz = 1.8;
    int    int8_macs_per_cycle = 512;     // per core
    int    bfp16_macs_per_cycle = 512;    // per core
    double array_efficiency = 0.0;        // sustained fraction of the per-family MAC peak (fitted)
    double scale_ops_per_cycle = 32;      // block-scale multiply-adds per cycle per core (assumed)
    int    scale_group = 0;               // 0: the weight format's own scale granularity

    // Memory.
    double dram_gbs = 0.0;                // sustained NPU DRAM bandwidth for linear streams
    double c_stage_kb = 256;              // output tiles staged per column in its memory tile

    // Host path.
    double submit_us = 0.0;               // one submission: host -> firmware -> array -> host
    double invocation_us = 0.0;           // each invocation in a submission: its runtime arguments

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
