// The legacy-quant core kernels (aie/matmul/kernels/mm_legacy.cc: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 at
// token tiles 4 and 32), run through the simulator's aie_api, against an independent reference: GGUF
// blocks built and read here from ggml-common.h's block layouts, activations quantized here by the
// contract's rule, integer sums in int64, the fp32 epilogue in the contract's order. Their twins
// (src/sim/twins/legacy-twin.cpp) must match the kernel code bit for bit.
//
// The fp32 products: the core has no fp32 multiplier. The kernel calls the 32-lane `fast` fp32
// intrinsic (Peano's bf16-split emulation, which the simulator's aie_api models: host/fp32-emulation.hpp).
// The bit-exact reference therefore multiplies the same way (written here from that algorithm's
// definition); aie::mul's `safe` product must give the same bits on these data, and a comparison
// against IEEE products measures how far both are from the contract's IEEE wording.
#include "aie_api/host/op-counts.hpp"
#include "contracts/tile-codec.h"
#include "ggml.h"
#include "legacy-twin.h"
#include "xdna_aie/matmul_tiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

extern "C" {
void mm_q4_0_a8_n4(const uint8_t *, const uint8_t *, float *);
void mm_q4_0_a8_n32(const uint8_t *, const uint8_t *, float *);
void mm_q4_1_a8_n4(const uint8_t *, const uint8_t *, float *);
void mm_q4_1_a8_n32(const uint8_t *, const uint8_t *, float *);
void mm_q5_0_a8_n4(const uint8_t *, const uint8_t *, float *);
void mm_q5_0_a8_n32(const uint8_t *, const uint8_t *, float *);
void mm_q5_1_a8_n4(const uint8_t *, const uint8_t *, float *);
void mm_q5_1_a8_n32(const uint8_t *, const uint8_t *, float *);
void mm_q8_0_a8_n4(const uint8_t *, const uint8_t *, float *);
void mm_q8_0_a8_n32(const uint8_t *, const uint8_t *, float *);
}

namespace {

namespace abi = xdna_aie;
using KernelFn = void (*)(const uint8_t *, const uint8_t *, float *);

constexpr int kTileK = 256;
constexpr int kRows = abi::kTileM;
constexpr int kKTiles = 2;  // every case accumulates two K tiles into C
constexpr int kK = kTileK * kKTiles;

// ---- GGUF blocks, as ggml-common.h lays them out ----
#pragma pack(push, 1)
struct BlockQ4_0 { uint16_t d; uint8_t qs[16]; };
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[16]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };
#pragma pack(pop)

struct TypeCase {
    const char * name;
    ggml_type type;
    KernelFn n4, n32;
    int block_bytes;
    bool has_min;  // *_1: fp16 m, unsigned codes
    int code_bits;
    int zero;      // code offset of the *_0 types (Q8_0: codes are signed, 0)
};

const TypeCase kTypes[] = {
    {"q4_0", GGML_TYPE_Q4_0, mm_q4_0_a8_n4, mm_q4_0_a8_n32, sizeof(BlockQ4_0), false, 4, 8},
    {"q4_1", GGML_TYPE_Q4_1, mm_q4_1_a8_n4, mm_q4_1_a8_n32, sizeof(BlockQ4_1), true, 4, 0},
    {"q5_0", GGML_TYPE_Q5_0, mm_q5_0_a8_n4, mm_q5_0_a8_n32, sizeof(BlockQ5_0), false, 5, 16},
    {"q5_1", GGML_TYPE_Q5_1, mm_q5_1_a8_n4, mm_q5_1_a8_n32, sizeof(BlockQ5_1), true, 5, 0},
    {"q8_0", GGML_TYPE_Q8_0, mm_q8_0_a8_n4, mm_q8_0_a8_n32, sizeof(BlockQ8_0), false, 8, 0},
};

const TypeCase & type_case(const std::string & name) {
    for (const TypeCase & t : kTypes) {
        if (name == t.name) return t;
    }
    std::abort();
}

KernelFn kernel_of(const TypeCase & tc, int tn) { return tn == 4 ? tc.n4 : tc.n32; }

std::string kernel_name(const TypeCase & tc, int tn) { return std::string("mm_") + tc.name + "_a8_n" + std::to_string(tn); }

