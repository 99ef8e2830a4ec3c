// Presets differ where the hardware does, and the environment overrides reach the model.
#include "sim/npu-presets.h"
#include "sim/timing-model.h"
#include "contracts/activation-layout.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstdlib>

namespace xdna {
namespace {

// Clears every variable preset_from_env reads, before and after each test.
class PresetEnv : public ::testing::Test {
protected:
    static constexpr const char * kVars[] = {
        "GGML_XDNA_PRESET",          "GGML_XDNA_MODEL_BW_GBS",        "GGML_XDNA_MODEL_CLOCK_GHZ",
        "GGML_XDNA_MODEL_EFFICIENCY", "GGML_XDNA_MODEL_SUBMIT_US",    "GGML_XDNA_MODEL_INVOCATION_US",
        "GGML_XDNA_MODEL_SCALE_OPS", "GGML_XDNA_MODEL_SCALE_GROUP",   "GGML_XDNA_MODEL_CSTAGE_KB"};
    void SetUp() override { clear(); }
    void TearDown() override { clear(); }
    static void clear() {
        for (const char * v : kVars) {
            unsetenv(v);
        }
    }
};

ModelShape q4k_gemv() {
    const MatmulContract & c = *matmul_contract_for(GGML_TYPE_Q4_K);
    MatmulInvocation inv;
    inv.contract = &c;
    inv.tile = c.tile(4);
    inv.m = 14336;
    inv.n = 1;
    inv.m_tiles = 14336 / 64;
    inv.n_tiles = 1;
    inv.k_tiles = 4096 / 256;
    inv.weight_tile_bytes = ggml_row_size(GGML_TYPE_Q4_K, 256) * 64;
    inv.act_tile_bytes = activation_tile_bytes(c, 4);
    return shape_of(inv);
}

TEST_F(PresetEnv, ThreePresetsWithTheSameArray) {
    ASSERT_EQ(npu_presets().size(), 3u);
    for (const char * name : {"strix", "krackan", "halo"}) {
        const NpuPreset * p = find_npu_preset(name);
        ASSERT_NE(p, nullptr) << name;
        EXPECT_EQ(p->columns, 8);
        EXPECT_EQ(p->rows, 4);
        EXPECT_GT(p->dram_gbs, 0);
        EXPECT_GT(p->efficiency(), 0);
        EXPECT_LE(p->efficiency(), 1);
    }
    EXPECT_EQ(find_npu_preset("bogus"), nullptr);
}

TEST_F(PresetEnv, HaloStreamsNoFasterThanKrackanWithoutASource) {
    // No published NPU bandwidth measurement on Halo exceeds Krackan's (npu-presets.cpp); FastFlowLM's
    // 8B decode there (~11 t/s) is below Krackan's 12.8. Same array: the same compute time.
    const NpuPreset & halo = *find_npu_preset("halo");
    const NpuPreset & krackan = *find_npu_preset("krackan");
    EXPECT_LE(halo.dram_gbs, krackan.dram_gbs);
    const ModelledTime h = TimingModel(halo).invocation(q4k_gemv());
    const ModelledTime k = TimingModel(krackan).invocation(q4k_gemv());
    EXPECT_DOUBLE_EQ(h.compute_us, k.compute_us);
    EXPECT_GE(h.total_us, k.total_us);
    EXPECT_NEAR(k.dram_us / h.dram_us, halo.dram_gbs / krackan.dram_gbs, 1e-9);
}

TEST_F(PresetEnv, PeakIsThePublishedArrayRate) {
    // 32 cores x 512 int8 MAC/cycle x 2 ops x 1.8 GHz = 58.98 TOPS.
    EXPECT_NEAR(find_npu_preset("krackan")->peak_tops(KernelFamily::int8xint4), 58.98, 0.01);
    EXPECT_NEAR(find_npu_preset("krackan")->peak_tops(KernelFamily::bf16_emulated), 29.49, 0.01);
}

TEST_F(PresetEnv, DefaultIsKrackan) {
    NpuPreset p;
    std::string error;
    ASSERT_TRUE(preset_from_env(p, error)) << error;
    EXPECT_EQ(p.name, "krackan");
}

TEST_F(PresetEnv, PresetNameSelects) {
    setenv("GGML_XDNA_PRESET", "halo", 1);
    NpuPreset p;
    std::string error;
    ASSERT_TRUE(preset_from_env(p, error)) << error;
    EXPECT_EQ(p.name, "halo");
    EXPECT_DOUBLE_EQ(p.dram_gbs, find_npu_preset("halo")->dram_gbs);
}

TEST_F(PresetEnv, OverridesApplyOnTopOfThePreset) {
    setenv("GGML_XDNA_PRESET", "strix", 1);
    setenv("GGML_XDNA_MODEL_BW_GBS", "100", 1);
    setenv("GGML_XDNA_MODEL_CLOCK_GHZ", "1.5", 1);
    setenv("GGML_XDNA_MODEL_EFFICIENCY", "0.5", 1);
    setenv("GGML_XDNA_MODEL_SUBMIT_US", "20", 1);
    setenv("GGML_XDNA_MODEL_INVOCATION_US", "3", 1);
    setenv("GGML_XDNA_MODEL_SCALE_OPS", "64", 1);
    setenv("GGML_XDNA_MODEL_SCALE_GROUP", "256", 1);
    setenv("GGML_XDNA_MODEL_CSTAGE_KB", "0", 1);
    NpuPreset p;
    std::string error;
    ASSERT_TRUE(preset_from_env(p, error)) << error;
    EXPECT_EQ(p.name, "strix");
    EXPECT_DOUBLE_EQ(p.dram_gbs, 100);
    EXPECT_DOUBLE_EQ(p.clock_ghz, 1.5);
    EXPECT_DOUBLE_EQ(p.efficiency(), 0.5);
    EXPECT_DOUBLE_EQ(p.submit_us, 20);
    EXPECT_DOUBLE_EQ(p.invocation_us, 3);
    EXPECT_DOUBLE_EQ(p.scale_ops_per_cycle, 64);
    EXPECT_EQ(p.scale_group, 256);
    EXPECT_DOUBLE_EQ(p.c_stage_kb, 0);
    // And the model uses them: the GEMV's bytes, counted here from the design's schedule
    // (aie/matmul/README.md), stream at the overridden 100 GB/s or through the busiest shim channel at
    // 8 bytes per cycle of the overridden 1.5 GHz clock, whichever is slower. 224 row tiles = 56 groups
    // of 4, 7 rounds on each of the 8 columns; per K tile of 16 a group streams 4 windows of the family's
    // largest tile (Q6_K, 13440 bytes), the token tile's 1216 activation bytes, and 4 whole C tiles of 4 x
    // 64 floats. Column 0's W channel carries 7 x 4 x 16 x 13440 bytes: 502 us at 12 GB/s, above the
    // 495 us of all the bytes at 100 GB/s.
    const ModelledTime t = TimingModel(p).invocation(q4k_gemv());
    const double bytes = 224.0 * 16 * 13440 + 56 * 16.0 * 1216 + 56 * 4 * 4 * 64 * 4.0;
    const double channel = 7 * 4 * 16 * 13440.0;
    EXPECT_NEAR(t.dram_us, std::max(bytes / (100 * 1e3), channel / (8 * 1.5 * 1e3)), 1e-12 * t.dram_us);
    EXPECT_NEAR(t.dram_bytes, bytes, 1e-12 * bytes);
    EXPECT_GT(channel / (8 * 1.5 * 1e3), bytes / (100 * 1e3));
    // The output staging (CSTAGE) is the published kernels' blocking: the design's own bytes ignore it.
    p.c_stage_kb = 256;
    EXPECT_DOUBLE_EQ(TimingModel(p).invocation(q4k_gemv()).dram_bytes, t.dram_bytes);
}

TEST_F(PresetEnv, BadValuesAreReportedAndIgnored) {
    setenv("GGML_XDNA_PRESET", "phoenix", 1);
    setenv("GGML_XDNA_MODEL_BW_GBS", "fast", 1);
    setenv("GGML_XDNA_MODEL_EFFICIENCY", "1.5", 1);
    setenv("GGML_XDNA_MODEL_SUBMIT_US", "50", 1);
    NpuPreset p;
    std::string error;
    EXPECT_FALSE(preset_from_env(p, error));
    EXPECT_NE(error.find("phoenix"), std::string::npos) << error;
    EXPECT_NE(error.find("GGML_XDNA_MODEL_BW_GBS"), std::string::npos) << error;
    EXPECT_NE(error.find("GGML_XDNA_MODEL_EFFICIENCY"), std::string::npos) << error;
    const NpuPreset & krackan = *find_npu_preset("krackan");
    EXPECT_EQ(p.name, "krackan");
    EXPECT_DOUBLE_EQ(p.dram_gbs, krackan.dram_gbs);
    EXPECT_DOUBLE_EQ(p.efficiency(), krackan.efficiency());
    EXPECT_DOUBLE_EQ(p.submit_us, 50);  // the valid override still applies
}

}  // namespace
}  // namespace xdna
