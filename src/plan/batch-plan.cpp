#include "plan/batch-plan.h"

#include "ops/act_quant/act-quant-invocation.h"
#include "ops/act_quant/act-quant-plan.h"
#include "ops/rms_norm/rms-norm-invocation.h"
#include "ops/flash_attn/flash-attn-plan.h"
#include "ops/rms_norm/rms-norm-plan.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace xdna {

namespace {

constexpr size_t  kScratchAlign = 64;
constexpr int64_t kRowsPerJob = 8;
constexpr size_t  kMaxCachedPlans = 8192;  // a llama model needs about 4 per layer and batch shape

size_t align_up(size_t x) {
    return (x + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

// Two src1 operands are the same activations when they read the same memory the same way.
bool same_activations(const ggml_tensor * a, const ggml_tensor * b) {
    return a->data == b->data && a->type == b->type && std::memcmp(a->ne, b->ne, sizeof a->ne) == 0 &&
           std::memcmp(a->nb, b->nb, sizeof a->nb) == 0;
}

// The own op of the plan that can make `matmul`'s activation tiles (layout `al`) itself, or -1: the
// RMS_NORM with its weight that computes the matmul's src1, on one row (a decoded token), not yet
// quantizing for another layout, the tiles a8 of 4 tokens over the whole row, and the device has its
// quantizing program. It still writes its output: any other reader sees the norm as before.
int32_t norm_quantizing_for(const BatchPlan & plan, const ggml_tensor * matmul, const ActivationLayout & al,
                            const TensorResolver & resolve) {
    const ggml_tensor * src = reshaped_source(matmul->src[1]);
    for (size_t j = 0; j < plan.ops.size(); ++j) {
        const PlannedOp & q = plan.ops[j];
        if (!q.is(PlannedForm::own) || q.node != src || q.own.size() != 1 || q.own[0].kind() != KernelKind::rms_norm ||
            q.quant_block != 0) {
            continue;
        }
        RmsNormInvocation r = rms_norm_of(q.own[0]);
        const bool fits = rms_norm_fuse_quant(r, al, {});
        return fits && (!resolve.has_kernel || resolve.has_kernel(to_invocation(r).key)) ? static_cast<int32_t>(j) : -1;
    }
    return -1;
}

}  // namespace

bool layout_batch(const std::vector<ggml_tensor *> & nodes, const TensorResolver & resolve, BatchPlan & plan,
                  std::string & why) {
    plan = BatchPlan{};
    size_t size = 0;
    for (ggml_tensor * node : nodes) {
        PlannedOp p;
        p.node = node;
        MatmulChoice choice;
        // A node of no elements (llama.cpp's ops after it selects a ubatch's outputs, when the ubatch has
        // none: the GET_ROWS, the output norm, the output head) writes nothing, whatever its kind: planned
        // with no invocation, rather than streams of no rows that the designs refuse at run time.
        if (ggml_nelements(node) == 0) {
            p.form = PlannedForm::own;
            plan.ops.push_back(std::move(p));
            continue;
        }
        if (plan_other_kind(node, resolve, p.own, why)) {
            // An op of another kind than matmul (ops/<op>/): its invocations are made now.
            p.form = PlannedForm::own;
            plan.ops.push_back(std::move(p));
            continue;
        }
        if (!why.empty()) {
            why = std::string(node->name) + ": " + why;
            return false;
        }
        if (op_kind(node) == OpKind::matmul_id) {
            // Gathered activations and staged outputs sized for any routing; weights not packed at
            // load get a slot per expert, filled for the selected ones only.
            if (!choose_matmul_id(node, resolve, choice, why) || !plan_matmul_id(node, resolve, choice, p.experts, why)) {
                why = std::string(node->name) + ": " + why;
                return false;
            }
            p.form = PlannedForm::experts;
            plan.has_experts = true;
            p.expert_out_offset = size;
            size = align_up(size + p.experts.out_bytes);
            std::string host_moves;  // why the host moves the rows: the path before, not an error
            const bool  npu_moves = npu_routes_experts(node, p.experts, resolve, host_moves);
            // Gate and up read the same rows by the same routing: the first one's gather and quantization
            // serve both (node identity, as for the matmuls' shared activations below).
            const auto rows_of = std::find_if(plan.ops.begin(), plan.ops.end(), [&](const PlannedOp & q) {
                return npu_moves && q.is(PlannedForm::experts) && q.expert_rows_of < 0 && q.node->src[1] == node->src[1] &&
                       q.node->src[2] == node->src[2] && same_expert_activations(q.experts, p.experts);
            });
            if (rows_of != plan.ops.end()) {
                p.expert_rows_of = static_cast<int32_t>(rows_of - plan.ops.begin());
                p.expert_act_offset = rows_of->expert_act_offset;
                p.expert_rows_offset = rows_of->expert_rows_offset;
                p.expert_ids_offset = rows_of->expert_ids_offset;
            } else {
                p.expert_act_offset = size;
                size = align_up(size + p.experts.act_bytes);
                if (npu_moves) {
                    p.expert_rows_offset = size;
                    size = align_up(size + (p.experts.gathers_rows() ? p.experts.row_bytes() : 0));
                    p.expert_ids_offset = size;
                    size = align_up(size + p.experts.ids_bytes());
                }
            }
            plan.max_k_pad = std::max(plan.max_k_pad, p.experts.weights.padded_k());
            p.packed_weights = resolve.is_packed && resolve.is_packed(node->src[0]);
            if (!p.packed_weights) {
                p.weight_offset = size;
                size = align_up(size + p.experts.weights.total_bytes);
            }
            plan.ops.push_back(std::move(p));
            continue;
        }
        if (!choose_matmul(node, resolve, choice, why) || !plan_matmul(node, choice, p.plan, why)) {
            why = std::string(node->name) + ": " + why;
            return false;
        }
        const ActivationLayout & al = p.plan.activations;
        // Activations an earlier op of this batch computes (the backend let the matmul join only when
        // npu_quantizes_activations holds) are quantized on the NPU, in the stage after that op.
        const bool produced_here = std::any_of(plan.ops.begin(), plan.ops.end(), [&](const PlannedOp & q) {
            return q.is(PlannedForm::own) && q.node == reshaped_source(node->src[1]);
        });
        // Two matmuls share one quantization when they read the same activations. Within one submission
        // a tensor computed in it may have the address (and shape) of another one that died earlier in
        // it (the FFN norm's output and the next layer's attention norm's): those share only when they
        // are the same tensor.
        const auto shared = std::find_if(plan.ops.begin(), plan.ops.end(), [&](const PlannedOp & q) {
            if (!q.is(PlannedForm::matmul) || !q.quantizes) {
                return false;
            }
            const ActivationLayout & ql = q.plan.activations;
            const bool same = produced_here || q.act_on_npu ? q.node->src[1] == node->src[1]
                                                            : same_activations(q.node->src[1], node->src[1]);
            return same && ql.format == al.format && ql.k_pad == al.k_pad && ql.tile_n == al.tile_n;
        });
        if (produced_here && !npu_quantizes_activations(node, p.plan, resolve)) {
            why = std::string(node->name) + ": its activations come from this submission but cannot be quantized on the NPU";
            return false;
        }
        p.act_on_npu = produced_here;
        if (shared != plan.ops.end()) {
            p.act_offset = shared->act_offset;
        } else {
            p.quantizes = true;
            p.act_offset = size;
            if (produced_here) {
                p.act_by_op = norm_quantizing_for(plan, node, al, resolve);
                if (p.act_by_op >= 0) {
                    PlannedOp & norm = plan.ops[static_cast<size_t>(p.act_by_op)];
                    norm.quant_block = act_format_block(al.format);
                    norm.quant_offset = p.act_offset;
                }
            }
            size = align_up(size + p.plan.activation_bytes());
            plan.max_k_pad = std::max(plan.max_k_pad, al.k_pad);
            for (int64_t s = 0; s < p.plan.n_slices && !p.act_on_npu; ++s) {
                for (int64_t r = 0; r < al.n_pad; r += kRowsPerJob) {
                    plan.quantize_jobs.push_back({static_cast<uint32_t>(plan.ops.size()), s, r, std::min(al.n_pad, r + kRowsPerJob)});
                }
            }
        }
        p.packed_weights = resolve.is_packed && resolve.is_packed(node->src[0]);
        if (!p.packed_weights) {
            p.weight_offset = size;
            size = align_up(size + p.plan.weights.total_bytes);
        }
        plan.ops.push_back(std::move(p));
    }
    if (std::any_of(plan.ops.begin(), plan.ops.end(), [](const PlannedOp & q) { return q.act_on_npu || q.experts.on_npu; })) {
        plan.has_zeros = true;
        plan.zeros_offset = size;
        size = align_up(size + kActQuantZeroBytes);
    }
    plan.scratch_bytes = size;
    return true;
}

namespace {

// The device memory an op of another kind reads (its sources that may be outputs of this batch).
void device_reads(const ggml_tensor * node, const TensorResolver & resolve, std::vector<const ggml_tensor *> & out) {
    out.clear();
    if (mul_fuses_rms_norm(node, resolve)) {
        out.push_back(node->src[0]->src[0]);  // the norm's input, and the weight
        out.push_back(node->src[1]);
    } else {
        for (const ggml_tensor * s : node->src) {
            if (s != nullptr) out.push_back(s);
        }
    }
}

bool overlaps(const Operand & a, const Operand & b) {
    if (a.slice.buffer != b.slice.buffer) return false;
    const uint64_t a0 = a.slice.offset, a1 = a0 + a.extent(), b0 = b.slice.offset, b1 = b0 + b.extent();
    return a0 < b1 && b0 < a1;
}

// Whether `inv` can share a stage with `others`: no memory one writes is memory another touches.
bool independent(const Invocation & inv, const std::vector<Invocation> & others) {
    for (const Invocation & o : others) {
        for (const Operand & x : inv.operands()) {
            for (const Operand & y : o.operands()) {
                if ((x.written() || y.written()) && overlaps(x, y)) return false;
            }
        }
    }
    return true;
}

// What holds a stage for invocations made later (BatchPlan::expert_part): the memory they may touch.
Invocation stage_holder(KernelKind kind, std::initializer_list<Operand> operands) {
    Invocation inv;
    inv.key.kind = kind;
    for (const Operand & o : operands) inv.add_operand(o);
    return inv;
}

// Orders one stage's invocations (independent of each other, so any order is right) by the program they
// run: the invocations of `after` (the last of the stage before) first, then each other program's in the
// order it first appears, each program's in their own order. `parts` (BatchPlan::expert_part) moves along.
void group_stage_designs(std::vector<Invocation> & invs, std::vector<int32_t> & parts, const KernelKey * after) {
    std::vector<const KernelKey *> designs;
    if (after != nullptr) designs.push_back(after);
    std::vector<size_t> design_of(invs.size());
    for (size_t j = 0; j < invs.size(); ++j) {
        size_t d = 0;
        while (d < designs.size() && !same_key(*designs[d], invs[j].key)) ++d;
        if (d == designs.size()) designs.push_back(&invs[j].key);
        design_of[j] = d;
    }
    std::vector<size_t> order(invs.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return design_of[a] < design_of[b]; });
    std::vector<Invocation> sorted;
    std::vector<int32_t>    sorted_parts;
    sorted.reserve(invs.size());
    sorted_parts.reserve(parts.size());
    for (size_t j : order) {
        sorted.push_back(std::move(invs[j]));
        sorted_parts.push_back(parts[j]);
    }
    invs.swap(sorted);
    parts.swap(sorted_parts);
}

}  // namespace

bool fill_invocations(BatchPlan & plan, const TensorResolver & resolve, DeviceBuffer * scratch, std::string & why) {
    // Stages: an op runs in a stage after every op of this batch whose output it reads (a matmul reads
    // its NPU-quantized activations, one stage after their producer), and after every op before it in
    // graph order that touches memory it touches, where either writes (what ggml's allocator reuses in
    // graph order is reused in that order here too); ops that touch the same memory with a write never
    // share one. Otherwise an op takes the earliest stage: the K and V projections join Q's, not a stage
    // after Q's ROPE, as llama.cpp's order Q, rope(Q), K, rope(K), V would have it. Then each stage's
    // invocations are ordered by design (group_stage_designs), so that a design's invocations run one after
    // another: each change of design between consecutive invocations is an xclbin switch on an NPU.
    std::vector<std::vector<Invocation>> stages;
    std::vector<std::vector<int32_t>>    stage_parts;  // per stage, per invocation: BatchPlan::expert_part
    std::vector<int>                     op_stage(plan.ops.size(), 0);
    std::vector<const ggml_tensor *>     reads;
    // The latest stage an op took so far: an NPU-moved MUL_MAT_ID starts no earlier, since its routed
    // invocations are placed after the plan (route_batch) and only its stage holders stand for them here.
    int                                  floor_stage = 0;
    std::unordered_map<size_t, int>      act_stage;  // scratch offset of NPU-quantized activations -> their stage
    std::vector<int>                     expert_quant_stage(plan.ops.size(), -1);  // NPU-moved MUL_MAT_IDs
    // t or the tensor it views (a ROPE reads the reshape of its projection's output).
    auto producer_stage = [&](const ggml_tensor * t, size_t before) {
        int st = -1;
        for (const ggml_tensor * s = t; s != nullptr; s = s->view_src) {
            for (size_t j = 0; j < before; ++j) {
                const bool in_batch = !plan.ops[j].is(PlannedForm::experts) || plan.ops[j].experts.on_npu;
                if (plan.ops[j].node == s && in_batch) st = std::max(st, op_stage[j]);
            }
        }
        return st;
    };
    // The earliest stage `invs` may take for what was placed before them: one after the last stage holding
    // an invocation that touches their memory with a write on either side.
    auto after_conflicts = [&](const std::vector<Invocation> & invs) {
        for (size_t s = stages.size(); s-- > 0;) {
            for (const Invocation & i : invs) {
                if (!independent(i, stages[s])) return static_cast<int>(s) + 1;
            }
        }
        return 0;
    };
    auto place = [&](std::vector<Invocation> invs, int at, int32_t part = -1) {
        for (;; ++at) {
            if (static_cast<size_t>(at) >= stages.size()) {
                stages.resize(static_cast<size_t>(at) + 1);
                stage_parts.resize(stages.size());
            }
            bool fits = true;
            for (const Invocation & i : invs) fits = fits && independent(i, stages[static_cast<size_t>(at)]);
            if (fits) break;
        }
        for (Invocation & i : invs) {
            stages[static_cast<size_t>(at)].push_back(std::move(i));
            stage_parts[static_cast<size_t>(at)].push_back(part);
        }
        return at;
    };
    // An op of another kind joins a later stage that already runs its program, rather than the earliest it
    // may take, when there is one: nothing placed so far conflicts with it from `at` on (after_conflicts),
    // and what comes later in graph order is placed after it where it must be. llama.cpp writes K's cache
    // rows before V's: V's write, ready a stage earlier, joins K's instead of making a change of program of
    // its own (likewise the output rows of the last layer's residual and attention, and the rotations of a
    // quantized cache).
    auto same_program_stage = [&](const std::vector<Invocation> & invs, int at) {
        if (invs.empty()) return at;
        for (size_t s = static_cast<size_t>(std::max(at, 0)); s < stages.size(); ++s) {
            bool runs_it = false;
            for (const Invocation & o : stages[s]) runs_it = runs_it || same_key(o.key, invs.front().key);
            bool fits = runs_it;
            for (const Invocation & v : invs) fits = fits && independent(v, stages[s]);
            if (fits) return static_cast<int>(s);
        }
        return at;
    };
    for (size_t i = 0; i < plan.ops.size(); ++i) {
        const PlannedOp & p = plan.ops[i];
        if (p.is(PlannedForm::experts)) {
            if (p.experts.on_npu) {
                // Gather, quantize, multiply, gather back: four stages, the middle two held for route_batch().
                const ggml_tensor * dst = p.node;
                const BufferSlice   x = resolve.slice_of(dst->src[1]), y = resolve.slice_of(dst);
                const BufferSlice   w = p.packed_weights ? resolve.slice_of(dst->src[0]) : BufferSlice{scratch, p.weight_offset};
                if (x.buffer == nullptr || y.buffer == nullptr || w.buffer == nullptr) {
                    why = std::string(dst->name) + ": operand not in device memory";
                    return false;
                }
                const ExpertPlan & e = p.experts;
                const BufferSlice  rows{scratch, p.expert_rows_offset}, ids{scratch, p.expert_ids_offset};
                const BufferSlice  act{scratch, p.expert_act_offset}, out{scratch, p.expert_out_offset};
                int at = std::max(floor_stage, producer_stage(dst->src[1], i) + 1);
                if (p.expert_rows_of >= 0) {
                    // The activation tiles another op's quantization writes: its matmuls go right after that
                    // stage, beside the other op's (they touch only the weights, those tiles and their own
                    // staging rows, which nothing between the two ops writes), its gather back after them.
                    at = expert_quant_stage[static_cast<size_t>(p.expert_rows_of)];
                } else {
                    // src1's rows are read by the gather, or with one token by the quantization itself.
                    const Operand src1_rows{"x", x, static_cast<uint64_t>(e.weights.k) * sizeof(float), e.src1_rows * e.n_tokens,
                                            static_cast<uint64_t>(e.src1_row_stride) * sizeof(float), Access::read};
                    Operand quant_reads = src1_rows;
                    if (e.gathers_rows()) {
                        quant_reads = {"x", rows, e.row_bytes(), 1, e.row_bytes(), Access::read};
                        at = place({stage_holder(KernelKind::get_rows, {src1_rows,
                                                                        {"ids", ids, e.ids_bytes(), 1, e.ids_bytes(), Access::read},
                                                                        {"y", rows, e.row_bytes(), 1, e.row_bytes(), Access::write}})},
                                   at, static_cast<int32_t>(3 * i)) + 1;
                    }
                    at = place({stage_holder(KernelKind::act_quant, {quant_reads, {"tiles", act, e.act_bytes, 1, e.act_bytes, Access::write}})},
                               at, static_cast<int32_t>(3 * i + 1));
                    expert_quant_stage[i] = at;
                }
                at = place({stage_holder(KernelKind::matmul, {{"weights", w, e.weights.total_bytes, 1, e.weights.total_bytes, Access::read},
                                                              {"activations", act, e.act_bytes, 1, e.act_bytes, Access::read},
                                                              {"out", out, e.out_bytes, 1, e.out_bytes, Access::write}})},
                           at + 1, static_cast<int32_t>(3 * i + 2));
                op_stage[i] = floor_stage = place({expert_outputs_gather(e, out, ids, y)}, std::max(at + 1, floor_stage));
            }
            continue;  // routed per ubatch: route_batch()
        }
        if (p.is(PlannedForm::own)) {
            std::vector<Invocation> own = p.own;
            if (p.quant_block != 0) {
                // A later matmul's activation tiles, made by this norm's program (norm_quantizing_for).
                RmsNormInvocation r = rms_norm_of(own[0]);
                if (!rms_norm_fuse_quant(r, p.quant_block, {scratch, p.quant_offset})) {
                    why = std::string(p.node->name) + ": the norm cannot quantize its output for the matmul planned to read it";
                    return false;
                }
                own[0] = to_invocation(r);
            }
            device_reads(p.node, resolve, reads);
            int at = after_conflicts(own);
            for (const ggml_tensor * t : reads) at = std::max(at, producer_stage(t, i) + 1);
            op_stage[i] = place(own, same_program_stage(own, at));
            floor_stage = std::max(floor_stage, op_stage[i]);
            continue;
        }
        int at = 0;
        if (p.act_on_npu) {
            // The stage the quantization of src1 landed in (made by the first op reading it; the others
            // share its scratch offset).
            if (p.quantizes && p.act_by_op >= 0) {
                act_stage[p.act_offset] = op_stage[static_cast<size_t>(p.act_by_op)];
            } else if (p.quantizes) {
                const ggml_tensor * src1 = p.node->src[1];
                const BufferSlice x = resolve.slice_of(src1);
                if (x.buffer == nullptr) {
                    why = std::string(p.node->name) + ": activations not in device memory";
                    return false;
                }
                std::vector<Invocation> quant{to_invocation(act_quant_invocation(
                    p.plan.activations, x, static_cast<int64_t>(src1->nb[1] / sizeof(float)), {scratch, p.act_offset},
                    {scratch, plan.zeros_offset}))};
                const int q_at = std::max(after_conflicts(quant), producer_stage(src1, i) + 1);
                act_stage[p.act_offset] = place(std::move(quant), q_at);
                floor_stage = std::max(floor_stage, act_stage[p.act_offset]);
            }
            at = std::max(at, act_stage.at(p.act_offset) + 1);
        }
        const MatmulPlan & mp = p.plan;
        const ggml_tensor * dst = p.node;
        const BufferSlice w = p.packed_weights ? resolve.slice_of(dst->src[0]) : BufferSlice{scratch, p.weight_offset};
        const BufferSlice out = resolve.slice_of(dst);
        if (w.buffer == nullptr || out.buffer == nullptr) {
            why = std::string(dst->name) + ": operand not in device memory";
            return false;
        }
        std::vector<Invocation> invs;
        for (int64_t s = 0; s < mp.n_slices; ++s) {
            const int64_t i2 = s % dst->ne[2], i3 = s / dst->ne[2];
            MatmulInvocation inv = invocation_geometry(mp, dst->ne[0], dst->ne[1],
                                                       static_cast<int64_t>(dst->nb[1] / sizeof(float)));
            inv.weights = {w.buffer, w.offset + mp.weights.mat_bytes * mp.weight_matrix(s)};
            inv.activations = {scratch, p.act_offset + mp.activations.total_bytes * s};
            inv.out = {out.buffer, out.offset + i2 * dst->nb[2] + i3 * dst->nb[3]};
            invs.push_back(to_invocation(inv));
        }
        at = std::max(at, after_conflicts(invs));
        op_stage[i] = place(std::move(invs), at);
        floor_stage = std::max(floor_stage, op_stage[i]);
    }
    plan.batch.invocations.clear();
    plan.batch.stage_ends.clear();
    plan.expert_part.clear();
    const KernelKey * last_design = nullptr;
    for (size_t s = 0; s < stages.size(); ++s) {
        group_stage_designs(stages[s], stage_parts[s], last_design);
        if (!stages[s].empty()) last_design = &stages[s].back().key;
        plan.batch.end_stage();
        plan.batch.invocations.insert(plan.batch.invocations.end(), stages[s].begin(), stages[s].end());
        plan.expert_part.insert(plan.expert_part.end(), stage_parts[s].begin(), stage_parts[s].end());
    }
    return true;
}

bool route_batch(const BatchPlan & plan, const std::vector<ggml_tensor *> & nodes, const TensorResolver & resolve,
                 DeviceBuffer * scratch, RoutedBatch & routed, std::string & why) {
    routed.routing.resize(plan.ops.size());
    std::vector<BufferSlice> & weights = routed.weights;
    weights.assign(plan.ops.size(), BufferSlice{});
    for (size_t i = 0; i < plan.ops.size(); ++i) {
        const PlannedOp & p = plan.ops[i];
        if (!p.is(PlannedForm::experts)) {
            continue;
        }
        const ggml_tensor * dst = nodes[i];
        if (!route_experts(dst->src[2], p.experts, routed.routing[i], why)) {
            why = std::string(dst->name) + ": " + why;
            return false;
        }
        weights[i] = p.packed_weights ? resolve.slice_of(dst->src[0]) : BufferSlice{scratch, p.weight_offset};
        if (weights[i].buffer == nullptr) {
            why = std::string(dst->name) + ": weights not in device memory";
            return false;
        }
        if (p.experts.on_npu && p.expert_rows_of < 0) {  // a reader of another op's rows: the same ids, written once
            auto * ids = reinterpret_cast<int32_t *>(static_cast<char *>(scratch->host_ptr()) + p.expert_ids_offset);
            write_expert_gather_ids(p.experts, routed.routing[i], ids);
        }
    }
    // The plan's stages, the NPU-moved MUL_MAT_IDs' routed invocations in the places held for them.
    Batch & b = routed.batch;
    b.invocations.clear();
    b.stage_ends.clear();
    for (size_t s = 0; s < plan.batch.stages(); ++s) {
        b.end_stage();
        for (size_t j = plan.batch.stage_begin(s); j < plan.batch.stage_end(s); ++j) {
            const int32_t part = j < plan.expert_part.size() ? plan.expert_part[j] : -1;
            if (part < 0) {
                b.invocations.push_back(plan.batch.invocations[j]);
                continue;
            }
            const size_t      i = static_cast<size_t>(part / 3);
            const PlannedOp & p = plan.ops[i];
            if (part % 3 == 0) {
                b.invocations.push_back(expert_rows_gather(p.experts, routed.routing[i], resolve.slice_of(nodes[i]->src[1]),
                                                           {scratch, p.expert_ids_offset}, {scratch, p.expert_rows_offset}));
            } else if (part % 3 == 1) {
                expert_quantizations(p.experts, routed.routing[i], resolve.slice_of(nodes[i]->src[1]), {scratch, p.expert_rows_offset},
                                     {scratch, p.expert_act_offset}, {scratch, plan.zeros_offset}, b.invocations);
            } else {
                expert_invocations(p.experts, routed.routing[i], weights[i], {scratch, p.expert_act_offset},
                                   {scratch, p.expert_out_offset}, b.invocations);
            }
        }
    }
    // The host-moved ones join the last stage: they read only what the host prepared.
    for (size_t i = 0; i < plan.ops.size(); ++i) {
        const PlannedOp & p = plan.ops[i];
        if (p.is(PlannedForm::experts) && !p.experts.on_npu) {
            expert_invocations(p.experts, routed.routing[i], weights[i], {scratch, p.expert_act_offset}, {scratch, p.expert_out_offset},
                               b.invocations);
        }
    }
    return true;
}

void batch_signature(const std::vector<ggml_tensor *> & nodes, const TensorResolver & resolve, std::vector<uint64_t> & sig) {
    sig.clear();
    auto add_tensor = [&](const ggml_tensor * t) {
        sig.push_back(reinterpret_cast<uintptr_t>(t->data));
        sig.push_back(static_cast<uint64_t>(t->type));
        for (int i = 0; i < GGML_MAX_DIMS; ++i) {
            sig.push_back(static_cast<uint64_t>(t->ne[i]));
            sig.push_back(static_cast<uint64_t>(t->nb[i]));
        }
    };
    for (const ggml_tensor * n : nodes) {
        sig.push_back(static_cast<uint64_t>(n->op));
        add_tensor(n);
        // The op's parameters: they are the plan's as much as the shapes are (none for a matmul today).
        for (int32_t p : n->op_params) {
            sig.push_back(static_cast<uint32_t>(p));
        }
        // Every source the node has, by slot (MUL_MAT_ID's ids are src[2]); an op with fewer sources
        // marks the empty slots, so two nodes with sources in different slots never share a signature.
        for (int s = 0; s < GGML_MAX_SRC; ++s) {
            if (n->src[s] != nullptr) {
                sig.push_back(static_cast<uint64_t>(s) + 1);
                add_tensor(n->src[s]);
            }
        }
        sig.push_back(n->src[0] != nullptr && resolve.is_packed && resolve.is_packed(n->src[0]) ? 1 : 0);
        // A FLASH_ATTN_EXT's stream reads its mask's source, which the CPY of another run may read alone.
        if (n->op == GGML_OP_FLASH_ATTN_EXT) {
            bool f32 = false;
            if (const ggml_tensor * src = flash_attn_mask_source(n, f32); src != nullptr && f32) add_tensor(src);
        }
        // A MUL fused with the RMS_NORM before it reads that norm's input and parameters as well.
        if (mul_fuses_rms_norm(n, resolve)) {
            for (int32_t p : n->src[0]->op_params) {
                sig.push_back(static_cast<uint32_t>(p));
            }
            add_tensor(n->src[0]->src[0]);
        }
    }
}

uint64_t signature_hash(const std::vector<uint64_t> & s) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
    for (uint64_t v : s) {
        h = (h ^ v) * 1099511628211ull;
    }
    return h;
}

