// Built with -ffp-contract=off (tests/CMakeLists.txt, xdna_test_support): each '+' / '-' below is one
// IEEE fp32 operation rounded to nearest even, as the contract's fp32 accumulator operations are; a
// fused multiply-add would round once where the contract rounds twice.
#include "bfp16-reference.h"

#include <string>

#include <cstdlib>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace xdna_test {

// ---- The bfp16ebs8 block ----

namespace {

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

int exponent_field(float f) { return static_cast<int>((bits_of(f) >> 23) & 0xFF); }

// The signed significand as the conversion sees it: 24 bits with the implicit one for a nonzero
// field, the bare 23 fraction bits for field 0 (zero and subnormals), negated for a set sign.
int64_t signed_significand(float f) {
    const uint32_t u = bits_of(f);
    const int64_t frac = u & 0x7FFFFF;
    const int64_t sig = ((u >> 23) & 0xFF) != 0 ? (frac | (int64_t{1} << 23)) : frac;
    return (u >> 31) != 0 ? -sig : sig;
}

// v / 2^shift rounded to nearest, ties to even, on the two's complement value: the floor quotient and
// the non-negative remainder decide, so -2.5 units becomes -2 and -0.25 becomes 0 (not -1 as floor
// would). |v| < 2^24, so any shift beyond 25 leaves less than a quarter unit: 0.
int64_t shift_round_even(int64_t v, int shift) {
    if (shift > 40) return 0;
    const int64_t unit = int64_t{1} << shift;
    const int64_t q = v >= 0 ? v / unit : -((-v + unit - 1) / unit);  // floor(v / 2^shift)
    const int64_t rem = v - q * unit;                                 // in [0, unit)
    const int64_t half = unit / 2;
    return (rem > half || (rem == half && (q & 1) != 0)) ? q + 1 : q;
}

}  // namespace

RefBfp16Block ref_bfp16_block(const float * x8) {
    RefBfp16Block b;
    int emax = 0;
    for (int i = 0; i < 8; ++i) emax = std::max(emax, exponent_field(x8[i]));
    b.exponent = static_cast<uint8_t>(emax);
    for (int i = 0; i < 8; ++i) {
        // A subnormal shifts as field 0, so it weighs half its IEEE value (the spec's rule, kept).
        const int64_t m = shift_round_even(signed_significand(x8[i]), 17 + (emax - exponent_field(x8[i])));
        // The largest value lands in [64, 128) units before rounding: only it can reach +128, which
        // the core clamps without raising the exponent; -128 is representable and stays.
        b.mantissa[i] = static_cast<int8_t>(std::min<int64_t>(m, 127));
    }
    return b;
}

double ref_bfp16_value(const RefBfp16Block & b, int i) { return std::ldexp(static_cast<double>(b.mantissa[i]), b.exponent - 133); }

float ref_bfp16_block_dot(const RefBfp16Block & a, const RefBfp16Block & w) {
    int32_t sum = 0;  // |sum| <= 8 * 128 * 128 = 2^17: exact
    for (int i = 0; i < 8; ++i) sum += static_cast<int32_t>(a.mantissa[i]) * w.mantissa[i];
    // Exact in double; the conversion to fp32 rounds only outside the fp32 normal range, where the
    // specification leaves the core's behaviour open (this takes IEEE gradual underflow / overflow).
    return static_cast<float>(std::ldexp(static_cast<double>(sum), a.exponent + w.exponent - 266));
}

// ---- On-core dequantization ----

bool bfp16_reference_is_float(ggml_type t) { return t == GGML_TYPE_F16 || t == GGML_TYPE_BF16 || t == GGML_TYPE_F32; }

bool bfp16_reference_supports(ggml_type t) { return bfp16_reference_is_float(t) || bfp16_reference_block_values(t) != 0; }

int bfp16_reference_block_values(ggml_type t) {
    switch (t) {
        case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K: case GGML_TYPE_Q6_K: return 256;
        case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1: case GGML_TYPE_Q8_0: return 32;
        default: return 0;
    }
}

float ref_bfp16_float_weight(ggml_type t, const uint8_t * row, int64_t i) {
    switch (t) {
        case GGML_TYPE_F32: {
            float f;
            std::memcpy(&f, row + 4 * i, 4);
            return f;
        }
        case GGML_TYPE_F16: {
            uint16_t h;
            std::memcpy(&h, row + 2 * i, 2);
            return half_to_float(h);  // exact: every half is an fp32
        }
        case GGML_TYPE_BF16: {
            uint16_t b;
            std::memcpy(&b, row + 2 * i, 2);
            const uint32_t u = static_cast<uint32_t>(b) << 16;  // a bf16 is the top half of its fp32
            float f;
            std::memcpy(&f, &u, 4);
            return f;
        }
        default: throw std::runtime_error("bfp16 reference: not a float weight type");
    }
}

