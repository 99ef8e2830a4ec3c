// The XDNA ggml backend (stream) and what tools and tests may ask of it.
#pragma once

#include "glue/xdna-device-context.h"

#include <cstdint>

namespace xdna {

ggml_backend_t make_backend(XdnaDeviceContext & ctx, ggml_backend_dev_t dev);
bool           is_xdna_backend(ggml_backend_t backend);

// Number of submission plans this backend has built (a repeated graph shape builds none).
uint64_t backend_plans_built(ggml_backend_t backend);
// Number of graph plans (a graph's host runs and submissions) it has built: one per distinct graph.
uint64_t backend_graph_plans_built(ggml_backend_t backend);
// Number of submissions this backend computed on the host because the device run failed.
uint64_t backend_fallback_runs(ggml_backend_t backend);
// Number of plans in this backend's cache now.
size_t   backend_plans_cached(ggml_backend_t backend);

}  // namespace xdna
