#include "plan/expert-plan.h"

#include "ops/act_quant/act-quant-invocation.h"
#include "ops/get_rows/get-rows-invocation.h"
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

bool npu_routes_experts(const ggml_tensor * dst, ExpertPlan & plan, const TensorResolver & resolve, std::string & why) {
    plan.on_npu = false;
    const ggml_tensor * src1 = dst->src[1];
    if (!npu_op_offered("get_rows")) {
        why = "the NPU moves expert rows with GGML_XDNA_NPU_OPS=glue or layer";
        return false;
    }
    // Both gathers take fp32 rows a whole number of floats apart, and name a row by one index: src1's rows
    // of a token and dst's slots of a token are contiguous runs of rows.
    if (src1->type != GGML_TYPE_F32 || src1->nb[0] != sizeof(float) || src1->nb[1] % sizeof(float) != 0 ||
        src1->nb[2] != src1->nb[1] * static_cast<size_t>(src1->ne[1]) || dst->type != GGML_TYPE_F32 || dst->nb[0] != sizeof(float) ||
        dst->nb[1] % sizeof(float) != 0 || dst->nb[2] != dst->nb[1] * static_cast<size_t>(dst->ne[1])) {
        why = "MUL_MAT_ID rows the NPU's gathers do not take (fp32 rows, each token's rows contiguous)";
        return false;
    }
    const BufferSlice s1 = resolve.slice_of(src1), d = resolve.slice_of(dst);
    if (s1.buffer == nullptr || d.buffer == nullptr) {
        why = "MUL_MAT_ID src1 or dst not in device memory";
        return false;
    }
    const int tile_k = get_rows_tile(plan.weights.k), tile_m = get_rows_tile(plan.weights.rows);
    if (tile_k == 0 || tile_m == 0 ||
        (resolve.has_kernel && (!resolve.has_kernel(get_rows_key(tile_k)) || !resolve.has_kernel(get_rows_key(tile_m))))) {
        why = "no get_rows program for rows of " + std::to_string(plan.weights.k) + " and " + std::to_string(plan.weights.rows) +
              " values";
        return false;
    }
    // Any group may take any token tile the plan has: the NPU must quantize into each.
    for (int t : plan.tiles) {
        const ActivationLayout L = make_activation_layout(*plan.contract, plan.weights.k, plan.weights.padded_k(), t, t);
        if (!act_quant_takes(L) || (resolve.has_kernel && !resolve.has_kernel(act_quant_key(L)))) {
            why = std::string("no act_quant program for ") + plan.contract->name + " at token tile " + std::to_string(t);
            return false;
        }
    }
    plan.on_npu = true;
    plan.src1_row_stride = static_cast<int64_t>(src1->nb[1] / sizeof(float));
    plan.dst_row_stride = static_cast<int64_t>(dst->nb[1] / sizeof(float));
    return true;
}

bool npu_routes_experts(const ggml_tensor * dst, const TensorResolver & resolve) {
    MatmulChoice choice;
    ExpertPlan   plan;
    std::string  why;
    return choose_matmul_id(dst, resolve, choice, why) && plan_matmul_id(dst, resolve, choice, plan, why) &&
           npu_routes_experts(dst, plan, resolve, why);
}