// A block's values: codes as GGUF stores them (unsigned 0..15 / 0..31, Q8_0's int8) and its scales.
struct Block {
    int code[32];
    uint16_t d = 0, m = 0;
};

void write_block(const TypeCase & tc, const Block & blk, uint8_t * out) {
    switch (tc.type) {
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q4_1: {
            uint8_t * qs = out + (tc.has_min ? 4 : 2);
            for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(blk.code[j] | (blk.code[j + 16] << 4));
            break;
        }
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1: {
            uint8_t * qh = out + (tc.has_min ? 4 : 2);
            uint8_t * qs = qh + 4;
            uint32_t h = 0;  // bit j: the fifth bit of value j (dequantize_row_q5_0)
            for (int j = 0; j < 32; ++j) h |= static_cast<uint32_t>((blk.code[j] >> 4) & 1) << j;
            std::memcpy(qh, &h, 4);
            for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((blk.code[j] & 15) | ((blk.code[j + 16] & 15) << 4));
            break;
        }
        case GGML_TYPE_Q8_0:
            for (int j = 0; j < 32; ++j) out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(blk.code[j]));
            break;
        default:
            std::abort();
    }
    std::memcpy(out, &blk.d, 2);
    if (tc.has_min) std::memcpy(out + 2, &blk.m, 2);
}

// The values back from GGUF bytes, the other way round (the reference reads what was written).
Block read_block(const TypeCase & tc, const uint8_t * in) {
    Block blk;
    std::memcpy(&blk.d, in, 2);
    if (tc.has_min) std::memcpy(&blk.m, in + 2, 2);
    switch (tc.type) {
        case GGML_TYPE_Q4_0: {
            const auto * b = reinterpret_cast<const BlockQ4_0 *>(in);
            for (int j = 0; j < 16; ++j) blk.code[j] = b->qs[j] & 15, blk.code[j + 16] = b->qs[j] >> 4;
            break;
        }
        case GGML_TYPE_Q4_1: {
            const auto * b = reinterpret_cast<const BlockQ4_1 *>(in);
            for (int j = 0; j < 16; ++j) blk.code[j] = b->qs[j] & 15, blk.code[j + 16] = b->qs[j] >> 4;
            break;
        }
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1: {
            const uint8_t * qh = in + (tc.has_min ? offsetof(BlockQ5_1, qh) : offsetof(BlockQ5_0, qh));
            const uint8_t * qs = in + (tc.has_min ? offsetof(BlockQ5_1, qs) : offsetof(BlockQ5_0, qs));
            uint32_t h;
            std::memcpy(&h, qh, 4);
            for (int j = 0; j < 16; ++j) {
                blk.code[j] = (qs[j] & 15) | static_cast<int>(((h >> j) & 1) << 4);
                blk.code[j + 16] = (qs[j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1) << 4);
            }
            break;
        }
        case GGML_TYPE_Q8_0: {
            const auto * b = reinterpret_cast<const BlockQ8_0 *>(in);
            for (int j = 0; j < 32; ++j) blk.code[j] = b->qs[j];
            break;
        }
        default:
            std::abort();
    }
    return blk;
}

// ---- fp16 and the fp32 products ----

float half_value(uint16_t h) {
    const int e = (h >> 10) & 31, man = h & 1023;
    const float sign = (h & 0x8000) ? -1.0f : 1.0f;
    if (e == 31) return man ? std::numeric_limits<float>::quiet_NaN() : sign * std::numeric_limits<float>::infinity();
    if (e == 0) return sign * std::ldexp(static_cast<float>(man), -24);
    return sign * std::ldexp(static_cast<float>(1024 + man), e - 25);
}

// fp32 -> bfloat16 rounded toward -infinity (the core's conversion mode while it splits operands).
float bf16_down(float x) {
    if (std::isnan(x) || std::isinf(x)) return std::isnan(x) ? std::numeric_limits<float>::quiet_NaN() : x;
    uint32_t u;
    std::memcpy(&u, &x, 4);
    uint32_t t = u & 0xFFFF0000u;
    float f;
    std::memcpy(&f, &t, 4);
    if (f > x) {  // truncation moved a negative value up: one bf16 step further down
        t += 0x10000u;
        std::memcpy(&f, &t, 4);
    }
    return f;
}