const BatchPlan * PlanCache::find(const std::vector<uint64_t> & signature) const {
    auto range = plans_.equal_range(signature_hash(signature));
    for (auto it = range.first; it != range.second; ++it) {
        if (it->second.signature == signature) {
            return it->second.plan.get();
        }
    }
    return nullptr;
}

void PlanCache::retarget(const DeviceBuffer * from, DeviceBuffer * to) {
    for (auto & [h, e] : plans_) {
        for (Invocation & i : e.plan->batch.invocations) {
            for (uint8_t k = 0; k < i.n_operands; ++k) {
                if (i.operand_slots[k].slice.buffer == from) {
                    i.operand_slots[k].slice.buffer = to;
                }
            }
        }
    }
}

size_t PlanCache::drop_referencing(const DeviceBuffer * freed) {
    size_t dropped = 0;
    for (auto it = plans_.begin(); it != plans_.end();) {
        bool uses = false;
        for (const Invocation & i : it->second.plan->batch.invocations) {
            for (const Operand & op : i.operands()) {
                uses = uses || op.slice.buffer == freed;
            }
        }
        if (uses) {
            it = plans_.erase(it);
            ++dropped;
        } else {
            ++it;
        }
    }
    return dropped;
}

const BatchPlan * PlanCache::insert(const std::vector<uint64_t> & signature, std::unique_ptr<BatchPlan> plan) {
    if (plans_.size() >= kMaxCachedPlans) {
        plans_.clear();  // shapes keep changing (e.g. growing contexts without a fixed ubatch): start over
    }
    ++built_;
    const uint64_t h = signature_hash(signature);
    auto it = plans_.emplace(h, Entry{signature, std::move(plan)});
    return it->second.plan.get();
}

}  // namespace xdna
