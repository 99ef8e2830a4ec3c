#include "reports.h"

#include "sim/calibration-points.h"
#include "sim/feasibility.h"
#include "sim/kernel-cycles.h"
#include "e2e-model.h"
#include "invocation-shape.h"
#include "contracts/matmul-contract.h"

#include <cmath>
#include <cstdlib>
#include <map>

namespace xdna_bench {

namespace {

using xdna::NpuPreset;
using xdna::TimingModel;

std::string fmt(double v, int prec = 1) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    return buf;
}

const char * metric_unit(xdna::PointMetric m) {
    switch (m) {
        case xdna::PointMetric::time_us: return "us";
        case xdna::PointMetric::tops: return "TOPS";
        case xdna::PointMetric::weight_gbs: return "GB/s";
    }
    return "";
}

NpuPreset preset_named(const std::string & name) {
    const NpuPreset * p = xdna::find_npu_preset(name);
    return p ? *p : *xdna::find_npu_preset("krackan");
}

struct Scenario {
    std::string name;
    std::string change;
    NpuPreset   preset;
    Grouping    grouping;
    bool        fold_experts = false;
    bool        exact_w = false;  // GGML_XDNA_W_OBJECTS=exact for this row (the model reads the option)
};

// The option set for the scope of one scenario row, and put back as it was.
struct ScopedOption {
    std::string name, old;
    bool        had = false, active = false;
    ScopedOption(const char * n, const char * value, bool on) : name(n), active(on) {
        if (!active) return;
        if (const char * o = std::getenv(n)) {
            had = true;
            old = o;
        }
        setenv(n, value, 1);
    }
    ~ScopedOption() {
        if (!active) return;
        if (had) setenv(name.c_str(), old.c_str(), 1);
        else unsetenv(name.c_str());
    }
};

}  // namespace

void print_presets(FILE * out) {
    const auto & presets = xdna::npu_presets();
    std::fprintf(out, "| parameter | unit |");
    for (const auto & p : presets) {
        std::fprintf(out, " %s |", p.name.c_str());
    }
    std::fprintf(out, " basis | source | override |\n|---|---|");
    for (size_t i = 0; i < presets.size(); ++i) {
        std::fprintf(out, "---|");
    }
    std::fprintf(out, "---|---|---|\n");
    for (const auto & param : xdna::preset_params()) {
        std::fprintf(out, "| %s | %s |", param.name, param.unit);
        for (const auto & p : presets) {
            const double v = param.get(p);
            std::fprintf(out, " %s |", fmt(v, v == std::floor(v) ? 0 : (v < 1 ? 4 : 1)).c_str());
        }
        std::fprintf(out, " %s | %s | %s |\n", param.basis, param.source, *param.env ? param.env : "-");
    }

    // What the parameters mean per contract: a kernel call's cycles from its own code (MODELLED, krackan).
    const NpuPreset k = preset_named("krackan");
    NpuPreset k1024 = k;
    k1024.int4_macs_per_cycle = 1024;
    std::fprintf(out, "\nCycles of one kernel call per contract (MODELLED, krackan preset; op counts from running the "
                      "kernel code; a call is one 64-row x TN x TK tile): busiest VLIW slot + %.0f cycles call "
                      "overhead, and the sustained array rate that gives at the %s tier (efficiency %.4f):\n\n",
                 k.call_overhead_cycles, xdna::tier_name(k.tier), k.efficiency());
    std::fprintf(out, "| contract | TN | vector | move | load+unpack slots | store | busiest slot | cycles per call | "
                      "MAC per cycle per core | modelled TOPS (%s) | cycles, int4 at 1024 MAC/cycle |\n",
                 xdna::tier_name(k.tier));
    std::fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto & c : xdna::all_matmul_contracts()) {
        for (int tn : c.tile_n) {
            const xdna::KernelProfile * prof = xdna::kernel_profile(c, tn);
            if (prof == nullptr) {
                continue;
            }
            const xdna::SlotCycles cy = xdna::core_cycles(prof->call, k);
            const xdna::SlotCycles cy1024 = xdna::core_cycles(prof->call, k1024);
            const double macs = double(c.tile_m) * tn * c.tile_k;
            const double tops = 2.0 * macs / cy.total * k.columns * k.rows * k.clock_ghz * 1e9 * k.efficiency() / 1e12;
            std::fprintf(out, "| `%s` | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.name, tn,
                         fmt(cy.vector, 0).c_str(), fmt(cy.move, 0).c_str(), fmt(cy.load, 0).c_str(),
                         fmt(cy.store, 0).c_str(), cy.binding, fmt(cy.total, 0).c_str(), fmt(macs / cy.total, 1).c_str(),
                         fmt(tops, 2).c_str(), fmt(cy1024.total, 0).c_str());
        }
    }
}

