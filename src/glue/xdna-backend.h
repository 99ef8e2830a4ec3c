// The XDNA ggml backend (stream) and what tools and tests may ask of it.
#pragma once

#include "glue/xdna-device-context.h"

#include <cstdint>

namespace xdna {

ggml_backend_t make_backend(XdnaDeviceContext & ctx, ggml_backend_dev_t dev);
bool           is_xdna_backend(ggml_backend_t backend);

// Number of submission plans this backend has built (a repeated graph shape builds none).
uint64_t backend_plans_built(ggml_backend_t backend);

}  // namespace xdna
