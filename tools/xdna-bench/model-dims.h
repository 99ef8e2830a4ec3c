// Matmul shapes of a decoder-only transformer: built-in model families or a GGUF's own metadata.
#pragma once

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna_bench {

struct ModelDims {
    std::string name;
    int64_t n_embd = 0, n_ff = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, vocab = 0;
    // Mixture of experts (0: dense): n_ff is then one expert's width.
    int64_t n_expert = 0, n_expert_used = 0;
    // Q and K normalized per head (RMS_NORM with a weight) before RoPE, as Qwen3 does.
    bool qk_norm = false;
    // Weight type of every matmul, when read from a GGUF ("blk.<i>.<name>.weight", "output.weight").
    std::vector<std::vector<ggml_type>> layer_types;  // [layer][matmul index]
    ggml_type output_type = GGML_TYPE_COUNT;
};

// One weight matmul of a layer: out features M, reduction K.
struct LayerMatmul {
    const char * name;     // q, k, v, o, gate, up, down
    const char * tensor;   // GGUF tensor name suffix: attn_q, ...
    int64_t      m, k;
    int          split;    // ggml split it falls in: 0 = QKV, 1 = O, 2 = gate/up, 3 = down
                           // (MoE: 2 = router, 3 = gate/up experts, 4 = down experts)
    bool         experts = false;  // a MUL_MAT_ID over n_expert matrices of m x k
};

// Built-in families: 1b (Llama 3.2 1B), 3b (Llama 3.2 3B), 8b (Llama 3.1 8B), qwen3-8b, and the
// mixture of experts qwen3-30b-a3b (Qwen3-30B-A3B: 128 experts of 768, 8 per token).
const std::vector<ModelDims> & builtin_models();
const ModelDims * find_builtin_model(const std::string & name);

// Dimensions (and tensor types) from a GGUF's metadata; false with `error` if keys are missing.
bool read_gguf_dims(const std::string & path, ModelDims & out, std::string & error);

// The weight matmuls of one layer: seven for a dense model; for MoE Q, K, V, O, the router and the
// three expert stacks.
std::vector<LayerMatmul> layer_matmuls(const ModelDims & d);

// Weight type of a matmul under a llama.cpp file type: "q4_K_M" applies llama.cpp's rule (attn_v and
// ffn_down of the layers use_more_bits picks, and the output head, in Q6_K; the rest Q4_K); any ggml type
// name ("q8_0", "f16", ...) uses that type throughout. A GGUF's own types win when known.
bool parse_ftype(const std::string & ftype, ggml_type & uniform, bool & q4_k_m);
ggml_type matmul_type(const ModelDims & d, int layer, int matmul_index, ggml_type uniform, bool q4_k_m);
ggml_type output_type(const ModelDims & d, ggml_type uniform, bool q4_k_m);

// ggml type from its name ("q4_K", case-insensitive); GGML_TYPE_COUNT if unknown.
ggml_type type_from_name(const std::string & name);

}  // namespace xdna_bench
