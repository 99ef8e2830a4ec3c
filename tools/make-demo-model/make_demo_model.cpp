// make-demo-model: write a Llama-architecture GGUF with RANDOM weights and the real Llama 3 tokenizer,
// or (preset tiny-moe) a Qwen3-MoE-architecture one with the vocab file it is given (Qwen2's).
//
// The backend needs end-to-end models to exercise (load, offload, generate, compare against the CPU)
// without depending on downloading licensed checkpoints. A random-weight model has the exact tensor
// shapes and graph of a real Llama, so it stresses the same kernels; the text it produces is gibberish.
//
// The weight scales are chosen so that next-token distributions are sharp but not one-hot: the model is
// used to compare two backends by KL divergence and top-token agreement, which says nothing if the
// logits are nearly flat (every backend "agrees") or saturated (tiny errors never change anything).

#include "demo-gguf.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct preset {
    const char * name;
    int64_t n_embd;
    int64_t n_ff;          // dense FFN width; per expert for MoE presets
    int64_t n_layer;
    int64_t n_head;
    int64_t n_head_kv;
    int64_t n_ctx;
    int64_t n_expert = 0;  // 0: dense Llama; else Qwen3-MoE with this many experts per layer
    int64_t n_expert_used = 0;
    int64_t head_dim = 0;  // 0: n_embd / n_head
};

// tiny: small enough that a full CPU run takes seconds; 1b: the layer shapes of Llama 3.2 1B, for
// benchmarks (1.5 G params rather than 1.24 G because the output head is not tied to the embeddings);
// 8b: Llama 3.1 8B's (8.0 G params), for profiles of the real graph and shapes (16 GB as F16).
// tiny-moe: Qwen3-MoE's graph (per-head Q/K norms, a softmax router, top-k experts with normalized
// weights) at tiny size: 16 experts of width 512, 4 used per token, so a short prompt selects some
// experts and leaves others unselected, as in Qwen3-30B-A3B (128 experts of 768, 8 used).
// 30b-a3b-4l: Qwen3-30B-A3B's layer (n_embd 2048, 32 heads of 128 with 4 KV heads, 128 experts of 768,
// 8 used) and vocabulary, 4 of its 48 layers (3.1 G params): profiles of the planner at the real MoE
// shapes (a layer costs what it costs in the whole model; 48 layers would be 61 GB as F16).
const preset PRESETS[] = {
    { "tiny",      256,  768,  4,  8, 4, 2048 },
    { "1b",       2048, 8192, 16, 32, 8, 4096 },
    { "8b",       4096, 14336, 32, 32, 8, 4096 },
    { "tiny-moe",  256,  512,  4,  8, 4, 2048, 16, 4 },
    { "30b-a3b-4l", 2048, 768, 4, 32, 4, 4096, 128, 8, 128 },
};

constexpr float ROPE_FREQ_BASE = 500000.0f;  // Llama 3
constexpr float RMS_EPS        = 1e-5f;
constexpr float NORM_NOISE_STD = 0.02f;
// The final RMS norm makes the logit std equal to this factor. Measured over English text: 3 gives a
// mean top-token probability of 0.07 (too flat), 8 gives 0.60 with many near one-hot rows; 5 gives
// 0.36 (entropy 3.3 nats of 11.8, top1-top2 logit gap 1.1) spread widely across positions, for both
// presets.
constexpr float OUTPUT_STD_SCALE = 5.0f;

// Elements per independently seeded chunk. Seeding by (seed, tensor, chunk) rather than by thread keeps
// the file identical whatever the number of threads.
constexpr int64_t CHUNK = 1 << 16;

struct options {
    std::string vocab;
    std::string out;
    const preset * p = &PRESETS[0];
    ggml_type type = GGML_TYPE_F32;
    uint64_t seed = 42;
};

