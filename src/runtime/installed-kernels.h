// Finding and loading the installed kernels: the manifest a device uses.
//
// The kernels directory is GGML_XDNA_KERNELS when set (a directory holding manifest.json, or a manifest
// file itself), else the directory "ggml-xdna-kernels" next to the module this code is linked into
// (libggml-xdna.so for the backend, the executable for tools).
#pragma once

#include "runtime/kernel-manifest.h"

#include <string>

namespace xdna {

constexpr const char * kKernelsEnv = "GGML_XDNA_KERNELS";
constexpr const char * kKernelsDirName = "ggml-xdna-kernels";
constexpr const char * kManifestFileName = "manifest.json";

struct ManifestLocation {
    std::string path;        // the manifest file to read
    bool        from_env = false;
};

ManifestLocation locate_kernel_manifest();

// Load the manifest at `loc` and keep the entries that run on `gen`. Dropped entries are logged, one line
// each. False with `why` set when there is no manifest, it is invalid, or nothing in it runs on `gen`.
bool load_installed_kernels(const ManifestLocation & loc, NpuGeneration gen, Manifest & out, std::string & why);

}  // namespace xdna
