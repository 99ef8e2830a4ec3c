// Two models and two contexts in one process on one XDNA device (the simulator), as an application
// serving two models would run them: each context generates greedily from its own thread, at the same
// time as the other. Each context's computation is the same whether the other runs or not (same graphs,
// same batches), so every generated token must equal what that model generates alone: any difference
// means the two contexts interfered (shared scratch, plans, profiler or device state).
//
// usage: test-two-models <libggml-cpu.so> <libggml-xdna.so> <model A.gguf> <model B.gguf>
#include "ggml-backend.h"
#include "llama.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::vector<llama_token> generate(llama_context * ctx, const std::string & prompt, int n_new) {
    const llama_vocab * vocab = llama_model_get_vocab(llama_get_model(ctx));
    llama_memory_clear(llama_get_memory(ctx), true);
    std::vector<llama_token> tokens(prompt.size() + 8);
    const int n = llama_tokenize(vocab, prompt.c_str(), static_cast<int32_t>(prompt.size()), tokens.data(),
                                 static_cast<int32_t>(tokens.size()), true, false);
    if (n <= 0) {
        return {};
    }
    tokens.resize(n);
    std::vector<llama_token> out;
    llama_batch batch = llama_batch_get_one(tokens.data(), n);
    llama_token next = 0;
    const int n_vocab = llama_vocab_n_tokens(vocab);
    for (int i = 0; i < n_new; ++i) {
        if (llama_decode(ctx, batch) != 0) {
            out.push_back(-1);  // a failed decode: never equal to a real run
            return out;
        }
        const float * logits = llama_get_logits_ith(ctx, -1);
        next = 0;
        for (int t = 1; t < n_vocab; ++t) {
            if (logits[t] > logits[next]) {
                next = t;
            }
        }
        out.push_back(next);
        batch = llama_batch_get_one(&next, 1);
    }
    return out;
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s <libggml-cpu.so> <libggml-xdna.so> <model A> <model B>\n", argv[0]);
        return 2;
    }
    if (ggml_backend_load(argv[1]) == nullptr || ggml_backend_load(argv[2]) == nullptr) {
        std::fprintf(stderr, "cannot load the backends\n");
        return 1;
    }
    llama_backend_init();
    llama_model * models[2] = {};
    llama_context * ctxs[2] = {};
    for (int i = 0; i < 2; ++i) {
        models[i] = llama_model_load_from_file(argv[3 + i], llama_model_default_params());
        if (models[i] == nullptr) {
            std::fprintf(stderr, "cannot load %s\n", argv[3 + i]);
            return 1;
        }
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 256;
        cp.n_batch = 64;
        cp.n_ubatch = 64;
        cp.n_threads = 1;
        cp.n_threads_batch = 1;
        ctxs[i] = llama_init_from_model(models[i], cp);
        if (ctxs[i] == nullptr) {
            std::fprintf(stderr, "cannot make a context for %s\n", argv[3 + i]);
            return 1;
        }
    }
    // Prompts long enough for a prefill batch (32-token tiles) followed by decode steps (4-token tiles).
    const std::string prompts[2] = {
        "Once upon a time, in a land of rivers and hills, a small robot learned to count the stars one by one",
        "The quick brown fox jumps over the lazy dog while the cat watches from the warm kitchen window sill"};
    const int n_new = 12;
    std::vector<llama_token> alone[2];
    for (int i = 0; i < 2; ++i) {
        alone[i] = generate(ctxs[i], prompts[i], n_new);
    }
    int failures = 0;
    for (int round = 0; round < 3; ++round) {
        std::vector<llama_token> together[2];
        std::thread a([&] { together[0] = generate(ctxs[0], prompts[0], n_new); });
        std::thread b([&] { together[1] = generate(ctxs[1], prompts[1], n_new); });
        a.join();
        b.join();
        for (int i = 0; i < 2; ++i) {
            if (together[i] != alone[i] || together[i].size() != static_cast<size_t>(n_new)) {
                std::fprintf(stderr, "FAIL: model %c, round %d: tokens generated concurrently differ from alone\n",
                             'A' + i, round);
                ++failures;
            }
        }
    }
    std::printf("model A tokens:");
    for (llama_token t : alone[0]) std::printf(" %d", t);
    std::printf("\nmodel B tokens:");
    for (llama_token t : alone[1]) std::printf(" %d", t);
    std::printf("\n");
    for (int i = 0; i < 2; ++i) {
        llama_free(ctxs[i]);
        llama_model_free(models[i]);
    }
    llama_backend_free();
    if (failures == 0) {
        std::printf("two models, two contexts, 3 concurrent rounds: every token equal to the model run alone\n");
    }
    return failures == 0 ? 0 : 1;
}
