#include "plan/matmul-plan.h"

#include "plan/op-support.h"

#include <cstring>
#include <vector>

namespace xdna {

bool plan_matmul(const ggml_tensor * dst, MatmulPlan & plan, std::string & why, const TileAvailable & available) {
    TensorResolver resolve;
    if (available) {
        resolve.has_kernel = [&](const KernelKey & key) { return available(key.tile); };
    }
    MatmulChoice choice;
    return choose_matmul(dst, resolve, choice, why) && plan_matmul(dst, choice, plan, why);
}

bool plan_matmul(const ggml_tensor * dst, const MatmulChoice & choice, MatmulPlan & plan, std::string & why) {
    const ggml_tensor * src0 = dst->src[0];
    const ggml_tensor * src1 = dst->src[1];
    plan = MatmulPlan{};
    plan.contract = choice.contract;
    if (!make_weight_layout(src0->type, src0->ne, plan.weights)) {
        why = std::string("no weight layout for ") + ggml_type_name(src0->type);
        return false;
    }
    const int tile_n = choice.tile_n;
    plan.activations = make_activation_layout(*plan.contract, src1->ne[0], plan.weights.padded_k(), src1->ne[1], tile_n);
    plan.n_slices = dst->ne[2] * dst->ne[3];
    plan.ne2 = dst->ne[2];
    plan.src0_ne2 = src0->ne[2];
    plan.bcast2 = src1->ne[2] / src0->ne[2];
    plan.bcast3 = src1->ne[3] / src0->ne[3];
    return true;
}

MatmulInvocation invocation_geometry(const MatmulContract & c, const WeightLayout & W, const ActivationLayout & A,
                                     int64_t m, int64_t n, int64_t out_row_stride) {
    MatmulInvocation inv;
    inv.contract = &c;
    inv.tile = c.tile(A.tile_n);
    inv.m = m;
    inv.n = n;
    inv.m_tiles = W.m_tiles;
    inv.n_tiles = A.n_tiles;
    inv.k_tiles = W.k_tiles;
    inv.weight_tile_bytes = W.tile_bytes;
    inv.act_tile_bytes = A.weight_k_tile_bytes();
    inv.out_row_stride = out_row_stride;
    return inv;
}

MatmulInvocation invocation_geometry(const MatmulPlan & plan, int64_t m, int64_t n, int64_t out_row_stride) {
    return invocation_geometry(*plan.contract, plan.weights, plan.activations, m, n, out_row_stride);
}

bool invocation_geometry(ggml_type type, int64_t m, int64_t k, int64_t n, MatmulInvocation & out) {
    MatmulPlan plan;
    plan.contract = matmul_contract_for(type);
    // As the planner chooses (op-support.cpp): the prefill contract for a prefill batch when asked for.
    if (n > kDecodeTokens && prefill_contracts_enabled() && prefill_contract_for(type) != nullptr) {
        plan.contract = prefill_contract_for(type);
    }
    const int64_t ne[4] = {k, m, 1, 1};
    if (plan.contract == nullptr || !make_weight_layout(type, ne, plan.weights)) {
        return false;
    }
    plan.activations = make_activation_layout(*plan.contract, k, plan.weights.padded_k(), n);
    out = invocation_geometry(plan, m, n, m);
    return true;
}

void pack_plain_weight_matrix(const ggml_tensor * src0, const WeightLayout & L, int64_t mat, void * packed) {
    const auto * base = static_cast<const char *>(src0->data);
    const int64_t i2 = mat % src0->ne[2], i3 = mat / src0->ne[2];
    for (int64_t i1 = 0; i1 < src0->ne[1]; ++i1) {
        const char * row = base + i1 * src0->nb[1] + i2 * src0->nb[2] + i3 * src0->nb[3];
        pack_weight_rows(L, row, mat * L.rows + i1, 1, packed);
    }
}

void pack_plain_weights(const ggml_tensor * src0, const WeightLayout & L, void * packed) {
    clear_weight_padding(L, packed);
    for (int64_t mat = 0; mat < L.mats; ++mat) {
        pack_plain_weight_matrix(src0, L, mat, packed);
    }
}

bool matmul_weight_layout(const ggml_tensor * t, WeightLayout & L) {
    constexpr size_t kMaxPaddingBytes = size_t(16) << 20;
    if (t->op != GGML_OP_NONE || t->view_src != nullptr || t->ne[1] <= 1 || !ggml_is_contiguous(t) ||
        !make_weight_layout(t->type, t->ne, L)) {
        return false;
    }
    const size_t plain = ggml_nbytes(t);
    return L.total_bytes <= 2 * plain || L.total_bytes - plain <= kMaxPaddingBytes;
}

}  // namespace xdna
