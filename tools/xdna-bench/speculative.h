// Modelled decode with speculative decoding (llama.cpp's draft-simple): a draft model proposes gamma
// tokens, the target verifies them in one batch of gamma + 1 tokens. Every figure is MODELLED: the
// matmuls of both models under the timing model (as e2e-model.h: weight matmuls only; attention, norms and
// sampling are not counted), the verify batch at its real token count with logits for every one of its
// tokens, and an acceptance model (each drafted token accepted with probability alpha, independently,
// until the first rejection).
#pragma once

#include "e2e-model.h"
#include "model-dims.h"

#include <cstdio>
#include <string>
#include <vector>

namespace xdna_bench {

// One forward pass of `d` over `tokens` tokens with logits for `head_rows` of them (a verify batch needs
// them for every token): model_phase of a dense model at that head size.
PhaseModel model_pass(const ModelDims & d, const std::string & ftype, const xdna::TimingModel & model, int64_t tokens,
                      int64_t head_rows, Grouping grouping);

// One round of draft-simple as the pinned llama.cpp runs it (common/speculative.cpp): the draft decodes
// the target's last batch (gamma + 1 tokens, logits for its last), then the last accepted token and
// gamma - 1 drafted ones one at a time; the target decodes gamma + 1 tokens with logits for all.
struct SpecRound {
    int    gamma = 0;
    double alpha = 0;
    double tokens = 0;          // expected tokens per round: 1 + alpha + ... + alpha^gamma
    double draft_rate = 0;      // what llama.cpp prints as the acceptance rate: accepted / drafted
    double draft_us = 0;        // the draft's passes of a round
    double verify_us = 0;       // the target's verify pass
    double verify_ratio = 0;    // verify pass / a one-token target pass
    double tokens_per_s = 0;
    double passes_per_token = 0;  // target passes per generated token
};
SpecRound model_round(const ModelDims & target, const ModelDims & draft, const std::string & ftype,
                      const xdna::TimingModel & model, int gamma, double alpha, Grouping grouping);

// The per-token acceptance probability under which gamma drafted tokens give llama.cpp's printed rate
// `rate` (accepted / drafted), every round drafting gamma tokens.
double alpha_from_rate(double rate, int gamma);

// Markdown: the modelled table (target + draft on `preset`) at the published acceptance rates and a sweep.
void print_speculative(FILE * out, const ModelDims & target, const ModelDims & draft, const std::string & ftype,
                       const std::string & preset);

}  // namespace xdna_bench
