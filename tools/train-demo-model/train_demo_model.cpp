// train-demo-model: train a small Llama-architecture model on a text corpus on the CPU, with ggml's own
// training code (ggml-opt: autodiff and AdamW), and write it as a GGUF with llama.cpp's Llama 3 tokenizer.
//
// Why: a random-weight model prints gibberish, so a user cannot tell a working backend from a broken one,
// llama-server's output parsers reject some of what it emits, and its activations are not those of a real
// model. This one is trained in minutes on a CPU, so it can be made on any machine instead of downloaded.
//
// The tokenizer is Llama 3's (128256 tokens) but a small corpus uses a few thousand of them. Training the
// full output layer would spend almost all the time on rows that never get a gradient signal except "be
// unlikely", so the model is trained on the tokens the corpus uses plus one extra class standing for all
// unused tokens, whose logit carries a fixed bias of log(number of unused tokens). When the file is
// written, every unused token gets that class's output row. The model in the file then gives every unused
// token the same logit, and its softmax over the full vocabulary is exactly the one that was trained:
// sum over unused tokens of exp(w_u . h) = N_unused * exp(w_u . h) = exp(w_u . h + log N_unused).
// Unused tokens' input embeddings are zero (never seen in training; RMS norm maps them to zero).
//
// The graph is llama.cpp's Llama graph, op for op (RMS norm, RoPE in llama.cpp's "norm" mode, causal
// softmax attention with scale 1/sqrt(head_dim), SwiGLU FFN, untied output head), so the GGUF needs no
// conversion. tests/e2e/trained-model.sh checks that llama.cpp reads it as trained: llama-perplexity on
// the corpus gives 167 for this model and 309 for one trained with the other RoPE layout (NeoX's).

#include "demo-gguf.h"

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-opt.h"
#include "llama.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

#define die(...) demo_gguf::die("train-demo-model", __VA_ARGS__)

// Model shapes, with as many KV heads as query heads (ggml's backward pass of a broadcast matmul needs a
// batch of 1):
//   target  the demo model: the tiny demo preset's matrix shapes (K = 256 and 768, multiples of every
//           GGUF block), 4 layers
//   draft   its draft model for speculative decoding: the same tokenizer, a quarter of the layers' width
//           squared and half the depth. K = 128 and 384 are not multiples of the K-quants' 256-wide
//           blocks, so llama-quantize gives those matrices its fallback types (Q5_0, Q8_0, ...).
struct shape {
    const char * name;
    int64_t n_embd, n_ff, n_layer, n_head;
};
constexpr shape SHAPES[] = {
    { "target", 256, 768, 4, 4 },
    { "draft", 128, 384, 2, 2 },
};
constexpr float ROPE_FREQ_BASE = 10000.0f;
constexpr float RMS_EPS = 1e-5f;

struct options {
    shape sh = SHAPES[0];
    std::string vocab, out;
    std::vector<std::string> corpus;
    int64_t steps = 400;
    int64_t n_ctx = 128;
    int64_t batch = 4;
    float lr = 3e-3f;
    uint64_t seed = 42;
    int threads = 0;
};

void usage(FILE * f, const char * argv0) {
    fprintf(f,
        "usage: %s --vocab <ggml-vocab-llama-bpe.gguf> --corpus <file> [--corpus <file> ...] --out <file.gguf>\n"
        "          [--shape target|draft] [--steps N] [--ctx N] [--batch N] [--lr X] [--seed N] [--threads N]\n"
        "\n"
        "Trains a small Llama on the corpus and writes an F32 GGUF with the tokenizer of the vocab file.\n"
        "A corpus file is split into documents at lines holding only '%%' (the fortune format), else at\n"
        "blank lines; each document is trained as BOS text EOS. Every 20th document is held out for validation.\n"
        "  --shape   target (default): n_embd %lld, n_ff %lld, %lld layers, %lld heads\n"
        "            draft: n_embd %lld, n_ff %lld, %lld layers, %lld heads (a draft model for speculative decoding)\n"
        "  --steps   optimizer steps (default 400)     --ctx    tokens per sequence (default 128)\n"
        "  --batch   sequences per step (default 4)    --lr     peak AdamW learning rate (default 3e-3)\n"
        "  --seed    seed of initialization and sampling (default 42)\n"
        "  --threads CPU threads (default: all)\n",
        argv0, (long long) SHAPES[0].n_embd, (long long) SHAPES[0].n_ff, (long long) SHAPES[0].n_layer,
        (long long) SHAPES[0].n_head, (long long) SHAPES[1].n_embd, (long long) SHAPES[1].n_ff,
        (long long) SHAPES[1].n_layer, (long long) SHAPES[1].n_head);
}

