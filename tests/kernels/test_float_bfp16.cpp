// The F16 / BF16 / F32 bfp16 prefill core program (aie/matmul/kernels/mm_float_bfp16.cc) against the
// independent reference of tests/common/bfp16-reference.cpp: bit for bit, through the simulator's
// kernel-code and instruction-stream modes, on random weights (one in 50 scaled by 2^10, so blocks
// span more than their mantissas hold; a few F16 subnormals) and activations, over several K tiles
// (K = 64 for F32, 128 otherwise), a ragged K (not a multiple of 8), a ragged last row tile and
// partial token tiles.
#include "bfp16-kernel-run.h"

#include <random>

namespace {

using namespace xdna;

uint64_t seed() {
    static const uint64_t s = [] {
        const char * e = std::getenv("GGML_XDNA_TEST_SEED");
        return e ? std::strtoull(e, nullptr, 10) : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    }();
    return s;
}

struct Case {
    ggml_type type;
    int64_t   m, k_tiles, k_short, n;  // K = k_tiles * TK - k_short
    SimExec   exec;
};

// Random weight rows of a float type: Gaussian, one in 50 scaled by 2^10, F16 one in 64 a subnormal.
std::vector<uint8_t> float_rows(ggml_type t, int64_t k, int64_t m, std::mt19937_64 & g) {
    std::vector<uint8_t> w(ggml_row_size(t, k) * m);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int64_t i = 0; i < k * m; ++i) {
        const float v = nd(g) * (g() % 50 == 0 ? 1024.0f : 1.0f);
        if (t == GGML_TYPE_F32) std::memcpy(&w[i * 4], &v, 4);
        if (t == GGML_TYPE_BF16) { const ggml_bf16_t h = ggml_fp32_to_bf16(v); std::memcpy(&w[i * 2], &h, 2); }
        if (t == GGML_TYPE_F16) {
            ggml_fp16_t h = ggml_fp32_to_fp16(v);
            if (g() % 64 == 0) h = static_cast<ggml_fp16_t>((g() & 0x83FF));  // subnormal (or zero), either sign
            std::memcpy(&w[i * 2], &h, 2);
        }
    }
    // F16: one in 16 blocks of 8 values all subnormal (beside normal values they round to 0 in the
    // block, so only a block of their own shows their widening).
    if (t == GGML_TYPE_F16) {
        for (int64_t r = 0; r < m; ++r) {
            for (int64_t kb = 0; kb < k / 8; ++kb) {
                if (g() % 16 != 0) continue;
                for (int i = 0; i < 8; ++i) {
                    const ggml_fp16_t h = static_cast<ggml_fp16_t>(g() & 0x83FF);
                    std::memcpy(&w[(r * k + kb * 8 + i) * 2], &h, 2);
                }
            }
        }
    }
    return w;
}

class FloatBfp16 : public ::testing::TestWithParam<Case> {};

TEST_P(FloatBfp16, MatchesIndependentReferenceBitForBit) {
    const Case cs = GetParam();
    const int64_t k = cs.k_tiles * prefill_contract_for(cs.type)->tile_k - cs.k_short;
    SCOPED_TRACE(testing::Message() << ggml_type_name(cs.type) << " m " << cs.m << " k " << k << " n " << cs.n << " "
                                    << xdna_test::bfp16_exec_name(cs.exec) << " GGML_XDNA_TEST_SEED=" << seed());
    std::mt19937_64 g(seed() ^ (uint64_t(cs.type) * 7919 + cs.m * 131 + cs.n * 17 + int(cs.exec)));
    const std::vector<uint8_t> rows = float_rows(cs.type, k, cs.m, g);
    std::vector<float> x(k * cs.n);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto & v : x) v = nd(g) * (g() % 50 == 0 ? 20.0f : 1.0f);
    const std::vector<float> got = xdna_test::run_bfp16_contract(cs.type, cs.m, k, cs.n, cs.exec, rows, x);
    const xdna_test::MatmulCase mc{cs.type, k, cs.m, cs.n};
    xdna_test::expect_bfp16_bits(got, xdna_test::contract_reference_bfp16(mc, rows, x), cs.m);
}

std::vector<Case> cases() {
    std::vector<Case> v;
    for (ggml_type t : {GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_F32}) {
        v.push_back({t, 64, 2, 0, 32, SimExec::kernels});
        v.push_back({t, 64 + 23, 3, 20, 37, SimExec::kernels});  // ragged K, rows, two token tiles, the second partial
        v.push_back({t, 130, 2, 3, 5, SimExec::stream});
    }
    return v;
}

std::string case_name(const testing::TestParamInfo<Case> & info) {
    const Case & c = info.param;
    return std::string(ggml_type_name(c.type)) + "_m" + std::to_string(c.m) + "_k" + std::to_string(c.k_tiles) + "m" +
           std::to_string(c.k_short) + "_n" + std::to_string(c.n) + "_" + xdna_test::bfp16_exec_name(c.exec);
}

INSTANTIATE_TEST_SUITE_P(Contracts, FloatBfp16, ::testing::ValuesIn(cases()), case_name);

}  // namespace