namespace {

float bf16_round(float v) { return bf16_to_float(float_to_bf16(v)); }

// v = hi + lo with hi = bf16(v), lo = bf16(v - hi): the subtraction is exact (hi is v's leading bits).
struct Bf16Pair {
    float hi, lo;
    explicit Bf16Pair(float v) : hi(bf16_round(v)), lo(bf16_round(v - hi)) {}
};

// The unsigned code of value v: the decoder's q[] is unsigned for Q2_K / Q4_K / Q5_K, code - 32 for
// Q6_K, (low | h << 2) - 4 for Q3_K.
int unsigned_code(ggml_type t, const DecodedBlock & db, int v) {
    return t == GGML_TYPE_Q6_K ? db.q[v] + 32 : t == GGML_TYPE_Q3_K ? db.q[v] + 4 : db.q[v];
}

// The offset folded into o: x = 128 + b, the value is b (nb = -128), b - 32 (Q6_K) or b - 4 (Q3_K).
float code_offset(ggml_type t) { return t == GGML_TYPE_Q6_K ? -160.0f : t == GGML_TYPE_Q3_K ? -132.0f : -128.0f; }

}  // namespace

void ref_bfp16_dequant_legacy_block(ggml_type t, const uint8_t * block, float * w32) {
    if (bfp16_reference_block_values(t) != 32) throw std::runtime_error("bfp16 reference: not a legacy weight type");
    const DecodedBlock db = decode_block_reference(t, block);  // fp32(d), fp32(m) exactly; q signed for *_0
    const Bf16Pair d(db.d);
    const Bf16Pair m(db.m);  // 0 for Q4_0, Q5_0, Q8_0
    if (t == GGML_TYPE_Q8_0) {
        // x = q itself (exact in bf16: |q| <= 128): w = x * d_hi + x * d_lo, the first product exact.
        for (int v = 0; v < 32; ++v) {
            const float x = static_cast<float>(db.q[v]);
            float w = x * d.hi;
            w = w + x * d.lo;
            w32[v] = w;
        }
        return;
    }
    // The unsigned code b (Q4: 0..15, Q5: 0..31) and x = 128 + b; the decoder gives q = b - 8 (Q4_0),
    // b - 16 (Q5_0) or b (Q4_1, Q5_1). nb folds 128 and the code's offset: w = d (x + nb) [+ m].
    const bool has_m = t == GGML_TYPE_Q4_1 || t == GGML_TYPE_Q5_1;
    const int offset = t == GGML_TYPE_Q4_0 ? 8 : t == GGML_TYPE_Q5_0 ? 16 : 0;
    const float nb = -128.0f - static_cast<float>(offset);
    float o = d.hi * nb;  // exact
    o = o + d.lo * nb;
    if (has_m) {
        o = o + m.hi;
        o = o + m.lo;
    }
    for (int v = 0; v < 32; ++v) {
        const float x = static_cast<float>(128 + db.q[v] + offset);
        float w = o + x * d.hi;
        w = w + x * d.lo;
        w32[v] = w;
    }
}

void ref_bfp16_dequant_superblock(ggml_type t, const uint8_t * block, float * w256) {
    if (bfp16_reference_block_values(t) != 256) throw std::runtime_error("bfp16 reference: no bfp16 contract for this weight type");
    const DecodedBlock db = decode_block_reference(t, block);  // d, dmin as fp32 (exact), 6-bit / int8 scales
    const Bf16Pair d(db.d);
    const Bf16Pair dmin(db.m);  // 0 for Q6_K and Q3_K, whose m_j are 0 too
    const float nb = code_offset(t);
    for (int j = 0; j < 256 / db.sub; ++j) {
        const float sc = static_cast<float>(db.scale[j]);
        const float mj = static_cast<float>(db.min[j]);
        const float s_hi_part = d.hi * sc;  // bf16 x small integer: exact in fp32
        const float s_lo_part = d.lo * sc;
        const Bf16Pair s(s_hi_part + s_lo_part);
        // o = ((s_hi nb + s_lo nb) - dmin_hi m) - dmin_lo m, each product exact, each step rounded.
        float o = s.hi * nb;
        o = o + s.lo * nb;
        o = o - dmin.hi * mj;
        o = o - dmin.lo * mj;
        for (int v = j * db.sub; v < (j + 1) * db.sub; ++v) {
            // x = 128 + b: a bf16 of exponent 2^7 whose mantissa bits are b; x * s_hi, x * s_lo exact.
            const float x = static_cast<float>(128 + unsigned_code(t, db, v));
            float w = o + x * s.hi;
            w = w + x * s.lo;
            w256[v] = w;
        }
    }
}

// ---- Whole matmul ----