int64_t parse_int(const std::string & a, const std::string & v, int64_t lo, int64_t hi) {
    char * end = nullptr;
    const long long x = strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || x < lo || x > hi) {
        die("%s expects an integer in [%lld, %lld], got '%s'", a.c_str(), (long long) lo, (long long) hi, v.c_str());
    }
    return x;
}

options parse_args(int argc, char ** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            usage(stdout, argv[0]);
            exit(0);
        }
        if (i + 1 >= argc) {
            usage(stderr, argv[0]);
            die("%s needs a value", a.c_str());
        }
        const std::string v = argv[++i];
        if (a == "--vocab") {
            o.vocab = v;
        } else if (a == "--out") {
            o.out = v;
        } else if (a == "--shape") {
            bool found = false;
            for (const shape & sh : SHAPES) {
                if (v == sh.name) {
                    o.sh = sh;
                    found = true;
                }
            }
            if (!found) {
                die("--shape expects target or draft, got '%s'", v.c_str());
            }
        } else if (a == "--corpus") {
            o.corpus.push_back(v);
        } else if (a == "--steps") {
            o.steps = parse_int(a, v, 1, 1000000);
        } else if (a == "--ctx") {
            o.n_ctx = parse_int(a, v, 8, 4096);
        } else if (a == "--batch") {
            o.batch = parse_int(a, v, 1, 1024);
        } else if (a == "--seed") {
            o.seed = uint64_t(parse_int(a, v, 0, INT64_MAX));
        } else if (a == "--threads") {
            o.threads = int(parse_int(a, v, 1, 1024));
        } else if (a == "--lr") {
            char * end = nullptr;
            o.lr = strtof(v.c_str(), &end);
            if (v.empty() || *end != '\0' || !(o.lr > 0.0f && o.lr < 1.0f)) {
                die("--lr expects a number in (0, 1), got '%s'", v.c_str());
            }
        } else {
            usage(stderr, argv[0]);
            die("unknown argument '%s'", a.c_str());
        }
    }
    if (o.vocab.empty() || o.out.empty() || o.corpus.empty()) {
        usage(stderr, argv[0]);
        die("--vocab, --corpus and --out are required");
    }
    return o;
}

// Documents of a corpus file: fortune-format entries (separated by lines holding only "%"), else paragraphs.
std::vector<std::string> read_documents(const std::string & path) {
    std::ifstream in(path);
    if (!in) {
        die("cannot open corpus file '%s'", path.c_str());
    }
    std::vector<std::string> lines;
    bool fortune = false;
    for (std::string line; std::getline(in, line);) {
        fortune = fortune || line == "%";
        lines.push_back(line);
    }
    std::vector<std::string> docs;
    std::string cur;
    auto flush = [&]() {
        while (!cur.empty() && cur.back() == '\n') {
            cur.pop_back();
        }
        if (!cur.empty()) {
            docs.push_back(cur);
        }
        cur.clear();
    };
    for (const std::string & line : lines) {
        const bool sep = fortune ? line == "%" : line.find_first_not_of(" \t\r") == std::string::npos;
        if (sep) {
            flush();
        } else {
            cur += line;
            cur += '\n';
        }
    }
    flush();
    return docs;
}