void print_calibration(FILE * out) {
    using xdna::EfficiencyTier;
    const EfficiencyTier tiers[] = {EfficiencyTier::assembly_tuned, EfficiencyTier::competent_cpp,
                                    EfficiencyTier::first_kernel};
    std::fprintf(out, "| published point | source | kernel kind (tier) | used as | published | modelled in its tier | "
                      "error | stated bound | modelled (error): assembly-tuned / competent C++ / first kernel | "
                      "compute / DRAM us (own tier) | assumptions |\n");
    std::fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto & p : xdna::calibration_points()) {
        const NpuPreset preset = preset_named(p.preset);
        const TimingModel model(xdna::with_tier(preset, p.tier));
        const xdna::ModelledTime t = model.invocation(p.shape);
        const char * unit = metric_unit(p.metric);
        std::string all;
        for (auto tier : tiers) {
            const double v = xdna::modelled_value(p, TimingModel(xdna::with_tier(preset, tier)));
            char err[32];
            std::snprintf(err, sizeof err, " (%+.0f%%)", 100.0 * (v - p.published) / p.published);
            all += (all.empty() ? "" : " / ") + fmt(v, 2) + err;
        }
        std::fprintf(out, "| %s | %s | %s | %s | %s %s | %s %s | %+.1f%% | %.0f%% | %s, %s | %s / %s | %s; preset %s%s |\n",
                     p.name, p.source, xdna::tier_name(p.tier),
                     p.kind == xdna::PointKind::fitted ? "**fitted**" : "held out", fmt(p.published, 2).c_str(), unit,
                     fmt(xdna::modelled_value_in_tier(p, preset), 2).c_str(), unit, xdna::error_pct(p, preset),
                     p.stated_error_pct, all.c_str(), unit, fmt(t.compute_us, 0).c_str(), fmt(t.dram_us, 0).c_str(), p.note,
                     p.preset, p.with_submit ? "; includes one submission" : "");
    }
    const NpuPreset k = preset_named("krackan");
    std::fprintf(out, "\nFits reproduced from the points (krackan preset): efficiency assembly-tuned %.4f, competent C++ "
                      "%.4f, first kernel %.4f; sustained bandwidth %.1f GB/s.\n",
                 xdna::fit_tier_efficiency(k, EfficiencyTier::assembly_tuned),
                 xdna::fit_tier_efficiency(k, EfficiencyTier::competent_cpp),
                 xdna::fit_tier_efficiency(k, EfficiencyTier::first_kernel), xdna::fit_dram_gbs(k));
}

namespace {

// Prefill per efficiency tier and int4 rate, decode with contract switches charged, beside FastFlowLM's
// published Krackan figures for the model (where there are any).
void print_e2e_tiers(FILE * out, const ModelDims & d, const std::string & ftype, const NpuPreset & base, int64_t pp_tokens) {
    struct Published {
        const char * model;
        double pp_lo, pp_hi, decode;
    };
    const Published fflm[] = {{"1b", 1686, 2339, 64.5}, {"3b", 766, 991, 26.3}, {"8b", 403, 495, 12.8}};
    const Published * pub = nullptr;
    for (const auto & f : fflm) {
        if (d.name == f.model) {
            pub = &f;
        }
    }
    const std::string pub_pp = pub ? fmt(pub->pp_lo, 0) + "-" + fmt(pub->pp_hi, 0) : "-";
    std::fprintf(out, "Prefill pp%lld per efficiency tier (MODELLED, %s, one submission per ggml split; FastFlowLM on "
                      "Krackan, published: %s t/s):\n\n",
                 (long long) pp_tokens, base.name.c_str(), pub_pp.c_str());
    std::fprintf(out, "| tier | efficiency | pp t/s, int4 at 512 MAC/cycle | pp t/s, int4 at 1024 MAC/cycle | "
                      "compute ms (512) | dominant |\n|---|---|---|---|---|---|\n");
    const xdna::EfficiencyTier tiers[] = {xdna::EfficiencyTier::assembly_tuned, xdna::EfficiencyTier::competent_cpp,
                                          xdna::EfficiencyTier::first_kernel};
    for (auto tier : tiers) {
        NpuPreset p = xdna::with_tier(base, tier);
        const PhaseModel a = model_phase(d, ftype, TimingModel(p), pp_tokens, Grouping::per_split);
        p.int4_macs_per_cycle = 1024;
        const PhaseModel b = model_phase(d, ftype, TimingModel(p), pp_tokens, Grouping::per_split);
        std::fprintf(out, "| %s%s | %s | %s | %s | %s | %s |\n", xdna::tier_name(tier),
                     tier == base.tier ? " (default)" : "", fmt(p.efficiency(), 4).c_str(), fmt(a.tokens_per_s(), 0).c_str(),
                     fmt(b.tokens_per_s(), 0).c_str(), fmt(a.compute_us / 1e3, 1).c_str(), a.dominant());
    }
    const std::string pub_tg = pub ? fmt(pub->decode, 1) : "-";
    std::fprintf(out, "\nDecode per token with contract switches charged (MODELLED, %s; FastFlowLM on Krackan, "
                      "published: %s t/s at 1k context):\n\n",
                 base.name.c_str(), pub_tg.c_str());
    std::fprintf(out, "| grouping | switch cost | switches | switch ms | decode t/s |\n|---|---|---|---|---|\n");
    const double per_column = base.context_switch_us_per_column * base.columns;
    const std::pair<const char *, double> costs[] = {
        {"none (not charged)", 0.0},
        {"one dispatch (default)", base.contract_switch_us},
        {"context switch, 360 us x 8 columns (sensitivity)", per_column}};
    for (Grouping g : {Grouping::per_split, Grouping::per_token}) {
        for (const auto & [label, us] : costs) {
            NpuPreset p = base;
            p.contract_switch_us = us;
            const PhaseModel tg = model_phase(d, ftype, TimingModel(p), 1, g);
            std::fprintf(out, "| %s | %s: %s us | %d | %s | %s |\n", grouping_name(g), label, fmt(us, 0).c_str(),
                         tg.contract_changes, fmt(tg.switch_us / 1e3, 2).c_str(), fmt(tg.tokens_per_s(), 2).c_str());
        }
    }
    std::fprintf(out, "\n");
    if (d.name != "8b") {
        return;
    }
    // Held-out end-to-end decode points (FastFlowLM runs the whole model in about 4.4 submissions per
    // token: the closest grouping is one per token). Not fitted: the bandwidth comes from a GEMV.
    struct Point {
        const char * what;
        const char * preset;
        double published;
    };
    const Point points[] = {{"FastFlowLM 8B decode, Krackan (FastFlowLM docs)", "krackan", 12.8},
                            {"FastFlowLM 8B decode, Strix Halo (user report, ~11)", "halo", 11.0}};
    std::fprintf(out, "Held-out decode points (MODELLED: one submission per token, switches charged at the default):\n\n"
                      "| point | preset | published t/s | modelled t/s | error |\n|---|---|---|---|---|\n");
    for (const auto & pt : points) {
        const PhaseModel tg = model_phase(d, ftype, TimingModel(preset_named(pt.preset)), 1, Grouping::per_token);
        std::fprintf(out, "| %s | %s | %s | %s | %+.1f%% |\n", pt.what, pt.preset, fmt(pt.published, 1).c_str(),
                     fmt(tg.tokens_per_s(), 2).c_str(), 100.0 * (tg.tokens_per_s() - pt.published) / pt.published);
    }
    std::fprintf(out, "\n");
}

}  // namespace

