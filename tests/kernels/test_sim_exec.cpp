// The simulator's two execution modes give the same bits: for every contract with a twin, at both token
// tiles, whole invocations (several row, token and K tiles, ragged M and N) run once through the core
// kernel code and once through the twin, on random weights and activations. This is what licenses the
// twin as the default (GGML_XDNA_SIM_EXEC=twin).
#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"
#include "contracts/tile-codec.h"
#include "contracts/weight-layout.h"
#include "runtime/thread-pool.h"
#include "sim/sim-matmul.h"
#include "kquant-twin.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace {

using namespace xdna;

uint64_t seed() {
    static const uint64_t s = [] {
        const char * e = std::getenv("GGML_XDNA_TEST_SEED");
        return e ? std::strtoull(e, nullptr, 10) : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    }();
    return s;
}

// Host memory standing in for a device buffer.
class HostBuffer final : public DeviceBuffer {
public:
    explicit HostBuffer(size_t n) : data_(static_cast<uint8_t *>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))), size_(n) {}
    ~HostBuffer() override { std::free(data_); }
    void * host_ptr() override { return data_; }
    size_t size() const override { return size_; }
    void   sync_to_device(size_t, size_t) override {}
    void   sync_from_device(size_t, size_t) override {}

private:
    uint8_t * data_;
    size_t    size_;
};

// Random GGUF rows of `type` whose fp16 fields are finite and of LLM-like size (random bytes elsewhere):
// the codes take every bit pattern, the scales stay numbers so the comparison is of values.
std::vector<uint8_t> random_rows(ggml_type type, int64_t k, int64_t rows, std::mt19937_64 & g) {
    std::vector<uint8_t> w(ggml_row_size(type, k) * rows);
    for (auto & b : w) b = static_cast<uint8_t>(g());
    const xdna_aie::WeightTileFormat * f = tile_format(type);
    if (f->act_block == 0) {  // float weights: random values of either sign
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (size_t i = 0; i < w.size() / f->block_bytes; ++i) {
            const float v = nd(g);
            if (type == GGML_TYPE_F32) std::memcpy(&w[i * 4], &v, 4);
            if (type == GGML_TYPE_F16) { const ggml_fp16_t h = ggml_fp32_to_fp16(v); std::memcpy(&w[i * 2], &h, 2); }
            if (type == GGML_TYPE_BF16) { const ggml_bf16_t h = ggml_fp32_to_bf16(v); std::memcpy(&w[i * 2], &h, 2); }
        }
        return w;
    }
    std::uniform_real_distribution<float> ud(1e-4f, 2e-2f);
    for (size_t blk = 0; blk < w.size() / f->block_bytes; ++blk) {
        for (int i = 0; i < f->n_planes; ++i) {
            const xdna_aie::Plane & p = f->planes[i];
            if (p.kind == xdna_aie::PlaneKind::field && p.unit_bytes == 2) {
                const ggml_fp16_t h = ggml_fp32_to_fp16(ud(g) * ((g() & 1) ? 1.0f : -1.0f));
                std::memcpy(&w[blk * f->block_bytes + p.gguf_offset], &h, 2);
            }
        }
    }
    return w;
}

struct Case {
    const MatmulContract * contract;
    int                    tile_n;
};

std::vector<Case> twin_cases() {
    std::vector<Case> v;
    for (const auto & c : all_matmul_contracts())
        for (int tn : c.tile_n)
            if (sim_has_twin(c, tn)) v.push_back({&c, tn});
    return v;
}

class SimExecIdentity : public ::testing::TestWithParam<Case> {};

