// Every vector path of the K-quant twins (portable, AVX2, AVX-512: those this host has) against the
// core kernel code itself (aie/matmul/kernels/mm_kquant.cc through the host aie_api), bit for bit. The data are chosen to reach each branch of the AVX2 path:
//   realistic   finite fp16 scales, activation scales near 1e-2: the fast epilogue;
//   boundary    activation scales at and just past the fast range's ends (2^-60, 2^60), zeros,
//               subnormals and far-out values (2^-100, 2^100), fp16 d from 2^-24 to 65504;
//   extreme     infinite and NaN fp16 d / dmin and activation scales: the exact epilogue;
//   saturating  every code at its largest and every activation -128 or 127: the int16 sums at their
//               bounds.
// NaN outputs compare equal to NaN whatever their payload (the kernel's NaN payloads are not part of
// its contract).
#include "core-fp32-reference.h"
#if defined(__x86_64__) || defined(__i386__)
#include "emulated-fp32-avx2.h"
#endif
#include "host-isa.h"
#include "kquant-twin.h"
#include "xdna_aie/matmul_tiles.h"

#include <aie_api/aie.hpp>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" {
void mm_q4_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void mm_q4_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void mm_q5_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void mm_q5_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
void mm_q6_K_a8_n4(const uint8_t * w, const uint8_t * a, float * c);
void mm_q6_K_a8_n32(const uint8_t * w, const uint8_t * a, float * c);
}

