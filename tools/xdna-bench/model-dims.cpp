#include "model-dims.h"

#include "gguf.h"

#include <algorithm>
#include <cctype>
#include <memory>

namespace xdna_bench {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// use_more_bits() of llama.cpp's quantizer (src/llama-quant.cpp): the layers whose attn_v / ffn_down
// get more bits in the *_M file types (the first and last eighth, and every third in between).
bool use_more_bits(int i_layer, int n_layers) {
    return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

struct GgufDeleter {
    void operator()(gguf_context * c) const { gguf_free(c); }
};

bool get_u32(const gguf_context * g, const std::string & key, int64_t & out) {
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id < 0) {
        return false;
    }
    switch (gguf_get_kv_type(g, id)) {
        case GGUF_TYPE_UINT32: out = gguf_get_val_u32(g, id); return true;
        case GGUF_TYPE_INT32: out = gguf_get_val_i32(g, id); return true;
        case GGUF_TYPE_UINT64: out = static_cast<int64_t>(gguf_get_val_u64(g, id)); return true;
        default: return false;
    }
}

}  // namespace

const std::vector<ModelDims> & builtin_models() {
    // n_embd, n_ff, heads / kv heads and vocab as in the kernel design notes' shape table; layer counts
    // and head dims from the models' published configurations.
    static const std::vector<ModelDims> models = [] {
        std::vector<ModelDims> m(5);
        m[0].name = "1b";       m[0].n_embd = 2048; m[0].n_ff = 8192;  m[0].n_layer = 16; m[0].n_head = 32; m[0].n_head_kv = 8; m[0].head_dim = 64;  m[0].vocab = 128256;
        m[1].name = "3b";       m[1].n_embd = 3072; m[1].n_ff = 8192;  m[1].n_layer = 28; m[1].n_head = 24; m[1].n_head_kv = 8; m[1].head_dim = 128; m[1].vocab = 128256;
        m[2].name = "8b";       m[2].n_embd = 4096; m[2].n_ff = 14336; m[2].n_layer = 32; m[2].n_head = 32; m[2].n_head_kv = 8; m[2].head_dim = 128; m[2].vocab = 128256;
        m[3].name = "qwen3-8b"; m[3].n_embd = 4096; m[3].n_ff = 12288; m[3].n_layer = 36; m[3].n_head = 32; m[3].n_head_kv = 8; m[3].head_dim = 128; m[3].vocab = 151936;
        // Qwen3-30B-A3B's published configuration (hidden 2048, moe_intermediate 768, 48 layers, 32 / 4
        // heads of 128, 128 experts, 8 per token, vocab 151936).
        m[4].name = "qwen3-30b-a3b"; m[4].n_embd = 2048; m[4].n_ff = 768; m[4].n_layer = 48; m[4].n_head = 32; m[4].n_head_kv = 4; m[4].head_dim = 128; m[4].vocab = 151936;
        m[4].n_expert = 128; m[4].n_expert_used = 8;
        m[3].qk_norm = m[4].qk_norm = true;  // Qwen3 normalizes q and k per head before RoPE
        return m;
    }();
    return models;
}

const ModelDims * find_builtin_model(const std::string & name) {
    for (const auto & m : builtin_models()) {
        if (m.name == name) {
            return &m;
        }
    }
    return nullptr;
}

std::vector<LayerMatmul> layer_matmuls(const ModelDims & d) {
    const int64_t q = d.n_head * d.head_dim, kv = d.n_head_kv * d.head_dim;
    if (d.n_expert > 0) {
        return {
            {"q", "attn_q", q, d.n_embd, 0},
            {"k", "attn_k", kv, d.n_embd, 0},
            {"v", "attn_v", kv, d.n_embd, 0},
            {"o", "attn_output", d.n_embd, q, 1},
            {"router", "ffn_gate_inp", d.n_expert, d.n_embd, 2},
            {"gate", "ffn_gate_exps", d.n_ff, d.n_embd, 3, true},
            {"up", "ffn_up_exps", d.n_ff, d.n_embd, 3, true},
            {"down", "ffn_down_exps", d.n_embd, d.n_ff, 4, true},
        };
    }
    return {
        {"q", "attn_q", q, d.n_embd, 0},
        {"k", "attn_k", kv, d.n_embd, 0},
        {"v", "attn_v", kv, d.n_embd, 0},
        {"o", "attn_output", d.n_embd, q, 1},
        {"gate", "ffn_gate", d.n_ff, d.n_embd, 2},
        {"up", "ffn_up", d.n_ff, d.n_embd, 2},
        {"down", "ffn_down", d.n_embd, d.n_ff, 3},
    };
}