std::vector<llama_token> tokenize(const llama_vocab * vocab, const std::string & text) {
    std::vector<llama_token> t(text.size() + 8);
    int n = llama_tokenize(vocab, text.data(), int32_t(text.size()), t.data(), int32_t(t.size()), false, false);
    if (n < 0) {
        t.resize(size_t(-n));
        n = llama_tokenize(vocab, text.data(), int32_t(text.size()), t.data(), int32_t(t.size()), false, false);
    }
    if (n < 0) {
        die("tokenizing failed");
    }
    t.resize(size_t(n));
    return t;
}

// Normal samples from the raw engine (Marsaglia's polar method): the standard fixes mt19937_64's sequence
// but not normal_distribution's algorithm, so this keeps a seed's model the same across standard libraries.
struct normal_source {
    std::mt19937_64 rng;
    explicit normal_source(uint64_t seed) : rng(seed) {}
    float next() {
        constexpr double TWO_POW_M63 = 1.0 / 9223372036854775808.0;
        double a, b, r2;
        do {
            a = double(int64_t(rng())) * TWO_POW_M63;
            b = double(int64_t(rng())) * TWO_POW_M63;
            r2 = a * a + b * b;
        } while (r2 >= 1.0 || r2 == 0.0);
        return float(a * std::sqrt(-2.0 * std::log(r2) / r2));
    }
};

struct layer {
    ggml_tensor *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *gate, *up, *down;
};

struct model {
    ggml_tensor * tok_embd;  // [N_EMBD, n_used]: used tokens only
    ggml_tensor * out_norm;
    ggml_tensor * output;    // [N_EMBD, n_used + 1]: the last row stands for every unused token
    std::vector<layer> layers;
};

struct lr_schedule {
    int64_t step = 0, steps = 1, warmup = 1;
    float peak = 1e-3f;
};

// Linear warm-up, then cosine decay to a tenth of the peak.
ggml_opt_optimizer_params optimizer_params(void * ud) {
    const auto * s = static_cast<const lr_schedule *>(ud);
    ggml_opt_optimizer_params p = ggml_opt_get_default_optimizer_params(nullptr);
    float lr;
    if (s->step < s->warmup) {
        lr = s->peak * float(s->step + 1) / float(s->warmup);
    } else {
        const double t = double(s->step - s->warmup) / double(std::max<int64_t>(1, s->steps - s->warmup));
        lr = s->peak * float(0.1 + 0.9 * 0.5 * (1.0 + std::cos(M_PI * t)));
    }
    p.adamw.alpha = lr;
    p.adamw.beta2 = 0.99f;
    p.adamw.wd = 0.0f;
    return p;
}

}  // namespace

