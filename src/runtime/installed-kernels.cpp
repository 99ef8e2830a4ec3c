#include "runtime/installed-kernels.h"

#include "runtime/options.h"
#include "runtime/runtime-log.h"

#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>

namespace xdna {

namespace {

// Directory of the shared object or executable this function is part of.
std::string module_dir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&module_dir), &info) == 0 || info.dli_fname == nullptr) {
        return ".";
    }
    // dli_fname is the path the module was loaded by, relative for a program started as ./prog.
    char *            real = ::realpath(info.dli_fname, nullptr);
    const std::string file = real ? real : info.dli_fname;
    std::free(real);
    const auto slash = file.rfind('/');
    return slash == std::string::npos ? "." : file.substr(0, slash);
}

bool is_directory(const std::string & path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string & path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

ManifestLocation locate_kernel_manifest() {
    ManifestLocation loc;
    const OptionValue<std::string> env = kernels_option();
    if (env.set) {
        loc.from_env = true;
        const std::string & p = env.value;
        loc.path = is_directory(p) ? p + "/" + kManifestFileName : p;
        return loc;
    }
    loc.path = module_dir() + "/" + kKernelsDirName + "/" + kManifestFileName;
    return loc;
}

bool load_installed_kernels(const ManifestLocation & loc, NpuGeneration gen, Manifest & out, std::string & why) {
    if (!exists(loc.path)) {
        why = "no kernel manifest at " + loc.path +
              (loc.from_env ? std::string(" (from ") + kKernelsEnv + ")"
                            : std::string("; set ") + kKernelsEnv + " to the directory of the compiled NPU kernels");
        return false;
    }
    Manifest all;
    std::string err;
    if (!load_manifest(loc.path, all, err)) {
        why = err;
        return false;
    }
    for (const auto & e : all.entry_errors) {
        runtime_log(LogLevel::warn, e);
    }
    out = all;
    out.kernels.clear();
    for (const auto & k : all.kernels) {
        if (k.runs_on(gen)) {
            out.kernels.push_back(k);
        } else {
            // Compiled for another array architecture: it would not load (or would misbehave) here.
            runtime_log(LogLevel::info, k.label() + " is compiled for other NPU generations, not " + to_string(gen) +
                                            ": dropped");
        }
    }
    if (out.kernels.empty()) {
        why = "kernel manifest " + loc.path + " has no usable kernel for " + to_string(gen) + " (" +
              std::to_string(all.kernels.size()) + " valid entries for other generations, " +
              std::to_string(all.entry_errors.size()) + " invalid)";
        return false;
    }
    return true;
}

}  // namespace xdna