// x * y as the kernel's fp32 intrinsic computes it (llvm-aie aie2p_vmult.h mul_elem_32_accuracy_fast):
// x = a + b + c, y = d + e + f (bf16 parts, each a floor of what is left: the kernel runs in the reset
// rounding mode), the nine exact products c*f, c*e, b*f, a*f, b*e, c*d, b*d, a*e, a*d added in that
// order, each with one rounding (a chain of MACs).
float core_mul(float x, float y) {
    const float a = bf16_down(x), b = bf16_down(x - a), c = bf16_down(x - a - b);
    const float d = bf16_down(y), e = bf16_down(y - d), f = bf16_down(y - d - e);
    float t = c * f;
    t = std::fma(c, e, t);
    t = std::fma(b, f, t);
    t = std::fma(a, f, t);
    t = std::fma(b, e, t);
    t = std::fma(c, d, t);
    t = std::fma(b, d, t);
    t = std::fma(a, e, t);
    t = std::fma(a, d, t);
    return t;
}

// aie::mul's default (`safe`): the same nine products, each rounded to fp32, then added.
float safe_mul(float x, float y) {
    const float a = bf16_down(x), b = bf16_down(x - a), c = bf16_down(x - a - b);
    const float d = bf16_down(y), e = bf16_down(y - d), f = bf16_down(y - d - e);
    const float p[9] = {c * f, c * e, b * f, a * f, b * e, c * d, b * d, a * e, a * d};
    float t = p[0];
    for (int i = 1; i < 9; ++i) t = t + p[i];
    return t;
}

float ieee_mul(float x, float y) { return x * y; }

// ---- activations, quantized here by the contract's rule ----

struct RefActs {
    std::vector<int> code;     // [t][k]
    std::vector<float> scale;  // [t][k / 32]
};

RefActs quantize_ref(const std::vector<float> & x, int tn) {
    RefActs r;
    r.code.assign(static_cast<size_t>(tn) * kK, 0);
    r.scale.assign(static_cast<size_t>(tn) * (kK / 32), 0.0f);
    for (int t = 0; t < tn; ++t) {
        for (int blk = 0; blk < kK / 32; ++blk) {
            const float * v = &x[static_cast<size_t>(t) * kK + 32 * blk];
            float amax = 0.0f;
            bool finite = true;
            for (int i = 0; i < 32; ++i) {
                finite = finite && std::isfinite(v[i]);
                amax = std::max(amax, std::fabs(v[i]));
            }
            if (!finite) {
                r.scale[t * (kK / 32) + blk] = std::numeric_limits<float>::quiet_NaN();
                continue;  // codes 0
            }
            r.scale[t * (kK / 32) + blk] = amax / 127.0f;
            const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
            for (int i = 0; i < 32; ++i) {
                const float q = std::nearbyint(v[i] * id);  // round half to even (default mode)
                r.code[static_cast<size_t>(t) * kK + 32 * blk + i] = static_cast<int>(std::min(127.0f, std::max(-127.0f, q)));
            }
        }
    }
    return r;
}

// ---- one test case: weights, activations, tiles ----

struct AlignedBytes {
    std::unique_ptr<uint8_t, void (*)(void *)> p{nullptr, std::free};
    size_t n = 0;
    explicit AlignedBytes(size_t bytes) : p(static_cast<uint8_t *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)), std::free), n(bytes) {
        std::memset(p.get(), 0, (bytes + 63) / 64 * 64);
    }
    uint8_t * data() const { return p.get(); }
};

struct Case {
    const TypeCase * tc;
    int tn;
    std::vector<Block> blocks;         // [row][k / 32]
    std::vector<uint8_t> gguf;         // the same, as GGUF bytes
    std::vector<float> x;              // [t][k], zero beyond the valid tokens and K
    std::vector<float> c0;             // C before the kernel
    std::vector<AlignedBytes> wtiles, atiles;
};

uint16_t to_half(float f) { return ggml_fp32_to_fp16(f); }

