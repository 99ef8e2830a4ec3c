// xdna-info: what a user runs first. Says whether an NPU is usable and, if not, why; which XRT this
// build uses; which kernels are installed and which weight types they put on the NPU; and whether the
// simulator works; and every GGML_XDNA_* option with its current value. Exit status 0 when the NPU is
// usable, 1 otherwise (the report is printed either way).
//
// Usage: xdna-info [--sysfs-root DIR] [--dev-root DIR]   (the roots exist for testing discovery)
//        xdna-info --list-types     the weight types the contracts cover, one per line (for scripts)
//        xdna-info --list-options   the GGML_XDNA_* options, one per line (for scripts)
#include "contracts/matmul-contract.h"
#include "devices/open-device.h"
#include "runtime/device.h"
#include "runtime/installed-kernels.h"
#include "runtime/kernel-manifest.h"
#include "runtime/npu-discovery.h"
#include "runtime/options.h"

#include "ggml-cpu.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace xdna;

namespace {

std::string tile_string(const TileShape & t) {
    return std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k);
}

// Which token-tile widths of each contract have a kernel on `gen`.
void print_coverage(const Manifest & m, NpuGeneration gen) {
    std::printf("  weight types on the NPU (%s):\n", to_string(gen));
    int covered = 0;
    for (const auto & c : all_matmul_contracts()) {
        std::vector<int> have;
        for (int n : c.tile_n) {
            if (find_kernel(m, "matmul", c.name, c.tile(n), gen) != nullptr) {
                have.push_back(n);
            }
        }
        if (have.empty()) {
            continue;
        }
        ++covered;
        std::string widths;
        for (int n : have) {
            widths += (widths.empty() ? "" : ", ") + std::to_string(n);
        }
        // Any installed width serves every batch size (an invocation loops over token tiles); a missing
        // width only costs padding (decode on a 32-wide tile) or more tiles (prefill on a 4-wide one).
        std::string gaps;
        for (int w : c.tile_n) {
            if (find_kernel(m, "matmul", c.name, c.tile(w), gen) == nullptr) {
                gaps += std::string(gaps.empty() ? "; no " : ", no ") + std::to_string(w) + "-token kernel";
            }
        }
        if (!gaps.empty()) {
            gaps += " (every batch size still runs on the NPU, less efficiently)";
        }
        std::printf("    %-5s (%s, activations %s): token tiles %s%s\n", ggml_type_name(c.weight_type), c.name,
                    act_format_name(c.act_format), widths.c_str(), gaps.c_str());
    }
    if (covered == 0) {
        std::printf("    none: every matmul stays on the CPU\n");
    }
    std::string rest;
    for (const auto & c : all_matmul_contracts()) {
        bool any = false;
        for (int n : c.tile_n) {
            any = any || find_kernel(m, "matmul", c.name, c.tile(n), gen) != nullptr;
        }
        if (!any) {
            rest += (rest.empty() ? "" : ", ") + std::string(ggml_type_name(c.weight_type));
        }
    }
    if (!rest.empty() && covered > 0) {
        std::printf("    on the CPU (no kernel): %s\n", rest.c_str());
    }
}

void print_kernels(const NpuInfo & npu) {
    std::printf("Kernels\n");
    const ManifestLocation loc = locate_kernel_manifest();
    std::printf("  manifest: %s (%s)\n", loc.path.c_str(),
                loc.from_env ? "from GGML_XDNA_KERNELS" : "default location; GGML_XDNA_KERNELS overrides it");
    Manifest    m;
    std::string err;
    FILE *      probe = std::fopen(loc.path.c_str(), "rb");
    if (probe == nullptr) {
        std::printf("  not found: no kernels installed, so an NPU would run nothing (every matmul stays on the CPU)\n");
        return;
    }
    std::fclose(probe);
    if (!load_manifest(loc.path, m, err)) {
        std::printf("  invalid: %s\n", err.c_str());
        return;
    }
    std::printf("  %d design xclbin%s serving %zu usable kernel%s (contract x tile), %zu entr%s ignored\n", m.designs,
                m.designs == 1 ? "" : "s", m.kernels.size(), m.kernels.size() == 1 ? "" : "s", m.entry_errors.size(),
                m.entry_errors.size() == 1 ? "y" : "ies");
    for (const auto & k : m.kernels) {
        std::string gens;
        for (NpuGeneration g : k.npu) {
            gens += (gens.empty() ? "" : ",") + std::string(to_string(g));
        }
        if (k.contract == nullptr) {  // a rows design's program (aie/add, aie/glu)
            std::printf("    %-14s %-13s chunk %-6d %-9s %s : %s\n", k.variant.c_str(), k.design.c_str(), k.tile.n, gens.c_str(),
                        k.xclbin.c_str(), k.kernel_name.c_str());
            continue;
        }
        std::printf("    %-14s %-5s x %-5s tile %-10s %-9s %s : %s\n", k.contract->name,
                    ggml_type_name(k.contract->weight_type), act_format_name(k.contract->act_format),
                    tile_string(k.tile).c_str(), gens.c_str(), k.xclbin.c_str(), k.kernel_name.c_str());
    }
    for (const auto & e : m.entry_errors) {
        std::printf("  ignored: %s\n", e.c_str());
    }
    // Coverage for the NPU that is here, else for every generation the manifest mentions.
    std::set<NpuGeneration> gens;
    if (npu.generation != NpuGeneration::unknown) {
        gens.insert(npu.generation);
    } else {
        for (const auto & k : m.kernels) {
            gens.insert(k.npu.begin(), k.npu.end());
        }
    }
    for (NpuGeneration g : gens) {
        print_coverage(m, g);
    }
}

