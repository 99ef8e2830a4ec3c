#include "speculative.h"

#include "invocation-shape.h"

#include <cmath>

namespace xdna_bench {

namespace {

std::string fmt(double v, int prec = 1) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    return buf;
}

}  // namespace

PhaseModel model_pass(const ModelDims & d, const std::string & ftype, const xdna::TimingModel & model, int64_t tokens,
                      int64_t head_rows, Grouping grouping) {
    return model_phase(d, ftype, model, tokens, grouping, false, head_rows);
}

SpecRound model_round(const ModelDims & target, const ModelDims & draft, const std::string & ftype,
                      const xdna::TimingModel & model, int gamma, double alpha, Grouping grouping) {
    SpecRound r;
    r.gamma = gamma;
    r.alpha = alpha;
    double accepted = 0, a = 1;
    for (int i = 1; i <= gamma; ++i) {
        a *= alpha;
        accepted += a;  // the i-th drafted token is accepted when it and every one before it are
    }
    r.tokens = 1.0 + accepted;  // the target's own token after the last accepted one comes with it
    r.draft_rate = gamma > 0 ? accepted / gamma : 0;
    const double d_batch = model_pass(draft, ftype, model, gamma + 1, 1, grouping).total_us;
    const double d_one = model_pass(draft, ftype, model, 1, 1, grouping).total_us;
    r.draft_us = d_batch + gamma * d_one;
    r.verify_us = model_pass(target, ftype, model, gamma + 1, gamma + 1, grouping).total_us;
    r.verify_ratio = r.verify_us / model_pass(target, ftype, model, 1, 1, grouping).total_us;
    r.tokens_per_s = r.tokens * 1e6 / (r.draft_us + r.verify_us);
    r.passes_per_token = 1.0 / r.tokens;
    return r;
}