// Decode with the layer's attention on the NPU (GGML_XDNA_NPU_OPS=layer) against the context length,
// beside FastFlowLM's published Llama-3.1-8B decode on Krackan (ROCm/FastFlowLM docs/docs/benchmarks/
// llama3_results.md: 12.8 / 12.2 / 10.2 t/s at 1k / 4k / 16k, about 76.8 ms + 1.28 us per position).
// Per kind of invocation: its count, busy, compute and DRAM time, bytes, and argument setup.
static void print_by_kind(FILE * out, const PhaseModel & ph) {
    std::fprintf(out, "| kind | invocations | busy ms | compute ms | DRAM ms | MB moved | DRAM GB/s | setup ms |\n|---|---|---|---|---|---|---|---|\n");
    for (const auto & [kind, k] : ph.by_kind) {
        std::fprintf(out, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", kind.c_str(), k.invocations, fmt(k.busy_us / 1e3, 2).c_str(),
                     fmt(k.compute_us / 1e3, 2).c_str(), fmt(k.dram_us / 1e3, 2).c_str(), fmt(k.dram_bytes / 1e6, 1).c_str(),
                     fmt(k.dram_us > 0 ? k.dram_bytes / k.dram_us / 1e3 : 0.0, 1).c_str(), fmt(k.dispatch_us / 1e3, 2).c_str());
    }
}