bool read_gguf_dims(const std::string & path, ModelDims & out, std::string & error) {
    gguf_init_params params{/*no_alloc =*/true, /*ctx =*/nullptr};
    std::unique_ptr<gguf_context, GgufDeleter> g(gguf_init_from_file(path.c_str(), params));
    if (!g) {
        error = "cannot read GGUF " + path;
        return false;
    }
    const int64_t arch_id = gguf_find_key(g.get(), "general.architecture");
    if (arch_id < 0) {
        error = "no general.architecture in " + path;
        return false;
    }
    const std::string arch = gguf_get_val_str(g.get(), arch_id);
    out = ModelDims{};
    out.name = path.substr(path.find_last_of('/') + 1);
    const std::pair<const char *, int64_t *> required[] = {
        {".embedding_length", &out.n_embd},
        {".feed_forward_length", &out.n_ff},
        {".block_count", &out.n_layer},
        {".attention.head_count", &out.n_head},
    };
    for (const auto & [suffix, field] : required) {
        if (!get_u32(g.get(), arch + suffix, *field)) {
            error = "missing " + arch + suffix + " in " + path;
            return false;
        }
    }
    if (get_u32(g.get(), arch + ".expert_count", out.n_expert) && out.n_expert > 0) {
        get_u32(g.get(), arch + ".expert_used_count", out.n_expert_used);
        get_u32(g.get(), arch + ".expert_feed_forward_length", out.n_ff);
    }
    if (!get_u32(g.get(), arch + ".attention.head_count_kv", out.n_head_kv)) {
        out.n_head_kv = out.n_head;
    }
    if (!get_u32(g.get(), arch + ".attention.key_length", out.head_dim)) {
        out.head_dim = out.n_embd / out.n_head;
    }
    if (!get_u32(g.get(), arch + ".vocab_size", out.vocab)) {
        const int64_t tok = gguf_find_key(g.get(), "tokenizer.ggml.tokens");
        out.vocab = tok >= 0 ? static_cast<int64_t>(gguf_get_arr_n(g.get(), tok)) : 0;
    }
    // Tensor types, where the file has them (a tied output head is the token embedding).
    const auto mm = layer_matmuls(out);
    out.layer_types.assign(out.n_layer, std::vector<ggml_type>(mm.size(), GGML_TYPE_COUNT));
    for (int64_t l = 0; l < out.n_layer; ++l) {
        for (size_t i = 0; i < mm.size(); ++i) {
            const std::string name = "blk." + std::to_string(l) + "." + mm[i].tensor + ".weight";
            const int64_t id = gguf_find_tensor(g.get(), name.c_str());
            if (id >= 0) {
                out.layer_types[l][i] = gguf_get_tensor_type(g.get(), id);
            }
        }
    }
    out.qk_norm = gguf_find_tensor(g.get(), "blk.0.attn_q_norm.weight") >= 0;
    int64_t head = gguf_find_tensor(g.get(), "output.weight");
    if (head < 0) {
        head = gguf_find_tensor(g.get(), "token_embd.weight");
    }
    if (head >= 0) {
        out.output_type = gguf_get_tensor_type(g.get(), head);
    }
    return true;
}

ggml_type type_from_name(const std::string & name) {
    const std::string want = lower(name);
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const char * n = ggml_type_name(static_cast<ggml_type>(t));
        if (n != nullptr && lower(n) == want) {
            return static_cast<ggml_type>(t);
        }
    }
    return GGML_TYPE_COUNT;
}

bool parse_ftype(const std::string & ftype, ggml_type & uniform, bool & q4_k_m) {
    q4_k_m = lower(ftype) == "q4_k_m";
    uniform = q4_k_m ? GGML_TYPE_Q4_K : type_from_name(ftype);
    return uniform != GGML_TYPE_COUNT;
}

ggml_type matmul_type(const ModelDims & d, int layer, int matmul_index, ggml_type uniform, bool q4_k_m) {
    if (layer < static_cast<int>(d.layer_types.size()) && d.layer_types[layer][matmul_index] != GGML_TYPE_COUNT) {
        return d.layer_types[layer][matmul_index];
    }
    const std::string name = layer_matmuls(d)[matmul_index].name;
    if (name == "router") {
        return GGML_TYPE_F32;  // llama.cpp's quantizer never quantizes ffn_gate_inp
    }
    if (q4_k_m) {
        if ((name == "v" || name == "down") && use_more_bits(layer, static_cast<int>(d.n_layer))) {
            return GGML_TYPE_Q6_K;
        }
    }
    return uniform;
}

ggml_type output_type(const ModelDims & d, ggml_type uniform, bool q4_k_m) {
    if (d.output_type != GGML_TYPE_COUNT) {
        return d.output_type;
    }
    return q4_k_m ? GGML_TYPE_Q6_K : uniform;
}

}  // namespace xdna_bench
