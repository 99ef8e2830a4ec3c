// ggml backend for AMD XDNA2 NPUs (and their simulator).
//
// Loaded by stock llama.cpp through GGML_BACKEND_PATH=/path/to/libggml-xdna.so.
// GGML_XDNA_DEVICE=auto|sim|xrt selects the device (auto: a real NPU if one is present).
#pragma once

#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

GGML_BACKEND_API ggml_backend_reg_t ggml_backend_xdna_reg(void);

#ifdef __cplusplus
}
#endif