static void print_e2e_attention(FILE * out, const ModelDims & d, const std::string & ftype, const NpuPreset & base, int64_t pp_tokens) {
    const TimingModel model(base);
    const int64_t contexts[] = {1024, 4096, 16384};
    const char * fflm[] = {"12.8", "12.2", "10.2"};
    const PhaseModel none = model_phase(d, ftype, model, 1, Grouping::glue_on_npu);
    std::fprintf(out, "\nAttention on the NPU (all MODELLED; %s; aie/flash_attn's program (fa_block_f16_bfp16, the default of GGML_XDNA_FA_PRODUCTS) at its own operation counts, "
                      "the K/V rows of the F16 cache and the mask streamed per token; FastFlowLM's published Llama-3.1-8B decode "
                      "on Krackan beside):\n\n",
                 grouping_name(Grouping::layer_on_npu));
    std::fprintf(out, "| context | decode t/s | ms per token | of which attention (compute, DRAM) ms | submissions per token | "
                      "FastFlowLM Llama-3.1-8B t/s |\n|---|---|---|---|---|---|\n");
    double t_first = 0, t_last = 0;
    const PhaseModel base_tg = model_phase(d, ftype, model, 1, Grouping::layer_on_npu, false, 1, 1);  // one KV row
    for (size_t i = 0; i < 3; ++i) {
        const PhaseModel tg = model_phase(d, ftype, model, 1, Grouping::layer_on_npu, false, 1, contexts[i]);
        (i == 0 ? t_first : t_last) = tg.total_us;
        std::fprintf(out, "| %lld | %s | %s | %s (%s, %s) | %d | %s |\n", (long long) contexts[i], fmt(tg.tokens_per_s(), 2).c_str(),
                     fmt(tg.total_us / 1e3, 2).c_str(), fmt((tg.total_us - base_tg.total_us) / 1e3, 2).c_str(),
                     fmt((tg.compute_us - base_tg.compute_us) / 1e3, 2).c_str(), fmt((tg.dram_us - base_tg.dram_us) / 1e3, 2).c_str(),
                     tg.submissions, fflm[i]);
    }
    const double slope_us = (t_last - t_first) / static_cast<double>(contexts[2] - contexts[0]);
    const PhaseModel pp = model_phase(d, ftype, model, pp_tokens, Grouping::layer_on_npu);
    std::fprintf(out, "\nPer context position: %s us per token (FastFlowLM: 1.28 us). With attention on the host "
                      "(GGML_XDNA_NPU_OPS=glue) the same decode is %s t/s before the host's attention, in %d submissions per token. "
                      "Prefill pp%lld from an empty cache with attention on the NPU (the causal mask's hidden blocks past each task's "
                      "last visible one neither moved nor computed, each round as long as its longest column): %s t/s in %d "
                      "submission(s).\n",
                 fmt(slope_us, 2).c_str(), fmt(none.tokens_per_s(), 2).c_str(), none.submissions, (long long) pp_tokens,
                 fmt(pp.tokens_per_s(), 0).c_str(), pp.submissions);

    // The same with a Q8_0 KV cache (-ctk q8_0 -ctv q8_0): the KV writes quantize on the NPU and attention
    // reads 34 bytes per 32 values (aie/flash_attn's fa_block_q8_0_bfp16, aie/set_rows' f32_to_q8_0).
    std::fprintf(out, "\nWith a Q8_0 KV cache (`-ctk q8_0 -ctv q8_0`; MODELLED, the same run: fa_block_q8_0_bfp16, the "
                      "KV writes' f32_to_q8_0 and the Hadamard rotations llama.cpp puts around a quantized cache (q, k, v and "
                      "the attention's output, aie/hadamard's fwht_f32: four more invocations per layer) at their own "
                      "operation counts):\n\n");
    std::fprintf(out, "| context | decode t/s | ms per token | of which attention (compute, DRAM) ms | FastFlowLM Llama-3.1-8B t/s |\n"
                      "|---|---|---|---|---|\n");
    double q_first = 0, q_last = 0;
    const PhaseModel q_base = model_phase(d, ftype, model, 1, Grouping::layer_on_npu, false, 1, 1, true);
    for (size_t i = 0; i < 3; ++i) {
        const PhaseModel tg = model_phase(d, ftype, model, 1, Grouping::layer_on_npu, false, 1, contexts[i], true);
        (i == 0 ? q_first : q_last) = tg.total_us;
        std::fprintf(out, "| %lld | %s | %s | %s (%s, %s) | %s |\n", (long long) contexts[i], fmt(tg.tokens_per_s(), 2).c_str(),
                     fmt(tg.total_us / 1e3, 2).c_str(), fmt((tg.total_us - q_base.total_us) / 1e3, 2).c_str(),
                     fmt((tg.compute_us - q_base.compute_us) / 1e3, 2).c_str(), fmt((tg.dram_us - q_base.dram_us) / 1e3, 2).c_str(), fflm[i]);
    }
    const PhaseModel q_pp = model_phase(d, ftype, model, pp_tokens, Grouping::layer_on_npu, false, 1, 0, true);
    std::fprintf(out, "\nPer context position with the Q8_0 cache: %s us per token (F16: %s; FastFlowLM: 1.28 us). Prefill pp%lld: %s t/s.\n",
                 fmt((q_last - q_first) / static_cast<double>(contexts[2] - contexts[0]), 2).c_str(), fmt(slope_us, 2).c_str(),
                 (long long) pp_tokens, fmt(q_pp.tokens_per_s(), 0).c_str());

    // Where the 1k-context decoded token goes, kind by kind: what the decode goal has to cut.
    const PhaseModel tg1k = model_phase(d, ftype, model, 1, Grouping::layer_on_npu, false, 1, contexts[0]);
    std::fprintf(out, "\nWhere a decoded token's time goes at %lld context (MODELLED, the same run; busy = the sum of max(compute, DRAM) "
                      "per invocation, DRAM GB/s = the kind's bytes over its DRAM time; the submission's own %s ms and the %d "
                      "changes of contract or layout (%s ms) are not in the rows):\n\n",
                 (long long) contexts[0], fmt(tg1k.submit_us / 1e3, 2).c_str(), tg1k.contract_changes, fmt(tg1k.switch_us / 1e3, 2).c_str());
    print_by_kind(out, tg1k);
    // The same for a prompt's ubatch: what the prefill goal has to cut.
    std::fprintf(out, "\nWhere a prefill ubatch of %lld tokens goes from an empty cache (MODELLED, the same run and columns; every "
                      "attention block up to each task's last visible one charged; the submission's own %s ms and the %d changes of contract or layout (%s ms) are "
                      "not in the rows):\n\n",
                 (long long) pp_tokens, fmt(pp.submit_us / 1e3, 2).c_str(), pp.contract_changes, fmt(pp.switch_us / 1e3, 2).c_str());
    print_by_kind(out, pp);
}