// Realistic scales (d of quantized weights ~ amax / 8 .. amax / 127), sometimes an extreme fp16.
uint16_t random_scale(std::mt19937_64 & g, bool min_field, double extreme_rate) {
    static const uint16_t extremes[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0x0200};
    std::uniform_real_distribution<double> u(0.0, 1.0);
    if (u(g) < extreme_rate) return extremes[g() % (sizeof extremes / sizeof extremes[0])];
    const double mag = std::pow(10.0, -4.0 + 3.0 * u(g));  // 1e-4 .. 1e-1
    const double sign = min_field ? (u(g) < 0.8 ? -1.0 : 1.0) : (u(g) < 0.9 ? 1.0 : -1.0);
    return to_half(static_cast<float>(sign * mag * (min_field ? 8.0 : 1.0)));
}

Case make_case(const TypeCase & tc, int tn, uint64_t seed, int valid_tokens, int valid_k, double extreme_rate = 0.03) {
    std::mt19937_64 g(seed);
    Case cs;
    cs.tc = &tc;
    cs.tn = tn;
    const abi::WeightTileFormat & wf = *xdna::tile_format(tc.type);
    EXPECT_EQ(wf.block_bytes, tc.block_bytes);
    EXPECT_EQ(static_cast<size_t>(tc.block_bytes), ggml_type_size(tc.type));
    const int nblk = kK / 32;
    cs.blocks.resize(static_cast<size_t>(kRows) * nblk);
    cs.gguf.resize(cs.blocks.size() * tc.block_bytes);
    for (int r = 0; r < kRows; ++r) {
        for (int b = 0; b < nblk; ++b) {
            Block & blk = cs.blocks[static_cast<size_t>(r) * nblk + b];
            for (int j = 0; j < 32; ++j) {
                const int v = static_cast<int>(g() % (1u << tc.code_bits));
                blk.code[j] = tc.code_bits == 8 ? v - 128 : v;
            }
            blk.d = random_scale(g, false, extreme_rate);
            if (tc.has_min) blk.m = random_scale(g, true, extreme_rate);
            write_block(tc, blk, &cs.gguf[(static_cast<size_t>(r) * nblk + b) * tc.block_bytes]);
        }
    }
    // Activations: normal values with varying per-token magnitude and a few outliers; some all-zero blocks.
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    cs.x.assign(static_cast<size_t>(tn) * kK, 0.0f);
    for (int t = 0; t < valid_tokens; ++t) {
        const float mag = std::pow(10.0f, -2.0f + 4.0f * u(g));
        for (int k = 0; k < valid_k; ++k) {
            float v = mag * normal(g);
            if (u(g) < 0.003f) v *= 30.0f;
            cs.x[static_cast<size_t>(t) * kK + k] = v;
        }
        if (u(g) < 0.2f) {  // a silent block (amax 0: scale 0, codes 0)
            const int b = static_cast<int>(g() % (valid_k / 32 > 0 ? valid_k / 32 : 1));
            for (int k = 32 * b; k < std::min(valid_k, 32 * b + 32); ++k) cs.x[static_cast<size_t>(t) * kK + k] = 0.0f;
        }
    }
    cs.c0.resize(static_cast<size_t>(tn) * kRows);
    for (auto & v : cs.c0) v = normal(g);
    // Tiles, through the project's codec.
    const abi::ActTileFormat af{tn, kTileK, 32};
    for (int kt = 0; kt < kKTiles; ++kt) {
        cs.wtiles.emplace_back(wf.tile_bytes());
        cs.atiles.emplace_back(af.tile_bytes());
        for (int r = 0; r < kRows; ++r) {
            for (int b = 0; b < kTileK / 32; ++b) {
                xdna::encode_block(tc.type, &cs.gguf[(static_cast<size_t>(r) * nblk + kt * 8 + b) * tc.block_bytes], r, b,
                                   cs.wtiles.back().data());
            }
        }
        const int vk = std::max(0, std::min(kTileK, valid_k - kt * kTileK));
        xdna::quantize_activation_tile(cs.x.data() + kt * kTileK, kK, valid_tokens, vk, af, cs.atiles.back().data());
    }
    return cs;
}

std::vector<float> run_tiles(const Case & cs, KernelFn fn) {
    std::vector<float> c(cs.c0);
    std::unique_ptr<float, void (*)(void *)> ca(static_cast<float *>(std::aligned_alloc(64, c.size() * 4)), std::free);
    std::memcpy(ca.get(), c.data(), c.size() * 4);
    for (int kt = 0; kt < kKTiles; ++kt) fn(cs.wtiles[kt].data(), cs.atiles[kt].data(), ca.get());
    std::memcpy(c.data(), ca.get(), c.size() * 4);
    return c;
}

