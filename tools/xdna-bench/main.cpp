// xdna-bench: matmul shape sweeps (simulator vs CPU, measured; NPU time, modelled) and the timing
// model's reports for docs/performance-model.md.
//
//   xdna-bench sweep [options]       CSV: one row per (model, matmul, weight type, batch size)
//   xdna-bench presets               markdown: the timing model's parameters and their sources
//   xdna-bench calibration           markdown: published points, fitted and held out, vs the model
//   xdna-bench e2e [options]         markdown: modelled tokens/s of a model's weight matmuls
//   xdna-bench stream [options]      markdown: host-built instruction streams per matmul shape (build us,
//                                    words) and the xclbins the model needs [--models 8b --ftype q4_K_M]
//   xdna-bench overhead [options]    markdown: MEASURED host overhead per matmul, batched vs not
//   xdna-bench traffic [options]     markdown: the DRAM bytes the design moves per matmul shape (both token
//                                    tiles, decode and --pp) and what the model charges [--models 8b]
//   xdna-bench speculative [options] markdown: modelled decode with a draft model (speculative decoding):
//                                    --models TARGET,DRAFT [8b,1b], --ftype, --preset
//   xdna-bench order [options]       text: the programs of a decoded token's invocations as the e2e model
//                                    orders them, one per line, "--" between submissions: the words of
//                                    the backend's GGML_XDNA_TRACE (tests/e2e/model-order.sh compares
//                                    them) [--npu-ops layer --kv f16 --context 1024]
//
// Options:
//   --models 1b,8b           built-in families (1b, 3b, 8b, qwen3-8b, qwen3-30b-a3b) [sweep: 1b,8b; e2e: 8b]
//   --model FILE.gguf        dimensions (and, for e2e, tensor types) from a GGUF's metadata
//   --batches 1,2,4,...      batch sizes (tokens)                            [1,2,4,...,512]
//   --types q4_K,q6_K,...    weight types                                    [q4_K,q6_K,q8_0,q4_0,f16]
//   --matmuls q,k,o,...      which matmuls (q k v o gate up down output)     [q,k,o,gate,down,output]
//   --ftype q4_K_M           e2e weight types (q4_K_M or a ggml type)        [q4_K_M]
//   --preset krackan         timing-model preset (strix, krackan, halo)      [krackan]
//   --pp 512                 e2e prefill ubatch                              [512]
//   --summary                e2e: one table row per model, every preset
//   --csv FILE               sweep output                                    [stdout]
//   --max-measure-gmac X     sweep: measure only shapes up to X G MAC        [4]
//   --reps N                 sweep: timed runs per measurement               [3]
//   --no-measure             sweep: modelled columns only
//   --xdna-lib PATH          libggml-xdna.so to load                         [the one built with this tool]
//   --npu-ops glue|layer     order: GGML_XDNA_NPU_OPS's grouping             [layer]
//   --kv f16|q8_0            order: the KV cache's type                      [f16]
//   --context N              order: the KV rows attention reads              [1024]
#include "e2e-model.h"
#include "model-dims.h"
#include "stream-bench.h"

#include <algorithm>
#include "overhead.h"
#include "reports.h"
#include "speculative.h"
#include "sweep.h"
#include "traffic-report.h"

#include "runtime/options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <unistd.h>
#include <string>
#include <vector>

#ifndef XDNA_BENCH_DEFAULT_LIB
#define XDNA_BENCH_DEFAULT_LIB "libggml-xdna.so"
#endif

