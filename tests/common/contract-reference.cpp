// Built with -ffp-contract=off (tests/CMakeLists.txt): every fp32 operation below is one IEEE single
// operation rounded to nearest even, as the contract defines them; a fused multiply-add would round
// once where the contract rounds twice.
#include "contract-reference.h"

#include "bfp16-reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace xdna_test {

// ---- Scalar formats ----

float half_to_float(uint16_t h) {
    const int exp = (h >> 10) & 31, man = h & 1023;
    double v;
    if (exp == 0) {
        v = std::ldexp(static_cast<double>(man), -24);  // subnormal (or zero)
    } else if (exp == 31) {
        v = man != 0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    } else {
        v = std::ldexp(static_cast<double>(man | 1024), exp - 25);
    }
    return static_cast<float>((h & 0x8000) ? -v : v);  // every half is an fp32 value: exact
}

uint16_t float_to_half(float f) {
    const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const float a = std::fabs(f);
    if (std::isnan(f)) return sign | 0x7E00;
    if (a >= 65520.0f) return sign | 0x7C00;  // 65504 + half an ulp and beyond round to infinity
    if (a < 0x1p-14f) {
        // Subnormal: a multiple of 2^-24. Scaling by 2^24 is exact; a result of 1024 is the smallest
        // normal, which is also its correct encoding.
        return sign | static_cast<uint16_t>(std::nearbyint(a * 0x1p24f));
    }
    int e;
    std::frexp(a, &e);                                                   // a in [2^(e-1), 2^e)
    const float scaled = std::nearbyint(std::ldexp(a, 11 - e));          // 11 significant bits: [1024, 2048]
    const uint32_t bits = (static_cast<uint32_t>(e - 1 + 15) << 10) + (static_cast<uint32_t>(scaled) - 1024);  // 2048 carries
    return sign | static_cast<uint16_t>(bits);
}

float bf16_to_float(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t float_to_bf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // stay a (quiet) NaN
    bits += 0x7FFF + ((bits >> 16) & 1);                                    // round half to even
    return static_cast<uint16_t>(bits >> 16);
}