// The co-resident decode-layer plan (aie/decode_layer/README.md), decode only: no switches, projections
// and attention on 7 columns, the projections' W objects family-sized (one program takes Q4_K and Q6_K by a
// runtime word, so its objects fit the larger).
static void print_e2e_co_resident(FILE * out, const ModelDims & d, const std::string & ftype, const NpuPreset & base) {
    NpuPreset p = base;
    p.contract_switch_us = 0;
    const TimingModel model(p);
    const TimingModel charged(base);
    const int64_t contexts[] = {1024, 4096, 16384};
    std::fprintf(out, "\nThe co-resident decode-layer plan (all MODELLED; %s):\n\n", grouping_name(Grouping::co_resident));
    std::fprintf(out, "| context | decode t/s | ms per token | attention (compute, DRAM) ms | submissions per token | "
                      "the same work in today's per-kind designs t/s | with a Q8_0 KV cache t/s | two projection sub-roles t/s | "
                      "sub-roles, Q8_0 KV cache t/s |\n|---|---|---|---|---|---|---|---|---|\n");
    double t_first = 0, t_last = 0;
    const PhaseModel base_tg = model_phase(d, ftype, model, 1, Grouping::co_resident, false, 1, 1);
    for (size_t i = 0; i < 3; ++i) {
        const PhaseModel tg = model_phase(d, ftype, model, 1, Grouping::co_resident, false, 1, contexts[i]);
        const PhaseModel today = model_phase(d, ftype, charged, 1, Grouping::layer_on_npu, false, 1, contexts[i]);
        const PhaseModel q8 = model_phase(d, ftype, model, 1, Grouping::co_resident, false, 1, contexts[i], true);
        const PhaseModel sub = model_phase(d, ftype, model, 1, Grouping::co_resident_subroles, false, 1, contexts[i]);
        const PhaseModel sub_q8 = model_phase(d, ftype, model, 1, Grouping::co_resident_subroles, false, 1, contexts[i], true);
        (i == 0 ? t_first : t_last) = tg.total_us;
        std::fprintf(out, "| %lld | %s | %s | %s (%s, %s) | %d | %s | %s | %s | %s |\n", (long long) contexts[i], fmt(tg.tokens_per_s(), 2).c_str(),
                     fmt(tg.total_us / 1e3, 2).c_str(), fmt((tg.total_us - base_tg.total_us) / 1e3, 2).c_str(),
                     fmt((tg.compute_us - base_tg.compute_us) / 1e3, 2).c_str(), fmt((tg.dram_us - base_tg.dram_us) / 1e3, 2).c_str(),
                     tg.submissions, fmt(today.tokens_per_s(), 2).c_str(), fmt(q8.tokens_per_s(), 2).c_str(),
                     fmt(sub.tokens_per_s(), 2).c_str(), fmt(sub_q8.tokens_per_s(), 2).c_str());
    }
    std::fprintf(out,
                 "\nPer context position: %s us per token (attention's stream split over %d columns' cores, on the columns its tasks "
                 "fill, instead of the whole array).\n",
                 fmt((t_last - t_first) / static_cast<double>(contexts[2] - contexts[0]), 2).c_str(), kCoResidentColumns);
}