namespace {

// The case's geometry as ggml_mul_mat broadcasts it (slice s of src1 multiplies matrix `matrix(s)`).
struct Bfp16Geometry {
    int64_t ne2, ne3;
    size_t  row_bytes;
    explicit Bfp16Geometry(const MatmulCase & c)
        : ne2(c.w_ne2 * c.bcast2), ne3(c.w_ne3 * c.bcast3), row_bytes(ggml_row_size(c.wtype, c.k)) {}
    int64_t slices() const { return ne2 * ne3; }
    int64_t matrix(const MatmulCase & c, int64_t s) const { return (s % ne2) / c.bcast2 + ((s / ne2) / c.bcast3) * c.w_ne2; }
};

float round_to_src1_type(ggml_type t, float x) {
    switch (t) {
        case GGML_TYPE_F32: return x;
        case GGML_TYPE_F16: return half_to_float(float_to_half(x));
        case GGML_TYPE_BF16: return bf16_to_float(float_to_bf16(x));
        default: throw std::runtime_error("bfp16 reference: unsupported src1 type");
    }
}

int64_t k_blocks(const MatmulCase & c) { return (c.k + 7) / 8; }

// One matrix's weights as bfp16 blocks, [row][k / 8] (float weights: values beyond K are 0).
std::vector<RefBfp16Block> weight_blocks(const MatmulCase & c, const uint8_t * mat, size_t row_bytes) {
    if (bfp16_reference_is_float(c.wtype)) {
        const int64_t kb = k_blocks(c);
        std::vector<RefBfp16Block> out(static_cast<size_t>(c.m * kb));
        std::vector<float> row(static_cast<size_t>(kb * 8), 0.0f);
        for (int64_t r = 0; r < c.m; ++r) {
            for (int64_t i = 0; i < c.k; ++i) row[i] = ref_bfp16_float_weight(c.wtype, mat + r * row_bytes, i);
            for (int64_t b = 0; b < kb; ++b) out[r * kb + b] = ref_bfp16_block(row.data() + 8 * b);
        }
        return out;
    }
    const size_t bsize = ggml_type_size(c.wtype);
    const int bv = bfp16_reference_block_values(c.wtype);  // values per GGUF block: 256 or 32
    std::vector<RefBfp16Block> out(static_cast<size_t>(c.m * (c.k / 8)));
    float w[256];
    for (int64_t r = 0; r < c.m; ++r) {
        for (int64_t sb = 0; sb < c.k / bv; ++sb) {
            if (bv == 256) ref_bfp16_dequant_superblock(c.wtype, mat + r * row_bytes + sb * bsize, w);
            else ref_bfp16_dequant_legacy_block(c.wtype, mat + r * row_bytes + sb * bsize, w);
            for (int i = 0; i < bv / 8; ++i) out[r * (c.k / 8) + sb * (bv / 8) + i] = ref_bfp16_block(w + 8 * i);
        }
    }
    return out;
}

// One token's activations as bfp16 blocks; false when the row holds a NaN or an infinity.
bool activation_blocks(const MatmulCase & c, const float * x, std::vector<RefBfp16Block> & out) {
    std::vector<float> row(static_cast<size_t>(k_blocks(c) * 8), 0.0f);  // values beyond K are 0
    for (int64_t i = 0; i < c.k; ++i) {
        row[i] = round_to_src1_type(c.xtype, x[i]);
        if (!std::isfinite(row[i])) return false;
    }
    out.resize(static_cast<size_t>(k_blocks(c)));
    for (int64_t kb = 0; kb < k_blocks(c); ++kb) out[kb] = ref_bfp16_block(row.data() + 8 * kb);
    return true;
}

}  // namespace

std::vector<float> contract_reference_bfp16(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x) {
    if (!bfp16_reference_supports(c.wtype)) throw std::runtime_error("bfp16 reference: no bfp16 contract for this weight type");
    if (!bfp16_reference_is_float(c.wtype) && c.k % bfp16_reference_block_values(c.wtype) != 0) {
        throw std::runtime_error("bfp16 reference: K is not a whole number of blocks");
    }
    const Bfp16Geometry g(c);
    if (w.size() != g.row_bytes * c.m * c.w_ne2 * c.w_ne3 || x.size() != activation_count(c)) {
        throw std::runtime_error("bfp16 reference: operand sizes do not match the case");
    }
    const int64_t kblocks = k_blocks(c);
    std::vector<float> out(static_cast<size_t>(c.m * c.n * g.slices()));
    std::vector<RefBfp16Block> wb, ab;
    int64_t converted = -1;
    for (int64_t s = 0; s < g.slices(); ++s) {
        const int64_t mat = g.matrix(c, s);
        if (mat != converted) {
            wb = weight_blocks(c, w.data() + mat * c.m * g.row_bytes, g.row_bytes);
            converted = mat;
        }
        for (int64_t t = 0; t < c.n; ++t) {
            float * o = out.data() + (s * c.n + t) * c.m;
            if (!activation_blocks(c, x.data() + (s * c.n + t) * c.k, ab)) {
                std::fill(o, o + c.m, std::numeric_limits<float>::quiet_NaN());  // the host's rule: no NaN in bfp16
                continue;
            }
            for (int64_t r = 0; r < c.m; ++r) {
                float acc = 0.0f;
                for (int64_t kb = 0; kb < kblocks; ++kb) acc = acc + ref_bfp16_block_dot(ab[kb], wb[r * kblocks + kb]);
                o[r] = acc;
            }
        }
    }
    return out;
}

bool reference_takes_prefill(ggml_type wtype, int64_t n_tokens) {
    static const bool on = [] {
        const char * e = std::getenv("GGML_XDNA_PREFILL");
        return e != nullptr && std::string(e) == "bfp16";
    }();
    return on && n_tokens > 4 && bfp16_reference_supports(wtype);
}

}  // namespace xdna_test