namespace {

uint16_t load_u16(const uint8_t * p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
float    load_half(const uint8_t * p) { return half_to_float(load_u16(p)); }

// src1 of type `t` holds x rounded to that type; the contract starts from those values.
float round_to_src_type(ggml_type t, float x) {
    switch (t) {
        case GGML_TYPE_F32: return x;
        case GGML_TYPE_F16: return half_to_float(float_to_half(x));
        case GGML_TYPE_BF16: return bf16_to_float(float_to_bf16(x));
        default: throw std::runtime_error("reference: unsupported src1 type");
    }
}

// 6-bit scale and min j (0..7) of a Q4_K / Q5_K super-block's 12 scale bytes: j < 4 in the low 6 bits
// of bytes j and j + 4; j >= 4 as 4 low bits in byte j + 4 (low nibble scale, high nibble min) and
// 2 high bits in the top of bytes j - 4 (scale) and j (min).
void k4_scale_min(const uint8_t * s, int j, int & sc, int & mn) {
    if (j < 4) {
        sc = s[j] & 63;
        mn = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// 6-bit scale j (0..15) of a Q3_K super-block: low 4 bits in byte j (j < 8, low nibble) or j - 8 (high
// nibble), high 2 bits in byte 8 + j % 4 at bit 2 * (j / 4).
int q3k_scale(const uint8_t * s, int j) {
    const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return low | (high << 4);
}

}  // namespace

int reference_act_block(ggml_type t) {
    switch (t) {
        case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1: case GGML_TYPE_Q8_0:
            return 32;
        case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K: case GGML_TYPE_Q6_K:
            return 256;
        case GGML_TYPE_F16: case GGML_TYPE_BF16: case GGML_TYPE_F32:
            return 0;
        default:
            return -1;
    }
}

bool reference_is_quantized(ggml_type t) { return reference_act_block(t) > 0; }

// ---- Activations ----

QuantizedActivations quantize_activations(const float * x, int64_t k, int block) {
    QuantizedActivations a;
    a.block = block;
    a.codes.assign(static_cast<size_t>(k), 0);
    a.scales.assign(static_cast<size_t>(k / block), 0.0f);
    for (int64_t b = 0; b < k / block; ++b) {
        const float * xb = x + b * block;
        float amax = 0.0f;
        bool finite = true;
        for (int i = 0; i < block; ++i) {
            if (!std::isfinite(xb[i])) {
                finite = false;
            } else {
                amax = std::max(amax, std::fabs(xb[i]));
            }
        }
        if (!finite) {  // codes stay 0; the NaN scale carries the non-finite input to the output
            a.scales[b] = std::numeric_limits<float>::quiet_NaN();
            continue;
        }
        a.scales[b] = amax / 127.0f;
        float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        if (std::isinf(id)) id = 0.0f;  // amax below 127 / FLT_MAX: the contract's codes are all 0
        for (int i = 0; i < block; ++i) {
            const float v = std::nearbyint(xb[i] * id);  // fp32 product, rounded half to even
            a.codes[b * block + i] = static_cast<int8_t>(v > 127.0f ? 127 : v < -127.0f ? -127 : v);
        }
    }
    return a;
}

// ---- Weights ----

DecodedBlock decode_block_reference(ggml_type t, const uint8_t * b) {
    using E = DecodedBlock::Epilogue;
    DecodedBlock w;
    switch (t) {
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q4_1: {
            // {d; [m;] qs[16]}: value j in the low nibble of qs[j], value j + 16 in its high nibble.
            const bool has_m = t == GGML_TYPE_Q4_1;
            const uint8_t * qs = b + (has_m ? 4 : 2);
            w.values = w.sub = 32;
            for (int j = 0; j < 16; ++j) {
                w.q[j] = qs[j] & 0xF;
                w.q[j + 16] = qs[j] >> 4;
            }
            if (!has_m) {
                for (int i = 0; i < 32; ++i) w.q[i] -= 8;
            }
            w.scale[0] = 1;
            w.min[0] = has_m ? 1 : 0;
            w.d = load_half(b);
            w.m = has_m ? load_half(b + 2) : 0.0f;
            w.epilogue = has_m ? E::plus_min : E::scale;
            break;
        }
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1: {
            // {d; [m;] qh[4]; qs[16]}: low nibbles as Q4_0; bit i of the little-endian qh is value i's 5th bit.
            const bool has_m = t == GGML_TYPE_Q5_1;
            const uint8_t * qh = b + (has_m ? 4 : 2);
            const uint8_t * qs = qh + 4;
            const uint32_t h = qh[0] | (qh[1] << 8) | (qh[2] << 16) | (static_cast<uint32_t>(qh[3]) << 24);
            w.values = w.sub = 32;
            for (int j = 0; j < 16; ++j) {
                w.q[j] = (qs[j] & 0xF) | (((h >> j) & 1) << 4);
                w.q[j + 16] = (qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4);
            }
            if (!has_m) {
                for (int i = 0; i < 32; ++i) w.q[i] -= 16;
            }
            w.scale[0] = 1;
            w.min[0] = has_m ? 1 : 0;
            w.d = load_half(b);
            w.m = has_m ? load_half(b + 2) : 0.0f;
            w.epilogue = has_m ? E::plus_min : E::scale;
            break;
        }
        case GGML_TYPE_Q8_0: {
            // {d; qs[32] int8}
            w.values = w.sub = 32;
            for (int i = 0; i < 32; ++i) w.q[i] = static_cast<int8_t>(b[2 + i]);
            w.scale[0] = 1;
            w.d = load_half(b);
            w.epilogue = E::scale;
            break;
        }
        case GGML_TYPE_Q2_K: {
            // {scales[16]; qs[64]; d; dmin}. Value v: half n = v / 128, shift 2 * ((v % 128) / 32), byte
            // qs[32 n + v % 32]; sub-block v / 16 with scales[v / 16] = min << 4 | scale.
            const uint8_t * qs = b + 16;
            w.values = 256;
            w.sub = 16;
            for (int v = 0; v < 256; ++v) {
                w.q[v] = (qs[32 * (v / 128) + v % 32] >> (2 * ((v % 128) / 32))) & 3;
            }
            for (int j = 0; j < 16; ++j) {
                w.scale[j] = b[j] & 0xF;
                w.min[j] = b[j] >> 4;
            }
            w.d = load_half(b + 80);
            w.m = load_half(b + 82);
            w.epilogue = E::minus_min;
            break;
        }
        case GGML_TYPE_Q3_K: {
            // {hmask[32]; qs[64]; scales[12]; d}. Low 2 bits as Q2_K; the hmask bit 4 n + (v % 128) / 32
            // of hmask[v % 32] set means "no -4".
            const uint8_t * hm = b;
            const uint8_t * qs = b + 32;
            w.values = 256;
            w.sub = 16;
            for (int v = 0; v < 256; ++v) {
                const int n = v / 128, j = (v % 128) / 32, l = v % 32;
                const int low = (qs[32 * n + l] >> (2 * j)) & 3;
                const int h = (hm[l] >> (4 * n + j)) & 1;
                w.q[v] = (low | (h << 2)) - 4;
            }
            for (int j = 0; j < 16; ++j) w.scale[j] = q3k_scale(b + 96, j) - 32;
            w.d = load_half(b + 108);
            w.epilogue = E::scale;
            break;
        }
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K: {
            // Q4_K {d; dmin; scales[12]; qs[128]}, Q5_K {d; dmin; scales[12]; qh[32]; qs[128]}. Value v:
            // byte qs[32 (v / 64) + v % 32], low nibble for (v % 64) < 32, else high; Q5_K's 5th bit is bit
            // v / 32 of qh[v % 32]. Sub-block v / 32.
            const bool five = t == GGML_TYPE_Q5_K;
            const uint8_t * qh = b + 16;
            const uint8_t * qs = b + (five ? 48 : 16);
            w.values = 256;
            w.sub = 32;
            for (int v = 0; v < 256; ++v) {
                int q = (qs[32 * (v / 64) + v % 32] >> (4 * ((v % 64) / 32))) & 0xF;
                if (five) q |= ((qh[v % 32] >> (v / 32)) & 1) << 4;
                w.q[v] = q;
            }
            for (int j = 0; j < 8; ++j) k4_scale_min(b + 4, j, w.scale[j], w.min[j]);
            w.d = load_half(b);
            w.m = load_half(b + 2);
            w.epilogue = E::minus_min;
            break;
        }
        case GGML_TYPE_Q6_K: {
            // {ql[128]; qh[64]; scales[16] int8; d}. Value v: half n = v / 128, quarter i = (v % 128) / 32,
            // l = v % 32: low 4 bits from ql[64 n + l + 32 (i & 1)] (nibble i >> 1), high 2 bits from
            // qh[32 n + l] at bit 2 i. Sub-block v / 16.
            const uint8_t * ql = b;
            const uint8_t * qh = b + 128;
            w.values = 256;
            w.sub = 16;
            for (int v = 0; v < 256; ++v) {
                const int n = v / 128, i = (v % 128) / 32, l = v % 32;
                const int low = (ql[64 * n + l + 32 * (i & 1)] >> (4 * (i >> 1))) & 0xF;
                const int high = (qh[32 * n + l] >> (2 * i)) & 3;
                w.q[v] = (low | (high << 4)) - 32;
            }
            for (int j = 0; j < 16; ++j) w.scale[j] = static_cast<int8_t>(b[192 + j]);
            w.d = load_half(b + 208);
            w.epilogue = E::scale;
            break;
        }
        default:
            throw std::runtime_error("reference: no quantized contract for this weight type");
    }
    return w;
}

namespace {

// bf16 part of x rounded toward -inf (the rounding mode the kernels run in: a core starts in floor);
// inf and NaN stay.
float bf16_floor(float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    if ((u & 0x7F800000u) != 0x7F800000u && (u >> 31) != 0 && (u & 0xFFFFu) != 0) {
        u += 0x10000u;  // a negative value with bits below bf16: one bf16 step more negative
    }
    u &= 0xFFFF0000u;
    float r;
    std::memcpy(&r, &u, sizeof r);
    return r;
}

}  // namespace

Fp32Multiply contract_fp32_multiply(ggml_type wtype) {
    return (wtype == GGML_TYPE_Q2_K || wtype == GGML_TYPE_Q3_K) ? Fp32Multiply::ieee : Fp32Multiply::aie2p_emulated;
}

float fp32_multiply(float x, float y, Fp32Multiply mode) {
    if (mode == Fp32Multiply::contract) {
        throw std::runtime_error("reference: fp32_multiply needs a concrete mode (contract_fp32_multiply picks one)");
    }
    if (mode == Fp32Multiply::ieee) {
        return x * y;
    }
    // x = a + b + c, y = d + e + f (each difference exact in fp32; github:Xilinx/llvm-aie,
    // clang/lib/Headers/aie2p_vmult.h, aie2p_detail::mul_elem_32_accuracy_*_inner). The nine partial
    // products, each exact as a real number, smallest first: c*f, c*e, b*f, a*f, b*e, c*d, b*d, a*e, a*d.
    const float a = bf16_floor(x), b = bf16_floor(x - a), c = bf16_floor(x - a - b);
    const float d = bf16_floor(y), e = bf16_floor(y - d), f = bf16_floor(y - d - e);
    const float part[2][9] = {{c, c, b, a, b, c, b, a, a}, {f, e, f, f, e, d, d, e, d}};
    float t = part[0][0] * part[1][0];
    for (int i = 1; i < 9; ++i) {
        if (mode == Fp32Multiply::aie2p_safe) {
            const float p = part[0][i] * part[1][i];  // rounded to fp32 (inexact only below the normal range)
            t = t + p;
        } else {
            t = std::fma(part[0][i], part[1][i], t);  // a MAC: one rounding of t + the exact product
        }
    }
    return t;
}

float block_term(const DecodedBlock & w, const int8_t * a, float s, Fp32Multiply mul) {
    int64_t sumi = 0, summ = 0;
    for (int j = 0; j < w.values / w.sub; ++j) {
        int64_t dot = 0, asum = 0;
        for (int i = j * w.sub; i < (j + 1) * w.sub; ++i) {
            dot += static_cast<int64_t>(w.q[i]) * a[i];
            asum += a[i];
        }
        sumi += w.scale[j] * dot;
        summ += w.min[j] * asum;
    }
    // Every contract's sums fit int32 (the largest, Q6_K: 127 * 256 * 32 * 127 < 2^31), so the
    // int64 -> fp32 conversion here rounds exactly as the kernel's int32 -> fp32 does.
    const float p = fp32_multiply(w.d, s, mul);
    switch (w.epilogue) {
        case DecodedBlock::Epilogue::scale:
            return fp32_multiply(p, static_cast<float>(sumi), mul);
        case DecodedBlock::Epilogue::plus_min: {
            const float q = fp32_multiply(w.m, s, mul);
            return fp32_multiply(p, static_cast<float>(sumi), mul) + fp32_multiply(q, static_cast<float>(summ), mul);
        }
        case DecodedBlock::Epilogue::minus_min: {
            const float q = fp32_multiply(w.m, s, mul);
            return fp32_multiply(p, static_cast<float>(sumi), mul) - fp32_multiply(q, static_cast<float>(summ), mul);
        }
    }
    return std::numeric_limits<float>::quiet_NaN();
}

// ---- Whole matmuls ----

namespace {

struct Geometry {
    int64_t ne2, ne3;
    size_t  row_bytes;
    explicit Geometry(const MatmulCase & c)
        : ne2(c.w_ne2 * c.bcast2), ne3(c.w_ne3 * c.bcast3), row_bytes(ggml_row_size(c.wtype, c.k)) {}
    int64_t slices() const { return ne2 * ne3; }
    // The weight matrix slice s multiplies (ggml's broadcast: src1 slice i2 uses matrix i2 / bcast2).
    int64_t matrix(const MatmulCase & c, int64_t s) const {
        const int64_t i2 = s % ne2, i3 = s / ne2;
        return i2 / c.bcast2 + (i3 / c.bcast3) * c.w_ne2;
    }
};

void check_sizes(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x) {
    const Geometry g(c);
    if (w.size() != g.row_bytes * c.m * c.w_ne2 * c.w_ne3 || x.size() != activation_count(c)) {
        throw std::runtime_error("reference: operand sizes do not match the case");
    }
}

std::vector<float> src1_row(const MatmulCase & c, const std::vector<float> & x, int64_t slice, int64_t t) {
    std::vector<float> r(x.begin() + (slice * c.n + t) * c.k, x.begin() + (slice * c.n + t + 1) * c.k);
    for (auto & v : r) v = round_to_src_type(c.xtype, v);
    return r;
}

}  // namespace

std::vector<float> contract_reference_exact(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x,
                                            Fp32Multiply mul) {
    const int ablk = reference_act_block(c.wtype);
    if (ablk <= 0) throw std::runtime_error("reference: not a quantized contract");
    if (mul == Fp32Multiply::contract) mul = contract_fp32_multiply(c.wtype);
    check_sizes(c, w, x);
    const Geometry g(c);
    const size_t bsize = ggml_type_size(c.wtype);
    const int64_t blocks = c.k / ggml_blck_size(c.wtype);
    std::vector<float> out(static_cast<size_t>(c.m * c.n * g.slices()));
    std::vector<DecodedBlock> rows(static_cast<size_t>(c.m * blocks));
    int64_t decoded = -1;
    for (int64_t s = 0; s < g.slices(); ++s) {
        const int64_t mat = g.matrix(c, s);
        if (mat != decoded) {
            for (int64_t r = 0; r < c.m; ++r) {
                for (int64_t b = 0; b < blocks; ++b) {
                    rows[r * blocks + b] = decode_block_reference(c.wtype, w.data() + (mat * c.m + r) * g.row_bytes + b * bsize);
                }
            }
            decoded = mat;
        }
        for (int64_t t = 0; t < c.n; ++t) {
            const std::vector<float> xr = src1_row(c, x, s, t);
            const QuantizedActivations a = quantize_activations(xr.data(), c.k, ablk);
            for (int64_t r = 0; r < c.m; ++r) {
                float acc = 0.0f;
                for (int64_t b = 0; b < blocks; ++b) {  // K order: one act block per weight block
                    acc = acc + block_term(rows[r * blocks + b], a.codes.data() + b * ablk, a.scales[b], mul);
                }
                out[(s * c.n + t) * c.m + r] = acc;
            }
        }
    }
    return out;
}

FloatReference contract_reference_float(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x) {
    if (reference_act_block(c.wtype) != 0) throw std::runtime_error("reference: not a float contract");
    check_sizes(c, w, x);
    const Geometry g(c);
    FloatReference ref;
    ref.value.resize(static_cast<size_t>(c.m * c.n * g.slices()));
    ref.magnitude.resize(ref.value.size());
    std::vector<double> wv(static_cast<size_t>(c.m * c.k));
    std::vector<double> av(static_cast<size_t>(c.k));
    for (int64_t s = 0; s < g.slices(); ++s) {
        const uint8_t * wm = w.data() + g.matrix(c, s) * c.m * g.row_bytes;
        for (int64_t i = 0; i < c.m * c.k; ++i) {
            switch (c.wtype) {
                case GGML_TYPE_F16: wv[i] = half_to_float(load_u16(wm + 2 * i)); break;
                case GGML_TYPE_BF16: wv[i] = bf16_to_float(load_u16(wm + 2 * i)); break;
                default: {
                    float f;
                    std::memcpy(&f, wm + 4 * i, sizeof f);
                    wv[i] = f;
                }
            }
        }
        for (int64_t t = 0; t < c.n; ++t) {
            const std::vector<float> xr = src1_row(c, x, s, t);
            for (int64_t i = 0; i < c.k; ++i) {
                // The contract's activation type is its weight type.
                av[i] = c.wtype == GGML_TYPE_F32 ? xr[i] : round_to_src_type(c.wtype, xr[i]);
            }
            for (int64_t r = 0; r < c.m; ++r) {
                // Products of two fp16 / bf16 / fp32 values are exact in float64 (at most 48 bits).
                double v = 0.0, mag = 0.0;
                for (int64_t i = 0; i < c.k; ++i) {
                    const double p = wv[r * c.k + i] * av[i];
                    v += p;
                    mag += std::fabs(p);
                }
                ref.value[(s * c.n + t) * c.m + r] = v;
                ref.magnitude[(s * c.n + t) * c.m + r] = mag;
            }
        }
    }
    return ref;
}

// The float contracts fix the products, not the order of the fp32 additions, so a kernel's result is
// value + (rounding of its additions). For data of mixed signs (the tests' random data), that error is
// a few units of 2^-24 of the magnitude sum |w_i a_i| whatever K, and grows like sqrt(terms) for
// terms of one sign: the bound is 2^-24 * (32 + 2 sqrt(terms)), with terms = the fp32 partial
// products added: 4 per value for F16 (hi/lo bf16 halves of both operands), 1 for BF16, and for F32
// the 9 bf16 partial products of the emulated multiply (AIE2P has no fp32 multiplier; Peano's
// emulation keeps all nine, aie::mul's `safe` and the 32-lane `fast` the F32 kernel calls alike). For K = 64 ... 4096 the F32 bound is
// 3.3e-6 ... 1.3e-5 of the magnitude; a lost or doubled K tile, or an operand rounded to bf16 where
// the contract keeps fp16 or fp32, errs by far more (see tests/unit/test_contract_reference.cpp).
double float_contract_tolerance(ggml_type wtype, int64_t k) {
    const double u = std::ldexp(1.0, -24);
    switch (wtype) {
        case GGML_TYPE_F16: return u * (32 + 2 * std::sqrt(4.0 * k));
        case GGML_TYPE_BF16: return u * (32 + 2 * std::sqrt(1.0 * k));
        case GGML_TYPE_F32: return u * (32 + 2 * std::sqrt(9.0 * k));
        default: throw std::runtime_error("reference: not a float contract");
    }
}

std::string contract_mismatch(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x,
                              const std::vector<float> & got) {
    std::ostringstream msg;
    size_t bad = 0, worst = 0;
    double worst_err = -1.0;
    if (reference_takes_prefill(c.wtype, c.n)) {
        // The bfp16 prefill contract (bfp16-reference.h): bit for bit too.
        const std::vector<float> want = contract_reference_bfp16(c, w, x);
        if (got.size() != want.size()) return "result size differs from the bfp16 reference";
        for (size_t i = 0; i < want.size(); ++i) {
            if (std::memcmp(&want[i], &got[i], sizeof(float)) == 0 || (std::isnan(want[i]) && std::isnan(got[i]))) continue;
            if (bad++ == 0) worst = i;
        }
        if (bad == 0) return {};
        msg.precision(9);
        msg << bad << " of " << want.size() << " outputs differ from the bfp16 prefill contract value; first: element " << worst
            << " (token " << (worst / c.m) % c.n << ", row " << worst % c.m << ") expected " << want[worst] << " got "
            << got[worst];
        return msg.str();
    }
    if (reference_is_quantized(c.wtype)) {
        const std::vector<float> want = contract_reference_exact(c, w, x);
        if (got.size() != want.size()) return "result size differs from the reference";
        for (size_t i = 0; i < want.size(); ++i) {
            const bool same = std::memcmp(&want[i], &got[i], sizeof(float)) == 0 || (std::isnan(want[i]) && std::isnan(got[i]));
            if (same) continue;
            ++bad;
            const double err = std::isfinite(want[i]) && std::isfinite(got[i])
                                   ? std::fabs(double(want[i]) - got[i]) / std::max(1e-30, std::fabs(double(want[i])))
                                   : std::numeric_limits<double>::infinity();
            if (err > worst_err) {
                worst_err = err;
                worst = i;
            }
        }
        if (bad == 0) return {};
        // Would the other fp32 multiply explain them? (A kernel using the emulated multiply where the
        // contract says IEEE, or the reverse.)
        const Fp32Multiply other = contract_fp32_multiply(c.wtype) == Fp32Multiply::ieee ? Fp32Multiply::aie2p_emulated : Fp32Multiply::ieee;
        const std::vector<float> alt = contract_reference_exact(c, w, x, other);
        size_t explained = 0;
        for (size_t i = 0; i < want.size(); ++i) {
            const bool same_want = std::memcmp(&want[i], &got[i], sizeof(float)) == 0 || (std::isnan(want[i]) && std::isnan(got[i]));
            const bool same_alt = std::memcmp(&alt[i], &got[i], sizeof(float)) == 0 || (std::isnan(alt[i]) && std::isnan(got[i]));
            explained += !same_want && same_alt;
        }
        msg.precision(9);
        msg << bad << " of " << want.size() << " outputs differ from the exact contract value; worst: element " << worst
            << " (token " << (worst / c.m) % c.n << ", row " << worst % c.m << ") expected " << want[worst] << " got "
            << got[worst] << " (relative " << worst_err << "); " << explained << " of the " << bad
            << " equal the formula with " << (other == Fp32Multiply::ieee ? "IEEE" : "the emulated (bf16-part)")
            << " fp32 multiplies instead";
        return msg.str();
    }
    const FloatReference ref = contract_reference_float(c, w, x);
    if (got.size() != ref.value.size()) return "result size differs from the reference";
    const double tol = float_contract_tolerance(c.wtype, c.k);
    for (size_t i = 0; i < ref.value.size(); ++i) {
        if (std::isnan(ref.value[i]) && std::isnan(got[i])) continue;  // a NaN where the reference has one (any sign)
        const double err = std::fabs(ref.value[i] - got[i]) / std::max(ref.magnitude[i], 1e-300);
        if (!(err <= tol)) {  // NaN fails too
            ++bad;
            if (!(err <= worst_err)) {
                worst_err = err;
                worst = i;
            }
        }
    }
    if (bad == 0) return {};
    msg.precision(9);
    msg << bad << " of " << ref.value.size() << " outputs beyond " << tol << " x sum|w a| of the float64 value; worst: element "
        << worst << " expected " << ref.value[worst] << " got " << got[worst] << " (error " << worst_err << " x sum|w a|)";
    return msg.str();
}

namespace {
// One token's outputs against the bfp16 prefill contract (n = 1 evaluates one token exactly as a batch does).
std::string bfp16_row_mismatch(const MatmulCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x,
                               const std::vector<float> & got) {
    const std::vector<float> want = contract_reference_bfp16(c, w, x);
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0 && !(std::isnan(want[i]) && std::isnan(got[i]))) {
            std::ostringstream msg;
            msg.precision(9);
            msg << "row " << i << ": expected " << want[i] << " (bfp16 prefill contract) got " << got[i];
            return msg.str();
        }
    }
    return {};
}
}  // namespace

std::string contract_id_mismatch(const MatmulIdCase & c, const std::vector<uint8_t> & w, const std::vector<float> & x,
                                 const std::vector<int32_t> & ids, const std::vector<float> & got) {
    const size_t mat_bytes = ggml_row_size(c.wtype, c.k) * c.m;
    if (w.size() != mat_bytes * c.n_expert || x.size() != static_cast<size_t>(c.k * c.x_rows() * c.n_tokens) ||
        ids.size() != static_cast<size_t>(c.n_used * c.n_tokens) || got.size() != static_cast<size_t>(c.m * c.n_used * c.n_tokens)) {
        return "operand sizes do not match the case";
    }
    std::string report;
    int bad = 0;
    for (int64_t t = 0; t < c.n_tokens; ++t) {
        for (int64_t e = 0; e < c.n_used; ++e) {
            const int32_t id = ids[t * c.n_used + e];
            const std::vector<uint8_t> we(w.begin() + id * mat_bytes, w.begin() + (id + 1) * mat_bytes);
            const float * xr = x.data() + (t * c.x_rows() + e % c.x_rows()) * c.k;
            const std::vector<float> xe(xr, xr + c.k);
            const float * gr = got.data() + (t * c.n_used + e) * c.m;
            const std::vector<float> ge(gr, gr + c.m);
            // Each row is one token of its expert's matmul, under the contract the whole op took (the
            // bfp16 prefill contract for a prefill ubatch when the backend runs with it).
            const std::string m = reference_takes_prefill(c.wtype, c.n_tokens)
                                      ? bfp16_row_mismatch(MatmulCase{c.wtype, c.k, c.m, 1}, we, xe, ge)
                                      : contract_mismatch(MatmulCase{c.wtype, c.k, c.m, 1}, we, xe, ge);
            if (!m.empty() && bad++ < 3) {
                report += "token " + std::to_string(t) + " slot " + std::to_string(e) + " expert " + std::to_string(id) + ": " +
                          m + "\n";
            }
        }
    }
    if (bad > 3) {
        report += std::to_string(bad) + " rows mismatch in all\n";
    }
    return report;
}

}  // namespace xdna_test
