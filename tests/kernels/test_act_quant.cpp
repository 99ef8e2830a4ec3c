// The act_quant core program (aie/act_quant/kernels/act_quant.cc) and the simulator's act_quant engine
// against a reference written here from the numerics the kernel states (amax, s and id by IEEE
// division, codes as rint of the core's safe product, clamped; exact 16-code sums), laid out with the
// ABI's index functions; and against the host's quantizer (src/contracts/tile-codec.cpp), which
// multiplies with a correctly rounded product: the same tiles but for codes one step apart where
// x * id lies within an ulp or two of a half-integer.
#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"
#include "contracts/tile-codec.h"
#include "core-fp32-reference.h"
#include "ops/act_quant/act-quant-invocation.h"
#include "ops/act_quant/sim-act-quant.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "test-random.h"
#include "act-quant-twin.h"
#include "xdna_aie/matmul_tiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <iterator>
#include <string>
#include <vector>

namespace {

constexpr int kTK = 256;

// The tile of tokens [nt * TN, nt * TN + TN) and K values [kt * 256, +256) of x (n rows, k values
// each, row-major), as the kernel states it; rows past n are zeros.
std::vector<uint8_t> reference_tile(const std::vector<float> & x, int64_t n, int64_t k, int tn, int ab, int64_t nt,
                                    int64_t kt) {
    const xdna_aie::ActTileFormat f{tn, kTK, ab};
    std::vector<uint8_t> tile(static_cast<size_t>(f.tile_bytes()), 0);
    auto * codes = reinterpret_cast<int8_t *>(tile.data() + f.codes_offset());
    auto * scales = reinterpret_cast<float *>(tile.data() + f.scales_offset());
    auto * sums = reinterpret_cast<int16_t *>(tile.data() + f.sums_offset());
    for (int t = 0; t < tn; ++t) {
        const int64_t row = nt * tn + t;
        for (int b = 0; b < kTK / ab; ++b) {
            float v[256] = {};
            uint32_t amax_bits = 0;
            for (int i = 0; i < ab; ++i) {
                v[i] = row < n ? x[row * k + kt * kTK + b * ab + i] : 0.0f;
                uint32_t u;
                const float a = std::fabs(v[i]);
                std::memcpy(&u, &a, 4);
                amax_bits = std::max(amax_bits, u);
            }
            const bool finite = amax_bits < 0x7F800000u;
            float amax;
            const uint32_t used = finite ? amax_bits : 0;
            std::memcpy(&amax, &used, 4);
            float id = amax > 0 ? 127.0f / amax : 0.0f;
            if (std::isinf(id)) id = 0.0f;
            scales[f.scale_index(t, b)] = finite ? amax / 127.0f : std::numeric_limits<float>::quiet_NaN();
            for (int i = 0; i < ab; i += 16) {
                int sum = 0;
                for (int j = 0; j < 16; ++j) {
                    const float p = xdna_test::safe_mul(v[i + j], id);
                    float r = std::nearbyint(p);  // round to nearest even (the default mode)
                    if (std::isnan(r)) r = 0.0f;
                    const int c = static_cast<int>(std::fmax(-127.0f, std::fmin(127.0f, r)));
                    codes[f.code_index(t, b * ab + i + j)] = static_cast<int8_t>(c);
                    sum += c;
                }
                sums[f.sum_index(t, (b * ab + i) / 16)] = static_cast<int16_t>(sum);
            }
        }
    }
    return tile;
}

struct Case {
    int     tile_n, block;
    int64_t n, k;
};

// Run one act_quant invocation through the engine (the kernel code) into a fresh buffer.
std::vector<uint8_t> engine_tiles(const std::vector<float> & x, const xdna::ActivationLayout & L,
                                  xdna::SimExec exec = xdna::SimExec::kernels) {
    using namespace xdna;
    xdna_test::HostBuffer xb(x.size() * 4), tb(L.total_bytes);
    std::memcpy(xb.host_ptr(), x.data(), x.size() * 4);
    std::memset(tb.host_ptr(), 0xA5, L.total_bytes);  // every byte must be written
    const ActQuantInvocation a = act_quant_invocation(L, {&xb, 0}, L.k, {&tb, 0});
    ThreadPool pool(2);
    const Status st = sim_run_act_quants({to_invocation(a)}, pool, exec);
    EXPECT_TRUE(st.ok) << st.message;
    const auto * p = static_cast<const uint8_t *>(tb.host_ptr());
    return std::vector<uint8_t>(p, p + L.total_bytes);
}

xdna::ActivationLayout layout_for(const Case & c) {
    const xdna::MatmulContract * mc =
        xdna::matmul_contract_for(c.block == 32 ? GGML_TYPE_Q8_0 : GGML_TYPE_Q4_K);
    return xdna::make_activation_layout(*mc, c.k, c.k, c.n, c.tile_n);
}

const Case kCases[] = {{4, 256, 1, 256}, {4, 256, 3, 1024}, {4, 32, 4, 512}, {4, 32, 9, 256},
                       {32, 256, 17, 512}, {32, 32, 32, 256}, {32, 256, 40, 256}};

}  // namespace