void print_e2e(FILE * out, const ModelDims & d, const std::string & ftype, const std::string & preset_name,
               int64_t pp_tokens) {
    const NpuPreset base = preset_named(preset_name);
    const TimingModel model(base);

    // Bytes per type of one decode step, for the inputs line.
    ggml_type uniform = GGML_TYPE_COUNT;
    bool q4_k_m = false;
    parse_ftype(ftype, uniform, q4_k_m);
    std::map<std::string, double> bytes_by_type;
    const auto mm = layer_matmuls(d);
    for (int l = 0; l < d.n_layer; ++l) {
        for (size_t i = 0; i < mm.size(); ++i) {
            bool ok = false;
            const ggml_type t = matmul_type(d, l, static_cast<int>(i), uniform, q4_k_m);
            const auto inv = invocation_shape(t, mm[i].m, mm[i].k, 1, ok);
            if (ok) {
                // Experts: only the n_expert_used a decoded token selects are read.
                bytes_by_type[ggml_type_name(t)] += static_cast<double>(inv.weight_bytes()) * (mm[i].experts ? d.n_expert_used : 1);
            }
        }
    }
    bool ok = false;
    const ggml_type head_type = output_type(d, uniform, q4_k_m);
    const auto head = invocation_shape(head_type, d.vocab, d.n_embd, 1, ok);
    if (ok) {
        bytes_by_type[ggml_type_name(head_type)] += static_cast<double>(head.weight_bytes());
    }

    const PhaseModel tg = model_phase(d, ftype, model, 1, Grouping::per_split);
    const PhaseModel pp = model_phase(d, ftype, model, pp_tokens, Grouping::per_split);

    std::fprintf(out, "Inputs: model `%s` (n_embd %lld, n_ff %lld, %lld layers, %lld/%lld heads, head dim %lld, "
                      "vocab %lld), weights `%s`; preset `%s` (%s GB/s, %s GHz, efficiency %s (%s), int4 %d MAC/cycle, "
                      "submission %s us, invocation %s us, contract switch %s us). Packed weight bytes read per decoded token: %.2f GB (",
                 d.name.c_str(), (long long) d.n_embd, (long long) d.n_ff, (long long) d.n_layer, (long long) d.n_head,
                 (long long) d.n_head_kv, (long long) d.head_dim, (long long) d.vocab,
                 d.layer_types.empty() ? ftype.c_str() : "as stored in the GGUF",
                 base.name.c_str(), fmt(base.dram_gbs).c_str(), fmt(base.clock_ghz, 2).c_str(),
                 fmt(base.efficiency(), 4).c_str(), xdna::tier_name(base.tier), base.int4_macs_per_cycle,
                 fmt(base.submit_us, 0).c_str(), fmt(base.invocation_us, 0).c_str(), fmt(base.contract_switch_us, 0).c_str(),
                 tg.weight_bytes / 1e9);
    if (d.n_expert > 0) {
        std::fprintf(out, "MoE: %lld experts of n_ff %lld, %lld per token (MUL_MAT_ID: one invocation per selected expert; one more "
                          "split per layer for the router; "
                          "prefill assumes uniform routing); ",
                     (long long) d.n_expert, (long long) d.n_ff, (long long) d.n_expert_used);
    }
    bool first = true;
    for (const auto & [name, bytes] : bytes_by_type) {
        std::fprintf(out, "%s%s %.2f GB", first ? "" : ", ", name.c_str(), bytes / 1e9);
        first = false;
    }
    std::fprintf(out, "). Per token: %d submissions, %d invocations, %d changes of contract (or of the design layout) "
                      "between consecutive invocations (charged %s us each).",
                 tg.submissions, tg.invocations, tg.contract_changes, fmt(base.contract_switch_us, 0).c_str());
    // The design layout (xclbin) the timing model runs each invocation in: the faster for its shape.
    auto layouts = [](const PhaseModel & ph) {
        std::string s;
        for (const auto & [name, n] : ph.layouts) {
            s += (s.empty() ? "" : ", ") + name + " " + std::to_string(n);
        }
        return s;
    };
    std::fprintf(out, " Design layouts the model chose (invocations each): decode %s; prefill pp%lld %s (%d changes of contract "
                      "or layout per ubatch).\n\n",
                 layouts(tg).c_str(), (long long) pp_tokens, layouts(pp).c_str(), pp.contract_changes);
    print_e2e_tiers(out, d, ftype, base, pp_tokens);

    std::fprintf(out, "Baseline breakdown (all MODELLED; %s):\n\n", grouping_name(Grouping::per_split));
    std::fprintf(out, "| phase | modelled t/s | modelled total ms | compute ms | DRAM ms | sum of max(compute, DRAM) ms | "
                      "dispatch ms (submissions + invocations) | contract switches ms | submissions | dominant term |\n");
    std::fprintf(out, "|---|---|---|---|---|---|---|---|---|---|\n");
    const std::pair<const char *, const PhaseModel *> phases[] = {{"decode (tg), per token", &tg}, {"prefill (pp), per ubatch", &pp}};
    for (const auto & [label, p] : phases) {
        std::fprintf(out, "| %s%s | %s | %s | %s | %s | %s | %s (%s + %s) | %s | %d | %s |\n", label,
                     p == &pp ? (" of " + std::to_string(pp_tokens)).c_str() : "", fmt(p->tokens_per_s(), 1).c_str(),
                     fmt(p->total_us / 1e3, 2).c_str(), fmt(p->compute_us / 1e3, 2).c_str(),
                     fmt(p->dram_us / 1e3, 2).c_str(), fmt(p->busy_us / 1e3, 2).c_str(),
                     fmt(p->dispatch_us() / 1e3, 2).c_str(), fmt(p->submit_us / 1e3, 2).c_str(),
                     fmt(p->invocation_us / 1e3, 2).c_str(), fmt(p->switch_us / 1e3, 2).c_str(), p->submissions,
                     p->dominant());
    }

    // Scenarios: one change each against the baseline, then the combination.
    std::vector<Scenario> scenarios;
    scenarios.push_back({"baseline", "-", base, Grouping::per_split});
    scenarios.push_back({"glue on the NPU", "GGML_XDNA_NPU_OPS=glue: ADD, RMS_NORM, SwiGLU, ROPE, SET_ROWS, GET_ROWS, activation quantization in the submissions", base,
                         Grouping::glue_on_npu});
    scenarios.push_back({"one submission per layer", "QKV, O, gate/up, down of a layer in one submission", base,
                         Grouping::per_layer});
    scenarios.push_back({"one submission per token", "the whole forward pass in one submission", base, Grouping::per_token});
    scenarios.push_back({"glue and attention on the NPU", "GGML_XDNA_NPU_OPS=layer: the glue and FLASH_ATTN_EXT (decode at 1k context; prefill from an empty cache)", base,
                         Grouping::layer_on_npu});
    NpuPreset no_switch = base;
    no_switch.contract_switch_us = 0;
    scenarios.push_back({"glue and attention, no switches (sensitivity)",
                         "GGML_XDNA_NPU_OPS=layer with GGML_XDNA_MODEL_SWITCH_US=0: what one co-resident design for every kind "
                         "(fixed core roles, the projection's weight type a runtime word) would save at most; no such design yet",
                         no_switch, Grouping::layer_on_npu});
    NpuPreset int4 = base;
    int4.int4_macs_per_cycle = 1024;
    scenarios.push_back({"int4 at 1024 MAC/cycle", "GGML_XDNA_MODEL_INT4_MACS=1024", int4, Grouping::per_split});
    NpuPreset fast_submit = base;
    fast_submit.submit_us = 30;
    scenarios.push_back({"30 us submissions (sensitivity)", "GGML_XDNA_MODEL_SUBMIT_US=30", fast_submit,
                         Grouping::per_split});
    for (const auto & p : xdna::npu_presets()) {
        if (p.name != base.name) {
            scenarios.push_back({"preset " + p.name, "GGML_XDNA_PRESET=" + p.name, p, Grouping::per_split});
        }
    }
    if (d.n_expert > 0) {
        scenarios.push_back({"experts of a MUL_MAT_ID in one invocation",
                             "one instruction stream over the selected experts (aie/matmul_id/README.md)", base,
                             Grouping::per_split, true});
        scenarios.push_back({"one submission per token, experts folded", "both", base, Grouping::per_token, true});
    }
    NpuPreset best = base;
    best.int4_macs_per_cycle = 1024;
    scenarios.push_back({"per layer + int4 at 1024", "both changes", best, Grouping::per_layer});
    scenarios.push_back({"exact W objects", "GGML_XDNA_W_OBJECTS=exact: one xclbin per contract, W windows of the tile (no over-fetch)", base,
                         Grouping::per_split, false, true});
    scenarios.push_back({"glue and attention, exact W objects", "GGML_XDNA_NPU_OPS=layer with GGML_XDNA_W_OBJECTS=exact", base,
                         Grouping::layer_on_npu, false, true});
    scenarios.push_back({"glue and attention, exact W objects, no switches (sensitivity)",
                         "both, and GGML_XDNA_MODEL_SWITCH_US=0 (what a co-resident design with exact W objects could reach)", no_switch,
                         Grouping::layer_on_npu, false, true});

    std::fprintf(out, "\nScenarios (all MODELLED):\n\n");
    std::fprintf(out, "| scenario | change | prefill pp%lld t/s | decode t/s | prefill dominant | decode dominant | "
                      "decode dispatch ms/token |\n",
                 (long long) pp_tokens);
    std::fprintf(out, "|---|---|---|---|---|---|---|\n");
    for (const auto & s : scenarios) {
        const ScopedOption exact("GGML_XDNA_W_OBJECTS", "exact", s.exact_w);
        const TimingModel m(s.preset);
        const PhaseModel stg = model_phase(d, ftype, m, 1, s.grouping, s.fold_experts, 1, 1024);
        const PhaseModel spp = model_phase(d, ftype, m, pp_tokens, s.grouping, s.fold_experts);
        std::fprintf(out, "| %s | %s | %s | %s | %s | %s | %s |\n", s.name.c_str(), s.change.c_str(),
                     fmt(spp.tokens_per_s(), 0).c_str(), fmt(stg.tokens_per_s(), 2).c_str(), spp.dominant(),
                     stg.dominant(), fmt(stg.dispatch_us() / 1e3, 2).c_str());
    }

    print_e2e_attention(out, d, ftype, base, pp_tokens);
    print_e2e_co_resident(out, d, ftype, base);

    // What the decode goal needs, from the same numbers.
    const double goal_tg = 13.0, goal_pp = 1000.0;
    const double budget_us = 1e6 / goal_tg;
    const double bw_needed = tg.weight_bytes / ((budget_us - tg.dispatch_us() - tg.switch_us) * 1e3);
    const double bw_needed_free = tg.weight_bytes / (budget_us * 1e3);
    std::fprintf(out, "\nGoals (modelled): decode >= %.0f t/s is %s (%.2f), prefill >= %.0f t/s is %s (%.0f). "
                      "Decode at %.0f t/s leaves %.1f ms per token; with the baseline dispatch and switches (%.2f ms) the weights "
                      "must stream at %.1f GB/s, and at %.1f GB/s even with no dispatch at all.\n",
                 goal_tg, tg.tokens_per_s() >= goal_tg ? "met" : "not met", tg.tokens_per_s(), goal_pp,
                 pp.tokens_per_s() >= goal_pp ? "met" : "not met", pp.tokens_per_s(), goal_tg, budget_us / 1e3,
                 (tg.dispatch_us() + tg.switch_us) / 1e3, bw_needed, bw_needed_free);
    if (!pp.infeasible.empty() || !tg.infeasible.empty()) {
        std::fprintf(out, "\nFeasibility (src/sim/feasibility.h): the kernels this model times break design limits:");
        for (const auto * v : {&tg.infeasible, &pp.infeasible}) {
            for (const auto & msg : *v) {
                std::fprintf(out, " %s%s;", v == &tg.infeasible ? "decode: " : "prefill: ", msg.c_str());
            }
        }
        std::fprintf(out, " the figures above assume the limit is lifted.\n");
    }
}

