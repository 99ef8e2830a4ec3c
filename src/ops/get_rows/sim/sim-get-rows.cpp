#include "ops/get_rows/sim-get-rows.h"

#include "ops/get_rows/get-rows-invocation.h"
#include "runtime/gather-sequence.h"
#include "sim/rows-stream.h"

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
    // The DMAs move the rows in and out; the ids are read by the host when it builds the stream.
    const double row = static_cast<double>(g.p.cols) * sizeof(float);
    s.activation_bytes = row * static_cast<double>(g.p.n_ids);
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
        if (i.key.tile.n == 0 || g.p.cols % i.key.tile.n != 0) {
            return Status::error("get_rows: a row of " + std::to_string(g.p.cols) + " values is not one the design takes");
        }
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

Status sim_run_get_rows_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    if (refused != nullptr) {
        *refused = false;
    }
    auto refuse = [&](size_t i, const std::string & why) {
        if (refused != nullptr) {
            *refused = true;
        }
        return Status::error("stream mode, invocation " + std::to_string(i) + " (get_rows): " + why);
    };
    const DesignRead & design = get_rows_design();
    if (!design.ok()) {
        return refuse(0, design.error);
    }
    std::vector<RowsJob> jobs;
    for (size_t i = 0; i < invs.size(); ++i) {
        if (!get_rows_has_kernel(invs[i].key)) {
            return refuse(i, std::string("the get_rows stream engine was handed a kernel of kind ") + kernel_kind_name(invs[i].kind()));
        }
        GatherShape shape;
        std::string err;
        if (!gather_shape_of(invs[i], design.design, shape, err)) {
            return refuse(i, err);
        }
        // Built once per set of ids: a decode's output row is the same every token.
        auto seq = cached_sequence(design.design, shape, build_gather_sequence);
        if (!seq->ok()) {
            return refuse(i, seq->error);
        }
        const Operand * src = invs[i].operand("src");
        const Operand * y = invs[i].operand("y");
        RowsJob job;
        job.seq = seq;
        for (const Operand * o : {src, y}) {
            if (!job.add_operand(*o, err)) {
                return refuse(i, err);
            }
        }
        // The DMAs relay a chunk at a time: y over src's own memory would read rows already written.
        if (operands_overlap(*src, *y)) {
            return refuse(i, "y overlaps the source rows it is gathered from");
        }
        jobs.push_back(std::move(job));
    }
    if (jobs.empty()) {
        return Status::success();
    }
    // No cores: the design's stream never starts a core program.
    const auto no_cores = [](const RowsSequence &) -> CoreRoleFactory {
        return [](const LayoutDesc &, int, int, std::string & why) -> std::unique_ptr<CoreRole> {
            why = "the gather design has no core program";
            return nullptr;
        };
    };
    return sim_run_rows_stream(design.design, jobs, no_cores, pool, contexts, "get_rows");
}

}  // namespace xdna
