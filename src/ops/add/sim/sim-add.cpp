#include "ops/add/sim-add.h"

#include "ops/add/add-invocation.h"
#include "sim/binary-rows.h"
#include "sim/rows-stream.h"
#include "xdna_aie/add_tiles.h"

#include <algorithm>
#include <cstring>
#include <mutex>

extern "C" void add_f32(const float * a, const float * b, float * y, int32_t n);  // aie/add/kernels/add.cc
extern "C" void mul_f32(const float * a, const float * b, float * y, int32_t n);  // aie/add/kernels/mul.cc

namespace xdna {

namespace {

static_assert(xdna_aie::kAddChunk == kBinaryChunk && xdna_aie::kAddLanes == kBinaryLanes, "the add design's chunks");
constexpr BinaryKernel kAdd{"add_f32", add_f32};
constexpr BinaryKernel kMul{"mul_f32", mul_f32};

const BinaryCallOps & calls(bool multiply) {
    static const BinaryCallOps add = measure_binary_calls(kAdd);
    static const BinaryCallOps mul = measure_binary_calls(kMul);
    return multiply ? mul : add;
}

}  // namespace

bool add_has_kernel(const KernelKey & key) {
    return key.kind == KernelKind::add && key.design != nullptr && std::strcmp(key.design, kAddDesign) == 0 &&
           key.variant != nullptr && (std::strcmp(key.variant, kAddVariant) == 0 || std::strcmp(key.variant, kMulVariant) == 0);
}

ModelShape add_model_shape(const Invocation & inv) {
    const AddInvocation r = add_of(inv);
    ModelShape s;
    s.kind = KernelKind::add;
    s.weight_type = GGML_TYPE_COUNT;
    const std::shared_ptr<const RowsSequence> seq = add_sequence_of(r.p);
    const double row = static_cast<double>(r.p.cols) * sizeof(float);
    if (seq->ok()) {
        s.kind_columns = seq->traffic.columns_used;
        s.kind_cores = seq->traffic.columns_used * add_design().design.core_rows;
        s.core_calls[0] = {calls(r.p.multiply).at(seq->tile), static_cast<double>(seq->traffic.calls_per_core)};
        s.n_core_calls = 1;
        s.activation_bytes = static_cast<double>(seq->traffic.read);
        s.out_bytes = static_cast<double>(seq->traffic.written);
        return s;
    }
    const int64_t cols = std::max<int64_t>(1, std::min<int64_t>(r.p.rows, 8));
    const int64_t rows_per_col = (r.p.rows + cols - 1) / cols;
    s.kind_columns = static_cast<int>(cols);
    s.kind_cores = static_cast<int>(cols * 4);
    s.core_calls[0] = {calls(r.p.multiply).at(kBinaryMinCall),
                       static_cast<double>(rows_per_col * ((r.p.cols + 2 * kBinaryMinCall - 1) / (2 * kBinaryMinCall)))};
    s.n_core_calls = 1;
    s.activation_bytes = row * static_cast<double>(r.p.rows) * 2;
    s.out_bytes = row * static_cast<double>(r.p.rows);
    return s;
}

Status sim_run_adds(const std::vector<Invocation> & invs, ThreadPool & pool) {
    std::vector<BinaryRows> rows[2];  // [0] add, [1] mul
    for (const Invocation & i : invs) {
        if (!add_has_kernel(i.key)) {
            return Status::error(std::string("the simulator's add engine was handed kernel ") +
                                 (i.kernel_name() ? i.kernel_name() : "?") + " of kind " + kernel_kind_name(i.kind()));
        }
        const AddInvocation a = add_of(i);
        if (a.p.cols <= 0 || a.p.cols % kBinaryLanes != 0) {
            return Status::error("add: row length " + std::to_string(a.p.cols) + " is not one the design takes");
        }
        // Calls of the design's tile, as its stream makes them (the kernel code's own chunking otherwise).
        const int tile = add_design().ok() ? rows_tile_for(add_design().design, add_design().design.families.front().first, a.p.cols) : 0;
        rows[a.p.multiply ? 1 : 0].push_back({static_cast<const float *>(a.a.host()), static_cast<const float *>(a.b.host()), static_cast<float *>(a.y.host()),
                        a.p.rows, a.p.cols, a.p.a_row_stride, a.p.b_row_stride, a.p.y_row_stride, tile});
    }
    const Status st = rows[0].empty() ? Status::success() : sim_run_binary_rows(kAdd, rows[0], pool);
    return !st.ok || rows[1].empty() ? st : sim_run_binary_rows(kMul, rows[1], pool);
}

std::shared_ptr<const RowsSequence> add_sequence_of(const AddParams & p) {
    if (!add_design().ok()) {
        auto none = std::make_shared<RowsSequence>();
        none->error = add_design().error;
        return none;
    }
    return cached_rows_sequence(add_design().design, add_rows_shape(p));
}

CoreRoleFactory add_core_roles(const DesignDescription & d, int tile, AddKernel add, AddKernel mul) {
    return binary_chunk_roles(d, tile, {add != nullptr ? add : add_f32, mul != nullptr ? mul : mul_f32}, "a_l2l1", "b_l2l1", "y_l1l2");
}

Status sim_run_adds_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    if (refused != nullptr) {
        *refused = false;
    }
    auto refuse = [&](size_t i, const std::string & why) {
        if (refused != nullptr) {
            *refused = true;
        }
        return Status::error("stream mode, invocation " + std::to_string(i) + " (add): " + why);
    };
    const DesignRead & design = add_design();
    if (!design.ok()) {
        return refuse(0, design.error);
    }
    const DesignDescription & d = design.design;
    // Every stream built and every operand checked before the first one runs (sim-stream.h says why).
    std::vector<RowsJob> jobs;
    for (size_t i = 0; i < invs.size(); ++i) {
        if (!add_has_kernel(invs[i].key)) {
            return refuse(i, std::string("the add stream engine was handed a kernel of kind ") + kernel_kind_name(invs[i].kind()));
        }
        const AddInvocation r = add_of(invs[i]);
        const AddParams & q = r.p;
        RowsJob job;
        job.seq = add_sequence_of(q);
        if (!job.seq->ok()) {
            return refuse(i, job.seq->error);
        }
        // What the DMAs touch: up to the last row's end, from each operand's offset.
        const auto need = [&](int64_t rows, int64_t stride) { return static_cast<uint64_t>(((rows - 1) * stride + q.cols) * 4); };
        auto after = [](const BufferSlice & b) { return static_cast<uint64_t>(b.buffer->size() - b.offset); };
        if (need(q.rows, q.a_row_stride) > after(r.a) || need(q.b_row_stride == 0 ? 1 : q.rows, q.b_row_stride) > after(r.b) ||
            need(q.rows, q.y_row_stride) > after(r.y)) {
            return refuse(i, "an operand ends before the rows the stream moves");
        }
        job.args = {{"a", {static_cast<uint8_t *>(r.a.host()), after(r.a)}},
                    {"b", {static_cast<uint8_t *>(r.b.host()), after(r.b)}},
                    {"y", {static_cast<uint8_t *>(r.y.host()), after(r.y)}}};
        jobs.push_back(std::move(job));
    }
    return sim_run_rows_stream(d, jobs, [&d](int tile) { return add_core_roles(d, tile); }, pool, contexts, "add");
}

}  // namespace xdna
