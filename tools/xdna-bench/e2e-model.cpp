#include "e2e-model.h"

#include "invocation-shape.h"

#include "contracts/activation-layout.h"
#include "ops/act_quant/act-quant-invocation.h"
#include "ops/act_quant/sim-act-quant.h"
#include "ops/add/add-invocation.h"
#include "ops/add/sim-add.h"
#include "ops/flash_attn/flash-attn-invocation.h"
#include "ops/flash_attn/sim-flash-attn.h"
#include "ops/hadamard/hadamard-invocation.h"
#include "ops/hadamard/sim-hadamard.h"
#include "ops/row_scale/row-scale-invocation.h"
#include "ops/row_scale/sim-row-scale.h"
#include "ops/get_rows/get-rows-invocation.h"
#include "ops/get_rows/sim-get-rows.h"
#include "ops/glu/glu-invocation.h"
#include "ops/glu/sim-glu.h"
#include "ops/rope/rope-invocation.h"
#include "ops/rope/sim-rope.h"
#include "ops/set_rows/set-rows-invocation.h"
#include "ops/set_rows/sim-set-rows.h"
#include "ops/rms_norm/rms-norm-invocation.h"
#include "ops/rms_norm/sim-rms-norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace xdna_bench {

namespace {

struct Job {
    xdna::MatmulInvocation inv;
    int group;
    bool             glue = false;  // an op of another kind: `shape` instead of `inv`
    xdna::ModelShape shape{};
};

// The NPU's quantization of `tokens` rows of k values for `consumer`, when its contract takes one.
void add_quantization(std::vector<Job> & pending, const xdna::MatmulInvocation & consumer, int64_t k, int64_t tokens, int group) {
    const xdna::ActivationLayout L = xdna::make_activation_layout(*consumer.contract, k, k, tokens, consumer.tile.n);
    if (xdna::act_quant_takes(L)) {
        pending.push_back({{}, group, true, xdna::act_quant_model_shape(xdna::to_invocation(xdna::act_quant_invocation(L, {}, k, {})))});
    }
}

// The glue before a matmul group on the NPU (Grouping::glue_on_npu): the residual ADD (unless the input
// is the embedding), RMS_NORM with its weight, and the quantization of its output for `consumer`.
void add_glue(std::vector<Job> & pending, const ModelDims & d, int64_t tokens, const xdna::MatmulInvocation & consumer,
              bool residual, int group) {
    if (residual) {
        xdna::AddInvocation a;
        a.p = {tokens, d.n_embd, d.n_embd, d.n_embd, d.n_embd};
        pending.push_back({{}, group, true, xdna::add_model_shape(xdna::to_invocation(a))});
    }
    xdna::RmsNormInvocation r;
    r.p = {tokens, d.n_embd, 1e-5f, 1.0f / static_cast<float>(d.n_embd), true, d.n_embd, 0, d.n_embd};
    // A decoded token's norm makes its consumer's a8 tiles itself, as the batch planner has it
    // (norm_quantizing_for, src/plan/batch-plan.cpp): no act_quant invocation after it.
    const xdna::ActivationLayout L = xdna::make_activation_layout(*consumer.contract, d.n_embd, d.n_embd, tokens, consumer.tile.n);
    const bool quantizes = xdna::rms_norm_fuse_quant(r, L, {});
    pending.push_back({{}, group, true, xdna::rms_norm_model_shape(xdna::to_invocation(r))});
    if (!quantizes) {
        add_quantization(pending, consumer, d.n_embd, tokens, group);
    }
}

// `matmul_columns`: the columns the matmuls may use (0: the whole array); `subroles`: Q4_K's on the first
// kQ4KColumns of them and every other type's on the rest, each with exact W objects (co_resident_subroles).
void add_batch(PhaseModel & out, const std::vector<Job> & jobs, const xdna::TimingModel & model,
               const xdna::MatmulContract *& last_type, const char *& last_layout, int matmul_columns = 0, bool subroles = false) {
    if (jobs.empty()) {
        return;
    }
    std::vector<xdna::ModelShape> shapes;
    for (const auto & j : jobs) {
        if (j.glue) {
            shapes.push_back(j.shape);
            continue;
        }
        shapes.push_back(xdna::shape_of(j.inv));
        shapes.back().max_columns = matmul_columns;  // 0: the whole array
        if (subroles) {
            const bool q4_k = j.inv.contract->weight_type == GGML_TYPE_Q4_K;
            shapes.back().max_columns = q4_k ? kQ4KColumns : matmul_columns - kQ4KColumns;
            shapes.back().exact_w = true;
        }
        out.weight_bytes += static_cast<double>(j.inv.weight_bytes());
    }
    out.programs.emplace_back();
    for (const auto & sh : shapes) {
        std::string program = xdna::kernel_kind_name(sh.kind);
        if (sh.kind == xdna::KernelKind::matmul && sh.weight_type != GGML_TYPE_COUNT) program += std::string(" ") + ggml_type_name(sh.weight_type);
        out.programs.back().push_back(program);
    }
    xdna::ModelledBatch b;
    model.batch(shapes, b, &last_type, &last_layout);  // switches across submissions are charged too
    out.contract_changes += b.contract_switches;
    out.switch_us += b.switch_us;
    for (size_t i = 0; i < b.invocations.size(); ++i) {
        const auto & t = b.invocations[i];
        const auto & s = shapes[i];
        const std::string kind = s.kind == xdna::KernelKind::matmul
                                     ? std::string("matmul ") + ggml_type_name(s.weight_type)
                                     : std::string(xdna::kernel_kind_name(s.kind));
        auto & k = out.by_kind[kind];
        k.invocations += 1;
        k.compute_us += t.compute_us;
        k.dram_us += t.dram_us;
        k.busy_us += std::max(t.compute_us, t.dram_us);
        k.dispatch_us += t.dispatch_us;
        k.dram_bytes += t.dram_bytes;
        ++out.layouts[*t.layout != 0 ? t.layout : "published"];
        if (t.infeasible != nullptr &&
            std::find(out.infeasible.begin(), out.infeasible.end(), t.infeasible) == out.infeasible.end()) {
            out.infeasible.push_back(t.infeasible);
        }
    }
    out.submissions += 1;
    out.invocations += static_cast<int>(shapes.size());
    out.compute_us += b.compute_us;
    out.dram_us += b.dram_us;
    out.busy_us += b.busy_us;
    out.submit_us += b.submit_us;
    out.invocation_us += b.dispatch_us - b.submit_us;
    out.total_us += b.total_us;
}

// A MoE layer's expert outputs combined (llama-graph.cpp build_moe_ffn): each times its routing weight, the
// MUL by one value per row (aie/row_scale), then summed by n_expert_used - 1 ADDs of the token rows.
void add_expert_combine(std::vector<Job> & pending, const ModelDims & d, int64_t tokens, int group) {
    xdna::RowScaleInvocation r;
    r.p = {tokens * d.n_expert_used, d.n_embd, d.n_embd, 1, d.n_embd};
    pending.push_back({{}, group, true, xdna::row_scale_model_shape(xdna::to_invocation(r))});
    for (int64_t e = 1; e < d.n_expert_used; ++e) {
        xdna::AddInvocation a;
        a.p = {tokens, d.n_embd, d.n_embd * d.n_expert_used, d.n_embd * d.n_expert_used, d.n_embd};
        pending.push_back({{}, group, true, xdna::add_model_shape(xdna::to_invocation(a))});
    }
}

// What moves a MUL_MAT_ID's rows on the NPU with the glue there (plan/expert-plan.h npu_routes_experts):
// the gather of its (slot, token) rows of k values as the selected experts' token tiles, their one
// quantization (one token: no gather, and one quantization of the token's `slot_rows` rows), and after
// the experts the gather of the staged outputs into dst. `before`: the first two, else the last.
void add_expert_moves(std::vector<Job> & pending, const ModelDims & d, int64_t tokens, int64_t m, int64_t k, int64_t slot_rows,
                      const xdna::MatmulInvocation & mm, const ExpertLoad & load, bool before, int group) {
    const int64_t pairs = tokens * d.n_expert_used;
    xdna::GetRowsInvocation g;
    if (before) {
        const int64_t tn = mm.tile.n;
        const int64_t rows = tokens > 1 ? load.experts * ((load.rows + tn - 1) / tn) * tn : slot_rows;
        if (tokens > 1) {
            g.p = {rows, k, pairs, k, k};
            pending.push_back({{}, group, true, xdna::get_rows_model_shape(xdna::to_invocation(g))});
        }
        const xdna::ActivationLayout L = xdna::make_activation_layout(*mm.contract, k, k, rows, mm.tile.n);
        if (xdna::act_quant_takes(L)) {
            pending.push_back({{}, group, true, xdna::act_quant_model_shape(xdna::to_invocation(xdna::act_quant_invocation(L, {}, k, {})))});
        }
        return;
    }
    g.p = {pairs, m, pairs, m, m};
    pending.push_back({{}, group, true, xdna::get_rows_model_shape(xdna::to_invocation(g))});
}

// SwiGLU of `tokens` rows of n_ff values, and the quantization of its output for the down projection
// (`quantize`; a MoE layer's down experts quantize their rows with their moves, add_expert_moves).
void add_swiglu(std::vector<Job> & pending, const ModelDims & d, int64_t tokens, int64_t n_ff, const xdna::MatmulInvocation & down,
                int group, bool quantize) {
    xdna::GluInvocation g;
    g.p = {tokens, n_ff, n_ff, n_ff, n_ff};
    pending.push_back({{}, group, true, xdna::glu_model_shape(xdna::to_invocation(g))});
    if (quantize) add_quantization(pending, down, n_ff, tokens, group);
    (void) d;
}

// llama.cpp rotates q, k and v by a Hadamard matrix per head before a quantized cache stores them, and
// the attention's output back (llama-graph.cpp build_attn, llama-impl.h llama_mul_mat_hadamard; head
// dims that are multiples of 64, llama-kv-cache.cpp attn_rot_k/v): a MUL_MAT of the d x d matrix by
// `heads` x tokens columns with GGML_HINT_SRC0_IS_HADAMARD, which the NPU runs as the Walsh-Hadamard
// transform (aie/hadamard, a design of its own: a switch of xclbin before and after it) of heads x tokens rows.
void add_rotation(std::vector<Job> & pending, const ModelDims & d, int64_t tokens, int64_t heads, int group) {
    xdna::HadamardInvocation h;
    h.p.rows = heads * tokens;
    h.p.scale = 1.0f / std::sqrt(static_cast<float>(d.head_dim));
    h.p.n = d.head_dim;
    h.p.x_row_stride = h.p.y_row_stride = d.head_dim;
    pending.push_back({{}, group, true, xdna::hadamard_model_shape(xdna::to_invocation(h))});
}

// ROPE of `heads` heads of `tokens` rows (Llama: NORM mode, freq factors).
void add_rope(std::vector<Job> & pending, const ModelDims & d, int64_t tokens, int64_t heads, int group) {
    xdna::RopeInvocation r;
    r.p.angles.n_dims = static_cast<int32_t>(d.head_dim);
    r.p.angles.has_freq_factors = true;
    r.p.ne0 = d.head_dim;
    r.p.n_heads = heads;
    r.p.n_tokens = tokens;
    r.p.x_head_stride = r.p.y_head_stride = d.head_dim;
    r.p.x_token_stride = r.p.y_token_stride = d.head_dim * heads;
    pending.push_back({{}, group, true, xdna::rope_model_shape(xdna::to_invocation(r))});
}

// The write of K's or V's rows into the F16 (or Q8_0) cache.
void add_cache_write(std::vector<Job> & pending, const ModelDims & d, int64_t tokens, int group, bool kv_q8_0) {
    xdna::SetRowsInvocation s;
    s.p = {tokens, d.n_head_kv * d.head_dim, 4096, d.n_head_kv * d.head_dim, d.n_head_kv * d.head_dim, true};
    s.p.y_q8_0 = kv_q8_0;
    if (kv_q8_0) s.p.y_row_stride = s.p.y_row_bytes();
    pending.push_back({{}, group, true, xdna::set_rows_model_shape(xdna::to_invocation(s))});
}

// RMS_NORM with its weight over `heads` heads of `tokens` rows of head_dim values: Qwen3's norm of q or k.
void add_head_norm(std::vector<Job> & pending, const ModelDims & d, int64_t tokens, int64_t heads, int group) {
    xdna::RmsNormInvocation r;
    r.p = {tokens * heads, d.head_dim, 1e-6f, 1.0f / static_cast<float>(d.head_dim), true, d.head_dim, 0, d.head_dim};
    pending.push_back({{}, group, true, xdna::rms_norm_model_shape(xdna::to_invocation(r))});
}

// The QKV projections with the glue on the NPU, in the order the backend runs them. The backend moves a
// layer's graph nodes of one kind together before allocation and keeps their inputs allocated to the
// run's end (src/plan/submission-order.h); its planner then puts each op in the earliest stage its inputs
// and memory allow, or in a later stage that already runs its program, and groups a stage's invocations
// by program, the previous stage's last first (src/plan/batch-plan.cpp). So: Q, K, V (grouped by weight
// type, Q's first); Qwen3's norms of q and k; rope(Q), rope(K); with a Q8_0 cache the rotations of q, k
// and v; the cache writes of K and V. CTest e2e-model-order compares this with the backend's trace of a
// decoded token: the trained demo model (F16 and Q8_0 caches, glue and layer modes) and the tiny MoE model
// (the norms; layer mode, F16 cache: its head dim of 32 takes neither the rotations nor the Q8_0
// attention program). The norms with a Q8_0 cache follow the same rules, but no demo model shows them.
// A projection without an NPU contract (empty) stays on the CPU.
void add_qkv(std::vector<Job> & pending, const ModelDims & d, int64_t tokens, const std::vector<Job> & q,
             const std::vector<Job> & k, const std::vector<Job> & v, int group, bool kv_q8_0) {
    std::vector<Job> projections;
    for (const std::vector<Job> * jobs : {&q, &k, &v}) projections.insert(projections.end(), jobs->begin(), jobs->end());
    std::vector<const xdna::MatmulContract *> types;  // in the order they first appear
    for (const Job & j : projections) {
        if (std::find(types.begin(), types.end(), j.inv.contract) == types.end()) types.push_back(j.inv.contract);
    }
    std::stable_sort(projections.begin(), projections.end(), [&](const Job & a, const Job & b) {
        return std::find(types.begin(), types.end(), a.inv.contract) < std::find(types.begin(), types.end(), b.inv.contract);
    });
    pending.insert(pending.end(), projections.begin(), projections.end());
    if (d.qk_norm) {
        add_head_norm(pending, d, tokens, d.n_head, group);
        add_head_norm(pending, d, tokens, d.n_head_kv, group);
    }
    add_rope(pending, d, tokens, d.n_head, group);
    add_rope(pending, d, tokens, d.n_head_kv, group);
    if (kv_q8_0 && d.head_dim % 64 == 0) {
        for (int64_t heads : {d.n_head, d.n_head_kv, d.n_head_kv}) add_rotation(pending, d, tokens, heads, group);
    }
    add_cache_write(pending, d, tokens, group, kv_q8_0);
    add_cache_write(pending, d, tokens, group, kv_q8_0);
}

// FLASH_ATTN_EXT of `tokens` query rows per head over `context` KV rows of the F16 (or Q8_0) cache, with
// the mask llama.cpp always passes (one row per token, broadcast over the heads, causal), laid out as ggml does.
void add_attention(std::vector<Job> & pending, const ModelDims & d, int64_t tokens, int64_t context, int group,
                   int64_t cores, bool kv_q8_0) {
    xdna::FlashAttnInvocation f;
    xdna::FlashAttnParams & p = f.p;
    p.kv_q8_0 = kv_q8_0;
    f.variant = xdna::flash_attn_variant(true, kv_q8_0);
    p.d = d.head_dim;
    p.n_kv = context;
    p.n_tokens = tokens;
    p.n_head = d.n_head;
    p.n_head_kv = d.n_head_kv;
    p.n_seq = p.n_seq_kv = 1;
    const int64_t q_nb[4] = {4, 4 * d.head_dim * d.n_head, 4 * d.head_dim, 4 * d.head_dim * d.n_head * tokens};
    const int64_t rb = p.kv_row_bytes();  // a KV head's row
    const int64_t kv_nb[4] = {kv_q8_0 ? 34 : 2, rb * d.n_head_kv, rb, rb * d.n_head_kv * context};
    const int64_t out_nb[4] = {4, 4 * d.head_dim, 4 * d.head_dim * d.n_head, 4 * d.head_dim * d.n_head * tokens};
    const int64_t mask_nb[4] = {2, 2 * context, 2 * context * tokens, 2 * context * tokens};
    for (int i = 0; i < 4; ++i) {
        p.q_nb[i] = q_nb[i];
        p.k_nb[i] = p.v_nb[i] = kv_nb[i];
        p.out_nb[i] = out_nb[i];
        p.mask_nb[i] = mask_nb[i];
    }
    p.has_mask = true;
    // llama.cpp's causal mask: the ubatch's tokens are the context's last, token t seeing every position
    // up to its own (the stream then moves no block past a task's last visible one).
    p.modelled_past = std::max<int64_t>(0, context - tokens);
    p.scale = 1.0f / std::sqrt(static_cast<float>(d.head_dim));
    pending.push_back({{}, group, true, xdna::flash_attn_model_shape_on(xdna::to_invocation(f), cores)});
}

}  // namespace

