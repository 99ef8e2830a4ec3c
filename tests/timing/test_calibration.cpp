// The model against published results: fitted points reproduce, held-out points stay within the error
// docs/performance-model.md states for them, and the preset constants are what the fits give.
#include "sim/calibration-points.h"

#include <gtest/gtest.h>

#include <cmath>

namespace xdna {
namespace {

TEST(Calibration, EveryPointWithinItsStatedError) {
    int fitted = 0, held_out = 0;
    bool tier_fitted[kEfficiencyTiers] = {false, false, false};
    bool tier_held_out[kEfficiencyTiers] = {false, false, false};
    for (const auto & p : calibration_points()) {
        const NpuPreset * preset = find_npu_preset(p.preset);
        ASSERT_NE(preset, nullptr) << p.name;
        const double err = error_pct(p, *preset);
        EXPECT_LE(std::fabs(err), p.stated_error_pct) << p.name << ": modelled " << modelled_value_in_tier(p, *preset)
                                                     << " vs published " << p.published;
        if (p.kind == PointKind::fitted) {
            ++fitted;
            EXPECT_LE(p.stated_error_pct, 1.0) << p.name;
            tier_fitted[static_cast<int>(p.tier)] = true;
        } else {
            ++held_out;
            tier_held_out[static_cast<int>(p.tier)] = true;
        }
    }
    EXPECT_EQ(fitted, 4);  // three tiers and the bandwidth
    EXPECT_GE(held_out, 7);
    for (int t = 0; t < kEfficiencyTiers; ++t) {
        EXPECT_TRUE(tier_fitted[t]) << tier_name(static_cast<EfficiencyTier>(t));
        EXPECT_TRUE(tier_held_out[t]) << "no held-out point for " << tier_name(static_cast<EfficiencyTier>(t));
    }
}

TEST(Calibration, PresetConstantsAreTheFits) {
    const NpuPreset & k = *find_npu_preset("krackan");
    for (int t = 0; t < kEfficiencyTiers; ++t) {
        const auto tier = static_cast<EfficiencyTier>(t);
        EXPECT_NEAR(fit_tier_efficiency(k, tier) / k.tier_efficiency[t], 1.0, 0.005) << tier_name(tier);
    }
    EXPECT_NEAR(fit_dram_gbs(k) / k.dram_gbs, 1.0, 0.005);
    // Tiers are ordered, and every preset shares them (same NPU2 array).
    EXPECT_GT(k.tier_efficiency[0], k.tier_efficiency[1]);
    EXPECT_GT(k.tier_efficiency[1], k.tier_efficiency[2]);
    for (const auto & p : npu_presets()) {
        for (int t = 0; t < kEfficiencyTiers; ++t) {
            EXPECT_DOUBLE_EQ(p.tier_efficiency[t], k.tier_efficiency[t]) << p.name;
        }
        EXPECT_EQ(p.tier, EfficiencyTier::competent_cpp) << p.name;
    }
}

TEST(Calibration, Int32OutputIsExplainedByDram) {
    // Held out: with the efficiency fitted on int8 outputs, 4-byte outputs make the GEMM DRAM-bound.
    for (const auto & p : calibration_points()) {
        if (std::string(p.name) == "int8 GEMM, int32 out") {
            const ModelledTime t = TimingModel(with_tier(*find_npu_preset(p.preset), p.tier)).invocation(p.shape);
            EXPECT_GT(t.dram_us, t.compute_us);
            return;
        }
    }
    FAIL() << "int32-output point missing";
}

}  // namespace
}  // namespace xdna
