// The tests' own evaluation of the bfp16 prefill contracts (docs/kernels.md, "Prefill contracts v3:
// K-quant weights as bfp16 on the core"), independent of the code under test: the bfp16ebs8 block
// conversion is written here bit by bit from the specification (not from aie/host-aie-api or
// src/contracts), the K-quant blocks are decoded by the tests' GGUF decoder (contract-reference.h),
// and the on-core dequantization follows the specification's operation order, one fp32 rounding per
// '+' / '-'. The result is the contract's fp32 value bit for bit.
#pragma once

#include "contract-reference.h"
#include "ggml.h"

#include <cstdint>
#include <vector>

namespace xdna_test {

// One bfp16ebs8 block: eight two's complement mantissas sharing the exponent byte; value i is
// mantissa[i] * 2^(exponent - 133) (mantissa 64, exponent 127: 1.0).
struct RefBfp16Block {
    uint8_t exponent = 0;
    int8_t  mantissa[8] = {};
};

// Eight fp32 values as one block, as to_v64bfp16ebs8 in conv_even: the exponent is the largest biased
// exponent field; each significand (implicit bit for a nonzero field; a subnormal weighs as field 0),
// negated for a set sign, is shifted right by 17 + (E - e) rounding to nearest, ties to even, and +128
// is clamped to 127. Field 255 (inf, NaN) is an ordinary exponent here.
RefBfp16Block ref_bfp16_block(const float * x8);

// Value i of a block, exactly.
double ref_bfp16_value(const RefBfp16Block & b, int i);

// The exact block dot of the contract as fp32: (sum mA_i mW_i) * 2^(eA + eW - 266).
float ref_bfp16_block_dot(const RefBfp16Block & a, const RefBfp16Block & w);

// Weight types with a bfp16 contract: Q2_K ... Q6_K, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, F16, BF16, F32.
bool bfp16_reference_supports(ggml_type wtype);
bool bfp16_reference_is_float(ggml_type wtype);
// Values per GGUF block of a supported quantized type (256 for the K-quants, 32 for the legacy types); 0 otherwise.
int bfp16_reference_block_values(ggml_type wtype);

// The fp32 weights w of one legacy GGUF block (32 values) as the core dequantizes them (docs/kernels.md,
// "Legacy weights"): hi/lo bf16 parts of d and m, the code as an exact bf16 (128 + b for the 4- and
// 5-bit codes, the int8 code for Q8_0), every '+' one fp32 rounding in the specification's order.
void ref_bfp16_dequant_legacy_block(ggml_type wtype, const uint8_t * block, float * w32);

// Value i of a float weight row (F16 / BF16 / F32) as the fp32 the core converts: exact.
float ref_bfp16_float_weight(ggml_type wtype, const uint8_t * row, int64_t i);

// The fp32 weights w of one GGUF super-block (256 values, ggml's value order) as the core dequantizes
// them: hi/lo bf16 parts of d, dmin and of each sub-block scale s, every '+' / '-' one fp32 rounding.
void ref_bfp16_dequant_superblock(ggml_type wtype, const uint8_t * block, float * w256);

// Whole matmul, the contract's fp32 value bit for bit (any K for float weights: the last block padded
// with zeros; a multiple of 256 for the K-quants): out[slice][n][m] for the same MatmulCase,
// weights (GGUF bytes, [mat][m][row bytes]) and activations ([slice][n][k]) as contract_reference_exact
// (F16 / BF16 src1 rounded to that type first). Per output c = 0.0f, then c = c + D for every block of
// 8 in K order. A token with a NaN or an infinity among its activations has every output NaN.
std::vector<float> contract_reference_bfp16(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x);

// Whether the backend under test computes a batch of `n_tokens` tokens of `wtype` with the bfp16 prefill
// contract: GGML_XDNA_PREFILL=bfp16 in the environment (read once), more than 4 tokens, a type this
// reference has a bfp16 path for. The backend's own rule (src/plan/op-support.cpp), restated here.
bool reference_takes_prefill(ggml_type wtype, int64_t n_tokens);

}  // namespace xdna_test
