// The Q2_K / Q3_K bfp16 prefill core program (aie/matmul/kernels/mm_kquant_low_bfp16.cc) against the
// independent reference of tests/common/bfp16-reference.cpp: bit for bit, through the simulator's
// kernel-code and instruction-stream modes, on fresh random GGUF rows and activations (one in 50
// scaled by 20), over several K tiles, a ragged last row tile and partial token tiles.
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
    int64_t   m, k_tiles, n;
    SimExec   exec;
};

class KQuantLowBfp16 : public ::testing::TestWithParam<Case> {};

TEST_P(KQuantLowBfp16, MatchesIndependentReferenceBitForBit) {
    const Case cs = GetParam();
    SCOPED_TRACE(testing::Message() << ggml_type_name(cs.type) << " m " << cs.m << " k_tiles " << cs.k_tiles << " n " << cs.n
                                    << " " << xdna_test::bfp16_exec_name(cs.exec) << " GGML_XDNA_TEST_SEED=" << seed());
    std::mt19937_64 g(seed() ^ (uint64_t(cs.type) * 7919 + cs.m * 131 + cs.n * 17 + int(cs.exec)));
    const int64_t k = cs.k_tiles * 256;
    const std::vector<uint8_t> rows = xdna_test::random_rows(cs.type, k, cs.m, g);
    std::vector<float> x(k * cs.n);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto & v : x) v = nd(g) * (g() % 50 == 0 ? 20.0f : 1.0f);
    const std::vector<float> got = xdna_test::run_bfp16_contract(cs.type, cs.m, k, cs.n, cs.exec, rows, x);
    const xdna_test::MatmulCase mc{cs.type, k, cs.m, cs.n};
    xdna_test::expect_bfp16_bits(got, xdna_test::contract_reference_bfp16(mc, rows, x), cs.m);
}

std::vector<Case> cases() {
    std::vector<Case> v;
    for (ggml_type t : {GGML_TYPE_Q2_K, GGML_TYPE_Q3_K}) {
        v.push_back({t, 64, 2, 32, SimExec::kernels});
        v.push_back({t, 64 + 23, 3, 37, SimExec::kernels});  // ragged rows, two token tiles, the second partial
        v.push_back({t, 130, 2, 5, SimExec::stream});
    }
    return v;
}

std::string case_name(const testing::TestParamInfo<Case> & info) {
    const Case & c = info.param;
    return std::string(ggml_type_name(c.type)) + "_m" + std::to_string(c.m) + "_k" + std::to_string(c.k_tiles) + "_n" +
           std::to_string(c.n) + "_" + xdna_test::bfp16_exec_name(c.exec);
}

INSTANTIATE_TEST_SUITE_P(Contracts, KQuantLowBfp16, ::testing::ValuesIn(cases()), case_name);

}  // namespace