void usage(FILE * f, const char * argv0) {
    fprintf(f,
        "usage: %s --vocab <ggml-vocab-*.gguf> --out <file.gguf> [--preset tiny|1b|8b|tiny-moe|30b-a3b-4l] [--type f32|f16] [--seed N]\n"
        "\n"
        "Writes a Llama-architecture GGUF with RANDOM weights (not a trained model; it generates gibberish)\n"
        "and the tokenizer copied from the given vocab file (llama.cpp's ggml-vocab-llama-bpe.gguf: Llama 3's).\n"
        "  --preset  tiny (default): n_embd 256, n_ff 768, 4 layers, 8 heads (4 KV), ctx 2048\n"
        "            1b: Llama 3.2 1B dims: n_embd 2048, n_ff 8192, 16 layers, 32 heads (8 KV), ctx 4096\n"
        "            8b: Llama 3.1 8B dims: n_embd 4096, n_ff 14336, 32 layers, 32 heads (8 KV), ctx 4096\n"
        "            tiny-moe: Qwen3-MoE architecture: n_embd 256, 4 layers, 8 heads (4 KV), 16 experts of\n"
        "            n_ff 512, 4 used per token (give it llama.cpp's ggml-vocab-qwen2.gguf, Qwen3's tokenizer)\n"
        "            30b-a3b-4l: Qwen3-30B-A3B's layer dims (n_embd 2048, 32 heads of 128, 4 KV, 128 experts of\n"
        "            n_ff 768, 8 used), 4 of its 48 layers (the qwen2 vocab file too)\n"
        "  --type    type of the weight matrices (default f32); norm weights are always f32\n"
        "  --seed    random seed (default 42); the same seed gives the same file\n",
        argv0);
}

#define die(...) demo_gguf::die("make-demo-model", __VA_ARGS__)

options parse_args(int argc, char ** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            usage(stdout, argv[0]);
            exit(0);
        }
        if (a != "--vocab" && a != "--out" && a != "--preset" && a != "--type" && a != "--seed") {
            usage(stderr, argv[0]);
            die("unknown argument '%s'", a.c_str());
        }
        if (i + 1 >= argc) {
            die("%s needs a value", a.c_str());
        }
        const std::string v = argv[++i];
        if (a == "--vocab") {
            o.vocab = v;
        } else if (a == "--out") {
            o.out = v;
        } else if (a == "--preset") {
            o.p = nullptr;
            for (const preset & p : PRESETS) {
                if (v == p.name) {
                    o.p = &p;
                }
            }
            if (!o.p) {
                die("unknown preset '%s' (expected tiny, 1b, 8b, tiny-moe or 30b-a3b-4l)", v.c_str());
            }
        } else if (a == "--type") {
            if (v == "f32") {
                o.type = GGML_TYPE_F32;
            } else if (v == "f16") {
                o.type = GGML_TYPE_F16;
            } else {
                die("unknown type '%s' (expected f32 or f16)", v.c_str());
            }
        } else {
            char * end = nullptr;
            errno = 0;
            const unsigned long long s = strtoull(v.c_str(), &end, 10);
            if (v.empty() || v[0] == '-' || *end != '\0' || errno == ERANGE) {
                die("--seed expects a non-negative integer, got '%s'", v.c_str());
            }
            o.seed = s;
        }
    }
    if (o.vocab.empty()) {
        usage(stderr, argv[0]);
        die("--vocab is required");
    }
    if (o.out.empty()) {
        usage(stderr, argv[0]);
        die("--out is required");
    }
    return o;
}

// How one tensor is filled: normal(mean, std).
struct tensor_spec {
    ggml_tensor * t;
    float mean;
    float std;
};

// Marsaglia's polar method on the raw engine output instead of std::normal_distribution: the standard
// fixes mt19937_64's sequence but not normal_distribution's algorithm, so this keeps a seed's file the
// same across standard libraries. In float and without trigonometry it is also about twice as fast,
// which matters for the 1.5 G values of the 1b preset.
void fill_normal(float * dst, int64_t n, float mean, float std, uint64_t seed, uint64_t tensor, uint64_t chunk) {
    std::seed_seq seq{ uint32_t(seed), uint32_t(seed >> 32), uint32_t(tensor), uint32_t(chunk), uint32_t(chunk >> 32) };
    std::mt19937_64 rng(seq);
    constexpr float TWO_POW_M31 = 1.0f / 2147483648.0f;
    for (int64_t i = 0; i < n; i += 2) {
        float a, b, r2;
        do {  // a point uniform in the unit disc; accepted with probability pi/4
            const uint64_t x = rng();
            a = float(int32_t(uint32_t(x >> 32))) * TWO_POW_M31;
            b = float(int32_t(uint32_t(x))) * TWO_POW_M31;
            r2 = a * a + b * b;
        } while (r2 >= 1.0f || r2 == 0.0f);
        const float m = std * std::sqrt(-2.0f * std::log(r2) / r2);
        dst[i] = mean + a * m;
        if (i + 1 < n) {
            dst[i + 1] = mean + b * m;
        }
    }
}

