#include "sweep.h"

#include "invocation-shape.h"
#include "measure.h"
#include "sim/npu-presets.h"
#include "sim/timing-model.h"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace xdna_bench {

namespace {

struct Shape {
    std::string name;
    int64_t     m, k;
};

std::vector<Shape> shapes_of(const ModelDims & d, const std::vector<std::string> & wanted) {
    std::vector<Shape> out;
    for (const auto & mm : layer_matmuls(d)) {
        if (std::find(wanted.begin(), wanted.end(), mm.name) != wanted.end()) {
            out.push_back({mm.name, mm.m, mm.k});
        }
    }
    if (std::find(wanted.begin(), wanted.end(), "output") != wanted.end()) {
        out.push_back({"output", d.vocab, d.n_embd});
    }
    return out;
}

}  // namespace

int run_sweep(const SweepOptions & o) {
    const xdna::NpuPreset * preset = xdna::find_npu_preset(o.preset);
    if (preset == nullptr) {
        std::fprintf(stderr, "xdna-bench: unknown preset '%s' (strix, krackan, halo)\n", o.preset.c_str());
        return 1;
    }
    const xdna::TimingModel model(*preset);

    std::unique_ptr<Backends> backends;
    if (o.measure) {
        backends = std::make_unique<Backends>();
        std::string error;
        if (!backends->open(o.xdna_lib, error)) {
            std::fprintf(stderr, "xdna-bench: %s\n", error.c_str());
            return 1;
        }
    }

    FILE * out = o.csv_path.empty() ? stdout : std::fopen(o.csv_path.c_str(), "w");
    if (out == nullptr) {
        std::fprintf(stderr, "xdna-bench: cannot write %s\n", o.csv_path.c_str());
        return 1;
    }
    // measured_* columns are wall times on this host (the simulator is a functional model, not a
    // speed model); modelled_* columns come from the timing model for one MUL_MAT in its own submission.
    std::fprintf(out, "model,matmul,type,m,k,n,preset,threads,measured_sim_us,measured_cpu_us,measured_sim_over_cpu,"
                      "measured_host_prep_us,nmse_sim_vs_cpu,modelled_compute_us,modelled_dram_us,modelled_dispatch_us,"
                      "modelled_total_us,modelled_tops,modelled_gbs,modelled_dram_traffic_bytes,arith_intensity,"
                      "modelled_roofline_fraction,modelled_bound,family,family_peak_tops,efficiency,modelled_reachable_gbs\n");
    uint64_t seed = 1;
    for (const auto & d : o.models) {
        for (const auto & s : shapes_of(d, o.matmuls)) {
            for (ggml_type t : o.types) {
                bool weights_loaded = false;
                for (int64_t n : o.batches) {
                    bool ok = false;
                    const xdna::MatmulInvocation inv = invocation_shape(t, s.m, s.k, n, ok);
                    if (!ok) {
                        continue;
                    }
                    const xdna::ModelledBatch b = model.batch({xdna::shape_of(inv)});
                    const xdna::ModelledTime & it = b.invocations.front();
                    const double tops = 2.0 * it.useful_macs / b.total_us / 1e6;
                    const double gbs = it.unique_bytes / b.total_us / 1e3;
                    const double busy = std::max(it.compute_us, it.dram_us);
                    const char * bound = b.dispatch_us >= busy ? "dispatch" : it.compute_us >= it.dram_us ? "compute" : "dram";
                    const xdna::KernelFamily fam = xdna::family_of(t);

                    Measurement meas;
                    bool measured = false;
                    if (backends && static_cast<double>(inv.macs()) <= o.max_measure_gmac * 1e9) {
                        std::string error;
                        if (!weights_loaded) {
                            weights_loaded = backends->load_weights(t, s.m, s.k, seed++, error);
                        }
                        measured = weights_loaded && backends->measure(n, o.reps, seed++, meas, error);
                        if (!measured) {
                            std::fprintf(stderr, "xdna-bench: %s %s n=%lld: %s\n", s.name.c_str(), ggml_type_name(t),
                                         (long long) n, error.c_str());
                        }
                    }
                    char mbuf[256] = ",,,,";
                    if (measured) {
                        std::snprintf(mbuf, sizeof mbuf, "%.1f,%.1f,%.3f,%.1f,%.3g", meas.xdna_us, meas.cpu_us,
                                      meas.xdna_us / meas.cpu_us, meas.host_prep_us, meas.nmse);
                    }
                    std::fprintf(out, "%s,%s,%s,%lld,%lld,%lld,%s,%d,%s,%.2f,%.2f,%.2f,%.2f,%.3f,%.2f,%.0f,%.2f,%.4f,%s,%s,%.2f,%.4f,%.1f\n",
                                 d.name.c_str(), s.name.c_str(), ggml_type_name(t), (long long) s.m, (long long) s.k,
                                 (long long) n, preset->name.c_str(), backends ? backends->threads() : 0, mbuf,
                                 it.compute_us, it.dram_us, b.dispatch_us, b.total_us, tops, gbs, it.dram_bytes,
                                 it.arithmetic_intensity(), it.roofline_us / b.total_us, bound, xdna::family_name(fam),
                                 preset->peak_tops(fam), preset->efficiency(), it.bandwidth_gbs);
                    std::fflush(out);
                    if (measured) {
                        std::fprintf(stderr, "%s %-6s %-5s n=%-4lld sim %9.0f us  cpu %9.0f us  (measured)  npu %8.1f us (modelled)\n",
                                     d.name.c_str(), s.name.c_str(), ggml_type_name(t), (long long) n, meas.xdna_us,
                                     meas.cpu_us, b.total_us);
                    }
                }
            }
        }
    }
    if (out != stdout) {
        std::fclose(out);
    }
    return 0;
}

}  // namespace xdna_bench