namespace {

namespace abi = xdna_aie;
using Fn = void (*)(const uint8_t *, const uint8_t *, float *);

uint64_t seed() {
    static const uint64_t s = [] {
        const char * e = std::getenv("GGML_XDNA_TEST_SEED");
        return e ? std::strtoull(e, nullptr, 10) : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    }();
    return s;
}

enum class Data { realistic, boundary, extreme, saturating };
const char * data_name(Data d) {
    return d == Data::realistic ? "realistic" : d == Data::boundary ? "boundary" : d == Data::extreme ? "extreme" : "saturating";
}

struct Type {
    const char * name;
    int id;  // kquant_twin_tile's type_id
    const abi::WeightTileFormat * f;
    int scales_plane;  // then d, then dmin (none for Q6_K)
    bool has_dmin;
    Fn kernel4, kernel32;
};
const Type kTypes[] = {
    {"q4_K", 0, &abi::fmt::q4_K, 1, true, mm_q4_K_a8_n4, mm_q4_K_a8_n32},
    {"q5_K", 1, &abi::fmt::q5_K, 2, true, mm_q5_K_a8_n4, mm_q5_K_a8_n32},
    {"q6_K", 2, &abi::fmt::q6_K, 2, false, mm_q6_K_a8_n4, mm_q6_K_a8_n32},
};

// 64-byte aligned storage, as the core's vector loads need.
template <typename T> struct Aligned {
    T * p = nullptr;
    size_t n = 0;
    Aligned() = default;
    explicit Aligned(size_t count) { assign(count, T()); }
    Aligned(const Aligned & o) : Aligned(o.n) { std::memcpy(p, o.p, n * sizeof(T)); }
    Aligned & operator=(const Aligned & o) {
        assign(o.n, T());
        std::memcpy(p, o.p, n * sizeof(T));
        return *this;
    }
    ~Aligned() { std::free(p); }
    void assign(size_t count, T v) {
        std::free(p);
        n = count;
        p = static_cast<T *>(std::aligned_alloc(64, (count * sizeof(T) + 63) / 64 * 64));
        for (size_t i = 0; i < n; ++i) p[i] = v;
    }
    T * data() { return p; }
    size_t size() const { return n; }
    T & operator[](size_t i) { return p[i]; }
    T * begin() { return p; }
    T * end() { return p + n; }
};

uint16_t half_bits(float v) {
    // fp16 of a value exactly representable in fp16 (the test's values are).
    const ggml_fp16_t h = ggml_fp32_to_fp16(v);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
}

// One weight tile and one activation tile of the given kind.
void make_tiles(const Type & ty, int tn, Data kind, std::mt19937_64 & g, Aligned<uint8_t> & w, Aligned<uint8_t> & a) {
    const abi::WeightTileFormat & f = *ty.f;
    const abi::ActTileFormat af{tn, 256, 256};
    w.assign(size_t(f.tile_bytes()), 0);
    a.assign(size_t(af.tile_bytes()), 0);
    for (auto & b : w) b = uint8_t(g());
    auto * codes = reinterpret_cast<int8_t *>(a.data() + af.codes_offset());
    auto * scales = reinterpret_cast<float *>(a.data() + af.scales_offset());
    auto * sums = reinterpret_cast<int16_t *>(a.data() + af.sums_offset());
    std::uniform_real_distribution<float> u01(0.0f, 1.0f);
    for (int i = 0; i < tn * 256; ++i) codes[i] = int8_t(g());
    if (kind == Data::saturating) {
        // Codes at their largest: q4 nibbles hold code ^ 8 (15 -> 7), high planes all ones.
        std::memset(w.data() + f.plane_offset(0), 0x77, size_t(f.plane_bytes(0)));
        if (ty.id != 0) std::memset(w.data() + f.plane_offset(1), 0xFF, size_t(f.plane_bytes(1)));
        std::memset(w.data() + f.plane_offset(ty.scales_plane), ty.id == 2 ? 0x80 : 0xFF, size_t(f.plane_bytes(ty.scales_plane)));
        for (int t = 0; t < tn; ++t)
            for (int k = 0; k < 256; ++k) codes[af.code_index(t, k)] = t % 2 ? int8_t(-128) : int8_t(127);
    }
    // Sums: the codes' exact sums (the activation tile's contract, which the kernel and the twins
    // rely on in different ways).
    for (int t = 0; t < tn; ++t)
        for (int k16 = 0; k16 < 16; ++k16) {
            int s = 0;
            for (int k = 16 * k16; k < 16 * k16 + 16; ++k) s += codes[af.code_index(t, k)];
            sums[af.sum_index(t, k16)] = int16_t(s);
        }
    // Per-row fp16 d (and dmin), per-token fp32 scales.
    const float boundary_scales[] = {0x1p-60f, -0x1p-60f, 0x1.fffffep60f, -0x1.8p60f, 0x1.8p-61f, 0x1p61f, 0.0f, -0.0f,
                                     0x1.3p-100f, -0x1.7p100f, 1e-40f, 0x1.555554p-59f};
    const uint16_t extreme_halves[] = {0x7c00, 0xfc00, 0x7e00, 0x7bff, 0x0001, 0x0000};
    const float boundary_halves[] = {65504.0f, -65504.0f, 0x1p-24f, 0x1.ff8p-15f, 0x1p-14f, 0.0f, -0.0f, 0.0625f};
    for (int plane = ty.scales_plane + 1; plane < f.n_planes; ++plane) {
        for (int r = 0; r < 64; ++r) {
            uint16_t h;
            switch (kind) {
                case Data::boundary: h = half_bits(boundary_halves[(r + plane) % 8] * (r % 3 == 0 ? 1.0f : 0.75f)); break;
                case Data::extreme: h = r % 5 == 0 ? extreme_halves[(r / 5 + plane) % 6] : uint16_t(g()); break;
                default: h = half_bits((r % 7 == 0 ? -1.0f : 1.0f) * (0.0005f + 0.004f * u01(g))); break;
            }
            std::memcpy(w.data() + f.plane_offset(plane) + 2 * r, &h, 2);  // fields [row / 16][row % 16]: row order
        }
    }
    for (int t = 0; t < tn; ++t) {
        float s = 0.003f + 0.05f * u01(g);
        if (kind == Data::boundary) s = boundary_scales[t % 12];
        if (kind == Data::extreme) {
            // NaN with its payload in the low bits only (a bf16 truncation alone would make it an
            // infinity), infinities, a quiet NaN, overflowing products, tiny products.
            const uint32_t low_nan = 0x7F800001u;
            float nan_low;
            std::memcpy(&nan_low, &low_nan, 4);
            const float ex[] = {nan_low, INFINITY, NAN, -INFINITY, 3e38f, 1e-30f};
            s = t % 3 == 0 ? ex[(t / 3) % 6] : s;
        }
        scales[af.scale_index(t, 0)] = s;
    }
}

bool same(float x, float y) {
    if (std::isnan(x) && std::isnan(y)) return true;
    return std::memcmp(&x, &y, 4) == 0;
}

std::vector<xdna::TwinIsa> host_paths() {
    std::vector<xdna::TwinIsa> v{xdna::TwinIsa::portable};
    const xdna::TwinIsa best = twin_host_isa();
    if (best >= xdna::TwinIsa::avx2) v.push_back(xdna::TwinIsa::avx2);
    if (best >= xdna::TwinIsa::avx512) v.push_back(xdna::TwinIsa::avx512);
    return v;
}

struct PathLimit {
    ~PathLimit() { xdna::kquant_twin_limit_isa(xdna::TwinIsa::avx512); }
};

TEST(KQuantTwinPaths, EveryPathGivesTheKernelsBits) {
    SCOPED_TRACE("GGML_XDNA_TEST_SEED=" + std::to_string(seed()));
    const PathLimit restore_path;
    std::mt19937_64 g(seed());
    int compared = 0, nonzero = 0;
    {  // the kernels' one fp32 emulation: Peano's 32-lane fast intrinsic in the epilogue
        for (const Type & ty : kTypes) {
            for (int tn : {4, 32}) {
                for (Data kind : {Data::realistic, Data::boundary, Data::extreme, Data::saturating}) {
                    // Two K tiles accumulated into a C of random finite values.
                    Aligned<uint8_t> w[2], a[2];
                    for (int kt = 0; kt < 2; ++kt) make_tiles(ty, tn, kind, g, w[kt], a[kt]);
                    Aligned<float> c0(size_t(tn) * 64);
                    for (auto & v : c0) v = float(int(g() % 2001) - 1000) * 0.25f;
                    Aligned<float> want = c0;
                    for (int kt = 0; kt < 2; ++kt) (tn == 4 ? ty.kernel4 : ty.kernel32)(w[kt].data(), a[kt].data(), want.data());
                    for (xdna::TwinIsa path : host_paths()) {
                        xdna::kquant_twin_limit_isa(path);
                        ASSERT_EQ(xdna::kquant_twin_isa(), path);
                        SCOPED_TRACE(testing::Message() << ty.name << " n" << tn << " " << data_name(kind) << " path " << xdna::twin_isa_name(path));
                        // The whole tile, and the partial form (the first valid tokens; the others untouched).
                        const int valid = tn == 4 ? 1 : 19;
                        Aligned<float> got = c0, part = c0;
                        for (int kt = 0; kt < 2; ++kt) {
                            xdna::kquant_twin_tile(ty.id, tn, w[kt].data(), a[kt].data(), got.data(), tn);
                            xdna::kquant_twin_tile(ty.id, tn, w[kt].data(), a[kt].data(), part.data(), valid);
                        }
                        int bad = 0;
                        for (size_t i = 0; i < want.size(); ++i) {
                            if (!same(got[i], want[i]) && ++bad <= 5)
                                ADD_FAILURE() << "token " << i / 64 << " row " << i % 64 << ": twin " << got[i] << " kernel " << want[i];
                            const bool in_valid = int(i / 64) < valid;
                            if (!same(part[i], in_valid ? want[i] : c0[i]) && ++bad <= 5)
                                ADD_FAILURE() << "partial, token " << i / 64 << " row " << i % 64 << ": " << part[i];
                            nonzero += want[i] != c0[i];
                        }
                        ASSERT_EQ(bad, 0);
                        ++compared;
                    }
                }
            }
        }
    }
    EXPECT_GE(compared, 3 * 2 * 4);
    EXPECT_GT(nonzero, compared * 64);  // real products reached C, not only its initial values
}

#if defined(__x86_64__) || defined(__i386__)
// The twins' own vector forms of the core's fp32 product (emulated-fp32.h, emulated-fp32-avx2.h) add the
// nine partial products in the header's order: on the operand pairs that tell two neighbouring terms
// apart (core-fp32-reference.h), every form that this host runs gives the documented product. Random
// data almost never reach those pairs, so the comparisons above would not notice a swap.
__attribute__((target("avx512f,avx512bw,avx512vl"))) float twin_product_avx512(float x, float y, xdna::twin::fp32_accuracy acc) {
    const __m512 r = xdna::twin::emulated_mul(_mm512_set1_ps(x), _mm512_set1_ps(y), acc);
    return _mm512_cvtss_f32(r);
}
__attribute__((target("avx2,fma,f16c"))) float twin_product_avx2(float x, float y, xdna::twin::fp32_accuracy acc, bool fused) {
    const xdna::twin::Parts8 px = xdna::twin::split8(_mm256_set1_ps(x)), py = xdna::twin::split8(_mm256_set1_ps(y));
    return _mm256_cvtss_f32(fused ? xdna::twin::emulated_mul8_fused(px, py, acc) : xdna::twin::emulated_mul8(px, py, acc));
}

TEST(KQuantTwinPaths, EmulatedProductsAddThePartialProductsInTheHeadersOrder) {
    using xdna::twin::fp32_accuracy;
    const xdna::TwinIsa best = twin_host_isa();
    if (best < xdna::TwinIsa::avx2) GTEST_SKIP() << "no AVX2 on this host";
    for (const xdna_test::SafeOrderWitness & w : xdna_test::kSafeOrderWitnesses) {
        ASSERT_EQ(xdna_test::safe_mul(w.x, w.y), w.want) << w.swap;
        // Every partial product here is exact, so the fused (fast32) forms round as the safe one does.
        for (const fp32_accuracy acc : {fp32_accuracy::safe, fp32_accuracy::fast32}) {
            if (best >= xdna::TwinIsa::avx512) EXPECT_EQ(twin_product_avx512(w.x, w.y, acc), w.want) << w.swap << " avx512";
            EXPECT_EQ(twin_product_avx2(w.x, w.y, acc, false), w.want) << w.swap << " avx2";
            EXPECT_EQ(twin_product_avx2(w.x, w.y, acc, true), w.want) << w.swap << " avx2 fused";
        }
    }
}
#endif

// The limit selects the path and reports it; lifting it returns to the host's best.
TEST(KQuantTwinPaths, LimitSelectsThePath) {
    const PathLimit restore_path;
    for (xdna::TwinIsa path : host_paths()) {
        xdna::kquant_twin_limit_isa(path);
        EXPECT_EQ(xdna::kquant_twin_isa(), path);
        EXPECT_EQ(xdna::kquant_twin_vectorised(), path != xdna::TwinIsa::portable);
    }
    xdna::kquant_twin_limit_isa(xdna::TwinIsa::avx512);
    EXPECT_EQ(xdna::kquant_twin_isa(), twin_host_isa());
    xdna::kquant_twin_force_scalar(true);
    EXPECT_EQ(xdna::kquant_twin_isa(), xdna::TwinIsa::portable);
    xdna::kquant_twin_force_scalar(false);
    EXPECT_EQ(xdna::kquant_twin_isa(), twin_host_isa());
}

}  // namespace
