#include "matmul-plan.h"

#include <cstring>
#include <vector>

namespace xdna {

bool matmul_supported(const ggml_tensor * dst, std::string & why) {
    const ggml_tensor * src0 = dst->src[0];
    const ggml_tensor * src1 = dst->src[1];
    if (matmul_contract_for(src0->type) == nullptr) {
        why = std::string("no NPU kernel for weight type ") + ggml_type_name(src0->type);
        return false;
    }
    if (src1->type != GGML_TYPE_F32 && src1->type != GGML_TYPE_F16 && src1->type != GGML_TYPE_BF16) {
        why = std::string("activation type ") + ggml_type_name(src1->type);
        return false;
    }
    if (dst->type != GGML_TYPE_F32 || dst->nb[0] != sizeof(float)) {
        why = "output must be F32 with contiguous rows";
        return false;
    }
    if (src0->nb[0] != ggml_type_size(src0->type)) {
        // Only transposed F32/F16/BF16 weights can get here; ggml blocks always run along dim 0.
        why = "weights with non-contiguous rows";
        return false;
    }
    if (src0->ne[0] != src1->ne[0] || src1->ne[2] % src0->ne[2] != 0 || src1->ne[3] % src0->ne[3] != 0) {
        why = "inconsistent shapes";
        return false;
    }
    return true;
}

bool plan_matmul(const ggml_tensor * dst, MatmulPlan & plan, std::string & why, const TileAvailable & available) {
    if (!matmul_supported(dst, why)) {
        return false;
    }
    const ggml_tensor * src0 = dst->src[0];
    const ggml_tensor * src1 = dst->src[1];
    plan = MatmulPlan{};
    plan.contract = matmul_contract_for(src0->type);
    if (!make_weight_layout(src0->type, src0->ne, plan.weights)) {
        why = "weight row length is not a whole number of blocks";
        return false;
    }
    const int tile_n = available ? choose_tile_n(*plan.contract, src1->ne[1], available) : choose_tile_n(*plan.contract, src1->ne[1]);
    if (tile_n == 0) {
        why = std::string("no kernel for ") + plan.contract->name + " at any token tile";
        return false;
    }
    plan.activations = make_activation_layout(*plan.contract, src1->ne[0], plan.weights.padded_k(), src1->ne[1], tile_n);
    plan.n_slices = dst->ne[2] * dst->ne[3];
    plan.ne2 = dst->ne[2];
    plan.src0_ne2 = src0->ne[2];
    plan.bcast2 = src1->ne[2] / src0->ne[2];
    plan.bcast3 = src1->ne[3] / src0->ne[3];
    return true;
}

MatmulInvocation invocation_geometry(const MatmulPlan & plan, int64_t m, int64_t n, int64_t out_row_stride) {
    MatmulInvocation inv;
    inv.contract = plan.contract;
    inv.tile = plan.contract->tile(plan.activations.tile_n);
    inv.m = m;
    inv.n = n;
    inv.m_tiles = plan.weights.m_tiles;
    inv.n_tiles = plan.activations.n_pad / inv.tile.n;
    inv.k_tiles = plan.weights.k_tiles;
    inv.weight_tile_bytes = plan.weights.tile_bytes;
    inv.act_row_bytes = plan.activations.row_bytes;
    inv.out_row_stride = out_row_stride;
    return inv;
}

bool invocation_geometry(ggml_type type, int64_t m, int64_t k, int64_t n, MatmulInvocation & out) {
    MatmulPlan plan;
    plan.contract = matmul_contract_for(type);
    const int64_t ne[4] = {k, m, 1, 1};
    if (plan.contract == nullptr || !make_weight_layout(type, ne, plan.weights)) {
        return false;
    }
    plan.activations = make_activation_layout(*plan.contract, k, plan.weights.padded_k(), n);
    out = invocation_geometry(plan, m, n, m);
    return true;
}

void pack_plain_weights(const ggml_tensor * src0, const WeightLayout & L, void * packed) {
    clear_weight_padding(L, packed);
    const auto * base = static_cast<const char *>(src0->data);
    for (int64_t i3 = 0; i3 < src0->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < src0->ne[2]; ++i2) {
            const int64_t mat = i2 + i3 * src0->ne[2];
            for (int64_t i1 = 0; i1 < src0->ne[1]; ++i1) {
                const char * row = base + i1 * src0->nb[1] + i2 * src0->nb[2] + i3 * src0->nb[3];
                pack_weight_rows(L, row, mat * L.rows + i1, 1, packed);
            }
        }
    }
}

}  // namespace xdna