double alpha_from_rate(double rate, int gamma) {
    // rate = (alpha + ... + alpha^gamma) / gamma grows with alpha: bisect.
    double lo = 0, hi = 1;
    for (int it = 0; it < 60; ++it) {
        const double mid = 0.5 * (lo + hi);
        double s = 0, a = 1;
        for (int i = 1; i <= gamma; ++i) {
            a *= mid;
            s += a;
        }
        (s / gamma < rate ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

void print_speculative(FILE * out, const ModelDims & target, const ModelDims & draft, const std::string & ftype,
                       const std::string & preset_name) {
    const xdna::NpuPreset * p = xdna::find_npu_preset(preset_name);
    if (p == nullptr) {
        p = xdna::find_npu_preset("krackan");
    }
    const xdna::TimingModel model(*p);
    const double ffl = 12.8;  // FastFlowLM, Llama 3.1 8B decode on Krackan (published; reports.cpp)
    const Grouping groupings[] = {Grouping::per_split, Grouping::per_token};

    const PhaseModel plain = model_pass(target, ftype, model, 1, 1, Grouping::per_split);
    const PhaseModel plain_one = model_pass(target, ftype, model, 1, 1, Grouping::per_token);
    const PhaseModel draft_one = model_pass(draft, ftype, model, 1, 1, Grouping::per_split);
    const double roof = p->dram_gbs * 1e9 / plain.weight_bytes;  // every weight byte once per token
    std::fprintf(out, "Inputs (all figures MODELLED by the timing model, weight matmuls only): target `%s` (%lld layers, n_embd %lld, "
                      "vocab %lld), draft `%s` (%lld layers, n_embd %lld), both `%s`; preset `%s` (%s GB/s, efficiency tier %s). "
                      "Packed weight bytes per pass: target %.2f GB, draft %.2f GB. Plain decode: %s t/s (one submission per ggml "
                      "split, as today), %s t/s (one per token); bandwidth roof %s t/s (%s GB/s over the target's bytes); "
                      "FastFlowLM publishes %s t/s for this target on Krackan.\n\n",
                 target.name.c_str(), (long long) target.n_layer, (long long) target.n_embd, (long long) target.vocab,
                 draft.name.c_str(), (long long) draft.n_layer, (long long) draft.n_embd, ftype.c_str(), p->name.c_str(),
                 fmt(p->dram_gbs).c_str(), xdna::tier_name(p->tier), plain.weight_bytes / 1e9, draft_one.weight_bytes / 1e9,
                 fmt(plain.tokens_per_s()).c_str(), fmt(plain_one.tokens_per_s()).c_str(), fmt(roof).c_str(),
                 fmt(p->dram_gbs).c_str(), fmt(ffl).c_str());

    std::fprintf(out, "Verify pass of the target at its real token count, logits for every token (MODELLED):\n\n");
    std::fprintf(out, "| tokens | target pass us | / one-token pass | DRAM us | compute us | dispatch+switch us | draft pass us |\n");
    std::fprintf(out, "|---|---|---|---|---|---|---|\n");
    for (int n : {1, 2, 3, 4, 5, 6, 8, 16}) {
        const PhaseModel v = model_pass(target, ftype, model, n, n, Grouping::per_split);
        const PhaseModel dr = model_pass(draft, ftype, model, n, 1, Grouping::per_split);
        std::fprintf(out, "| %d | %s | %s | %s | %s | %s | %s |\n", n, fmt(v.total_us, 0).c_str(),
                     fmt(v.total_us / plain.total_us, 3).c_str(), fmt(v.dram_us, 0).c_str(), fmt(v.compute_us, 0).c_str(),
                     fmt(v.dispatch_us() + v.switch_us, 0).c_str(), fmt(dr.total_us, 0).c_str());
    }

    struct Row {
        std::string label;
        int gamma;
        double alpha;
    };
    std::vector<Row> rows;
    // Published: llama.cpp issue #5877 (comment of 2024-11-19): llama-speculative, Llama 3.1 8B Instruct Q8_0
    // target, Llama 3.2 1B Instruct Q8_0 draft, n_draft 5: n_drafted 730, n_accept 526, accept 72.055%.
    const double published_rate = 526.0 / 730.0;
    const double published_alpha = alpha_from_rate(published_rate, 5);
    for (int g : {1, 2, 3}) {
        rows.push_back({"published 72.1 % at n_draft 5, read as alpha " + fmt(published_alpha, 3), g, published_alpha});
    }
    for (int g : {1, 2, 3}) {
        rows.push_back({"published 72.1 % read as alpha itself (lower)", g, published_rate});
    }
    for (double a : {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}) {
        rows.push_back({"sweep", 3, a});
    }
    for (int g : {5, 7}) {
        rows.push_back({"published alpha, verify past the decode tile", g, published_alpha});
    }

    std::fprintf(out, "\nDecode with a draft (draft-simple, greedy; MODELLED). alpha: probability that a drafted token is "
                      "accepted (each independently, until the first rejection); rate: what llama.cpp prints as its "
                      "acceptance (accepted / drafted):\n\n");
    std::fprintf(out, "| acceptance | alpha | rate | drafted (--spec-draft-n-max) | verify tokens | verify / one-token pass | "
                      "tokens per round | target passes per token | t/s, per split | speed-up | t/s, per token | vs FastFlowLM 12.8 | vs roof |\n");
    std::fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto & row : rows) {
        SpecRound r[2];
        for (int i = 0; i < 2; ++i) {
            r[i] = model_round(target, draft, ftype, model, row.gamma, row.alpha, groupings[i]);
        }
        std::fprintf(out, "| %s | %s | %s | %d | %d | %s | %s | %s | %s | %sx | %s | %sx | %sx |\n", row.label.c_str(),
                     fmt(row.alpha, 4).c_str(), fmt(100 * r[0].draft_rate, 2).c_str(), row.gamma, row.gamma + 1,
                     fmt(r[0].verify_ratio, 3).c_str(), fmt(r[0].tokens, 2).c_str(), fmt(r[0].passes_per_token, 2).c_str(),
                     fmt(r[0].tokens_per_s).c_str(), fmt(r[0].tokens_per_s / plain.tokens_per_s(), 2).c_str(),
                     fmt(r[1].tokens_per_s).c_str(), fmt(r[1].tokens_per_s / ffl, 2).c_str(),
                     fmt(r[1].tokens_per_s / roof, 2).c_str());
    }
    std::fprintf(out, "\nt/s per split: one submission per ggml split (the backend today); per token: one submission per pass "
                      "(FastFlowLM's way; its speed-up is over the plain per-token decode %s t/s). Roof: plain decode's "
                      "bandwidth roof, %s t/s.\n",
                 fmt(plain_one.tokens_per_s()).c_str(), fmt(roof).c_str());
}

}  // namespace xdna_bench