ExpertLoad expert_load(const ModelDims & d, int64_t tokens) {
    // T tokens each pick k of E experts; with uniform routing an expert is missed by all of them with
    // probability (1 - k/E)^T, so E (1 - (1 - k/E)^T) are selected, each with T k / selected rows.
    const double e = static_cast<double>(d.n_expert), k = static_cast<double>(d.n_expert_used);
    const double selected = e * (1.0 - std::pow(1.0 - k / e, static_cast<double>(tokens)));
    ExpertLoad load;
    load.experts = std::max<int64_t>(1, std::llround(selected));
    load.rows = std::max<int64_t>(1, (tokens * d.n_expert_used + load.experts - 1) / load.experts);
    return load;
}

const char * grouping_name(Grouping g) {
    switch (g) {
        case Grouping::per_split: return "one submission per ggml split (4 per layer + head)";
        case Grouping::per_layer: return "one submission per layer + head";
        case Grouping::per_token: return "one submission per token/ubatch";
        case Grouping::glue_on_npu:
            return "residual ADD, RMS_NORM, SwiGLU, ROPE, the KV-cache writes, the output rows and activation quantization on the NPU (GGML_XDNA_NPU_OPS=glue): 1 per layer";
        case Grouping::layer_on_npu:
            return "the glue and FLASH_ATTN_EXT on the NPU (GGML_XDNA_NPU_OPS=layer): 1 per token or ubatch (a MoE model 1 per layer and 1: its routing on the host, the experts' rows moved by NPU gathers)";
        case Grouping::co_resident:
            return "the co-resident decode-layer plan (aie/decode_layer/README.md, not built): the layer's work in one xclbin, projections and attention on 7 columns, the glue on the 8th, no switches";
        case Grouping::co_resident_subroles:
            return "the co-resident decode-layer plan with two projection sub-roles (not built): Q4_K's program on 4 columns, the other types' on 3, both of exact W objects, attention on all 7";
    }
    return "?";
}

