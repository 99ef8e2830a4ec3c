#include "contracts/cpu-traits.h"

#include "ggml-backend.h"

#include <dlfcn.h>

namespace xdna {

namespace {

using get_traits_fn = const ggml_type_traits_cpu * (*) (ggml_type);
get_traits_fn g_get_traits = nullptr;

// The shared object that defines `address`, opened again (it is already loaded) so dlsym can see
// symbols a RTLD_LOCAL load hid from the global scope.
void * module_of(void * address) {
    Dl_info info{};
    if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
        return nullptr;
    }
    return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
}

}  // namespace

bool bind_cpu_traits(std::string & why) {
    if (g_get_traits != nullptr) {
        return true;
    }
    // Linked into the process (static ggml builds, tools and tests that link ggml-cpu) ...
    // (RTLD_DEFAULT is a null pointer: `found` says whether a handle was obtained.)
    void * handle = RTLD_DEFAULT;
    bool found = dlsym(handle, "ggml_get_type_traits_cpu") != nullptr;
    if (!found) {
        // ... or loaded as a backend module: locate it through one of its registry entry points.
        ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
        ggml_backend_reg_t reg = cpu ? ggml_backend_dev_backend_reg(cpu) : nullptr;
        handle = module_of(reg ? ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads") : nullptr);
        found = handle != nullptr;
    }
    auto get_traits = found ? reinterpret_cast<get_traits_fn>(dlsym(handle, "ggml_get_type_traits_cpu")) : nullptr;
    auto cpu_init = found ? reinterpret_cast<void (*)()>(dlsym(handle, "ggml_cpu_init")) : nullptr;
    if (get_traits == nullptr || cpu_init == nullptr) {
        why = "the ggml CPU backend is not loaded (load it before the XDNA backend)";
        return false;
    }
    cpu_init();  // fp16 tables the block dots use; idempotent
    g_get_traits = get_traits;
    return true;
}

const ggml_type_traits_cpu * cpu_traits(ggml_type type) {
    return g_get_traits ? g_get_traits(type) : nullptr;
}

}  // namespace xdna
