// The tests' own evaluation of the matmul contracts (docs/kernels.md, "Numerics"), independent of the
// code under test: it decodes GGUF blocks with its own bit extraction (ggml-common.h layouts, the value
// order of ggml's dequantize_row_*), quantizes activations with its own code, forms every integer sum
// exactly and applies the fp32 epilogue in the documented order. It calls no ggml-cpu function, no
// ggml to_float, nothing of src/contracts (the tile codec, the activation quantizer).
//
// Quantized contracts: the result is the contract's fp32 value bit for bit, so a kernel is checked
// for equality, not within a tolerance. Float contracts (F16, BF16, F32): products are exact (or, for
// F32, emulated to within a bound) but the kernel's accumulation order is its own, so the reference
// gives the float64 value and the magnitude that bounds any fp32 summation error.
#pragma once

#include "ggml.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xdna_test {

struct MatmulCase {
    ggml_type wtype;
    int64_t   k, m, n;
    int64_t   w_ne2 = 1, w_ne3 = 1;    // weight matrices
    int64_t   bcast2 = 1, bcast3 = 1;  // activation slices per weight matrix
    ggml_type xtype = GGML_TYPE_F32;
};

// Number of activation floats a case needs ([slice][n][k]).
inline size_t activation_count(const MatmulCase & c) {
    return static_cast<size_t>(c.k * c.n * c.w_ne2 * c.bcast2 * c.w_ne3 * c.bcast3);
}

// Weight types the reference knows, with the values per activation scale of their contract
// (32 for Q4_0 ... Q8_0, 256 for the K-quants, 0 for the float contracts; -1: unknown type).
int  reference_act_block(ggml_type wtype);
bool reference_is_quantized(ggml_type wtype);

// ---- Building blocks (exposed for the reference's own unit tests) ----

// IEEE half / bfloat16 <-> fp32, round to nearest even (written here, not ggml's).
float    half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float    bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);

// Activations of a quantized contract for one token: per block of `block` values,
//   amax = max |x|; s = amax / 127; id = amax > 0 ? 127 / amax : 0; code = clamp(rint(x * id), +-127),
// and s = NaN with codes 0 when the block holds a NaN or an infinity.
struct QuantizedActivations {
    int                 block = 0;
    std::vector<int8_t> codes;   // one per value
    std::vector<float>  scales;  // one per block
};
QuantizedActivations quantize_activations(const float * x, int64_t k, int block);

// One GGUF block as the contract multiplies it. Per value the integer the kernel's dot uses
// (code - 8 for Q4_0, the unsigned code for Q4_1 / Q4_K, (low | h << 2) - 4 for Q3_K, ...), per
// sub-block the integer scale and min, and the block's fp16 fields as fp32.
struct DecodedBlock {
    enum class Epilogue {
        scale,       // c + p * float(sumi)
        plus_min,    // c + (p * float(sumi) + q * float(summ))    (Q4_1, Q5_1)
        minus_min,   // c + (p * float(sumi) - q * float(summ))    (Q4_K, Q5_K, Q2_K)
    };
    int      values = 0;     // 32 or 256
    int      sub = 0;        // values per sub-block (32 or 16)
    int      q[256] = {};
    int      scale[16] = {}; // sub-block integer scales (1 for the 32-blocks)
    int      min[16] = {};   // sub-block integer mins (0 without)
    float    d = 0.0f;       // fp32(d)
    float    m = 0.0f;       // fp32(m) or fp32(dmin); 0 without
    Epilogue epilogue = Epilogue::scale;
};
DecodedBlock decode_block_reference(ggml_type wtype, const uint8_t * block);

// How the epilogue's fp32 multiplies round (docs/kernels.md, "Numerics of the fp32 products"). AIE2P
// has no fp32 multiplier: the kernels' fp32 products are Peano's emulation from bf16 parts (each
// operand split toward -inf, the rounding mode the kernels run in, into three bf16 parts; all nine
// partial products, each exact, added smallest first with one rounding per add), within an ulp of the
// IEEE product but not always equal to it, and NaN for an infinite operand. The kernels call the
// 32-lane form whose adds are MACs (aie2p_emulated); aie::mul's `safe` form first rounds each
// partial product to fp32 and then adds (aie2p_safe): the same value unless a partial product falls
// below the normal range. The contracts use aie2p_emulated, except Q2_K and Q3_K, whose kernel forms
// correctly rounded products from integer significand products. `contract` picks the contract's
// choice per weight type.
enum class Fp32Multiply { ieee, aie2p_emulated, aie2p_safe, contract };
Fp32Multiply contract_fp32_multiply(ggml_type wtype);
float fp32_multiply(float x, float y, Fp32Multiply mode);

// The fp32 term one block adds to c (the contract's epilogue for one 32-block or super-block),
// from its exact integer sums: sumi = sum_j scale_j * sum_{i in j} q_i a_i, summ = sum_j min_j * sum a.
float block_term(const DecodedBlock & w, const int8_t * a, float s, Fp32Multiply mul);

// ---- Whole matmuls: out[slice][n][m], as ggml_mul_mat lays out its result ----

// Quantized contracts: the exact fp32 result. Per output, c = 0.0f, then c = c + term for every block
// in K order. Activations first take the case's src1 type (F16 / BF16 src1 are rounded to it).
std::vector<float> contract_reference_exact(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x,
                                            Fp32Multiply mul = Fp32Multiply::contract);

// Float contracts: the float64 sum of the exact products of the contract's operands (weights as stored,
// activations rounded to the contract's type), and per output the sum of |products|.
struct FloatReference {
    std::vector<double> value;
    std::vector<double> magnitude;
};
FloatReference contract_reference_float(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x);

// Bound on |kernel - value| / magnitude for a float contract of depth k (why: the .cpp).
double float_contract_tolerance(ggml_type wtype, int64_t k);

// Checks `got` against the reference: bit-exact equality for quantized contracts (NaN matches NaN),
// |got - value| <= tolerance * magnitude for float ones. Empty when it matches, else a description of
// the mismatches (count, worst element, expected vs got, and how many of them the other fp32 multiply
// mode would explain).
std::string contract_mismatch(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x,
                              const std::vector<float> & got);

// ---- MUL_MAT_ID (mixture of experts) ----

// dst[token][slot][m] = W[ids[token][slot]] x x[token][slot % x_rows]: each output row is the n = 1
// contract of its expert's matrix and its activation row. Weights [expert][m][k bytes], activations
// [token][x_rows][k], ids [token][n_used] (any values in [0, n_expert), repeats allowed).
struct MatmulIdCase {
    ggml_type wtype;
    int64_t   k, m, n_expert, n_used, n_tokens;
    bool      broadcast = false;  // x_rows = 1 instead of n_used
    int64_t   x_rows() const { return broadcast ? 1 : n_used; }
};

// Empty when every row of `got` matches the contract (contract_mismatch on each row, routed here by
// the reference's own loop over ids), else the first mismatching rows with their (token, slot, expert).
std::string contract_id_mismatch(const MatmulIdCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x,
                                 const std::vector<int32_t> & ids, const std::vector<float> & got);

}  // namespace xdna_test