void print_feasibility(FILE * out) {
    std::fprintf(out, "| family | TN | core data bytes (of 65536) | C depth | accumulators (of 8) | core DMA in/out (of 2/2) | "
                      "memory tile in/out (of 6/6) | shim out/in (of 2/2) | program bytes, estimate (of 16384) | verdict |\n"
                      "|---|---|---|---|---|---|---|---|---|---|\n");
    std::string lines;
    for (const auto & b : xdna::kernel_budgets()) {
        const auto v = xdna::violations(b);
        std::string verdict = v.empty() ? "fits" : "";
        for (const auto & msg : v) {
            verdict += (verdict.empty() ? "**does not fit**: " : "; ") + msg;
        }
        std::fprintf(out, "| %s | %d | %d | %d | %d | %d/%d | %d/%d | %d/%d | %d | %s |\n", b.family, b.tile_n, b.core_bytes(),
                     b.c_depth, b.accumulators, b.core_in_used, b.core_out_used, b.memtile_in_used, b.memtile_out_used,
                     b.shim_out_used, b.shim_in_used, b.program_bytes, verdict.c_str());
        char buf[256];
        std::snprintf(buf, sizeof buf, "budget %s %d %d %d %d %d %d %d %d %d %d %d\n", b.family, b.tile_n, b.design_core_bytes,
                      b.design_stack_bytes, b.design_data_bytes, b.c_depth, b.core_in_used, b.core_out_used,
                      b.memtile_in_used, b.memtile_out_used, b.shim_out_used, b.shim_in_used);
        lines += buf;
    }
    std::fprintf(out, "\n<!-- design.py figures, checked by tests/timing/check-budgets.sh:\n%s-->\n", lines.c_str());
}

