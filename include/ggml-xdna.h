// ggml backend for AMD XDNA2 NPUs (and their simulator).
//
// Loaded by stock llama.cpp through GGML_BACKEND_PATH=/path/to/libggml-xdna.so.
// GGML_XDNA_DEVICE=auto|sim|xrt selects the device (auto: a real NPU if one is present).
#pragma once

#include "ggml-backend.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

GGML_BACKEND_API ggml_backend_reg_t ggml_backend_xdna_reg(void);

// Extensions, reached with ggml_backend_reg_get_proc_address(reg, name):
//   "ggml_backend_xdna_plans_built"      uint64_t (*)(ggml_backend_t): submission plans built so far
//   "ggml_backend_xdna_graph_plans_built" uint64_t (*)(ggml_backend_t): graph plans built so far (how a
//                                        graph splits into host runs and submissions; one per distinct graph)
//   "ggml_backend_xdna_fallback_runs"    uint64_t (*)(ggml_backend_t): submissions this backend computed
//                                        on the CPU because the device run failed
//   "ggml_backend_xdna_plans_cached"     size_t (*)(ggml_backend_t): plans in this backend's cache now
//   "ggml_backend_xdna_set_skip_kernels" bool (*)(ggml_backend_dev_t, bool): benchmark only; skips
//                                        kernel execution (outputs are garbage) to measure host overhead
//   "ggml_backend_xdna_set_fail_runs"    bool (*)(ggml_backend_dev_t, bool): tests only; every device run
//                                        fails, so the CPU fallback computes the matmuls
typedef uint64_t (*ggml_backend_xdna_plans_built_t)(ggml_backend_t backend);
typedef uint64_t (*ggml_backend_xdna_graph_plans_built_t)(ggml_backend_t backend);
typedef uint64_t (*ggml_backend_xdna_fallback_runs_t)(ggml_backend_t backend);
typedef size_t (*ggml_backend_xdna_plans_cached_t)(ggml_backend_t backend);
typedef bool (*ggml_backend_xdna_set_skip_kernels_t)(ggml_backend_dev_t dev, bool skip);
typedef bool (*ggml_backend_xdna_set_fail_runs_t)(ggml_backend_dev_t dev, bool fail);

#ifdef __cplusplus
}
#endif