// Every byte of every tile, codes, scales, sums and plane padding, is the stated numerics'.
TEST(ActQuantKernel, TilesAreTheStatedNumerics) {
    for (const Case & c : kCases) {
        std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.n * c.k), 3.0f);
        // A NaN, an infinity, an all-zero block and a tiny block among them.
        if (c.n * c.k > 300) {
            x[7] = std::numeric_limits<float>::quiet_NaN();
            x[c.k + 40] = -std::numeric_limits<float>::infinity();
            for (int i = 0; i < 32; ++i) x[static_cast<size_t>((c.n - 1) * c.k) + i] = 0.0f;
            for (int i = 32; i < 64; ++i) x[static_cast<size_t>((c.n - 1) * c.k) + i] *= 1e-38f;
        }
        const xdna::ActivationLayout L = layout_for(c);
        ASSERT_TRUE(xdna::act_quant_takes(L));
        const std::vector<uint8_t> got = engine_tiles(x, L);
        for (int64_t nt = 0; nt < L.n_tiles; ++nt) {
            for (int64_t kt = 0; kt < L.k_tiles; ++kt) {
                const std::vector<uint8_t> want = reference_tile(x, c.n, c.k, c.tile_n, c.block, nt, kt);
                const uint8_t * g = got.data() + L.tile_offset(nt, kt);
                for (size_t i = 0; i < want.size(); ++i) {
                    ASSERT_EQ(g[i], want[i]) << "tile_n " << c.tile_n << " block " << c.block << " n " << c.n << " k " << c.k
                                             << ": tile (" << nt << ", " << kt << ") byte " << i << " (seed "
                                             << xdna_test::test_seed() << ")";
                }
            }
        }
    }
}

// Against the host's quantizer: scales and the padding identical; codes (and their sums) identical
// except where the correctly rounded product and the core's differ across a rounding boundary, which
// happens for few values, each one step apart.
TEST(ActQuantKernel, MatchesTheHostQuantizerButForNearTies) {
    int64_t values = 0, differing = 0;
    for (const Case & c : kCases) {
        const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.n * c.k), 3.0f);
        const xdna::ActivationLayout L = layout_for(c);
        const std::vector<uint8_t> got = engine_tiles(x, L);
        std::vector<uint8_t> host(L.total_bytes);
        std::vector<float> scratch(static_cast<size_t>(L.k_pad));
        ggml_tensor t{};
        t.type = GGML_TYPE_F32;
        t.ne[0] = c.k;
        t.ne[1] = c.n;
        t.ne[2] = t.ne[3] = 1;
        t.nb[0] = 4;
        t.nb[1] = static_cast<size_t>(c.k) * 4;
        t.nb[2] = t.nb[3] = t.nb[1] * c.n;
        t.data = const_cast<float *>(x.data());
        xdna::quantize_activation_rows(&t, 0, 0, L, 0, L.n_pad, host.data(), scratch.data(), nullptr);
        const xdna_aie::ActTileFormat f = L.quant_tile();
        for (int64_t tile = 0; tile < L.n_tiles * L.k_tiles; ++tile) {
            const uint8_t * a = got.data() + tile * L.tile_bytes;
            const uint8_t * b = host.data() + tile * L.tile_bytes;
            ASSERT_EQ(0, std::memcmp(a + f.scales_offset(), b + f.scales_offset(), f.scales_bytes())) << "scales";
            for (int i = 0; i < f.codes_bytes(); ++i) {
                const int d = static_cast<int8_t>(a[i]) - static_cast<int8_t>(b[i]);
                ASSERT_LE(std::abs(d), 1) << "code " << i;
                differing += d != 0;
                ++values;
            }
        }
    }
    EXPECT_LE(differing * 10000, values) << differing << " of " << values << " codes differ from the host's";
}

