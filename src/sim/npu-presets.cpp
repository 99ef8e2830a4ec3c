#include "sim/npu-presets.h"

#include "runtime/options.h"

#include <functional>

namespace xdna {

namespace {

// Figures shared by all presets. Sources are rows of xdna2-facts.md, quoted as "[source]".
NpuPreset npu2_array() {
    NpuPreset p;
    // 8 columns x 4 rows of compute tiles [mlir-aie docs, "Devices" page, npu2].
    p.columns = 8;
    p.rows = 4;
    // Top H-clock of the NPU4 power table, 1800 MHz [amd/xdna-driver npu4_regs.c]. `xrt-smi validate`
    // measures 51.0 TOPS [amd/IRON issue 55], which needs at least 1.56 GHz at 512 MAC/cycle/core, so
    // the array does run near the top of the table.
    p.clock_ghz = 1.8;
    // int8 mmul 8x8x8 per cycle = 512 MAC/cycle/core [amd/IRON issue 171; aie_kernels/aie2p/mm.cc].
    p.int8_macs_per_cycle = 512;
    // The int8 x int4 4x16x16 mode exists [Xilinx/aie_api mmul.hpp] but its issue rate is not published:
    // 512 (one instruction every 2 cycles, the int8 rate) is the default, 1024 (AIE-ML ran int8 x int4 at
    // twice its int8 rate [AM020]) the upper case; xdna-bench e2e reports both.
    p.int4_macs_per_cycle = 512;
    // bfp16 8x8x8 per cycle = 1024 FLOP/cycle/core [scalable.uni-jena.de "hello xdna"].
    p.bfp16_macs_per_cycle = 512;
    // Fitted, one per tier: the fraction of the slot-bound cycles (kernel-cycles.h) that reproduces a
    // published GEMM of that kind (calibration-points.cpp; docs/performance-model.md; tests/timing checks
    // each constant is still its fit):
    //   assembly-tuned  int8 GEMM, int8 out, 37.35-38.05 TOPS [arXiv 2512.13282] (assembly-level kernel)
    //   competent C++   bf16 GEMM of the same study, 14.71 TFLOP/s [arXiv 2512.13282]; IRON flm.GEMM
    //                   (aie_api C++, 1143 us [amd/IRON flm/gemm README]) is held out
    //   first kernel    mlir-aie whole_array int8 as patched in amd/IRON issues 171/172 (7-8.2 TOPS at
    //                   2048^3-4096^3, midpoint 7.6); qvac's int8 GEMM (3.4 TFLOP/s) is held out
    // Upper bound for comparison: `xrt-smi validate` reaches 51.0 TOPS, 0.86 of the peak [amd/IRON issue 55].
    p.tier_efficiency[0] = 0.6549;
    p.tier_efficiency[1] = 0.5039;
    p.tier_efficiency[2] = 0.1300;
    p.tier = EfficiencyTier::competent_cpp;
    p.array_efficiency = 0;  // no override
    // Assumed: a kernel call's fixed overhead (call and return, pointer set-up, prologue and epilogue of
    // its modulo-scheduled loops); hardware zero-overhead loops [AM020, ls/le/lc registers] make the
    // per-iteration cost 0.
    p.call_overhead_cycles = 64;
    p.pipelined_loop_cycles = 0;
    // Assumed, no published figure: block-scale multiply-adds (int32/fp32 vector lanes) per cycle per
    // core. The kernel design notes estimate per-32 scaling "can cost as much as the MACs": with 32
    // lanes, one scale term per 32 K values costs half the MAC time at 512 MAC/cycle.
    p.scale_ops_per_cycle = 32;
    p.scale_group = 0;
    // Output tiles staged per column in its 512 KB memory tile [AM027, UG1603]: assumed half of it,
    // the other half double-buffers the weight and activation panels streaming through the column.
    p.c_stage_kb = 256;
    // One submission: the ~107 us dispatch floor measured per kernel dispatch [amd/IRON flm/gemm README].
    p.submit_us = 107;
    // Each further invocation of a submission: its runtime arguments at ~2 us per parameter word
    // [amd/IRON flm/gemm README]; 8 words = four 64-bit buffer addresses (weights, activations, output,
    // params), the scalars travel in the params buffer (src/runtime/invocation-args.h).
    p.invocation_us = 8 * 2.0;
    // A change of contract between consecutive invocations (Q4_K <-> Q6_K in a Q4_K_M model: 63 per 8B
    // token) starts a different instruction stream and core-program branch: charged as one more dispatch,
    // the ~107 us floor [amd/IRON flm/gemm README]. If it needed a hardware-context switch instead, the
    // published cost is ~360 us per column (368/693/1518/2829 us for 1/2/4/8 columns) [qvac HANDOFF]:
    // the sensitivity case xdna-bench e2e reports.
    p.contract_switch_us = 107;
    p.context_switch_us_per_column = 360;
    return p;
}

std::vector<NpuPreset> make_presets() {
    NpuPreset strix = npu2_array();
    strix.name = "strix";
    strix.description = "Strix Point (Ryzen AI 300, HX 370), LPDDR5X";
    // Assumed: the low end of the 63-70 GB/s the NPU reached in a memcpy measurement [amd/IRON PR 195
    // review]; no NPU bandwidth measurement names a Strix Point machine.
    strix.dram_gbs = 63;

    NpuPreset krackan = npu2_array();
    krackan.name = "krackan";
    krackan.description = "Krackan Point (Ryzen AI 7 350), DDR5-5600";
    // Fitted: the sustained bandwidth that reproduces the published 56 GB/s of a q4-weight GEMV
    // [qvac ggml-xdna HANDOFF] as weight bytes over kernel time (DRAM time + invocation cost) for a
    // 14336 x 4096 Q4_K GEMV. Consistent with ~50 GB/s effective in a GEMM study on Krackan DDR5-5600
    // [arXiv 2512.13282] and 63-70 GB/s memcpy [amd/IRON PR 195 review].
    krackan.dram_gbs = 57.7;

    NpuPreset halo = npu2_array();
    halo.name = "halo";
    halo.description = "Strix Halo (Ryzen AI Max), LPDDR5X-8000 256-bit";
    // Krackan's figure: no published measurement shows the NPU streaming faster on Halo. Halo's DRAM
    // (256 GB/s theoretical, ~212 GB/s measured by the GPU [public reviews]) is not the NPU's limit; its
    // own path is the same NPU2 array and shim. The one Halo end-to-end figure points the same way:
    // FastFlowLM's 8B decode is ~11 t/s there (user report) against 12.8 on Krackan [FastFlowLM docs],
    // held out in calibration-points.cpp.
    halo.dram_gbs = krackan.dram_gbs;

    return {strix, krackan, halo};
}

}  // namespace

const char * tier_name(EfficiencyTier t) {
    switch (t) {
        case EfficiencyTier::assembly_tuned: return "assembly-tuned";
        case EfficiencyTier::competent_cpp: return "competent C++";
        case EfficiencyTier::first_kernel: return "first kernel";
    }
    return "?";
}

const char * family_name(KernelFamily f) {
    switch (f) {
        case KernelFamily::int8_plain: return "int8";
        case KernelFamily::int8xint4: return "int8xint4";
        case KernelFamily::int8xint8: return "int8xint8";
        case KernelFamily::bfp16: return "bfp16";
        case KernelFamily::bf16_emulated: return "bf16";
        case KernelFamily::f16_emulated: return "f16";
        case KernelFamily::f32_emulated: return "f32";
    }
    return "?";
}

double NpuPreset::family_macs_per_cycle(KernelFamily f) const {
    switch (f) {
        case KernelFamily::int8_plain:
        case KernelFamily::int8xint8:
            return int8_macs_per_cycle;
        case KernelFamily::int8xint4:
            return int4_macs_per_cycle;
        case KernelFamily::bfp16:
            return bfp16_macs_per_cycle;
        // An 8x8x8 bf16 mmul lowers to two bfp16-emulated MACs: half the bfp16 rate
        // [amd/IRON iron/operators/flm/gemm README].
        case KernelFamily::bf16_emulated:
            return bfp16_macs_per_cycle / 2.0;
        // Assumed: AIE2P has no fp16 or fp32 mmul [Xilinx/aie_api mmul.hpp lists none]. An exact fp16
        // product from bf16 parts takes hi*hi + hi*lo + lo*hi + lo*lo = 4 bf16 products; fp32 as three
        // bf16 parts keeps the 6 largest of 9 products (the usual bf16x3 scheme).
        case KernelFamily::f16_emulated:
            return bfp16_macs_per_cycle / 2.0 / 4.0;
        case KernelFamily::f32_emulated:
            return bfp16_macs_per_cycle / 2.0 / 6.0;
    }
    return int8_macs_per_cycle;
}

double NpuPreset::peak_macs_per_us(KernelFamily f) const {
    return family_macs_per_cycle(f) * columns * rows * clock_ghz * 1e3;
}

double NpuPreset::peak_tops(KernelFamily f) const {
    return 2.0 * peak_macs_per_us(f) / 1e6;
}

double NpuPreset::column_in_gbs() const {
    // Derived: ~2 shim input channels per column [mlir-aie docs; llama.cpp issue 21725] on the 64-bit
    // AIE2P stream switch [UG1603], at the array clock (an assumption: 16 bytes per cycle per column).
    return 2 * 8 * clock_ghz;
}

const std::vector<PresetParam> & preset_params() {
    // The same figures as the comments in npu2_array() and make_presets(), as data for the docs.
    static const std::vector<PresetParam> params = {
        {"columns x rows", "cores", "", "published", "mlir-aie docs, Devices page (npu2)",
         [](const NpuPreset & p) { return double(p.columns * p.rows); }},
        {"clock", "GHz", "GGML_XDNA_MODEL_CLOCK_GHZ", "published", "amd/xdna-driver npu4_regs.c (top H-clock)",
         [](const NpuPreset & p) { return p.clock_ghz; }},
        {"int8 MAC/cycle/core", "MAC", "", "published", "amd/IRON issue 171; aie2p/mm.cc (8x8x8 mmul)",
         [](const NpuPreset & p) { return double(p.int8_macs_per_cycle); }},
        {"int8 peak", "TOPS", "", "derived", "32 cores x 512 x 2 x clock",
         [](const NpuPreset & p) { return p.peak_tops(KernelFamily::int8_plain); }},
        {"bf16 MAC/cycle/core", "MAC", "", "published", "half the bfp16 8x8x8 rate (amd/IRON flm/gemm README)",
         [](const NpuPreset & p) { return p.family_macs_per_cycle(KernelFamily::bf16_emulated); }},
        {"int8 x int4 MAC/cycle/core", "MAC", "GGML_XDNA_MODEL_INT4_MACS", "assumed",
         "not published; 512 (int8 rate), 1024 reported beside it (AIE-ML ran int4 at 2x int8, AM020)",
         [](const NpuPreset & p) { return double(p.int4_macs_per_cycle); }},
        {"efficiency, assembly-tuned", "of slot-bound cycles", "GGML_XDNA_MODEL_TIER=0", "fitted",
         "int8 GEMM, int8 out, 37.35-38.05 TOPS (arXiv 2512.13282)",
         [](const NpuPreset & p) { return p.tier_efficiency[0]; }},
        {"efficiency, competent C++ (default)", "of slot-bound cycles", "GGML_XDNA_MODEL_TIER=1", "fitted",
         "bf16 GEMM 14.71 TFLOP/s (arXiv 2512.13282); IRON flm.GEMM held out",
         [](const NpuPreset & p) { return p.tier_efficiency[1]; }},
        {"efficiency, first kernel", "of slot-bound cycles", "GGML_XDNA_MODEL_TIER=2", "fitted",
         "patched mlir-aie whole_array int8, 7-8.2 TOPS (amd/IRON issues 171/172); qvac GEMM held out",
         [](const NpuPreset & p) { return p.tier_efficiency[2]; }},
        {"kernel call overhead", "cycles", "", "assumed",
         "call, set-up, loop prologue/epilogue; zero-overhead loops (AM020 ls/le/lc)",
         [](const NpuPreset & p) { return p.call_overhead_cycles; }},
        {"block-scale ops/cycle/core", "ops", "GGML_XDNA_MODEL_SCALE_OPS", "assumed",
         "no published figure; kernel design notes: per-32 scaling can cost as much as the MACs",
         [](const NpuPreset & p) { return p.scale_ops_per_cycle; }},
        {"sustained DRAM bandwidth", "GB/s", "GGML_XDNA_MODEL_BW_GBS", "fitted / assumed",
         "krackan: fitted to the 56 GB/s q4 GEMV (qvac HANDOFF); strix: 63, low end of the 63-70 GB/s NPU "
         "memcpy range (amd/IRON PR 195 review); halo: Krackan's (no NPU measurement on Halo is faster)",
         [](const NpuPreset & p) { return p.dram_gbs; }},
        {"shim ingress per column", "GB/s", "", "derived",
         "2 input channels (mlir-aie docs) x 64-bit stream (UG1603) x clock",
         [](const NpuPreset & p) { return p.column_in_gbs(); }},
        {"output staging per column", "KB", "GGML_XDNA_MODEL_CSTAGE_KB", "assumed",
         "half of the 512 KB memory tile (AM027, UG1603)", [](const NpuPreset & p) { return p.c_stage_kb; }},
        {"submission", "us", "GGML_XDNA_MODEL_SUBMIT_US", "published",
         "~107 us dispatch floor (amd/IRON flm/gemm README)", [](const NpuPreset & p) { return p.submit_us; }},
        {"invocation in a submission", "us", "GGML_XDNA_MODEL_INVOCATION_US", "derived",
         "8 argument words x ~2 us per parameter word (amd/IRON flm/gemm README)",
         [](const NpuPreset & p) { return p.invocation_us; }},
        {"change of contract", "us", "GGML_XDNA_MODEL_SWITCH_US", "published / assumed",
         "one more dispatch, ~107 us (amd/IRON flm/gemm README); sensitivity 360 us per column (qvac HANDOFF)",
         [](const NpuPreset & p) { return p.contract_switch_us; }},
    };
    return params;
}

const std::vector<NpuPreset> & npu_presets() {
    static const std::vector<NpuPreset> presets = make_presets();
    return presets;
}

const NpuPreset * find_npu_preset(const std::string & name) {
    for (const auto & p : npu_presets()) {
        if (p.name == name) {
            return &p;
        }
    }
    return nullptr;
}

bool preset_from_env(NpuPreset & out, std::string & error) {
    error.clear();
    out = *find_npu_preset("krackan");
    // The variables, their accepted values and ranges are in runtime/options.cpp.
    const OptionValue<std::string> preset = preset_option();
    if (!preset.error.empty()) {
        error += preset.error + "; ";
    } else if (const NpuPreset * p = find_npu_preset(preset.value)) {
        out = *p;
    } else {
        error += "GGML_XDNA_PRESET='" + preset.value + "' is accepted but no preset has that name; ";
    }
    struct Override {
        const char *                var;
        std::function<void(double)> set;
    };
    const Override overrides[] = {
        {"GGML_XDNA_MODEL_BW_GBS", [&](double v) { out.dram_gbs = v; }},
        {"GGML_XDNA_MODEL_CLOCK_GHZ", [&](double v) { out.clock_ghz = v; }},
        {"GGML_XDNA_MODEL_EFFICIENCY", [&](double v) { out.array_efficiency = v; }},
        {"GGML_XDNA_MODEL_TIER", [&](double v) { out.tier = static_cast<EfficiencyTier>(static_cast<int>(v)); }},
        {"GGML_XDNA_MODEL_INT4_MACS", [&](double v) { out.int4_macs_per_cycle = static_cast<int>(v); }},
        {"GGML_XDNA_MODEL_SWITCH_US", [&](double v) { out.contract_switch_us = v; }},
        {"GGML_XDNA_MODEL_SUBMIT_US", [&](double v) { out.submit_us = v; }},
        {"GGML_XDNA_MODEL_INVOCATION_US", [&](double v) { out.invocation_us = v; }},
        {"GGML_XDNA_MODEL_SCALE_OPS", [&](double v) { out.scale_ops_per_cycle = v; }},
        {"GGML_XDNA_MODEL_SCALE_GROUP", [&](double v) { out.scale_group = static_cast<int>(v); }},
        {"GGML_XDNA_MODEL_CSTAGE_KB", [&](double v) { out.c_stage_kb = v; }},
    };
    for (const auto & o : overrides) {
        const OptionValue<double> v = model_option(o.var);
        if (!v.error.empty()) {
            error += v.error + "; ";
        } else if (v.set) {
            o.set(v.value);
        }
    }
    if (!error.empty()) {
        error.resize(error.size() - 2);  // trailing "; "
        return false;
    }
    return true;
}

KernelFamily family_of(ggml_type t) {
    switch (t) {
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q4_K:
            return KernelFamily::int8xint4;
        case GGML_TYPE_F16:
            return KernelFamily::f16_emulated;
        case GGML_TYPE_BF16:
            return KernelFamily::bf16_emulated;
        case GGML_TYPE_F32:
            return KernelFamily::f32_emulated;
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1:
        case GGML_TYPE_Q8_0:
        case GGML_TYPE_Q2_K:
        case GGML_TYPE_Q3_K:
        case GGML_TYPE_Q5_K:
        case GGML_TYPE_Q6_K:
            return KernelFamily::int8xint8;
        default:
            // No contract: tests/timing checks that every row of all_matmul_contracts() is listed above.
            return KernelFamily::int8_plain;
    }
}

double scale_ops_per_k(ggml_type t, int group) {
    // (terms per sub-block, sub-block length): a scale term, plus a min term for the formats with mins
    // (the min times the activation block sum). Layouts as in ggml-common.h / docs/kernels.md.
    int terms = 0, sub_block = 1;
    switch (t) {
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q8_0:
            terms = 1, sub_block = 32;
            break;
        case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q5_1:
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K:
            terms = 2, sub_block = 32;
            break;
        case GGML_TYPE_Q3_K:
        case GGML_TYPE_Q6_K:
            terms = 1, sub_block = 16;
            break;
        case GGML_TYPE_Q2_K:
            terms = 2, sub_block = 16;
            break;
        default:
            return 0.0;
    }
    return static_cast<double>(terms) / (group > 0 ? group : sub_block);
}

}  // namespace xdna
