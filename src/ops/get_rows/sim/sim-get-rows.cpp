#include "ops/get_rows/sim-get-rows.h"

#include "ops/get_rows/get-rows-invocation.h"

#include <algorithm>
#include <cstring>

namespace xdna {

bool get_rows_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::get_rows && key.design != nullptr && std::strcmp(key.design, kGetRowsDesign) == 0 &&
           key.variant != nullptr && std::strcmp(key.variant, kGetRowsVariant) == 0;
}

ModelShape get_rows_model_shape(const Invocation & inv) {
    const GetRowsInvocation g = get_rows_of(inv);
    ModelShape s;
    s.kind = KernelKind::get_rows;
    s.weight_type = GGML_TYPE_COUNT;
    s.n_core_calls = 0;  // no core program: the DMAs move the rows
    s.kind_cores = 0;
    s.kind_columns = static_cast<int>(std::min<int64_t>(8, std::max<int64_t>(1, g.p.n_ids)));
    const double row = static_cast<double>(g.p.cols) * sizeof(float);
    s.activation_bytes = row * static_cast<double>(g.p.n_ids) + static_cast<double>(g.p.n_ids) * sizeof(int32_t);
    s.out_bytes = row * static_cast<double>(g.p.n_ids);
    return s;
}

Status sim_run_get_rows(const std::vector<Invocation> & invs, ThreadPool &) {
    std::vector<GetRowsInvocation> views;
    for (const Invocation & i : invs) {
        if (!get_rows_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's get_rows engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const GetRowsInvocation g = get_rows_of(i);
        const auto * ids = static_cast<const int32_t *>(g.ids.host());
        for (int64_t r = 0; r < g.p.n_ids; ++r) {
            if (ids[r] < 0 || ids[r] >= g.p.src_rows) {
                return Status::error("get_rows: id " + std::to_string(ids[r]) + " outside the " + std::to_string(g.p.src_rows) +
                                     " rows of its source");
            }
        }
        views.push_back(g);
    }
    // memmove: a gather into the rows it reads from (in place) is what the DMA's memory-tile relay does
    // row by row as well, each row read whole before it is written.
    for (const GetRowsInvocation & g : views) {
        const auto * ids = static_cast<const int32_t *>(g.ids.host());
        const auto * src = static_cast<const float *>(g.src.host());
        auto * y = static_cast<float *>(g.y.host());
        for (int64_t r = 0; r < g.p.n_ids; ++r) {
            std::memmove(y + r * g.p.y_row_stride, src + ids[r] * g.p.src_row_stride, static_cast<size_t>(g.p.cols) * sizeof(float));
        }
    }
    return Status::success();
}

}  // namespace xdna