// The reference: integer sums in int64, then the contract's fp32 epilogue with product `mul`.
std::vector<float> reference(const Case & cs, float (*mul)(float, float)) {
    const TypeCase & tc = *cs.tc;
    const RefActs acts = quantize_ref(cs.x, cs.tn);
    const int nblk = kK / 32;
    std::vector<float> c(cs.c0);
    for (int t = 0; t < cs.tn; ++t) {
        for (int r = 0; r < kRows; ++r) {
            float acc = c[static_cast<size_t>(t) * kRows + r];
            for (int b = 0; b < nblk; ++b) {
                const Block blk = read_block(tc, &cs.gguf[(static_cast<size_t>(r) * nblk + b) * tc.block_bytes]);
                int64_t isum = 0, asum = 0;
                for (int j = 0; j < 32; ++j) {
                    const int64_t a = acts.code[static_cast<size_t>(t) * kK + 32 * b + j];
                    isum += (blk.code[j] - tc.zero) * a;
                    asum += a;
                }
                const float sa = acts.scale[static_cast<size_t>(t) * nblk + b];
                const float p = mul(half_value(blk.d), sa);
                if (tc.has_min) {
                    const float q = mul(half_value(blk.m), sa);
                    acc = acc + (mul(p, static_cast<float>(isum)) + mul(q, static_cast<float>(asum)));
                } else {
                    acc = acc + mul(p, static_cast<float>(isum));
                }
            }
            c[static_cast<size_t>(t) * kRows + r] = acc;
        }
    }
    return c;
}

bool same_value(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::memcmp(&a, &b, 4) == 0;
}

// Count of differing elements; the first few are reported.
int compare(const std::vector<float> & want, const std::vector<float> & got, int tn, const std::string & what) {
    int bad = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        if (same_value(want[i], got[i])) continue;
        if (++bad <= 5) {
            ADD_FAILURE() << what << ": token " << i / kRows << " row " << i % kRows << ": want " << want[i] << " got " << got[i]
                          << " (tn " << tn << ")";
        }
    }
    return bad;
}

class LegacyKernel : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

std::string param_name(const ::testing::TestParamInfo<std::tuple<std::string, int>> & info) {
    return std::get<0>(info.param) + "_n" + std::to_string(std::get<1>(info.param));
}

uint64_t base_seed() {
    static const uint64_t s = [] {
        if (const char * e = std::getenv("GGML_XDNA_TEST_SEED")) return static_cast<uint64_t>(std::strtoull(e, nullptr, 10));
        return static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}();
    }();
    return s;
}

// Full tiles: every token and every K value valid.
TEST_P(LegacyKernel, MatchesReference) {
    const TypeCase & tc = type_case(std::get<0>(GetParam()));
    const int tn = std::get<1>(GetParam());
    for (int rep = 0; rep < 3; ++rep) {
        const uint64_t seed = base_seed() + 1000 * rep + 17 * tn + static_cast<uint64_t>(tc.type);
        SCOPED_TRACE("seed " + std::to_string(seed) + " (GGML_XDNA_TEST_SEED=" + std::to_string(base_seed()) + ")");
        const Case cs = make_case(tc, tn, seed, tn, kK);
        EXPECT_EQ(compare(reference(cs, core_mul), run_tiles(cs, kernel_of(tc, tn)), tn, kernel_name(tc, tn)), 0);
    }
}

