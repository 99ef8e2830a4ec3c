#include "reports.h"

#include "sim/calibration-points.h"
#include "e2e-model.h"
#include "invocation-shape.h"
#include "contracts/matmul-contract.h"

#include <cmath>
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

    // What the parameters mean per contract: the compute roof of a large GEMM (MODELLED, krackan).
    const NpuPreset k = preset_named("krackan");
    std::fprintf(out, "\nCompute roof per contract (MODELLED, krackan preset: family peak x array efficiency, "
                      "less the block-scale work):\n\n");
    std::fprintf(out, "| contract | family | family peak TOPS | block-scale ops per MAC | modelled sustained TOPS |\n");
    std::fprintf(out, "|---|---|---|---|---|\n");
    for (const auto & c : xdna::all_matmul_contracts()) {
        const xdna::KernelFamily f = xdna::family_of(c.weight_type);
        const double sops = xdna::scale_ops_per_k(c.weight_type, k.scale_group);
        const double cycles_per_mac = 1.0 / k.family_macs_per_cycle(f) + sops / k.scale_ops_per_cycle;
        const double tops = 2.0 * k.columns * k.rows * k.clock_ghz * 1e9 / cycles_per_mac * k.array_efficiency / 1e12;
        std::fprintf(out, "| `%s` | %s | %s | %s | %s |\n", c.name, xdna::family_name(f), fmt(k.peak_tops(f), 1).c_str(),
                     fmt(sops, 4).c_str(), fmt(tops, 1).c_str());
    }
}