bool same_expert_activations(const ExpertPlan & a, const ExpertPlan & b) {
    return a.on_npu && b.on_npu && a.contract == b.contract && a.weights.k == b.weights.k &&
           a.weights.padded_k() == b.weights.padded_k() && a.weights.k_tiles == b.weights.k_tiles && a.n_expert == b.n_expert &&
           a.n_used == b.n_used && a.n_tokens == b.n_tokens && a.src1_rows == b.src1_rows && a.src1_row_stride == b.src1_row_stride &&
           a.tiles == b.tiles && a.act_bytes == b.act_bytes && a.staged_rows() == b.staged_rows();
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
    auto tile_for = [&](int64_t rows) {
        return choose_tile_n(*plan.contract, rows, [&](const TileShape & t) {
            return std::find(plan.tiles.begin(), plan.tiles.end(), t.n) != plan.tiles.end();
        });
    };
    // Each group takes the tile its rows choose. NPU-gathered rows are laid out by tile (ascending), each
    // tile's groups together, so that one quantization per tile size makes every group's activation
    // tiles: a tile the largest group chose for all would pad a batch of a few tokens per expert, where
    // one popular expert takes 5 rows, to 32 rows for every expert (9 tokens of Qwen3-30B-A3B: 72 rows
    // gathered, quantized and multiplied as 1376).
    const bool   by_tile = plan.on_npu && plan.gathers_rows();
    const size_t passes = by_tile ? plan.tiles.size() : 1;
    size_t act_offset = 0;
    int64_t out_row = 0;
    for (size_t pass = 0; pass < passes; ++pass) {
        for (int64_t x = 0; x < plan.n_expert; ++x) {
            const int64_t rows = routing.count[x + 1] - routing.count[x];
            if (rows == 0) {
                continue;  // not selected: no invocation, its weights are never read
            }
            const int tile_n = tile_for(rows);
            if (by_tile && tile_n != plan.tiles[pass]) {
                continue;
            }
            ExpertGroup g;
            g.expert = static_cast<int32_t>(x);
            g.first = routing.count[x];
            g.rows = rows;
            g.activations = make_activation_layout(*plan.contract, plan.weights.k, plan.weights.padded_k(), rows, tile_n);
            g.act_offset = act_offset;
            g.out_row0 = out_row;
            act_offset += g.activations.total_bytes;
            out_row += g.activations.n_pad;
            routing.groups.push_back(g);
        }
    }
    routing.staged_rows = out_row;
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
    if (plan.on_npu && !plan.gathers_rows()) {
        // One token: src1's rows are quantized once, where they are (expert_quantizations), and each
        // expert (one row: its slot's) multiplies the whole token tile that holds that row. The tile's
        // other rows are other slots' or padding: their outputs land in the expert's own staging rows,
        // and the gather back reads only the slot's row. The kernel computes whole tiles either way.
        // Every group has one row, so every group chose the same tile.
        const int              tile_n = tile_for(1);
        const ActivationLayout all = make_activation_layout(*plan.contract, plan.weights.k, plan.weights.padded_k(), plan.src1_rows, tile_n);
        const ActivationLayout one = make_activation_layout(*plan.contract, plan.weights.k, plan.weights.padded_k(),
                                                            std::min<int64_t>(tile_n, plan.src1_rows), tile_n);
        for (ExpertGroup & g : routing.groups) {
            const int64_t row = (routing.pair[g.first] % plan.n_used) % plan.src1_rows;
            g.activations = one;
            g.act_offset = all.tile_offset(row / tile_n, 0);
            g.tile_row = row % tile_n;
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

void write_expert_gather_ids(const ExpertPlan & plan, const ExpertRouting & routing, int32_t * ids) {
    int32_t * out_ids = ids + plan.staged_rows();
    for (const ExpertGroup & g : routing.groups) {
        for (int64_t r = 0; r < g.activations.n_pad; ++r) {
            const int64_t pair = routing.pair[g.first + std::min(r, g.rows - 1)];
            const int64_t slot = pair % plan.n_used, token = pair / plan.n_used;
            ids[g.out_row0 + r] = static_cast<int32_t>(slot % plan.src1_rows + token * plan.src1_rows);
            if (r < g.rows) {
                out_ids[pair] = static_cast<int32_t>(g.out_row0 + r + g.tile_row);
            }
        }
    }
}

Invocation expert_rows_gather(const ExpertPlan & plan, const ExpertRouting & routing, BufferSlice src1, BufferSlice ids,
                              BufferSlice rows) {
    GetRowsInvocation g;
    g.p.n_ids = routing.staged_rows;
    g.p.cols = plan.weights.k;
    g.p.src_rows = plan.src1_rows * plan.n_tokens;
    g.p.src_row_stride = plan.src1_row_stride;
    g.p.y_row_stride = plan.weights.k;
    g.src = src1;
    g.ids = ids;
    g.y = rows;
    return to_invocation(g);
}

Invocation expert_outputs_gather(const ExpertPlan & plan, BufferSlice out, BufferSlice ids, BufferSlice dst) {
    GetRowsInvocation g;
    g.p.n_ids = plan.pairs();
    g.p.cols = plan.weights.rows;
    g.p.src_rows = plan.staged_rows();
    g.p.src_row_stride = plan.out_row_stride;
    g.p.y_row_stride = plan.dst_row_stride;
    g.src = out;
    g.ids = {ids.buffer, ids.offset + static_cast<size_t>(plan.staged_rows()) * sizeof(int32_t)};
    g.y = dst;
    return to_invocation(g);
}

void expert_quantizations(const ExpertPlan & plan, const ExpertRouting & routing, BufferSlice src1, BufferSlice rows,
                          BufferSlice act, BufferSlice zeros, std::vector<Invocation> & batch) {
    if (routing.groups.empty()) {
        return;
    }
    const int64_t k = plan.weights.k;
    if (!plan.gathers_rows()) {
        // One token: its src1 rows where they are, in the token tile every group took (route_experts).
        const ActivationLayout all = make_activation_layout(*plan.contract, k, plan.weights.padded_k(), plan.src1_rows,
                                                            routing.groups.front().activations.tile_n);
        batch.push_back(to_invocation(act_quant_invocation(all, src1, plan.src1_row_stride, act, zeros)));
        return;
    }
    // Gathered: the groups' token tiles back to back, those of one tile size together (route_experts):
    // one quantization per run of one tile size, its rows and tiles contiguous.
    for (size_t a = 0; a < routing.groups.size();) {
        const ExpertGroup & first = routing.groups[a];
        const int           tile_n = first.activations.tile_n;
        int64_t             run_rows = 0;
        for (; a < routing.groups.size() && routing.groups[a].activations.tile_n == tile_n; ++a) {
            run_rows += routing.groups[a].activations.n_pad;
        }
        const ActivationLayout run = make_activation_layout(*plan.contract, k, plan.weights.padded_k(), run_rows, tile_n);
        const BufferSlice      from{rows.buffer, rows.offset + static_cast<size_t>(first.out_row0 * k) * sizeof(float)};
        batch.push_back(to_invocation(act_quant_invocation(run, from, k, {act.buffer, act.offset + first.act_offset}, zeros)));
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
            std::memcpy(row, in + (g.out_row0 + r + g.tile_row) * plan.out_row_stride, sizeof(float) * plan.weights.rows);
        }
    }
}

}  // namespace xdna