// Tokens beyond valid_tokens and K beyond valid_k are zeros in the activation tile: those C rows
// receive exactly +-0 terms, the others are exact as before.
TEST_P(LegacyKernel, PartialTokensAndK) {
    const TypeCase & tc = type_case(std::get<0>(GetParam()));
    const int tn = std::get<1>(GetParam());
    const uint64_t seed = base_seed() + 77 + static_cast<uint64_t>(tc.type);
    SCOPED_TRACE("seed " + std::to_string(seed));
    const int valid_tokens = tn == 4 ? 3 : 13;
    const int valid_k = kTileK + 100;  // the second K tile is partly padding
    const Case cs = make_case(tc, tn, seed, valid_tokens, valid_k, 0.0);
    const std::vector<float> got = run_tiles(cs, kernel_of(tc, tn));
    EXPECT_EQ(compare(reference(cs, core_mul), got, tn, kernel_name(tc, tn)), 0);
    // With finite scales the padding tokens' rows keep their values.
    for (int t = valid_tokens; t < tn; ++t) {
        for (int r = 0; r < kRows; ++r) EXPECT_EQ(got[t * kRows + r], cs.c0[t * kRows + r]) << "token " << t << " row " << r;
    }
}

// Scales at the ends of fp16 (zeros, subnormals, the largest finite) in a third of the blocks, and
// infinities and NaNs: non-finite results land where the reference puts them.
TEST_P(LegacyKernel, ExtremeScales) {
    const TypeCase & tc = type_case(std::get<0>(GetParam()));
    const int tn = std::get<1>(GetParam());
    const uint64_t seed = base_seed() + 555 + static_cast<uint64_t>(tc.type);
    SCOPED_TRACE("seed " + std::to_string(seed));
    Case cs = make_case(tc, tn, seed, tn, kK, 0.33);
    EXPECT_EQ(compare(reference(cs, core_mul), run_tiles(cs, kernel_of(tc, tn)), tn, kernel_name(tc, tn)), 0);
    // Now an infinite and a NaN d in row 5, and a NaN m (or d) in row 9.
    const int nblk = kK / 32;
    auto patch = [&](int r, int b, uint16_t d, uint16_t m) {
        Block & blk = cs.blocks[static_cast<size_t>(r) * nblk + b];
        blk.d = d;
        if (tc.has_min) blk.m = m;
        write_block(tc, blk, &cs.gguf[(static_cast<size_t>(r) * nblk + b) * tc.block_bytes]);
        xdna::encode_block(tc.type, &cs.gguf[(static_cast<size_t>(r) * nblk + b) * tc.block_bytes], r, b % 8,
                           cs.wtiles[b / 8].data());
    };
    patch(5, 3, 0x7C00, 0x3C00);
    patch(5, 12, 0xFE01, 0x3C00);
    patch(9, 7, 0x3C00, 0x7E00);
    EXPECT_EQ(compare(reference(cs, core_mul), run_tiles(cs, kernel_of(tc, tn)), tn, kernel_name(tc, tn)), 0);
}

// How far the core's emulated fp32 products put C from IEEE products (the contract's wording):
// a few ulps per block term, never more.
TEST_P(LegacyKernel, CloseToIeeeProducts) {
    const TypeCase & tc = type_case(std::get<0>(GetParam()));
    const int tn = std::get<1>(GetParam());
    const uint64_t seed = base_seed() + 999 + static_cast<uint64_t>(tc.type);
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Case cs = make_case(tc, tn, seed, tn, kK, 0.0);
    const std::vector<float> got = run_tiles(cs, kernel_of(tc, tn));
    const std::vector<float> ieee = reference(cs, ieee_mul);
    // Bound: each of the 16 block terms |p * isum| may be off by ~2^-22 relative (emulated products),
    // then propagated through the sum.
    const RefActs acts = quantize_ref(cs.x, tn);
    int differ = 0;
    double worst = 0.0;
    for (int t = 0; t < tn; ++t) {
        for (int r = 0; r < kRows; ++r) {
            double bound = std::fabs(cs.c0[t * kRows + r]) * 0x1p-23;
            for (int b = 0; b < kK / 32; ++b) {
                const Block blk = read_block(tc, &cs.gguf[(static_cast<size_t>(r) * (kK / 32) + b) * tc.block_bytes]);
                double term = 0.0;
                for (int j = 0; j < 32; ++j) {
                    term += std::fabs(static_cast<double>(blk.code[j] - tc.zero) * half_value(blk.d) *
                                      acts.code[static_cast<size_t>(t) * kK + 32 * b + j]);
                    if (tc.has_min) term += std::fabs(half_value(blk.m) * acts.code[static_cast<size_t>(t) * kK + 32 * b + j]);
                }
                bound += 16.0 * 0x1p-23 * term * acts.scale[static_cast<size_t>(t) * (kK / 32) + b] + 1e-30;
            }
            const double diff = std::fabs(static_cast<double>(got[t * kRows + r]) - ieee[t * kRows + r]);
            differ += diff != 0.0;
            worst = std::max(worst, diff / bound);
            EXPECT_LE(diff, bound) << "token " << t << " row " << r;
        }
    }
    std::printf("[ %s ] %d of %d C elements differ from IEEE-product C; worst |diff| / bound %.3f\n",
                kernel_name(tc, tn).c_str(), differ, tn * kRows, worst);
}

