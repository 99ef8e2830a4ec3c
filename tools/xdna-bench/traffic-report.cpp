#include "traffic-report.h"

#include "e2e-model.h"
#include "invocation-shape.h"
#include "sim/design-traffic.h"
#include "sim/timing-model.h"

#include <set>
#include <tuple>

namespace xdna_bench {

namespace {

struct Row {
    std::string model, matmul;
    ggml_type   type;
    int64_t     m, k, tokens;
};

}  // namespace

bool print_traffic(FILE * out, const std::vector<ModelDims> & models, const std::string & ftype, const std::string & preset,
                   int64_t pp_tokens) {
    ggml_type uniform;
    bool q4_k_m;
    const xdna::NpuPreset * p = xdna::find_npu_preset(preset);
    if (!parse_ftype(ftype, uniform, q4_k_m) || p == nullptr) {
        std::fprintf(out, "unknown ftype %s or preset %s\n", ftype.c_str(), preset.c_str());
        return false;
    }
    const xdna::TimingModel model(*p);
    const xdna::DesignRead & dr = xdna::matmul_design();
    if (!dr.ok()) {
        std::fprintf(out, "design description: %s\n", dr.error.c_str());
        return false;
    }
    const xdna::DesignDescription & design = dr.design;
    // The model's time of `s` had it run in layout `name` (the model itself times only the fastest).
    auto model_in = [&](const xdna::ModelShape & s, const std::string & name) {
        xdna::ModelShape only = s;
        only.layout = name.c_str();
        return model.invocation(only);
    };
    std::vector<Row> rows;
    for (const ModelDims & d : models) {
        std::set<std::tuple<std::string, int64_t, int64_t, int>> seen;
        const std::vector<LayerMatmul> mms = layer_matmuls(d);
        auto add = [&](const std::string & name, int64_t m, int64_t k, ggml_type t, bool experts) {
            if (!seen.insert({name, m, k, static_cast<int>(t)}).second) {
                return;
            }
            // Decode: one token (one row per selected expert); prefill: the ubatch (an expert's share of it).
            const int64_t prefill = experts ? expert_load(d, pp_tokens).rows : pp_tokens;
            for (int64_t tokens : {int64_t(1), prefill}) {
                rows.push_back({d.name, name, t, m, k, tokens});
            }
        };
        for (int layer = 0; layer < d.n_layer; ++layer) {
            for (size_t i = 0; i < mms.size(); ++i) {
                add(mms[i].name, mms[i].m, mms[i].k, matmul_type(d, layer, static_cast<int>(i), uniform, q4_k_m), mms[i].experts);
            }
        }
        add("output", d.vocab, d.n_embd, output_type(d, uniform, q4_k_m), false);
    }

    std::fprintf(out, "DRAM traffic per invocation as the design moves it and the timing model charges it (MODELLED, %s, "
                      "%s; bytes of the BDs the host-built instruction stream queues):\n\n",
                 p->name.c_str(), ftype.c_str());
    std::fprintf(out, "| model | matmul | contract | M x K | tokens | TN | layout | tiles m/n/k | W read MB | W re-read | W over-fetch | "
                      "A read MB | C written MB | charged MB | modelled us |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::string lines;
    bool ok = true;
    for (const Row & r : rows) {
        bool shaped = false;
        const xdna::MatmulInvocation inv = invocation_shape(r.type, r.m, r.k, r.tokens, shaped);
        if (!shaped) {
            continue;  // no NPU contract: that matmul stays on the CPU
        }
        for (int tn : inv.contract->tile_n) {
            xdna::ModelShape s = xdna::shape_of(inv);
            s.tile.n = tn;
            s.n_tiles = (r.tokens + tn - 1) / tn;
            const xdna::ModelledTime chosen = model.invocation(s);
            bool any = false;
            for (const xdna::LayoutDesc & L : design.layouts) {
                const auto fig = xdna::design_figures(s, 0, L.name);
                if (!fig->ok()) {
                    continue;  // e.g. n_split needs whole groups of 4 token tiles
                }
                any = true;
                const bool picked = L.name == chosen.layout;
                const xdna::ModelledTime t = picked ? chosen : model_in(s, L.name);
                const auto & tr = fig->traffic;
                std::fprintf(out, "| %s | %s | %s | %lldx%lld | %lld | %d | %s%s | %lld/%lld/%lld | %.1f | %.0f | %.1f %% | %.1f | %.1f | %.1f | %.1f |\n",
                             r.model.c_str(), r.matmul.c_str(), inv.contract->name, (long long) r.m, (long long) r.k,
                             (long long) r.tokens, tn, L.name.c_str(), picked ? " (model's choice)" : "", (long long) s.m_tiles,
                             (long long) s.n_tiles, (long long) s.k_tiles, tr.w_read / 1e6, fig->w_reads(),
                             fig->w_overfetch_pct(), tr.a_read / 1e6, tr.c_written / 1e6, t.dram_bytes / 1e6, t.total_us);
                char buf[512];
                std::snprintf(buf, sizeof buf, "traffic %s %s %s %s %d %d %lld %lld %lld %lld %llu %llu %llu %llu %llu %.0f %.0f\n",
                              r.model.c_str(), r.matmul.c_str(), inv.contract->name, L.name.c_str(), picked ? 1 : 0, tn,
                              (long long) fig->m_rows, (long long) s.n_tiles, (long long) s.k_tiles, (long long) r.tokens,
                              (unsigned long long) tr.w_read, (unsigned long long) fig->w_useful(), (unsigned long long) tr.a_read,
                              (unsigned long long) tr.c_written, (unsigned long long) tr.busiest_channel(), t.dram_bytes,
                              t.weight_dram_bytes);
                lines += buf;
            }
            if (!any) {
                std::fprintf(out, "| %s | %s | %s | %lldx%lld | %lld | %d | refused: %s |\n", r.model.c_str(), r.matmul.c_str(),
                             inv.contract->name, (long long) r.m, (long long) r.k, (long long) r.tokens, tn,
                             chosen.infeasible != nullptr ? chosen.infeasible : "?");
                ok = false;
            }
        }
    }
    std::fprintf(out, "\n<!-- design traffic, checked against design.py by tests/timing/check-traffic.sh:\n"
                      "traffic-format model matmul contract layout chosen tile_n m_tiles(whole row units) n_tiles k_tiles tokens "
                      "w_read w_abi a_read c_written busiest_channel charged_bytes charged_w_bytes\n%s-->\n",
                 lines.c_str());
    return ok;
}

}  // namespace xdna_bench