void print_calibration(FILE * out) {
    std::fprintf(out, "| published point | source | used as | published | modelled | error | stated bound | "
                      "modelled compute / DRAM us | assumptions |\n");
    std::fprintf(out, "|---|---|---|---|---|---|---|---|---|\n");
    for (const auto & p : xdna::calibration_points()) {
        const TimingModel model(preset_named(p.preset));
        const xdna::ModelledTime t = model.invocation(p.shape);
        const char * unit = metric_unit(p.metric);
        std::fprintf(out, "| %s | %s | %s | %s %s | %s %s | %+.1f%% | %.0f%% | %s / %s | %s; preset %s%s |\n", p.name,
                     p.source, p.kind == xdna::PointKind::fitted ? "**fitted**" : "held out",
                     fmt(p.published, 2).c_str(), unit, fmt(xdna::modelled_value(p, model), 2).c_str(), unit,
                     xdna::error_pct(p, model), p.stated_error_pct, fmt(t.compute_us, 0).c_str(),
                     fmt(t.dram_us, 0).c_str(), p.note, p.preset, p.with_submit ? "; includes one submission" : "");
    }
    const NpuPreset k = preset_named("krackan");
    std::fprintf(out, "\nFits reproduced from the points (krackan preset): array efficiency %.4f, "
                      "sustained bandwidth %.1f GB/s.\n",
                 xdna::fit_array_efficiency(k), xdna::fit_dram_gbs(k));
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
                      "vocab %lld), weights `%s`; preset `%s` (%s GB/s, %s GHz, efficiency %s, submission %s us, "
                      "invocation %s us). Packed weight bytes read per decoded token: %.2f GB (",
                 d.name.c_str(), (long long) d.n_embd, (long long) d.n_ff, (long long) d.n_layer, (long long) d.n_head,
                 (long long) d.n_head_kv, (long long) d.head_dim, (long long) d.vocab,
                 d.layer_types.empty() ? ftype.c_str() : "as stored in the GGUF",
                 base.name.c_str(), fmt(base.dram_gbs).c_str(), fmt(base.clock_ghz, 2).c_str(),
                 fmt(base.array_efficiency, 4).c_str(), fmt(base.submit_us, 0).c_str(), fmt(base.invocation_us, 0).c_str(),
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
    std::fprintf(out, "). Per token: %d submissions, %d invocations, %d changes of contract between consecutive "
                      "invocations.\n\n",
                 tg.submissions, tg.invocations, tg.contract_changes);

    std::fprintf(out, "Baseline breakdown (all MODELLED; %s):\n\n", grouping_name(Grouping::per_split));
    std::fprintf(out, "| phase | modelled t/s | modelled total ms | compute ms | DRAM ms | sum of max(compute, DRAM) ms | "
                      "dispatch ms (submissions + invocations) | submissions | dominant term |\n");
    std::fprintf(out, "|---|---|---|---|---|---|---|---|---|\n");
    const std::pair<const char *, const PhaseModel *> phases[] = {{"decode (tg), per token", &tg}, {"prefill (pp), per ubatch", &pp}};
    for (const auto & [label, p] : phases) {
        std::fprintf(out, "| %s%s | %s | %s | %s | %s | %s | %s (%s + %s) | %d | %s |\n", label,
                     p == &pp ? (" of " + std::to_string(pp_tokens)).c_str() : "", fmt(p->tokens_per_s(), 1).c_str(),
                     fmt(p->total_us / 1e3, 2).c_str(), fmt(p->compute_us / 1e3, 2).c_str(),
                     fmt(p->dram_us / 1e3, 2).c_str(), fmt(p->busy_us / 1e3, 2).c_str(),
                     fmt(p->dispatch_us() / 1e3, 2).c_str(), fmt(p->submit_us / 1e3, 2).c_str(),
                     fmt(p->invocation_us / 1e3, 2).c_str(), p->submissions, p->dominant());
    }

    // Scenarios: one change each against the baseline, then the combination.
    std::vector<Scenario> scenarios;
    scenarios.push_back({"baseline", "-", base, Grouping::per_split});
    scenarios.push_back({"one submission per layer", "QKV, O, gate/up, down of a layer in one submission", base,
                         Grouping::per_layer});
    scenarios.push_back({"one submission per token", "the whole forward pass in one submission", base, Grouping::per_token});
    NpuPreset s256 = base;
    s256.scale_group = 256;
    scenarios.push_back({"block scales once per 256", "GGML_XDNA_MODEL_SCALE_GROUP=256", s256, Grouping::per_split});
    NpuPreset nostage = base;
    nostage.c_stage_kb = 0;
    scenarios.push_back({"no output staging (sensitivity)", "GGML_XDNA_MODEL_CSTAGE_KB=0", nostage, Grouping::per_split});
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
    best.scale_group = 256;
    scenarios.push_back({"per layer + scales per 256", "both changes", best, Grouping::per_layer});
    if (const NpuPreset * halo = xdna::find_npu_preset("halo"); halo != nullptr && base.name != "halo") {
        NpuPreset h = *halo;
        h.scale_group = 256;
        scenarios.push_back({"halo, per layer + scales per 256", "GGML_XDNA_PRESET=halo and both changes", h,
                             Grouping::per_layer});
    }

    std::fprintf(out, "\nScenarios (all MODELLED):\n\n");
    std::fprintf(out, "| scenario | change | prefill pp%lld t/s | decode t/s | prefill dominant | decode dominant | "
                      "decode dispatch ms/token |\n",
                 (long long) pp_tokens);
    std::fprintf(out, "|---|---|---|---|---|---|---|\n");
    for (const auto & s : scenarios) {
        const TimingModel m(s.preset);
        const PhaseModel stg = model_phase(d, ftype, m, 1, s.grouping, s.fold_experts);
        const PhaseModel spp = model_phase(d, ftype, m, pp_tokens, s.grouping, s.fold_experts);
        std::fprintf(out, "| %s | %s | %s | %s | %s | %s | %s |\n", s.name.c_str(), s.change.c_str(),
                     fmt(spp.tokens_per_s(), 0).c_str(), fmt(stg.tokens_per_s(), 2).c_str(), spp.dominant(),
                     stg.dominant(), fmt(stg.dispatch_us() / 1e3, 2).c_str());
    }

    // What the decode goal needs, from the same numbers.
    const double goal_tg = 13.0, goal_pp = 1000.0;
    const double budget_us = 1e6 / goal_tg;
    const double bw_needed = tg.weight_bytes / ((budget_us - tg.dispatch_us()) * 1e3);
    const double bw_needed_free = tg.weight_bytes / (budget_us * 1e3);
    std::fprintf(out, "\nGoals (modelled): decode >= %.0f t/s is %s (%.2f), prefill >= %.0f t/s is %s (%.0f). "
                      "Decode at %.0f t/s leaves %.1f ms per token; with the baseline dispatch (%.2f ms) the weights "
                      "must stream at %.1f GB/s, and at %.1f GB/s even with no dispatch at all.\n",
                 goal_tg, tg.tokens_per_s() >= goal_tg ? "met" : "not met", tg.tokens_per_s(), goal_pp,
                 pp.tokens_per_s() >= goal_pp ? "met" : "not met", pp.tokens_per_s(), goal_tg, budget_us / 1e3,
                 tg.dispatch_us() / 1e3, bw_needed, bw_needed_free);
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