// Every option, its current value, and what is wrong with it.
void print_options() {
    std::printf("Options (environment)\n");
    for (const auto & o : all_options()) {
        const char * v = option_text(o.name);
        std::printf("  %-30s %s\n", o.name.c_str(), v != nullptr ? v : ("unset: " + o.fallback).c_str());
    }
    // The same checks the backend makes when it reads them.
    for (const auto & o : all_options()) {
        const std::string e = option_error(o.name);
        if (!e.empty()) {
            std::printf("  invalid: %s\n", e.c_str());
        }
    }
    std::printf("  (xdna-info --list-options, README.md: what each one means)\n");
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc == 2 && std::strcmp(argv[1], "--list-types") == 0) {
        for (const auto & c : all_matmul_contracts()) {
            std::printf("%s\n", ggml_type_name(c.weight_type));
        }
        return 0;
    }
    if (argc == 2 && std::strcmp(argv[1], "--list-options") == 0) {
        for (const auto & o : all_options()) {
            std::printf("%s\t%s\t%s\t%s\n", o.name.c_str(), o.accepted.c_str(), o.fallback.c_str(), o.meaning.c_str());
        }
        return 0;
    }

    // Devices find ggml-cpu's kernels in the process; calling into it also keeps the linker from dropping it.
    ggml_cpu_init();

    DiscoveryRoots roots;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--sysfs-root") == 0 && i + 1 < argc) {
            roots.sys = argv[++i];
        } else if (std::strcmp(argv[i], "--dev-root") == 0 && i + 1 < argc) {
            roots.dev = argv[++i];
        } else {
            std::fprintf(stderr, "usage: %s [--sysfs-root DIR] [--dev-root DIR] | --list-types | --list-options\n",
                         argv[0]);
            return 2;
        }
    }

    std::printf("NPU\n");
    const NpuInfo npu = discover_npu(roots);
    if (npu.present) {
        std::printf("  found: %s\n", describe_npu(npu).c_str());
        if (npu.generation == NpuGeneration::unknown) {
            std::printf("  not supported: no kernel of this backend targets this NPU generation\n");
        }
    } else {
        std::printf("  not usable: %s\n", npu.reason.c_str());
    }

    std::printf("XRT\n");
    const XrtSupport xrt = xrt_support();
    if (xrt.built) {
        std::printf("  built with XRT; library version %s\n", xrt.runtime_version.c_str());
    } else {
        std::printf("  %s; docs/xrt.md says how to build with it\n", xrt.missing_reason.c_str());
    }

    print_kernels(npu);

    std::printf("Simulator\n");
    std::string why;
    if (auto sim = open_device(DeviceKind::sim, why)) {
        std::printf("  available: %s (GGML_XDNA_DEVICE=sim), every contract:", sim->info().description.c_str());
        for (const auto & c : all_matmul_contracts()) {
            std::printf(" %s", ggml_type_name(c.weight_type));
        }
        std::printf("\n");
    } else {
        std::printf("  not available: %s\n", why.c_str());
    }

    std::printf("GGML_XDNA_DEVICE=auto\n");
    bool usable = false;
    if (roots.sys != "/sys" || roots.dev != "/dev") {
        std::printf("  not checked with a test sysfs/dev root\n");
    } else if (auto dev = open_device(DeviceKind::xrt, why)) {
        usable = true;
        std::printf("  uses the NPU: %s\n", dev->info().description.c_str());
    } else {
        std::printf("  registers no device: %s\n", why.c_str());
    }

    print_options();
    return usable ? 0 : 1;
}
