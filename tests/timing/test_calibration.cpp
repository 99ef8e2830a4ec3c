// The model against published results: fitted points reproduce, held-out points stay within the error
// docs/performance-model.md states for them, and the preset constants are what the fits give.
#include "sim/calibration-points.h"

#include <gtest/gtest.h>

#include <cmath>

namespace xdna {
namespace {

TEST(Calibration, EveryPointWithinItsStatedError) {
    int fitted = 0, held_out = 0;
    for (const auto & p : calibration_points()) {
        const NpuPreset * preset = find_npu_preset(p.preset);
        ASSERT_NE(preset, nullptr) << p.name;
        const TimingModel model(*preset);
        const double err = error_pct(p, model);
        EXPECT_LE(std::fabs(err), p.stated_error_pct) << p.name << ": modelled " << modelled_value(p, model)
                                                     << " vs published " << p.published;
        if (p.kind == PointKind::fitted) {
            ++fitted;
            EXPECT_LE(p.stated_error_pct, 1.0) << p.name;
        } else {
            ++held_out;
        }
    }
    EXPECT_EQ(fitted, 2);
    EXPECT_GE(held_out, 5);
}

TEST(Calibration, PresetConstantsAreTheFits) {
    const NpuPreset & k = *find_npu_preset("krackan");
    EXPECT_NEAR(fit_array_efficiency(k) / k.array_efficiency, 1.0, 0.005);
    EXPECT_NEAR(fit_dram_gbs(k) / k.dram_gbs, 1.0, 0.005);
    // Every preset shares the array efficiency (same NPU2 array).
    for (const auto & p : npu_presets()) {
        EXPECT_DOUBLE_EQ(p.array_efficiency, k.array_efficiency) << p.name;
    }
}

TEST(Calibration, Int32OutputIsExplainedByDram) {
    // Held out: with the efficiency fitted on int8 outputs, 4-byte outputs make the GEMM DRAM-bound.
    for (const auto & p : calibration_points()) {
        if (std::string(p.name) == "int8 GEMM, int32 out") {
            const ModelledTime t = TimingModel(*find_npu_preset(p.preset)).invocation(p.shape);
            EXPECT_GT(t.dram_us, t.compute_us);
            return;
        }
    }
    FAIL() << "int32-output point missing";
}

}  // namespace
}  // namespace xdna