// The twin against the kernel code on random data (and on raw random tile bytes: any fp16 pattern,
// codes -128 included, sums that do not match the codes): memcmp of C, both twin paths.
TEST_P(LegacyKernel, TwinBitIdentical) {
    const TypeCase & tc = type_case(std::get<0>(GetParam()));
    const int tn = std::get<1>(GetParam());
    const xdna::LegacyTwin * twin = xdna::legacy_twin(kernel_name(tc, tn).c_str());
    ASSERT_NE(twin, nullptr);
    const abi::WeightTileFormat & wf = *xdna::tile_format(tc.type);
    const abi::ActTileFormat af{tn, kTileK, 32};
    for (int rep = 0; rep < 12; ++rep) {
        const uint64_t seed = base_seed() + 31 * rep + 7 * tn + static_cast<uint64_t>(tc.type);
        SCOPED_TRACE("seed " + std::to_string(seed));
        Case cs = make_case(tc, tn, seed, tn, kK, 0.05);
        if (rep % 3 == 2) {  // raw bytes: the kernels' ABI promises nothing else about its inputs
            std::mt19937_64 g(seed ^ 0x5eed);
            for (int kt = 0; kt < kKTiles; ++kt) {
                for (size_t i = 0; i < static_cast<size_t>(wf.tile_bytes()); ++i) cs.wtiles[kt].data()[i] = static_cast<uint8_t>(g());
                uint8_t * at = cs.atiles[kt].data();
                for (int i = 0; i < af.codes_bytes() + af.sums_bytes(); ++i) {
                    const int off = i < af.codes_bytes() ? i : af.sums_offset() + (i - af.codes_bytes());
                    at[off] = static_cast<uint8_t>(g());
                }
                auto * sc = reinterpret_cast<float *>(at + af.scales_offset());
                std::normal_distribution<float> n(0.0f, 0.01f);
                for (int i = 0; i < tn * (kTileK / 32); ++i) sc[i] = std::fabs(n(g));
            }
        }
        const std::vector<float> want = run_tiles(cs, kernel_of(tc, tn));
        // Equal bytes; on raw bytes NaN results only need to be NaN, as their payload and sign are
        // not defined (IEEE leaves the choice between two NaN operands open, and compilers swap the
        // operands of commutative float operations).
        const bool raw = rep % 3 == 2;
        const auto identical = [&](const float * got, size_t n, size_t from) {
            if (!raw) return std::memcmp(want.data() + from, got, n * 4) == 0;
            for (size_t i = 0; i < n; ++i) {
                if (!same_value(want[from + i], got[i])) return false;
            }
            return true;
        };
        for (bool scalar : {false, true}) {
            xdna::legacy_twin_force_scalar(scalar);
            const std::vector<float> got = run_tiles(cs, twin->fn);
            EXPECT_TRUE(identical(got.data(), got.size(), 0)) << (scalar ? "portable" : "vectorised") << " path, rep " << rep;
        }
        xdna::legacy_twin_force_scalar(false);
        // The partial form: the valid tokens' rows as the kernel, the others untouched.
        const int valid = tn == 4 ? 2 : 9;  // rounded up to 4 and 12
        const int rounded = (valid + 3) / 4 * 4;
        std::unique_ptr<float, void (*)(void *)> ca(static_cast<float *>(std::aligned_alloc(64, cs.c0.size() * 4)), std::free);
        std::memcpy(ca.get(), cs.c0.data(), cs.c0.size() * 4);
        for (int kt = 0; kt < kKTiles; ++kt) twin->partial(cs.wtiles[kt].data(), cs.atiles[kt].data(), ca.get(), valid);
        EXPECT_TRUE(identical(ca.get(), static_cast<size_t>(rounded) * kRows, 0)) << "partial, rep " << rep;
        EXPECT_EQ(std::memcmp(ca.get() + rounded * kRows, cs.c0.data() + rounded * kRows,
                              static_cast<size_t>(tn - rounded) * kRows * 4),
                  0);
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, LegacyKernel,
                         ::testing::Combine(::testing::Values("q4_0", "q4_1", "q5_0", "q5_1", "q8_0"), ::testing::Values(4, 32)),
                         param_name);

// The kernel's fused products give aie::mul's safe bits: on data without tiny operands the two
// references agree, and the kernel matches both.
TEST_P(LegacyKernel, FusedProductsEqualSafe) {
    const TypeCase & tc = type_case(std::get<0>(GetParam()));
    const int tn = std::get<1>(GetParam());
    const uint64_t seed = base_seed() + 4711 + static_cast<uint64_t>(tc.type);
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Case cs = make_case(tc, tn, seed, tn, kK, 0.0);
    const std::vector<float> got = run_tiles(cs, kernel_of(tc, tn));
    EXPECT_EQ(compare(reference(cs, safe_mul), got, tn, kernel_name(tc, tn) + " vs safe"), 0);
}

TEST(LegacyTwin, Table) {
    int n = 0;
    const xdna::LegacyTwin * all = xdna::legacy_twins(&n);
    EXPECT_EQ(n, 10);
    for (int i = 0; i < n; ++i) EXPECT_EQ(xdna::legacy_twin(all[i].kernel), &all[i]);
    EXPECT_EQ(xdna::legacy_twin("mm_q4_K_a8_n4"), nullptr);
    EXPECT_EQ(xdna::legacy_twin(nullptr), nullptr);
}

// Per-call instruction counts by slot (the host aie_api's counters), and the kernel's and the twin's
// host speed. Informational: printed for the timing model and the program-size estimate.
TEST(LegacyKernelReport, OpCountsAndSpeed) {
    std::printf("%-16s %8s %8s %8s %8s %8s %10s %12s %12s\n", "kernel", "vector", "move", "load", "unpack", "store",
                "mmul", "kernel ns", "twin ns");
    for (const TypeCase & tc : kTypes) {
        for (int tn : {4, 32}) {
            const Case cs = make_case(tc, tn, base_seed() + 4242, tn, kK, 0.0);
            std::unique_ptr<float, void (*)(void *)> ca(static_cast<float *>(std::aligned_alloc(64, cs.c0.size() * 4)), std::free);
            std::memcpy(ca.get(), cs.c0.data(), cs.c0.size() * 4);
            const aie_host::OpCounts before = aie_host::op_counts();
            kernel_of(tc, tn)(cs.wtiles[0].data(), cs.atiles[0].data(), ca.get());
            const aie_host::OpCounts n = aie_host::op_counts() - before;
            uint64_t mmuls = 0;
            for (uint64_t m : n.mmul) mmuls += m;
            // Thread CPU time, best of 3: the host is shared.
            const auto time_ns = [&](KernelFn fn, int reps) {
                double best = 1e300;
                for (int round = 0; round < 3; ++round) {
                    timespec t0, t1;
                    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
                    for (int i = 0; i < reps; ++i) fn(cs.wtiles[i % kKTiles].data(), cs.atiles[i % kKTiles].data(), ca.get());
                    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
                    best = std::min(best, ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / reps);
                }
                return best;
            };
            const double kns = time_ns(kernel_of(tc, tn), tn == 4 ? 10 : 2);
            const double tns = time_ns(xdna::legacy_twin(kernel_name(tc, tn).c_str())->fn, tn == 4 ? 1000 : 100);
            std::printf("%-16s %8llu %8llu %8llu %8llu %8llu %10llu %12.0f %12.0f\n", kernel_name(tc, tn).c_str(),
                        (unsigned long long)n.vector, (unsigned long long)n.move, (unsigned long long)n.load,
                        (unsigned long long)n.unpack, (unsigned long long)n.store, (unsigned long long)mmuls, kns, tns);
            EXPECT_EQ(mmuls, static_cast<uint64_t>(tn / 4) * 4 * 16 * ((tc.code_bits == 4) ? 1 : 2));
        }
    }
}

}  // namespace