void print_e2e_summary(FILE * out, const ModelDims & d, const std::string & ftype, int64_t pp_tokens, bool header) {
    const auto & presets = xdna::npu_presets();
    if (header) {
        std::fprintf(out, "| model | weights | GB read per token |");
        for (const auto & p : presets) {
            std::fprintf(out, " %s pp%lld / decode t/s (MODELLED) |", p.name.c_str(), (long long) pp_tokens);
        }
        std::fprintf(out, " krackan decode t/s, one submission per token (MODELLED) | dominant on krackan (pp / decode) |\n"
                          "|---|---|---|");
        for (size_t i = 0; i < presets.size(); ++i) {
            std::fprintf(out, "---|");
        }
        std::fprintf(out, "---|---|\n");
    }
    std::string dominant;
    double gb = 0;
    std::fprintf(out, "| %s | %s |", d.name.c_str(), ftype.c_str());
    std::string cells;
    for (const auto & p : presets) {
        const TimingModel m(p);
        const PhaseModel tg = model_phase(d, ftype, m, 1, Grouping::per_split);
        const PhaseModel pp = model_phase(d, ftype, m, pp_tokens, Grouping::per_split);
        gb = tg.weight_bytes / 1e9;
        cells += " " + fmt(pp.tokens_per_s(), 0) + " / " + fmt(tg.tokens_per_s(), 1) + " |";
        if (p.name == "krackan") {
            dominant = std::string(pp.dominant()) + " / " + tg.dominant();
        }
    }
    const PhaseModel one = model_phase(d, ftype, TimingModel(preset_named("krackan")), 1, Grouping::per_token);
    std::fprintf(out, " %.2f |%s %s | %s |\n", gb, cells.c_str(), fmt(one.tokens_per_s(), 1).c_str(), dominant.c_str());
}

void print_fastflowlm_comparison(FILE * out, const std::vector<ModelDims> & models, const std::string & ftype,
                                 int64_t pp_tokens) {
    // FastFlowLM on Krackan (Ryzen AI 7 350): whole model on the NPU, Q4NX weights (4-bit + bf16 scale
    // and min per 32, 5 bits/weight), about 4.4 submissions per token [FastFlowLM docs, llama3 results;
    // qvac PLAN]. Its decode is the closest published analogue of "one submission per token".
    struct Published {
        const char * model;
        double pp_lo, pp_hi, decode;
    };
    const Published fflm[] = {{"1b", 1686, 2339, 64.5}, {"3b", 766, 991, 26.3}, {"8b", 403, 495, 12.8}};
    // FastFlowLM publishes MoE decode on Krackan for Qwen3.6-35B-A3B (17.5 t/s) and gpt-oss-20b (18.2
    // t/s, pp 221), not for Qwen3-30B-A3B (facts sheet, FastFlowLM docs and releases); the nearest
    // published model is printed beside ours, named as what it is.
    struct PublishedMoe {
        const char * model;
        const char * published_model;
        double decode;
    };
    const PublishedMoe fflm_moe[] = {{"qwen3-30b-a3b", "Qwen3.6-35B-A3B", 17.5}, {"qwen3-30b-a3b", "gpt-oss-20b", 18.2}};
    const TimingModel k(preset_named("krackan"));
    std::fprintf(out, "| model | FastFlowLM decode t/s (published) | modelled decode, one submission per token | error | "
                      "modelled decode, 4 per layer | FastFlowLM prefill t/s (published) | modelled pp%lld, matmuls only |\n",
                 (long long) pp_tokens);
    std::fprintf(out, "|---|---|---|---|---|---|---|\n");
    for (const auto & d : models) {
        for (const auto & f : fflm) {
            if (d.name != f.model) {
                continue;
            }
            const PhaseModel one = model_phase(d, ftype, k, 1, Grouping::per_token);
            const PhaseModel split = model_phase(d, ftype, k, 1, Grouping::per_split);
            const PhaseModel pp = model_phase(d, ftype, k, pp_tokens, Grouping::per_split);
            std::fprintf(out, "| %s | %s | %s | %+.1f%% | %s | %s-%s | %s |\n", f.model, fmt(f.decode, 1).c_str(),
                         fmt(one.tokens_per_s(), 1).c_str(), 100.0 * (one.tokens_per_s() - f.decode) / f.decode,
                         fmt(split.tokens_per_s(), 1).c_str(), fmt(f.pp_lo, 0).c_str(), fmt(f.pp_hi, 0).c_str(),
                         fmt(pp.tokens_per_s(), 0).c_str());
        }
        for (const auto & f : fflm_moe) {
            if (d.name != f.model) {
                continue;
            }
            const PhaseModel one = model_phase(d, ftype, k, 1, Grouping::per_token);
            const PhaseModel split = model_phase(d, ftype, k, 1, Grouping::per_split);
            const PhaseModel pp = model_phase(d, ftype, k, pp_tokens, Grouping::per_split);
            std::fprintf(out, "| %s (FastFlowLM figure: %s) | %s | %s | (other model) | %s | - | %s |\n", f.model,
                         f.published_model, fmt(f.decode, 1).c_str(), fmt(one.tokens_per_s(), 1).c_str(),
                         fmt(split.tokens_per_s(), 1).c_str(), fmt(pp.tokens_per_s(), 0).c_str());
        }
    }
}

}  // namespace xdna_bench