TEST_P(SimExecIdentity, TwinGivesTheKernelsBits) {
    const Case cs = GetParam();
    const MatmulContract & c = *cs.contract;
    SCOPED_TRACE(testing::Message() << c.name << " n" << cs.tile_n << " seed " << seed());
    std::mt19937_64 g(seed() ^ std::hash<std::string>{}(c.name) ^ cs.tile_n);
    const int64_t m = 64 * 2 + 19, k = 3 * c.tile_k, n = cs.tile_n == 4 ? 3 : 32 + 9;
    const int64_t ne[4] = {k, m, 1, 1};
    WeightLayout wl;
    ASSERT_TRUE(make_weight_layout(c.weight_type, ne, wl));
    const std::vector<uint8_t> rows = random_rows(c.weight_type, k, m, g);
    HostBuffer wbuf(wl.total_bytes), abuf(0), obuf_k(m * n * 4), obuf_t(m * n * 4);
    clear_weight_padding(wl, wbuf.host_ptr());
    pack_weight_rows(wl, rows.data(), 0, m, wbuf.host_ptr());

    const ActivationLayout al = make_activation_layout(c, k, wl.padded_k(), n, cs.tile_n);
    HostBuffer act(al.total_bytes);
    std::vector<float> x(k * n);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto & v : x) v = nd(g) * ((g() % 50 == 0) ? 20.0f : 1.0f);
    ggml_init_params ip = {ggml_tensor_overhead() * 2, nullptr, true};
    ggml_context * ctx = ggml_init(ip);
    ggml_tensor * src1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, n);
    src1->data = x.data();
    std::vector<float> scratch(wl.padded_k());
    quantize_activation_rows(src1, 0, 0, al, 0, al.n_pad, act.host_ptr(), scratch.data());
    ggml_free(ctx);

    MatmulInvocation inv;
    inv.contract = &c;
    inv.tile = c.tile(cs.tile_n);
    inv.weights = {&wbuf, 0};
    inv.activations = {&act, 0};
    inv.m = m;
    inv.n = n;
    inv.m_tiles = wl.m_tiles;
    inv.n_tiles = al.n_tiles;
    inv.k_tiles = wl.k_tiles;
    inv.weight_tile_bytes = wl.tile_bytes;
    inv.act_tile_bytes = al.tile_bytes;
    inv.out_row_stride = m;
    ThreadPool pool(2);
    inv.out = {&obuf_k, 0};
    sim_run_matmul(inv, pool, SimExec::kernels);
    inv.out = {&obuf_t, 0};
    sim_run_matmul(inv, pool, SimExec::twin);
    const auto * a = static_cast<const float *>(obuf_k.host_ptr());
    const auto * b = static_cast<const float *>(obuf_t.host_ptr());
    int nonzero = 0;
    for (int64_t i = 0; i < m * n; ++i) {
        ASSERT_EQ(0, std::memcmp(&a[i], &b[i], 4)) << "output " << i << ": kernel " << a[i] << " twin " << b[i];
        nonzero += a[i] != 0.0f;
    }
    EXPECT_GT(nonzero, m * n / 2);  // real values were compared, not zeros
}

INSTANTIATE_TEST_SUITE_P(All, SimExecIdentity, ::testing::ValuesIn(twin_cases()), [](const auto & info) {
    return std::string(info.param.contract->name) + "_n" + std::to_string(info.param.tile_n);
});

TEST(SimExecIdentity, KQuantTwinScalarPathEqualsVectorPath) {
    if (!kquant_twin_vectorised()) GTEST_SKIP() << "no AVX-512 VNNI/VBMI on this host: only the scalar path exists";
    std::mt19937_64 g(seed());
    using Fn = void (*)(const uint8_t *, const uint8_t *, float *);
    const Fn fns[] = {twin_mm_q4_K_a8_n4, twin_mm_q4_K_a8_n32, twin_mm_q5_K_a8_n4,
                      twin_mm_q5_K_a8_n32, twin_mm_q6_K_a8_n4, twin_mm_q6_K_a8_n32};
    for (int i = 0; i < 6; ++i) {
        const int tn = i % 2 ? 32 : 4;
        alignas(64) static uint8_t w[16384], a[16384];
        for (auto & b : w) b = static_cast<uint8_t>(g());
        for (auto & b : a) b = static_cast<uint8_t>(g());
        std::vector<float> v(tn * 64), s(tn * 64);
        for (size_t j = 0; j < v.size(); ++j) v[j] = s[j] = static_cast<float>(static_cast<int>(g() % 1000)) - 500.0f;
        fns[i](w, a, v.data());
        kquant_twin_force_scalar(true);
        fns[i](w, a, s.data());
        kquant_twin_force_scalar(false);
        for (size_t j = 0; j < v.size(); ++j) {
            if (std::isnan(v[j]) && std::isnan(s[j])) continue;
            ASSERT_EQ(0, std::memcmp(&v[j], &s[j], 4)) << "function " << i << " output " << j;
        }
    }
}

}  // namespace
