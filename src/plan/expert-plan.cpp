#include "plan/expert-plan.h"

#include "plan/matmul-plan.h"

#include <algorithm>
#include <cstring>

namespace xdna {

bool plan_matmul_id(const ggml_tensor * dst, const TensorResolver & resolve, const MatmulChoice & choice, ExpertPlan & plan,
                    std::string & why) {
    const ggml_tensor * src0 = dst->src[0];
    const ggml_tensor * src1 = dst->src[1];
    const ggml_tensor * ids = dst->src[2];
    plan = ExpertPlan{};
    plan.contract = choice.contract;
    if (!make_weight_layout(src0->type, src0->ne, plan.weights)) {
        why = std::string("no weight layout for ") + ggml_type_name(src0->type);
        return false;
    }
    plan.n_expert = src0->ne[2];
    plan.n_used = ids->ne[0];
    plan.n_tokens = ids->ne[1];
    plan.src1_rows = src1->ne[1];
    for (int t : plan.contract->tile_n) {
        if (!resolve.has_kernel || resolve.has_kernel(matmul_key(*plan.contract, plan.contract->tile(t)))) {
            plan.tiles.push_back(t);
        }
    }
    if (plan.tiles.empty()) {
        why = std::string("no kernel for ") + plan.contract->name + " at any token tile";
        return false;
    }
    std::sort(plan.tiles.begin(), plan.tiles.end());
    plan.out_row_stride = plan.weights.padded_rows();

    // Worst case over every routing of R pairs: at most G = min(n_expert, R) groups, each padded by
    // fewer than the widest tile, and each padded row costing at most the dearest tile's bytes per row.
    const int64_t r = plan.pairs();
    const int64_t g = std::min(plan.n_expert, r);
    const int64_t rows = r + g * (plan.tiles.back() - 1);
    size_t per_row = 0;
    for (int t : plan.tiles) {
        const size_t tile_bytes = activation_tile_bytes(*plan.contract, t);
        per_row = std::max(per_row, (tile_bytes + t - 1) / t);
    }
    plan.act_bytes = static_cast<size_t>(rows) * plan.weights.k_tiles * per_row;
    plan.out_bytes = static_cast<size_t>(rows) * plan.out_row_stride * sizeof(float);
    return true;
}

bool route_experts(const ggml_tensor * ids, const ExpertPlan & plan, ExpertRouting & routing, std::string & why) {
    routing.groups.clear();
    routing.count.assign(plan.n_expert + 1, 0);
    routing.pair.resize(plan.pairs());
    const char * base = static_cast<const char *>(ids->data);
    auto id_at = [&](int64_t slot, int64_t token) {
        return *reinterpret_cast<const int32_t *>(base + slot * ids->nb[0] + token * ids->nb[1]);
    };
    // Counting sort by expert, stable in (token, slot) order.
    for (int64_t t = 0; t < plan.n_tokens; ++t) {
        for (int64_t e = 0; e < plan.n_used; ++e) {
            const int32_t id = id_at(e, t);
            if (id < 0 || id >= plan.n_expert) {
                why = "expert id " + std::to_string(id) + " outside [0, " + std::to_string(plan.n_expert) + ")";
                return false;
            }
            ++routing.count[id + 1];
        }
    }
    for (int64_t x = 0; x < plan.n_expert; ++x) {
        routing.count[x + 1] += routing.count[x];
    }
    size_t act_offset = 0;
    int64_t out_row = 0;
    for (int64_t x = 0; x < plan.n_expert; ++x) {
        const int64_t rows = routing.count[x + 1] - routing.count[x];
        if (rows == 0) {
            continue;  // not selected: no invocation, its weights are never read
        }
        ExpertGroup g;
        g.expert = static_cast<int32_t>(x);
        g.first = routing.count[x];
        const int tile_n = choose_tile_n(*plan.contract, rows, [&](const TileShape & t) {
            return std::find(plan.tiles.begin(), plan.tiles.end(), t.n) != plan.tiles.end();
        });
        g.activations = make_activation_layout(*plan.contract, plan.weights.k, plan.weights.padded_k(), rows, tile_n);
        g.act_offset = act_offset;
        g.out_row0 = out_row;
        act_offset += g.activations.total_bytes;
        out_row += g.activations.n_pad;
        routing.groups.push_back(g);
    }
    // The plan's scratch holds any routing (plan_matmul_id's bound); a violation is a planner bug.
    if (act_offset > plan.act_bytes || static_cast<size_t>(out_row * plan.out_row_stride) * sizeof(float) > plan.out_bytes) {
        why = "expert routing exceeds the planned scratch (planner bug)";
        return false;
    }
    std::vector<int64_t> & next = routing.count;  // reused as each expert's next free entry
    for (int64_t t = 0; t < plan.n_tokens; ++t) {
        for (int64_t e = 0; e < plan.n_used; ++e) {
            routing.pair[next[id_at(e, t)]++] = e + t * plan.n_used;
        }
    }
    return true;
}

void expert_invocations(const ExpertPlan & plan, const ExpertRouting & routing, BufferSlice weights, BufferSlice act,
                        BufferSlice out, std::vector<Invocation> & batch) {
    const WeightLayout & W = plan.weights;
    for (const ExpertGroup & g : routing.groups) {
        const ActivationLayout & A = g.activations;
        MatmulInvocation inv = invocation_geometry(*plan.contract, W, A, W.rows, A.n, plan.out_row_stride);
        inv.weights = {weights.buffer, weights.offset + W.mat_bytes * g.expert};
        inv.activations = {act.buffer, act.offset + g.act_offset};
        inv.out = {out.buffer, out.offset + static_cast<size_t>(g.out_row0 * plan.out_row_stride) * sizeof(float)};
        inv.expert = g.expert;
        batch.push_back(to_invocation(inv));
    }
}

const void * pair_source_row(const ggml_tensor * src1, const ExpertPlan & plan, int64_t pair) {
    const int64_t slot = pair % plan.n_used, token = pair / plan.n_used;
    return static_cast<const char *>(src1->data) + (slot % plan.src1_rows) * src1->nb[1] + token * src1->nb[2];
}

void scatter_expert_outputs(const ExpertPlan & plan, const ExpertRouting & routing, const void * staged, ggml_tensor * dst) {
    const auto * in = static_cast<const float *>(staged);
    for (const ExpertGroup & g : routing.groups) {
        for (int64_t r = 0; r < g.activations.n; ++r) {
            const int64_t pair = routing.pair[g.first + r];
            const int64_t slot = pair % plan.n_used, token = pair / plan.n_used;
            char * row = static_cast<char *>(dst->data) + slot * dst->nb[1] + token * dst->nb[2];
            std::memcpy(row, in + (g.out_row0 + r) * plan.out_row_stride, sizeof(float) * plan.weights.rows);
        }
    }
}

}  // namespace xdna
