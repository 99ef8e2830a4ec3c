// The timing model covers the contract table: a new contract row fails here until npu-presets.cpp
// gives its weight type a kernel family and a block-scale cost. And GGML_XDNA_PRESET accepts exactly
// the presets there are.
#include "contracts/matmul-contract.h"
#include "runtime/options.h"
#include "sim/npu-presets.h"

#include <gtest/gtest.h>

namespace xdna {
namespace {

TEST(TimingModelCoverage, EveryContractHasAKernelFamilyAndScaleCost) {
    ASSERT_FALSE(all_matmul_contracts().empty());
    for (const auto & c : all_matmul_contracts()) {
        SCOPED_TRACE(c.name);
        const KernelFamily f = family_of(c.weight_type);
        EXPECT_NE(f, KernelFamily::int8_plain) << "no kernel family for " << ggml_type_name(c.weight_type);
        EXPECT_NE(f, KernelFamily::bfp16);
        if (ggml_is_quantized(c.weight_type)) {
            EXPECT_GT(scale_ops_per_k(c.weight_type), 0.0) << "no block-scale cost";
        } else {
            EXPECT_EQ(scale_ops_per_k(c.weight_type), 0.0);
        }
    }
}

TEST(TimingModelCoverage, PresetOptionAcceptsExactlyThePresets) {
    std::string names;
    for (const auto & p : npu_presets()) {
        names += (names.empty() ? "" : ", ") + p.name;
    }
    const OptionSpec * o = find_option("GGML_XDNA_PRESET");
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(o->accepted, names);
    EXPECT_NE(find_npu_preset(o->fallback), nullptr);
}

}  // namespace
}  // namespace xdna