int main(int argc, char ** argv) {
    const options o = parse_args(argc, argv);
    const int64_t N_EMBD = o.sh.n_embd, N_FF = o.sh.n_ff, N_LAYER = o.sh.n_layer, N_HEAD = o.sh.n_head;
    const int64_t HEAD_DIM = N_EMBD / N_HEAD;
    const bool draft = std::string(o.sh.name) == "draft";
    const auto t_start = std::chrono::steady_clock::now();
    auto seconds = [&]() { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(); };

    // --- Tokenize the corpus with llama.cpp's tokenizer (the vocab file, loaded vocabulary-only).
    llama_log_set([](ggml_log_level level, const char * text, void *) {
        if (level >= GGML_LOG_LEVEL_WARN) {
            fputs(text, stderr);
        }
    }, nullptr);
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model * vocab_model = llama_model_load_from_file(o.vocab.c_str(), mp);
    if (!vocab_model) {
        die("cannot load the vocabulary from '%s'", o.vocab.c_str());
    }
    const llama_vocab * vocab = llama_model_get_vocab(vocab_model);
    const int64_t n_vocab = llama_vocab_n_tokens(vocab);
    const llama_token bos = llama_vocab_bos(vocab), eos = llama_vocab_eos(vocab);

    std::vector<std::vector<llama_token>> train_docs, val_docs;
    size_t n_docs = 0, n_bytes = 0;
    for (const std::string & path : o.corpus) {
        for (const std::string & d : read_documents(path)) {
            std::vector<llama_token> t{ bos };
            const std::vector<llama_token> body = tokenize(vocab, d);
            t.insert(t.end(), body.begin(), body.end());
            t.push_back(eos);
            (n_docs % 20 == 19 ? val_docs : train_docs).push_back(std::move(t));
            ++n_docs;
            n_bytes += d.size();
        }
    }
    llama_model_free(vocab_model);
    if (train_docs.empty() || val_docs.empty()) {
        die("the corpus has %zu documents; at least 20 are needed (one in 20 is held out)", n_docs);
    }

    // Compact vocabulary: the tokens the corpus uses, then one class for all others.
    std::vector<int32_t> to_compact(size_t(n_vocab), -1);
    std::vector<llama_token> used;
    for (const auto * set : { &train_docs, &val_docs }) {
        for (const auto & d : *set) {
            for (llama_token t : d) {
                if (to_compact[size_t(t)] < 0) {
                    to_compact[size_t(t)] = 0;
                    used.push_back(t);
                }
            }
        }
    }
    std::sort(used.begin(), used.end());
    for (size_t i = 0; i < used.size(); ++i) {
        to_compact[size_t(used[i])] = int32_t(i);
    }
    const int64_t n_used = int64_t(used.size());
    const int64_t n_class = n_used + 1;
    const float unused_bias = std::log(float(n_vocab - n_used));

    // The training stream: documents back to back. A sequence starts at a document's BOS, so position 0
    // always sees BOS as it does at inference, and runs on into the following documents.
    auto flatten = [](const std::vector<std::vector<llama_token>> & docs, std::vector<int32_t> & stream,
                      std::vector<int64_t> & starts, const std::vector<int32_t> & map) {
        for (const auto & d : docs) {
            starts.push_back(int64_t(stream.size()));
            for (llama_token t : d) {
                stream.push_back(map[size_t(t)]);
            }
        }
    };
    std::vector<int32_t> train_stream, val_stream;
    std::vector<int64_t> train_starts, val_starts;
    flatten(train_docs, train_stream, train_starts, to_compact);
    flatten(val_docs, val_stream, val_starts, to_compact);
    const int64_t n_ctx = o.n_ctx, B = o.batch, T = n_ctx * B;
    if (int64_t(train_stream.size()) < n_ctx + 1 || int64_t(val_stream.size()) < n_ctx + 1) {
        die("the corpus is too small for sequences of %lld tokens", (long long) n_ctx);
    }
    // Starts from which a whole sequence (n_ctx inputs + 1 label) fits in the stream.
    auto usable = [&](std::vector<int64_t> & starts, size_t len) {
        while (!starts.empty() && starts.back() + n_ctx + 1 > int64_t(len)) {
            starts.pop_back();
        }
    };
    usable(train_starts, train_stream.size());
    usable(val_starts, val_stream.size());
    if (train_starts.empty() || val_starts.empty()) {
        die("no document starts a whole sequence of %lld tokens in the %s set", (long long) n_ctx,
            train_starts.empty() ? "training" : "held-out");
    }
    printf("corpus: %zu documents, %zu bytes, %zu training tokens, %zu held out; %lld of %lld tokens used\n",
           n_docs, n_bytes, train_stream.size(), val_stream.size(), (long long) n_used, (long long) n_vocab);

    // --- The model and its inputs: statically allocated on the CPU backend.
    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (!cpu) {
        die("cannot start the CPU backend");
    }
    const int n_threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    ggml_backend_cpu_set_n_threads(cpu, n_threads);

    ggml_init_params sp = { ggml_tensor_overhead() * (16 + 16 * N_LAYER), nullptr, true };
    ggml_context * ctx_static = ggml_init(sp);
    model m;
    std::vector<std::pair<ggml_tensor *, float>> init;  // tensor, std (norm weights: 1 exactly)
    auto param = [&](const char * name, int64_t ne0, int64_t ne1, float std) {
        ggml_tensor * t = ne1 ? ggml_new_tensor_2d(ctx_static, GGML_TYPE_F32, ne0, ne1)
                              : ggml_new_tensor_1d(ctx_static, GGML_TYPE_F32, ne0);
        ggml_set_name(t, name);
        ggml_set_param(t);
        init.push_back({ t, std });
        return t;
    };
    // GPT-2's initialization: std 0.02, residual-branch outputs scaled by 1/sqrt(2 * layers).
    const float s = 0.02f, s_res = s / std::sqrt(2.0f * float(N_LAYER));
    m.tok_embd = param("token_embd", N_EMBD, n_used, s);
    for (int64_t il = 0; il < N_LAYER; ++il) {
        layer L;
        L.attn_norm = param("attn_norm", N_EMBD, 0, -1.0f);
        L.wq = param("attn_q", N_EMBD, N_EMBD, s);
        L.wk = param("attn_k", N_EMBD, N_EMBD, s);
        L.wv = param("attn_v", N_EMBD, N_EMBD, s);
        L.wo = param("attn_output", N_EMBD, N_EMBD, s_res);
        L.ffn_norm = param("ffn_norm", N_EMBD, 0, -1.0f);
        L.gate = param("ffn_gate", N_EMBD, N_FF, s);
        L.up = param("ffn_up", N_EMBD, N_FF, s);
        L.down = param("ffn_down", N_FF, N_EMBD, s_res);
        m.layers.push_back(L);
    }
    m.out_norm = param("output_norm", N_EMBD, 0, -1.0f);
    m.output = param("output", N_EMBD, n_class, s);

    ggml_tensor * tokens = ggml_new_tensor_2d(ctx_static, GGML_TYPE_I32, n_ctx, B);
    ggml_set_name(tokens, "tokens");
    ggml_set_input(tokens);
    ggml_tensor * pos = ggml_new_tensor_1d(ctx_static, GGML_TYPE_I32, n_ctx);
    ggml_set_name(pos, "pos");
    ggml_set_input(pos);
    ggml_tensor * class_bias = ggml_new_tensor_1d(ctx_static, GGML_TYPE_F32, n_class);
    ggml_set_name(class_bias, "class_bias");
    ggml_set_input(class_bias);

    ggml_backend_buffer_t buf_static = ggml_backend_alloc_ctx_tensors(ctx_static, cpu);
    if (!buf_static) {
        die("cannot allocate the model");
    }
    normal_source normal(o.seed);
    for (auto & [t, std] : init) {
        std::vector<float> v(size_t(ggml_nelements(t)));
        for (float & x : v) {
            x = std < 0.0f ? 1.0f : std * normal.next();
        }
        ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
    }
    {
        std::vector<int32_t> p(static_cast<size_t>(n_ctx));
        for (int64_t i = 0; i < n_ctx; ++i) {
            p[size_t(i)] = int32_t(i);
        }
        ggml_backend_tensor_set(pos, p.data(), 0, ggml_nbytes(pos));
        std::vector<float> b(size_t(n_class), 0.0f);
        b.back() = unused_bias;
        ggml_backend_tensor_set(class_bias, b.data(), 0, ggml_nbytes(class_bias));
    }

    // --- The forward graph: llama.cpp's Llama graph for a batch of B sequences.
    ggml_init_params cp = { ggml_tensor_overhead() * 4096 + ggml_graph_overhead_custom(8192, true), nullptr, true };
    ggml_context * ctx = ggml_init(cp);
    const float kq_scale = 1.0f / std::sqrt(float(HEAD_DIM));
    auto rope = [&](ggml_tensor * x) {
        return ggml_rope_ext(ctx, x, pos, nullptr, int(HEAD_DIM), /*mode: LLAMA_ROPE_TYPE_NORM*/ 0, int(n_ctx),
                             ROPE_FREQ_BASE, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
    };
    ggml_tensor * x = ggml_get_rows(ctx, m.tok_embd, ggml_reshape_1d(ctx, tokens, T));  // [N_EMBD, T]
    for (const layer & L : m.layers) {
        ggml_tensor * h = ggml_mul(ctx, ggml_rms_norm(ctx, x, RMS_EPS), L.attn_norm);
        ggml_tensor * q = rope(ggml_reshape_4d(ctx, ggml_mul_mat(ctx, L.wq, h), HEAD_DIM, N_HEAD, n_ctx, B));
        ggml_tensor * k = rope(ggml_reshape_4d(ctx, ggml_mul_mat(ctx, L.wk, h), HEAD_DIM, N_HEAD, n_ctx, B));
        ggml_tensor * v = ggml_reshape_4d(ctx, ggml_mul_mat(ctx, L.wv, h), HEAD_DIM, N_HEAD, n_ctx, B);
        q = ggml_cont(ctx, ggml_permute(ctx, q, 0, 2, 1, 3));                      // [HEAD_DIM, n_ctx, N_HEAD, B]
        k = ggml_cont(ctx, ggml_permute(ctx, k, 0, 2, 1, 3));
        ggml_tensor * vt = ggml_cont(ctx, ggml_permute(ctx, v, 1, 2, 0, 3));       // [n_ctx, HEAD_DIM, N_HEAD, B]
        ggml_tensor * kq = ggml_mul_mat(ctx, k, q);                                 // [n_ctx(k), n_ctx(q), N_HEAD, B]
        kq = ggml_soft_max_ext(ctx, ggml_diag_mask_inf(ctx, kq, 0), nullptr, kq_scale, 0.0f);
        ggml_tensor * kqv = ggml_mul_mat(ctx, vt, kq);                              // [HEAD_DIM, n_ctx, N_HEAD, B]
        kqv = ggml_reshape_2d(ctx, ggml_cont(ctx, ggml_permute(ctx, kqv, 0, 2, 1, 3)), N_EMBD, T);
        x = ggml_add(ctx, x, ggml_mul_mat(ctx, L.wo, kqv));
        h = ggml_mul(ctx, ggml_rms_norm(ctx, x, RMS_EPS), L.ffn_norm);
        ggml_tensor * g = ggml_silu(ctx, ggml_mul_mat(ctx, L.gate, h));
        ggml_tensor * u = ggml_mul_mat(ctx, L.up, h);
        x = ggml_add(ctx, x, ggml_mul_mat(ctx, L.down, ggml_mul(ctx, g, u)));
    }
    x = ggml_mul(ctx, ggml_rms_norm(ctx, x, RMS_EPS), m.out_norm);
    ggml_tensor * logits = ggml_add(ctx, ggml_mul_mat(ctx, m.output, x), class_bias);  // [n_class, T]
    ggml_set_name(logits, "logits");
    ggml_set_output(logits);

    ggml_backend_t backends[] = { cpu };
    ggml_backend_sched_t sched = ggml_backend_sched_new(backends, nullptr, 1, 16384, false, true);
    lr_schedule sched_lr;
    sched_lr.steps = o.steps;
    sched_lr.warmup = std::max<int64_t>(1, o.steps / 20);
    sched_lr.peak = o.lr;
    ggml_opt_params op = ggml_opt_default_params(sched, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY);
    op.ctx_compute = ctx;
    op.inputs = tokens;
    op.outputs = logits;
    op.get_opt_pars = optimizer_params;
    op.get_opt_pars_ud = &sched_lr;
    ggml_opt_context_t opt = ggml_opt_init(op);

    // One batch: B sequences from random document starts (sampled) or consecutive starts (validation).
    std::mt19937_64 pick(o.seed ^ 0x9e3779b97f4a7c15ull);
    std::vector<int32_t> tok(static_cast<size_t>(T));
    std::vector<float> onehot(size_t(n_class * T));
    auto load_batch = [&](const std::vector<int32_t> & stream, const std::vector<int64_t> & starts, int64_t first) {
        std::fill(onehot.begin(), onehot.end(), 0.0f);
        for (int64_t b = 0; b < B; ++b) {
            const int64_t s0 = first < 0 ? starts[size_t(pick() % starts.size())]
                                         : starts[size_t((first + b) % int64_t(starts.size()))];
            for (int64_t i = 0; i < n_ctx; ++i) {
                tok[size_t(b * n_ctx + i)] = stream[size_t(s0 + i)];
                onehot[size_t((b * n_ctx + i) * n_class + stream[size_t(s0 + i + 1)])] = 1.0f;
            }
        }
        ggml_backend_tensor_set(tokens, tok.data(), 0, ggml_nbytes(tokens));
        ggml_backend_tensor_set(ggml_opt_labels(opt), onehot.data(), 0, onehot.size() * sizeof(float));
    };
    auto evaluate = [&]() {
        ggml_opt_result_t r = ggml_opt_result_init();
        const int64_t n_batches = std::max<int64_t>(1, int64_t(val_starts.size()) / B);
        for (int64_t i = 0; i < n_batches; ++i) {
            ggml_opt_alloc(opt, false);
            load_batch(val_stream, val_starts, i * B);
            ggml_opt_eval(opt, r);
        }
        double loss = 0.0;
        ggml_opt_result_loss(r, &loss, nullptr);
        ggml_opt_result_free(r);
        return loss;
    };

    printf("model: n_embd %lld, n_ff %lld, %lld layers, %lld heads, ctx %lld; %lld sequences per step, %lld steps, %d threads\n",
           (long long) N_EMBD, (long long) N_FF, (long long) N_LAYER, (long long) N_HEAD, (long long) n_ctx,
           (long long) B, (long long) o.steps, n_threads);
    printf("step %5d: held-out loss %.3f (the untrained model)\n", 0, evaluate());
    fflush(stdout);
    ggml_opt_result_t r = ggml_opt_result_init();
    for (int64_t step = 0; step < o.steps; ++step) {
        sched_lr.step = step;
        ggml_opt_alloc(opt, true);
        load_batch(train_stream, train_starts, -1);
        ggml_opt_eval(opt, r);
        if ((step + 1) % 100 == 0 && step + 1 < o.steps) {
            double loss = 0.0;
            ggml_opt_result_loss(r, &loss, nullptr);
            ggml_opt_result_reset(r);
            printf("step %5lld: training loss %.3f, held-out %.3f, %.0f s\n", (long long) (step + 1), loss,
                   evaluate(), seconds());
            fflush(stdout);
        }
    }
    ggml_opt_result_free(r);
    const double val_loss = evaluate();
    printf("held-out loss %.3f, perplexity %.1f (per token, over the %lld used tokens and the unused class)\n",
           val_loss, std::exp(val_loss), (long long) n_used);

    // --- Write the GGUF: hyper-parameters, llama.cpp's tokenizer, weights with the full vocabulary.
    gguf_context * g = gguf_init_empty();
    gguf_set_val_str(g, "general.architecture", "llama");
    gguf_set_val_str(g, "general.name", draft ? "ggml-xdna demo draft (trained on fortunes)"
                                              : "ggml-xdna demo (trained on fortunes)");
    gguf_set_val_str(g, "general.description",
                     draft ? "The draft model of ggml-xdna's demo model for speculative decoding: a smaller Llama "
                             "trained the same way, on the same corpus, with the same tokenizer."
                           : "A small Llama trained in minutes on a CPU by ggml-xdna's train-demo-model, for demos and tests.");
    gguf_set_val_u32(g, "general.file_type", 0);  // LLAMA_FTYPE_ALL_F32
    gguf_set_val_u32(g, "llama.vocab_size", uint32_t(n_vocab));
    gguf_set_val_u32(g, "llama.context_length", uint32_t(n_ctx));
    gguf_set_val_u32(g, "llama.embedding_length", uint32_t(N_EMBD));
    gguf_set_val_u32(g, "llama.feed_forward_length", uint32_t(N_FF));
    gguf_set_val_u32(g, "llama.block_count", uint32_t(N_LAYER));
    gguf_set_val_u32(g, "llama.attention.head_count", uint32_t(N_HEAD));
    gguf_set_val_u32(g, "llama.attention.head_count_kv", uint32_t(N_HEAD));
    gguf_set_val_u32(g, "llama.rope.dimension_count", uint32_t(HEAD_DIM));
    gguf_set_val_f32(g, "llama.rope.freq_base", ROPE_FREQ_BASE);
    gguf_set_val_f32(g, "llama.attention.layer_norm_rms_epsilon", RMS_EPS);
    demo_gguf::copy_tokenizer("train-demo-model", g, o.vocab);

    ggml_init_params wp = { ggml_tensor_overhead() * (8 + 12 * N_LAYER), nullptr, true };
    ggml_context * wctx = ggml_init(wp);
    std::vector<ggml_tensor *> out_tensors;
    std::vector<ggml_tensor *> sources;  // the trained tensor behind each written one
    auto add = [&](const std::string & name, ggml_tensor * src, int64_t ne1) {
        ggml_tensor * t = ne1 ? ggml_new_tensor_2d(wctx, GGML_TYPE_F32, src->ne[0], ne1)
                              : ggml_new_tensor_1d(wctx, GGML_TYPE_F32, src->ne[0]);
        ggml_set_name(t, name.c_str());
        gguf_add_tensor(g, t);
        out_tensors.push_back(t);
        sources.push_back(src);
    };
    add("token_embd.weight", m.tok_embd, n_vocab);
    add("output_norm.weight", m.out_norm, 0);
    add("output.weight", m.output, n_vocab);
    for (int64_t il = 0; il < N_LAYER; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        const layer & L = m.layers[size_t(il)];
        add(b + "attn_norm.weight", L.attn_norm, 0);
        add(b + "attn_q.weight", L.wq, N_EMBD);
        add(b + "attn_k.weight", L.wk, N_EMBD);
        add(b + "attn_v.weight", L.wv, N_EMBD);
        add(b + "attn_output.weight", L.wo, N_EMBD);
        add(b + "ffn_norm.weight", L.ffn_norm, 0);
        add(b + "ffn_gate.weight", L.gate, N_FF);
        add(b + "ffn_up.weight", L.up, N_FF);
        add(b + "ffn_down.weight", L.down, N_EMBD);
    }
    const size_t bytes = demo_gguf::write_file("train-demo-model", g, out_tensors, o.out,
        [&](size_t i, std::vector<uint8_t> & data) {
            ggml_tensor * src = sources[i];
            std::vector<float> w(size_t(ggml_nelements(src)));
            ggml_backend_tensor_get(src, w.data(), 0, ggml_nbytes(src));
            if (src != m.tok_embd && src != m.output) {
                data.resize(w.size() * sizeof(float));
                memcpy(data.data(), w.data(), data.size());
                return;
            }
            // Full-vocabulary rows: used tokens from their compact rows; unused ones zero (embedding) or the
            // unused class's row (output).
            std::vector<float> full(size_t(N_EMBD * n_vocab), 0.0f);
            for (int64_t t = 0; t < n_vocab; ++t) {
                const int32_t c = to_compact[size_t(t)];
                const int64_t row = c >= 0 ? c : (src == m.output ? n_used : -1);
                if (row >= 0) {
                    memcpy(&full[size_t(t * N_EMBD)], &w[size_t(row * N_EMBD)], N_EMBD * sizeof(float));
                }
            }
            data.resize(full.size() * sizeof(float));
            memcpy(data.data(), full.data(), data.size());
        });
    printf("%s: %.1f MiB, trained in %.0f s\n", o.out.c_str(), double(bytes) / (1024.0 * 1024.0), seconds());

    ggml_opt_free(opt);
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
    ggml_free(wctx);
    gguf_free(g);
    ggml_backend_buffer_free(buf_static);
    ggml_free(ctx_static);
    ggml_backend_free(cpu);
    return 0;
}