const char * PhaseModel::dominant() const {
    const double d = dispatch_us() + switch_us;
    if (d >= busy_us) {
        return "dispatch";
    }
    return dram_us >= compute_us ? "DRAM" : "compute";
}

PhaseModel model_phase(const ModelDims & d, const std::string & ftype, const xdna::TimingModel & model,
                       int64_t tokens, Grouping grouping, bool fold_experts, int64_t head_rows, int64_t context, bool kv_q8_0) {
    PhaseModel out;
    const bool subroles = grouping == Grouping::co_resident_subroles;
    const bool co_resident = grouping == Grouping::co_resident || subroles;
    const bool layer = grouping == Grouping::layer_on_npu || co_resident;
    const int64_t attention_cores = co_resident ? 4 * kCoResidentColumns : 32;
    const bool glue = grouping == Grouping::glue_on_npu || layer;  // the glue kernels join the submissions
    if (context <= 0) {
        context = tokens;
    }
    out.tokens = tokens;
    ggml_type uniform = GGML_TYPE_COUNT;
    bool q4_k_m = false;
    if (!parse_ftype(ftype, uniform, q4_k_m)) {
        return out;
    }
    const auto mm = layer_matmuls(d);
    const xdna::MatmulContract * last = nullptr;
    const char * last_layout = "";
    std::vector<Job> pending;
    int pending_group = -1;
    auto flush = [&] {
        add_batch(out, std::vector<Job>(pending.begin(), pending.end()), model, last, last_layout,
                  co_resident ? kCoResidentColumns : 0, subroles);
        pending.clear();
    };
    const bool rotated = kv_q8_0 && d.head_dim % 64 == 0;  // llama.cpp rotates q, k, v and the output
    const int64_t out_rows = std::min(tokens, head_rows);
    for (int l = 0; l < d.n_layer; ++l) {
        std::vector<Job> q, k, v;  // with the glue on the NPU: the QKV projections, run in the planner's order (add_qkv)
        auto end_qkv = [&] {
            if (!q.empty() || !k.empty() || !v.empty()) {
                add_qkv(pending, d, tokens, q, k, v, pending_group, kv_q8_0);
                q.clear(), k.clear(), v.clear();
            }
        };
        for (size_t i = 0; i < mm.size(); ++i) {
            bool ok = false;
            const ggml_type t = matmul_type(d, l, static_cast<int>(i), uniform, q4_k_m);
            // llama.cpp keeps only the output rows after the last layer's attention (llama-model.cpp: the
            // GET_ROWS of inp_out_ids on cur and inpSA), so that layer's FFN computes those rows alone.
            const bool last_ffn = l + 1 == d.n_layer && mm[i].split >= 2;
            const int64_t rows = last_ffn ? out_rows : tokens;
            // A MUL_MAT_ID is one invocation per selected expert over that expert's slice (as the
            // planner does), with the tokens routed to it.
            ExpertLoad load = mm[i].experts ? expert_load(d, rows) : ExpertLoad{1, rows};
            const int64_t stacked = fold_experts ? load.experts : 1;
            load.experts /= stacked;
            Job j{invocation_shape(t, mm[i].m * stacked, mm[i].k, load.rows, ok), 0};
            if (!ok) {
                continue;  // no NPU contract: that matmul stays on the CPU
            }
            // glue_on_npu: attention (between QKV and O) stays on the host and cuts; O, gate/up, SwiGLU,
            // down and the next layer's QKV share a submission.
            // layer_on_npu: attention joins too, and a dense model's whole pass is one submission. A MoE
            // layer's routing stays on the host, as the backend runs it: one host run of SOFT_MAX, ARGSORT,
            // GET_ROWS (the chosen experts' weights: rows of one float, no NPU gather's), SUM_ROWS, CLAMP
            // and DIV after the router. The experts' rows are moved by NPU gathers (plan/expert-plan.h
            // npu_routes_experts), so the experts, the MUL by their weights and the next layer up to its
            // router are the next submission: one per layer and one.
            static const int glue_group[4] = {0, 1, 1, 1};
            const bool moe = d.n_expert > 0;
            j.group = grouping == Grouping::per_split     ? l * 8 + mm[i].split
                    : grouping == Grouping::per_layer   ? l
                    : grouping == Grouping::glue_on_npu ? l + glue_group[mm[i].split & 3]
                    : layer && moe                      ? l + (mm[i].split >= 3 ? 1 : 0)
                                                        : 0;
            const bool split_starts = i == 0 || mm[i - 1].split != mm[i].split;
            if (glue && split_starts && mm[i].split == 1) {
                end_qkv();
                if (layer) {
                    add_attention(pending, d, tokens, context, pending_group, attention_cores, kv_q8_0);
                }
            }
            if (j.group != pending_group && !pending.empty()) {
                flush();
            }
            if (glue && split_starts && mm[i].split == 1 && (layer || rotated)) {
                // The attention's output (rotated back first with a Q8_0 cache) is an NPU stage's: the NPU
                // quantizes it for O. With attention on the host and an F16 cache, the host does.
                if (rotated) {
                    add_rotation(pending, d, tokens, d.n_head, j.group);
                }
                add_quantization(pending, j.inv, mm[i].k, tokens, j.group);
            }
            if (glue && moe && split_starts && mm[i].split == 0 && l > 0) {
                add_expert_combine(pending, d, tokens, j.group);  // the layer before's experts, before its residual ADD
            }
            if (glue && split_starts && l + 1 == d.n_layer && mm[i].split == 2) {
                for (int r = 0; r < 2; ++r) {  // the output rows of the attention's output and of the residual
                    xdna::GetRowsInvocation g;
                    g.p = {out_rows, d.n_embd, tokens, d.n_embd, d.n_embd};
                    pending.push_back({{}, j.group, true, xdna::get_rows_model_shape(xdna::to_invocation(g))});
                }
            }
            if (glue && split_starts && (mm[i].split == 0 || mm[i].split == 2)) {
                add_glue(pending, d, rows, j.inv, !(l == 0 && mm[i].split == 0), j.group);
            }
            if (glue && split_starts && mm[i].split == (moe ? 4 : 3)) {
                // Before down (a MoE layer's down experts): SwiGLU of each token's rows (one per selected
                // expert), and for a dense layer its quantization.
                add_swiglu(pending, d, moe ? rows * d.n_expert_used : rows, mm[i].k, j.inv, j.group, !moe);
            }
            pending_group = j.group;
            if (glue && mm[i].split == 0) {
                std::string name = mm[i].name;
                (name == "q" ? q : name == "k" ? k : v).push_back(j);
                continue;
            }
            // The MUL_MAT_IDs of one split (gate and up) run their moves in shared stages, as the
            // planner places them: the gather and quantization (one for both when they share a type), then
            // both experts' matmuls, then both gathers back.
            const bool npu_moves = glue && mm[i].experts && !fold_experts;
            const bool split_ends = i + 1 == mm.size() || mm[i + 1].split != mm[i].split;
            if (npu_moves && split_starts) {
                // Gate and up of one type read one gather and one quantization (the planner's
                // expert_rows_of): a MUL_MAT_ID of the split makes them only if none before it has its type.
                for (size_t s2 = i; s2 < mm.size() && mm[s2].split == mm[i].split; ++s2) {
                    const ggml_type t2 = matmul_type(d, l, static_cast<int>(s2), uniform, q4_k_m);
                    bool shared = false;
                    for (size_t s1 = i; s1 < s2; ++s1) {
                        shared = shared || (matmul_type(d, l, static_cast<int>(s1), uniform, q4_k_m) == t2 && mm[s1].k == mm[s2].k);
                    }
                    if (!shared) {
                        add_expert_moves(pending, d, rows, mm[s2].m, mm[s2].k, mm[s2].split == 3 ? 1 : d.n_expert_used, j.inv, load, true,
                                         j.group);
                    }
                }
            }
            for (int64_t e = 0; e < load.experts; ++e) {
                pending.push_back(j);
            }
            if (npu_moves && split_ends) {
                for (size_t s2 = i + 1; s2-- > 0 && mm[s2].split == mm[i].split;) {
                    add_expert_moves(pending, d, rows, mm[s2].m, mm[s2].k, 1, j.inv, load, false, j.group);
                }
            }
        }
        end_qkv();  // a layer without an NPU O projection
    }
    // glue_on_npu: the output rows' GET_ROWS runs on the NPU too, so the last layer and the head share
    // a submission.
    if (grouping != Grouping::per_token && !glue) {
        flush();
    }
    // llama.cpp computes logits for the last token of a ubatch only (as llama-bench's pp test does):
    // the head multiplies one row whatever the phase, unless the caller asks for more.
    bool ok = false;
    Job head{invocation_shape(output_type(d, uniform, q4_k_m), d.vocab, d.n_embd, head_rows, ok), -1};
    if (ok) {
        if (glue) {
            if (d.n_expert > 0) {
                add_expert_combine(pending, d, out_rows, -1);  // the last layer's experts
            }
            add_glue(pending, d, head_rows, head.inv, true, -1);  // the last residual ADD and the output norm
        }
        pending.push_back(head);
    }
    flush();
    return out;
}

}  // namespace xdna_bench
