// Modelled end-to-end time of a model's weight matmuls on the NPU, per decoded token or per ubatch.
//
// The weight matmuls (the output head for the last token only, as llama.cpp computes logits for the
// last token of a prompt), and with Grouping::glue_on_npu / layer_on_npu the glue and attention kernels
// in their submissions. Otherwise attention (KQ, KQV), norms, RoPE, SwiGLU and sampling stay on the CPU
// and are not counted; neither is the host-side activation quantization. Every figure is MODELLED.
#pragma once

#include "model-dims.h"
#include "sim/timing-model.h"

#include <map>
#include <string>
#include <vector>

namespace xdna_bench {

// How the matmuls are grouped into submissions.
enum class Grouping {
    per_split,  // one per ggml split: QKV, O, gate/up, down per layer, plus the output head
    per_layer,  // one per layer (needs the ops between the matmuls on the NPU), plus the head
    per_token,  // one per token or ubatch (everything on the NPU)
    glue_on_npu,  // GGML_XDNA_NPU_OPS=glue: the residual ADD, RMS_NORM, SwiGLU and the activation
                  // quantization join the matmuls' submissions (modelled as their kernels' invocations);
                  // attention stays on the host: 1 per layer (the output rows' GET_ROWS on the NPU too)
    layer_on_npu,  // GGML_XDNA_NPU_OPS=layer: the glue and FLASH_ATTN_EXT (aie/flash_attn) over `context`
                   // KV rows: one submission per token or ubatch, as the backend runs it (a MoE layer:
                   // three, its routing on the host)
    co_resident,   // the plan of aie/decode_layer (not built): layer_on_npu's work in one xclbin whose cores
                   // keep fixed roles, so no switch between kinds or contracts (the caller's preset sets
                   // the switch cost to 0); the projections and attention share the cores of columns
                   // 0-6 (kCoResidentColumns), the glue runs on column 7
    co_resident_subroles,  // the same with two projection sub-roles of exact W objects: Q4_K's program on
                           // columns 0-3 (kQ4KColumns), every other type's on 4-6; attention on all seven
};

// The co-resident plan's cores (aie/decode_layer/README.md): projections and attention on 7 columns.
inline constexpr int kCoResidentColumns = 7;
inline constexpr int kQ4KColumns = 4;  // co_resident_subroles: 4 shim channels stream at the DRAM rate

const char * grouping_name(Grouping g);

struct PhaseModel {
    int64_t tokens = 0;          // tokens the phase processes (1 for a decode step, 512 for pp512)
    int     submissions = 0;
    int     invocations = 0;
    int     contract_changes = 0;  // consecutive invocations of different contracts or design layouts
    double  weight_bytes = 0;    // packed weight bytes read once
    double  compute_us = 0;      // sums over invocations (modelled)
    double  dram_us = 0;
    double  busy_us = 0;         // sum of max(compute, dram)
    double  submit_us = 0;
    double  invocation_us = 0;   // argument setup of every invocation
    double  switch_us = 0;       // contract changes, at the preset's cost each
    double  total_us = 0;
    std::vector<std::string> infeasible;  // design limits the phase's kernels break (feasibility.h)
    std::map<std::string, int> layouts;   // invocations per design layout the model chose (timing-model.h)
    // Per submission, per invocation in order: its program, as the backend's trace names it (the kernel
    // kind, and a matmul's weight type: "matmul q4_K"); `xdna-bench order` prints them.
    std::vector<std::vector<std::string>> programs;
    // Per kernel kind (matmul split by weight type): invocations and the sums of their modelled terms,
    // so a report can say where a token's time goes.
    struct KindTotals {
        int    invocations = 0;
        double compute_us = 0, dram_us = 0, busy_us = 0, dispatch_us = 0, dram_bytes = 0;
    };
    std::map<std::string, KindTotals> by_kind;

    double dispatch_us() const { return submit_us + invocation_us; }
    double tokens_per_s() const { return total_us > 0 ? tokens * 1e6 / total_us : 0; }
    // "DRAM", "compute" or "dispatch": the largest of the three terms.
    const char * dominant() const;
};

// A MUL_MAT_ID at `tokens` tokens: how many experts are selected and how many rows each gets, for
// uniformly random routing (decode: exactly n_expert_used experts of one row).
struct ExpertLoad {
    int64_t experts = 1;
    int64_t rows = 1;
};
ExpertLoad expert_load(const ModelDims & d, int64_t tokens);

// Model all weight matmuls of `d` (types from `ftype`, see model-dims.h) for `tokens` tokens.
// `fold_experts`: a MUL_MAT_ID's selected experts as one invocation (their slices stacked: the same
// weight bytes and MACs, one argument setup) instead of one invocation each, as the planner does today.
// `head_rows`: tokens the output head computes logits for (llama.cpp: the last one; a speculative
// verify batch: every one).
// `context`: the KV rows each token's attention reads under Grouping::layer_on_npu (decode: the context
// length; a prefill ubatch from an empty cache: its own tokens, every query row reading every row as the
// design has no causal block skipping); 0 takes `tokens`.
// `kv_q8_0`: the KV cache is Q8_0 (-ctk q8_0 -ctv q8_0): the KV writes quantize (set_rows' f32_to_q8_0)
// and attention reads 34 bytes per 32 values (flash_attn's Q8_0 program); else F16.
PhaseModel model_phase(const ModelDims & d, const std::string & ftype, const xdna::TimingModel & model,
                       int64_t tokens, Grouping grouping, bool fold_experts = false, int64_t head_rows = 1,
                       int64_t context = 0, bool kv_q8_0 = false);

}  // namespace xdna_bench
