#include "invocation-shape.h"

#include "plan/matmul-plan.h"

namespace xdna_bench {

xdna::MatmulInvocation invocation_shape(ggml_type type, int64_t m, int64_t k, int64_t n, bool & ok) {
    xdna::MatmulInvocation inv;
    ok = xdna::invocation_geometry(type, m, k, n, inv);
    return inv;
}

}  // namespace xdna_bench