namespace {

using namespace xdna_bench;

std::vector<std::string> split(const std::string & s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

int usage() {
    std::fprintf(stderr, "usage: xdna-bench sweep|presets|calibration|feasibility|e2e|overhead|stream|traffic|speculative|order [options]; see the header of main.cpp\n");
    return 2;
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc < 2) {
        return usage();
    }
    const std::string mode = argv[1];
    SweepOptions sweep;
    sweep.xdna_lib = XDNA_BENCH_DEFAULT_LIB;
    std::vector<std::string> model_names;
    std::string gguf, ftype = "q4_K_M";
    int64_t pp = 512;
    bool summary = false;
    std::string npu_ops = "layer", kv = "f16";
    int64_t context = 1024;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "xdna-bench: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--models") {
            model_names = split(value());
        } else if (a == "--model") {
            gguf = value();
        } else if (a == "--batches") {
            sweep.batches.clear();
            for (const auto & b : split(value())) {
                sweep.batches.push_back(std::atoll(b.c_str()));
            }
        } else if (a == "--types") {
            sweep.types.clear();
            for (const auto & t : split(value())) {
                const ggml_type ty = type_from_name(t);
                if (ty == GGML_TYPE_COUNT) {
                    std::fprintf(stderr, "xdna-bench: unknown type %s\n", t.c_str());
                    return 2;
                }
                sweep.types.push_back(ty);
            }
        } else if (a == "--matmuls") {
            sweep.matmuls = split(value());
        } else if (a == "--ftype") {
            ftype = value();
        } else if (a == "--preset") {
            sweep.preset = value();
        } else if (a == "--pp") {
            pp = std::atoll(value().c_str());
        } else if (a == "--csv") {
            sweep.csv_path = value();
        } else if (a == "--max-measure-gmac") {
            sweep.max_measure_gmac = std::atof(value().c_str());
        } else if (a == "--reps") {
            sweep.reps = std::atoi(value().c_str());
        } else if (a == "--summary") {
            summary = true;
        } else if (a == "--no-measure") {
            sweep.measure = false;
        } else if (a == "--xdna-lib") {
            sweep.xdna_lib = value();
        } else if (a == "--npu-ops") {
            npu_ops = value();
        } else if (a == "--kv") {
            kv = value();
        } else if (a == "--context") {
            context = std::atoll(value().c_str());
        } else {
            std::fprintf(stderr, "xdna-bench: unknown option %s\n", a.c_str());
            return usage();
        }
    }

    std::vector<ModelDims> models;
    if (!gguf.empty()) {
        ModelDims d;
        std::string error;
        if (!read_gguf_dims(gguf, d, error)) {
            std::fprintf(stderr, "xdna-bench: %s\n", error.c_str());
            return 1;
        }
        models.push_back(d);
    }
    if (model_names.empty() && models.empty()) {
        model_names = mode == "sweep"         ? std::vector<std::string>{"1b", "8b"}
                    : mode == "speculative" ? std::vector<std::string>{"8b", "1b"}
                                            : std::vector<std::string>{"8b"};
        if (mode == "overhead") {
            model_names = {"1b"};
        }
    }
    for (const auto & n : model_names) {
        const ModelDims * d = find_builtin_model(n);
        if (d == nullptr) {
            std::fprintf(stderr, "xdna-bench: unknown model family %s (1b, 3b, 8b, qwen3-8b)\n", n.c_str());
            return 2;
        }
        models.push_back(*d);
    }

    if (mode == "sweep") {
        if (sweep.measure && std::getenv("OMP_WAIT_POLICY") == nullptr) {
            // The CPU backend's OpenMP workers spin between graphs by default; on a host whose cores the
            // measured backends already fill, the spinning starves the simulator's (and the CPU's own)
            // threads and times become scheduler noise. libgomp reads this at load, hence the re-exec.
            setenv("OMP_WAIT_POLICY", "passive", 1);
            execv("/proc/self/exe", argv);
        }
        if (sweep.measure && xdna::option_text("GGML_XDNA_DEVICE") == nullptr) {
            setenv("GGML_XDNA_DEVICE", "sim", 1);  // before the backend is loaded: it reads this once
        }
        sweep.models = models;
        return run_sweep(sweep);
    }
    if (mode == "overhead") {
        if (xdna::option_text("GGML_XDNA_DEVICE") == nullptr) {
            setenv("GGML_XDNA_DEVICE", "sim", 1);
        }
        std::string error;
        for (const auto & d : models) {
            if (!run_overhead(stdout, d, sweep.xdna_lib, 200, error)) {
                std::fprintf(stderr, "xdna-bench: %s\n", error.c_str());
                return 1;
            }
        }
        return 0;
    }
    if (mode == "stream") {
        bool ok = true;
        for (const auto & d : models) {
            ok = run_stream_bench(stdout, d, ftype, std::max(sweep.reps, 101)) && ok;
        }
        return ok ? 0 : 1;
    }
    if (mode == "traffic") {
        return print_traffic(stdout, models, ftype, sweep.preset, pp) ? 0 : 1;
    }
    if (mode == "speculative") {
        if (models.size() != 2) {
            std::fprintf(stderr, "xdna-bench: speculative needs a target and a draft model (--models 8b,1b)\n");
            return 2;
        }
        print_speculative(stdout, models[0], models[1], ftype, sweep.preset);
        return 0;
    }
    if (mode == "presets") {
        print_presets(stdout);
        return 0;
    }
    if (mode == "calibration") {
        print_calibration(stdout);
        return 0;
    }
    if (mode == "feasibility") {
        print_feasibility(stdout);
        return 0;
    }
    if (mode == "order") {
        ggml_type uniform;
        bool q4_k_m;
        if (!parse_ftype(ftype, uniform, q4_k_m) || (npu_ops != "glue" && npu_ops != "layer") || (kv != "f16" && kv != "q8_0") ||
            context < 1 || models.size() != 1) {
            std::fprintf(stderr, "xdna-bench: order takes one model, --npu-ops glue|layer, --kv f16|q8_0, --context >= 1\n");
            return 2;
        }
        const xdna::NpuPreset * preset = xdna::find_npu_preset(sweep.preset);
        if (preset == nullptr) {
            std::fprintf(stderr, "xdna-bench: unknown preset %s\n", sweep.preset.c_str());
            return 2;
        }
        const PhaseModel tg = model_phase(models[0], ftype, xdna::TimingModel(*preset), 1,
                                          npu_ops == "glue" ? Grouping::glue_on_npu : Grouping::layer_on_npu, false, 1, context,
                                          kv == "q8_0");
        for (size_t s = 0; s < tg.programs.size(); ++s) {
            if (s > 0) std::printf("--\n");
            for (const auto & p : tg.programs[s]) std::printf("%s\n", p.c_str());
        }
        return 0;
    }
    if (mode == "e2e") {
        ggml_type uniform;
        bool q4_k_m;
        if (!parse_ftype(ftype, uniform, q4_k_m)) {
            std::fprintf(stderr, "xdna-bench: unknown --ftype %s\n", ftype.c_str());
            return 2;
        }
        if (summary) {
            for (size_t i = 0; i < models.size(); ++i) {
                print_e2e_summary(stdout, models[i], ftype, pp, i == 0);
            }
            std::printf("\n");
            print_fastflowlm_comparison(stdout, models, ftype, pp);
            return 0;
        }
        for (size_t i = 0; i < models.size(); ++i) {
            if (summary) {
                print_e2e_summary(stdout, models[i], ftype, pp, i == 0);
            } else {
                print_e2e(stdout, models[i], ftype, sweep.preset, pp);
            }
        }
        return 0;
    }
    return usage();
}