// Exact ties round to even (the fp32 add of 1.5 * 2^23), not half toward zero as the core's float to
// int conversion does: with amax 127 the inverse scale is 1 and x itself is the product.
TEST(ActQuantKernel, TiesRoundToEven) {
    std::vector<float> x(256, 0.0f);
    x[0] = 127.0f;
    const float ties[] = {0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, -3.5f, 126.5f};
    const int want[] = {0, 2, 2, 4, 0, -2, -2, -4, 126};
    for (int i = 0; i < 9; ++i) x[1 + i] = ties[i];
    const xdna::ActivationLayout L = layout_for({4, 256, 1, 256});
    const std::vector<uint8_t> got = engine_tiles(x, L);
    const xdna_aie::ActTileFormat f = L.quant_tile();
    for (int i = 0; i < 9; ++i) {
        EXPECT_EQ(static_cast<int8_t>(got[f.codes_offset() + f.code_index(0, 1 + i)]), want[i]) << "x = " << ties[i];
    }
}

// The twins the simulator runs by default give the kernel code's tiles byte for byte, on every path
// this host has: random activations, values over the whole fp32 range, near-ties of the rounding,
// blocks with NaN, infinities, zeros, subnormals and a largest value whose 127 / amax overflows.
TEST(ActQuantKernel, TwinsAreBitIdenticalToTheKernelCode) {
    using namespace xdna;
    for (const Case & c : kCases) {
        std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(c.n * c.k), 3.0f);
        const size_t n = x.size();
        for (size_t i = 0; i < n; i += 5) x[i] = std::ldexp(xdna_test::uniform(-2.0f, 2.0f), static_cast<int>(i % 280) - 150);
        for (size_t i = 1; i < n; i += 7) x[i] = std::nearbyint(x[i] * 100.0f) / 100.0f + 0.5f;  // near half-integers after scaling
        const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 1e-45f, 1e-40f};
        for (size_t i = 0; i < std::size(specials) && 97 * i + 3 < n; ++i) x[97 * i + 3] = specials[i];
        if (n >= 512) {
            for (size_t i = 256; i < 288; ++i) x[i] = 0.0f;      // an all-zero block
            for (size_t i = 288; i < 320; ++i) x[i] = 1e-42f;    // 127 / amax overflows
        }
        const ActivationLayout L = layout_for(c);
        const std::vector<uint8_t> want = engine_tiles(x, L, SimExec::kernels);
        std::vector<TwinIsa> paths{TwinIsa::portable};
        if (act_quant_twin_isa() == TwinIsa::avx512) paths.push_back(TwinIsa::avx512);
        for (const TwinIsa isa : paths) {
            act_quant_twin_limit_isa(isa);
            const std::vector<uint8_t> got = engine_tiles(x, L, SimExec::twin);
            act_quant_twin_limit_isa(TwinIsa::avx512);
            ASSERT_EQ(got.size(), want.size());
            for (size_t i = 0; i < want.size(); ++i) {
                ASSERT_EQ(got[i], want[i]) << twin_isa_name(isa) << ": tile_n " << c.tile_n << " block " << c.block << " n " << c.n
                                           << " k " << c.k << ": byte " << i << " (seed " << xdna_test::test_seed() << ")";
            }
        }
    }
}

namespace {

// x as an F32 tensor of n rows of k values, for the host's quantizer.
ggml_tensor f32_rows(const std::vector<float> & x, int64_t n, int64_t k) {
    ggml_tensor t{};
    t.type = GGML_TYPE_F32;
    t.ne[0] = k;
    t.ne[1] = n;
    t.ne[2] = t.ne[3] = 1;
    t.nb[0] = 4;
    t.nb[1] = static_cast<size_t>(k) * 4;
    t.nb[2] = t.nb[3] = t.nb[1] * n;
    t.data = const_cast<float *>(x.data());
    return t;
}

}  // namespace