// Generate a whole tensor's data (in its final type) into out, chunks spread over the threads.
void generate(const tensor_spec & s, uint64_t seed, uint64_t tensor_idx, int n_threads, std::vector<uint8_t> & out) {
    const int64_t n = ggml_nelements(s.t);
    const int64_t n_chunks = (n + CHUNK - 1) / CHUNK;
    out.resize(ggml_nbytes(s.t));
    std::atomic<int64_t> next{0};
    auto worker = [&]() {
        std::vector<float> buf(CHUNK);
        for (int64_t c; (c = next.fetch_add(1)) < n_chunks;) {
            const int64_t i0 = c * CHUNK;
            const int64_t len = std::min(CHUNK, n - i0);
            fill_normal(buf.data(), len, s.mean, s.std, seed, tensor_idx, uint64_t(c));
            if (s.t->type == GGML_TYPE_F16) {
                ggml_fp32_to_fp16_row(buf.data(), reinterpret_cast<ggml_fp16_t *>(out.data()) + i0, len);
            } else {
                memcpy(reinterpret_cast<float *>(out.data()) + i0, buf.data(), size_t(len) * sizeof(float));
            }
        }
    };
    std::vector<std::thread> threads;
    for (int i = 1; i < n_threads; ++i) {
        threads.emplace_back(worker);
    }
    worker();
    for (std::thread & th : threads) {
        th.join();
    }
}

} // namespace

