// Prints what the XDNA registry registered under the caller's GGML_XDNA_DEVICE; CTest runs it
// with several values and checks the output (the choice is read once per process).
#include "ggml-backend.h"
#include "ggml-xdna.h"

#include <cstdio>

int main(int argc, char ** argv) {
    // As in llama.cpp: the CPU backend is loaded first (its module path is the argument).
    if (argc > 1 && ggml_backend_load(argv[1]) == nullptr) {
        std::printf("cannot load %s\n", argv[1]);
        return 1;
    }
    ggml_backend_reg_t reg = ggml_backend_xdna_reg();
    const size_t n = ggml_backend_reg_dev_count(reg);
    std::printf("devices: %zu\n", n);
    for (size_t i = 0; i < n; ++i) {
        ggml_backend_dev_t d = ggml_backend_reg_dev_get(reg, i);
        std::printf("device: %s: %s\n", ggml_backend_dev_name(d), ggml_backend_dev_description(d));
    }
    return 0;
}