// The bfp16 variant (act_quant_bfp16_n32, the tiles of the prefill contracts v3) makes the host
// encoder's tiles byte for byte (src/contracts/bfp16-codec.h, code of its own that reproduces the core's
// accfloat -> bfp16ebs8 conversion in conv_even): every block, the flag bytes and their padding, on
// random rows and rows that reach the format's corners (one large value among small ones, zeros,
// subnormals, huge and tiny exponents, values that round up past the mantissa), and on rows with a NaN or
// an infinity, whose flags must be set in the K tile that holds it and in no other.
TEST(ActQuantKernel, Bfp16TilesAreTheHostEncodersWithTheirFlags) {
    const xdna::MatmulContract * q4k = xdna::prefill_contract_for(GGML_TYPE_Q4_K);
    ASSERT_NE(q4k, nullptr);
    ASSERT_EQ(q4k->act_format, xdna::ActFormat::bfp16);
    const int64_t n = 45, k = 768;
    std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(n * k), 3.0f);
    for (int64_t i = 0; i < k; ++i) {
        x[1 * k + i] = i % 37 == 0 ? 1.0e4f : x[1 * k + i] * 1e-3f;                    // one large value per block or so
        x[2 * k + i] = i % 3 == 0 ? 0.0f : std::ldexp(x[2 * k + i], -140);             // subnormals and zeros
        x[3 * k + i] = std::ldexp(x[3 * k + i], i % 2 ? 120 : -120);                   // huge and tiny exponents
        x[4 * k + i] = (i % 8 == 0 ? 1.0f : 0.0f) + (i % 8 == 1 ? 0.99999994f : 0.0f);  // rounds up to the clamp
    }
    x[10 * k + 5] = std::numeric_limits<float>::quiet_NaN();         // K tile 0
    x[20 * k + 300] = std::numeric_limits<float>::infinity();        // K tile 1 (TN 64: K half 2)
    x[33 * k + 700] = -std::numeric_limits<float>::infinity();       // K tile 2 (TN 64: K half 5), second token tile at TN 32
    // TN 32, and TN 64, where the tiles are K halves (act_quant_bfp16_k128_n64).
    for (const int tn : {32, 64}) {
        SCOPED_TRACE(testing::Message() << "TN " << tn);
        const xdna::ActivationLayout L = xdna::make_activation_layout(*q4k, k, k, n, tn);
        ASSERT_EQ(L.tile_k, tn == 64 ? 128 : 256);
        ASSERT_TRUE(xdna::act_quant_takes(L));
        const std::vector<uint8_t> got = engine_tiles(x, L);
        std::vector<uint8_t> host(L.total_bytes, 0x5A);
        std::vector<float> scratch(static_cast<size_t>(L.k_pad));
        const ggml_tensor t = f32_rows(x, n, k);
        std::vector<int64_t> bad;
        xdna::quantize_activation_rows(&t, 0, 0, L, 0, L.n_pad, host.data(), scratch.data(), &bad);
        EXPECT_EQ(bad, (std::vector<int64_t>{10, 20, 33}));
        const xdna_aie::BlockActTileFormat f{tn, L.tile_k};
        ASSERT_EQ(static_cast<size_t>(f.tile_bytes()), L.tile_bytes);
        int nonzero = 0;
        for (int64_t nt = 0; nt < L.n_tiles; ++nt) {
            for (int64_t kt = 0; kt < L.k_tiles; ++kt) {
                const size_t off = L.tile_offset(nt, kt);
                for (int i = 0; i < f.tile_bytes(); ++i) {
                    ASSERT_EQ(got[off + i], host[off + i]) << "tile (" << nt << ", " << kt << ") byte " << i;
                    nonzero += i < f.flags_offset() && got[off + i] != 0;
                }
                for (int tok = 0; tok < tn; ++tok) {
                    const int64_t row = nt * tn + tok;
                    const bool flagged = (row == 10 && kt == 5 / L.tile_k) || (row == 20 && kt == 300 / L.tile_k) ||
                                         (row == 33 && kt == 700 / L.tile_k);
                    EXPECT_EQ(got[off + f.flags_offset() + tok], flagged ? 1 : 0) << "row " << row << " K tile " << kt;
                }
            }
        }
        EXPECT_GT(nonzero, static_cast<int>(L.total_bytes / 2));  // real blocks, not zeros
    }
}

// Every contract's activation layout is taken at its token tiles when K is whole tiles: the a8, bfp16
// (K tiles 256, 128, 64) and float (F16, BF16, F32) formats; a K of a partial tile is not.
TEST(ActQuantKernel, TakesEveryContractsLayoutOfWholeTiles) {
    for (ggml_type t : {GGML_TYPE_Q4_K, GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_F32}) {
        const xdna::MatmulContract * c = xdna::matmul_contract_for(t);
        const xdna::MatmulContract * p = xdna::prefill_contract_for(t);
        ASSERT_TRUE(c != nullptr && p != nullptr) << ggml_type_name(t);
        for (int tn : {4, 32}) EXPECT_TRUE(xdna::act_quant_takes(xdna::make_activation_layout(*c, 512, 512, 40, tn))) << c->name << " " << tn;
        EXPECT_TRUE(xdna::act_quant_takes(xdna::make_activation_layout(*p, 512, 512, 40, 32))) << p->name;
        if (t == GGML_TYPE_Q4_K) {  // 64 tokens: A in K halves, each a tile of its own
            EXPECT_TRUE(xdna::act_quant_takes(xdna::make_activation_layout(*p, 512, 512, 40, 64))) << p->name;
        }
        EXPECT_FALSE(xdna::act_quant_takes(xdna::make_activation_layout(*p, 300, 512, 40, 32))) << p->name;
    }
}