int main(int argc, char ** argv) {
    const options o = parse_args(argc, argv);
    const preset & p = *o.p;
    const auto t_start = std::chrono::steady_clock::now();

    const int64_t n_vocab = demo_gguf::vocab_size("make-demo-model", o.vocab);
    const int64_t n_embd_head = p.head_dim > 0 ? p.head_dim : p.n_embd / p.n_head;
    const int64_t n_embd_q    = n_embd_head * p.n_head;  // n_embd unless the head dim is set apart
    const int64_t n_embd_kv   = n_embd_head * p.n_head_kv;

    gguf_context * g = gguf_init_empty();
    const bool moe = p.n_expert > 0;
    const std::string arch = moe ? "qwen3moe" : "llama";
    auto key = [&](const char * k) { return arch + "." + k; };
    const std::string name = std::string("ggml-xdna demo (RANDOM WEIGHTS) ") + p.name;
    gguf_set_val_str(g, "general.architecture", arch.c_str());
    gguf_set_val_str(g, "general.name", name.c_str());
    gguf_set_val_str(g, "general.description",
                     "Random weights for testing inference backends; not a trained model, output is gibberish.");
    gguf_set_val_u32(g, "general.file_type", o.type == GGML_TYPE_F16 ? 1 : 0);  // LLAMA_FTYPE_MOSTLY_F16 / ALL_F32
    gguf_set_val_u32(g, key("vocab_size").c_str(), uint32_t(n_vocab));
    gguf_set_val_u32(g, key("context_length").c_str(), uint32_t(p.n_ctx));
    gguf_set_val_u32(g, key("embedding_length").c_str(), uint32_t(p.n_embd));
    gguf_set_val_u32(g, key("feed_forward_length").c_str(), uint32_t(p.n_ff));
    gguf_set_val_u32(g, key("block_count").c_str(), uint32_t(p.n_layer));
    gguf_set_val_u32(g, key("attention.head_count").c_str(), uint32_t(p.n_head));
    gguf_set_val_u32(g, key("attention.head_count_kv").c_str(), uint32_t(p.n_head_kv));
    gguf_set_val_u32(g, key("rope.dimension_count").c_str(), uint32_t(n_embd_head));
    gguf_set_val_f32(g, key("rope.freq_base").c_str(), ROPE_FREQ_BASE);
    gguf_set_val_f32(g, key("attention.layer_norm_rms_epsilon").c_str(), RMS_EPS);
    if (moe) {
        gguf_set_val_u32(g, key("expert_count").c_str(), uint32_t(p.n_expert));
        gguf_set_val_u32(g, key("expert_used_count").c_str(), uint32_t(p.n_expert_used));
        gguf_set_val_u32(g, key("expert_feed_forward_length").c_str(), uint32_t(p.n_ff));
        gguf_set_val_u32(g, key("attention.key_length").c_str(), uint32_t(n_embd_head));
        gguf_set_val_u32(g, key("attention.value_length").c_str(), uint32_t(n_embd_head));
    }
    demo_gguf::copy_tokenizer("make-demo-model", g, o.vocab);

    // Tensor descriptors only (no_alloc): the data is generated and written one tensor at a time, so peak
    // memory is one tensor rather than the whole model.
    const size_t n_tensors = 3 + 12 * size_t(p.n_layer);
    ggml_init_params iparams = { ggml_tensor_overhead() * n_tensors, nullptr, /*no_alloc =*/ true };
    ggml_context * ctx = ggml_init(iparams);
    std::vector<tensor_spec> specs;
    auto add = [&](const std::string & tname, ggml_type type, int64_t ne0, int64_t ne1, float mean, float std,
                   int64_t ne2 = 1) {
        ggml_tensor * t = ne1 == 0   ? ggml_new_tensor_1d(ctx, type, ne0)
                          : ne2 == 1 ? ggml_new_tensor_2d(ctx, type, ne0, ne1)
                                     : ggml_new_tensor_3d(ctx, type, ne0, ne1, ne2);
        ggml_set_name(t, tname.c_str());
        gguf_add_tensor(g, t);
        specs.push_back({ t, mean, std });
    };
    // Projections: std 1/sqrt(fan_in) keeps activations O(1) through every layer. Embeddings: std 1, the
    // scale RMS norm expects. Norm weights: near 1 but not exactly, so a backend that ignored them would
    // show. The untied output head makes the vocab projection a real (large) matmul.
    const ggml_type wt = o.type;
    const float s_embd = 1.0f / std::sqrt(float(p.n_embd));
    const float s_ff   = 1.0f / std::sqrt(float(p.n_ff));
    add("token_embd.weight", wt, p.n_embd, n_vocab, 0.0f, 1.0f);
    add("output_norm.weight", GGML_TYPE_F32, p.n_embd, 0, 1.0f, NORM_NOISE_STD);
    add("output.weight", wt, p.n_embd, n_vocab, 0.0f, OUTPUT_STD_SCALE * s_embd);
    for (int64_t il = 0; il < p.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        add(b + "attn_norm.weight",   GGML_TYPE_F32, p.n_embd, 0,         1.0f, NORM_NOISE_STD);
        add(b + "attn_q.weight",      wt,            p.n_embd, n_embd_q,  0.0f, s_embd);
        add(b + "attn_k.weight",      wt,            p.n_embd, n_embd_kv, 0.0f, s_embd);
        add(b + "attn_v.weight",      wt,            p.n_embd, n_embd_kv, 0.0f, s_embd);
        add(b + "attn_output.weight", wt,            n_embd_q, p.n_embd,  0.0f, 1.0f / std::sqrt(float(n_embd_q)));
        add(b + "ffn_norm.weight",    GGML_TYPE_F32, p.n_embd, 0,         1.0f, NORM_NOISE_STD);
        if (!moe) {
            add(b + "ffn_gate.weight", wt, p.n_embd, p.n_ff,   0.0f, s_embd);
            add(b + "ffn_up.weight",   wt, p.n_embd, p.n_ff,   0.0f, s_embd);
            add(b + "ffn_down.weight", wt, p.n_ff,   p.n_embd, 0.0f, s_ff);
            continue;
        }
        // Qwen3's per-head Q and K norms; the router (kept F32 by llama-quantize, as in real MoE GGUFs)
        // with std 1/sqrt(n_embd) gives router logits of std about 1: routing varies from token to token
        // without near-ties everywhere; the experts are shaped as the dense FFN, one matrix per expert.
        add(b + "attn_q_norm.weight",  GGML_TYPE_F32, n_embd_head, 0, 1.0f, NORM_NOISE_STD);
        add(b + "attn_k_norm.weight",  GGML_TYPE_F32, n_embd_head, 0, 1.0f, NORM_NOISE_STD);
        add(b + "ffn_gate_inp.weight", GGML_TYPE_F32, p.n_embd, p.n_expert, 0.0f, s_embd);
        add(b + "ffn_gate_exps.weight", wt, p.n_embd, p.n_ff,   0.0f, s_embd, p.n_expert);
        add(b + "ffn_up_exps.weight",   wt, p.n_embd, p.n_ff,   0.0f, s_embd, p.n_expert);
        add(b + "ffn_down_exps.weight", wt, p.n_ff,   p.n_embd, 0.0f, s_ff,   p.n_expert);
    }

    const int n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<ggml_tensor *> tensors;
    int64_t n_params = 0;
    for (const tensor_spec & s : specs) {
        tensors.push_back(s.t);
        n_params += ggml_nelements(s.t);
    }
    const size_t bytes = demo_gguf::write_file("make-demo-model", g, tensors, o.out,
        [&](size_t i, std::vector<uint8_t> & data) { generate(specs[i], o.seed, i, n_threads, data); });
    const double size_mib = double(bytes) / (1024.0 * 1024.0);
    ggml_free(ctx);
    gguf_free(g);

    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    printf("%s: preset %s, type %s, %.1f M params, %.1f MiB, %.1f s; weights are random (not a trained model)\n",
           o.out.c_str(), p.name, ggml_type_name(o.type), double(n_params) / 1e6, size_mib, secs);
    return 0;
}
