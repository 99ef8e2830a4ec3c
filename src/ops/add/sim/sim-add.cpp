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
    if (rows_model_shape(inv, calls(r.p.multiply), s)) {
        return s;
    }
    const double row = static_cast<double>(r.p.cols) * sizeof(float);
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
        // Calls of the design's tile (its key carries it), as its stream makes them; the kernel code's own
        // chunking for a row no tile takes.
        const int tile = i.key.tile.n;
        rows[a.p.multiply ? 1 : 0].push_back({static_cast<const float *>(a.a.host()), static_cast<const float *>(a.b.host()), static_cast<float *>(a.y.host()),
                        a.p.rows, a.p.cols, a.p.a_row_stride, a.p.b_row_stride, a.p.y_row_stride, tile});
    }
    const Status st = rows[0].empty() ? Status::success() : sim_run_binary_rows(kAdd, rows[0], pool);
    return !st.ok || rows[1].empty() ? st : sim_run_binary_rows(kMul, rows[1], pool);
}

CoreRoleFactory add_core_roles(const DesignDescription & d, int tile, AddKernel add, AddKernel mul) {
    return binary_chunk_roles(d, tile, {add != nullptr ? add : add_f32, mul != nullptr ? mul : mul_f32}, "a_l2l1", "b_l2l1", "y_l1l2");
}

Status sim_run_adds_stream(const std::vector<Invocation> & invs, ThreadPool & pool, StreamContexts & contexts, bool * refused) {
    return sim_run_rows_invocations(
        invs, add_has_kernel, [](const DesignDescription & d, int tile) { return add_core_roles(d, tile); }, pool, contexts, refused,
        "add");
}

}  // namespace xdna