// The F16, BF16 and F32 tiles of the float contracts and the bfp16 tiles of the float prefill contracts
// (K tiles 128 and 64) are the host's byte for byte (src/contracts/tile-codec.cpp: ggml_fp32_to_fp16 and
// ggml_fp32_to_bf16; bfp16-codec.h), on random rows and rows at the conversions' corners: F16 overflow
// to inf from 65520 up, its subnormals and their ties, BF16 ties to even, fp32 subnormals, zeros of both
// signs, infinities, and NaNs (an F16 NaN compared as a NaN: the host's F16C conversion keeps a NaN's top
// payload bits, ggml's portable one and the core make 0x7E00).
TEST(ActQuantKernel, FloatAndBfp16TilesOfTheFloatContractsAreTheHosts) {
    const int64_t n = 37, k = 256;
    std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(n * k), 3.0f);
    const float corners[] = {65504.0f, 65519.0f, 65520.0f, 70000.0f, -1e9f, 6.1e-5f, 5.96e-8f, 2.98e-8f, 8.9e-8f, 1.0e-6f,
                             0.0f, -0.0f, 1e-40f, -3e-39f, std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(), 1.0f + 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-7f, 1.0f + 0x1p-11f,
                             1.0f + 0x1p-11f + 0x1p-10f, 3.4028235e38f};
    for (size_t i = 0; i < std::size(corners); ++i) {
        for (int64_t r = 1; r < 4; ++r) x[r * k + i * 5 + r] = corners[i] * (r == 2 ? -1.0f : 1.0f);
    }
    uint32_t nan_bits = 0x7FD12345u;
    std::memcpy(&x[5 * k + 3], &nan_bits, 4);
    x[6 * k + 100] = std::numeric_limits<float>::quiet_NaN();
    const ggml_tensor t = f32_rows(x, n, k);
    struct Layout {
        const xdna::MatmulContract * c;
        int tn;
    };
    const Layout layouts[] = {{xdna::matmul_contract_for(GGML_TYPE_F16), 4},    {xdna::matmul_contract_for(GGML_TYPE_F16), 32},
                              {xdna::matmul_contract_for(GGML_TYPE_BF16), 4},   {xdna::matmul_contract_for(GGML_TYPE_BF16), 32},
                              {xdna::matmul_contract_for(GGML_TYPE_F32), 4},    {xdna::matmul_contract_for(GGML_TYPE_F32), 32},
                              {xdna::prefill_contract_for(GGML_TYPE_F16), 32},  {xdna::prefill_contract_for(GGML_TYPE_F32), 32}};
    for (const Layout & lay : layouts) {
        SCOPED_TRACE(lay.c->name + std::string(" TN ") + std::to_string(lay.tn));
        const xdna::ActivationLayout L = xdna::make_activation_layout(*lay.c, k, k, n, lay.tn);
        ASSERT_TRUE(xdna::act_quant_takes(L));
        const std::vector<uint8_t> got = engine_tiles(x, L);
        std::vector<uint8_t> host(L.total_bytes, 0x5A);
        std::vector<float> scratch(static_cast<size_t>(L.k_pad));
        xdna::quantize_activation_rows(&t, 0, 0, L, 0, L.n_pad, host.data(), scratch.data(), nullptr);
        int differing = 0;
        for (size_t i = 0; i < L.total_bytes; i += 2) {
            uint16_t a, b;
            std::memcpy(&a, &got[i], 2);
            std::memcpy(&b, &host[i], 2);
            const bool f16_nans = L.format == xdna::ActFormat::f16 && (a & 0x7C00) == 0x7C00 && (a & 0x3FF) != 0 &&
                                  (b & 0x7C00) == 0x7C00 && (b & 0x3FF) != 0;
            if (a != b && !f16_nans) {
                ADD_FAILURE() << "byte " << i << ": core 0x" << std::hex << a << " host 0x" << b;
                if (++differing > 5) return;
            }
        }
    }
}
