#include "stream-bench.h"

#include "plan/matmul-plan.h"
#include "runtime/matmul-sequence.h"
#include "sim/timing-model.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace xdna_bench {

bool run_stream_bench(std::FILE * out, const ModelDims & d, const std::string & ftype, int reps) {
    const xdna::DesignRead & design = xdna::matmul_design();
    if (!design.ok()) {
        std::fprintf(out, "design description: %s\n", design.error.c_str());
        return false;
    }
    ggml_type uniform;
    bool q4_k_m;
    if (!parse_ftype(ftype, uniform, q4_k_m)) {
        std::fprintf(out, "unknown ftype %s\n", ftype.c_str());
        return false;
    }
    // Distinct (m, k, type) over the layers and the output head.
    std::set<std::tuple<int64_t, int64_t, int, std::string>> shapes;
    const std::vector<LayerMatmul> mms = layer_matmuls(d);
    for (int layer = 0; layer < d.n_layer; ++layer) {
        for (size_t i = 0; i < mms.size(); ++i) {
            shapes.insert({mms[i].m, mms[i].k, matmul_type(d, layer, static_cast<int>(i), uniform, q4_k_m), mms[i].name});
        }
    }
    shapes.insert({d.vocab, d.n_embd, output_type(d, uniform, q4_k_m), "output"});

    std::fprintf(out, "## %s, %s: instruction streams built on the host\n\n", d.name.c_str(), ftype.c_str());
    std::fprintf(out, "| matmul | type | M | K | tokens | TN | family | layout (the timing model's choice) | words | steps | "
                      "build us (median of %d) |\n", reps);
    std::fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|\n");
    const xdna::TimingModel model(*xdna::find_npu_preset("krackan"));
    std::set<std::string> xclbins;
    bool ok = true;
    for (const auto & [m, k, type, name] : shapes) {
        for (int64_t tokens : {int64_t(1), int64_t(512)}) {
            xdna::MatmulInvocation inv;
            if (!xdna::invocation_geometry(static_cast<ggml_type>(type), m, k, tokens, inv)) {
                std::fprintf(out, "| %s | %s | %lld | %lld | %lld | - | no contract | | | | |\n", name.c_str(),
                             ggml_type_name(static_cast<ggml_type>(type)), (long long) m, (long long) k, (long long) tokens);
                continue;
            }
            xdna::MatmulSequenceShape shape = xdna::sequence_shape_of(inv, inv.out_row_stride);
            shape.layout = model.invocation(xdna::shape_of(inv)).layout;  // the layout (xclbin) the simulator runs
            std::vector<double> us;
            xdna::MatmulSequence seq;
            for (int r = 0; r < reps; ++r) {
                const auto t0 = std::chrono::steady_clock::now();
                seq = xdna::build_matmul_sequence(design.design, shape);
                us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
            }
            std::sort(us.begin(), us.end());
            if (!seq.ok()) {
                std::fprintf(out, "| %s | %s | %lld | %lld | %lld | %d | refused: %s | | | | |\n", name.c_str(),
                             ggml_type_name(static_cast<ggml_type>(type)), (long long) m, (long long) k, (long long) tokens,
                             inv.tile.n, seq.error.c_str());
                ok = false;
                continue;
            }
            xclbins.insert(seq.family + "/n" + std::to_string(inv.tile.n) + "/" + seq.layout);
            std::fprintf(out, "| %s | %s | %lld | %lld | %lld | %d | %s | %s | %zu | %lld | %.1f |\n", name.c_str(),
                         ggml_type_name(static_cast<ggml_type>(type)), (long long) m, (long long) k, (long long) tokens,
                         inv.tile.n, seq.family.c_str(), seq.layout.c_str(), seq.words.size(), (long long) seq.steps,
                         us[us.size() / 2]);
        }
    }
    std::fprintf(out, "\nxclbins (family x token tile x layout) this model needs: %zu:", xclbins.size());
    for (const auto & x : xclbins) {
        std::fprintf(out, " %s", x.c_str());
    }
    std::fprintf(out, "\n");
    return ok;
}

}  // namespace xdna_bench
