// SimDevice reports the timing model's figures for the batch it ran, independent of its wall time.
#include "plan/matmul-plan.h"
#include "sim/sim-device.h"
#include "sim/sim-kinds.h"
#include "reference-timing.h"

#include "ggml-cpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace xdna {
namespace {

class SimDeviceStats : public ::testing::Test {
protected:
    void SetUp() override { ggml_cpu_init(); }  // fp16 tables used by the test's own conversions

    // An all-zero Q8_0 matmul of M x K weights and N tokens, operands in device buffers.
    MatmulInvocation make(Device & dev, int64_t m, int64_t k, int64_t n) {
        MatmulInvocation inv;
        EXPECT_TRUE(invocation_geometry(GGML_TYPE_Q8_0, m, k, n, inv));
        buffers_.push_back(dev.allocate(inv.weight_bytes(), BufferRole::weights));
        inv.weights = {buffers_.back().get(), 0};
        buffers_.push_back(dev.allocate(inv.activation_bytes(), BufferRole::data));
        inv.activations = {buffers_.back().get(), 0};
        buffers_.push_back(dev.allocate(inv.out_bytes(), BufferRole::data));
        inv.out = {buffers_.back().get(), 0};
        for (size_t i = buffers_.size() - 3; i < buffers_.size(); ++i) {
            std::memset(buffers_[i]->host_ptr(), 0, buffers_[i]->size());
        }
        return inv;
    }

    std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
};

TEST_F(SimDeviceStats, RunReportsModelledTimes) {
    const NpuPreset & preset = *find_npu_preset("krackan");
    SimDevice dev(1, preset);
    EXPECT_EQ(dev.last_batch_stats().modelled_us, 0.0);
    Batch batch;
    batch.invocations.push_back(to_invocation(make(dev, 512, 2048, 1)));
    batch.invocations.push_back(to_invocation(make(dev, 128, 1024, 40)));
    ASSERT_TRUE(dev.run(batch, std::chrono::milliseconds(10000)).ok);

    const auto & stats = dev.last_stats();
    ASSERT_EQ(stats.size(), 2u);
    // The modelled times restated from the preset (reference-timing.h), not asked of the model: Q8_0
    // weight tiles of 64 rows x 8 blocks of 34 bytes; activation tiles of TN x (256 codes + 8 fp32 scales
    // + 16 int16 sums): 1280 bytes at TN 4, 10240 at TN 32 (40 tokens: two tiles of 32); Q8_0 is the
    // legacy family's largest tile, so its window is its own tile.
    const xdna_test::ReferenceTime want[2] = {
        xdna_test::reference_time(preset, GGML_TYPE_Q8_0, 512, 2048, 1, 4, 64 * 8 * 34, 1280, 64 * 8 * 34),
        xdna_test::reference_time(preset, GGML_TYPE_Q8_0, 128, 1024, 40, 32, 64 * 8 * 34, 10240, 64 * 8 * 34)};
    double sum = 0;
    for (size_t i = 0; i < stats.size(); ++i) {
        SCOPED_TRACE(i);
        ASSERT_EQ(matmul_of(batch.invocations[i]).tile.n, i == 0 ? 4 : 32);
        EXPECT_NEAR(stats[i].modelled_us, want[i].total_us, 1e-12 * want[i].total_us);
        EXPECT_NEAR(stats[i].modelled_compute_us, want[i].compute_us, 1e-12 * want[i].compute_us);
        EXPECT_NEAR(stats[i].modelled_dram_us, want[i].dram_us, 1e-12 * want[i].dram_us);
        EXPECT_DOUBLE_EQ(stats[i].modelled_dispatch_us, preset.invocation_us);
        // The roofline: the useful MACs at the family's peak (512 int8 MAC per cycle on each of 32 cores)
        // or the unique bytes at the full bandwidth, whichever is longer.
        const double macs = double(matmul_of(batch.invocations[i]).m) * matmul_of(batch.invocations[i]).n * matmul_of(batch.invocations[i]).k_tiles * 256;
        const double roof = std::max(macs / (512.0 * 32 * preset.clock_ghz * 1e3), want[i].unique_bytes / (preset.dram_gbs * 1e3));
        EXPECT_NEAR(stats[i].modelled_roofline_us, roof, 1e-12 * roof);
        EXPECT_LE(stats[i].modelled_roofline_us, stats[i].modelled_us);
        EXPECT_GT(stats[i].modelled_us, 0.0);
        EXPECT_EQ(stats[i].macs, batch.invocations[i].macs());
        sum += stats[i].modelled_us;
    }
    const BatchStats b = dev.last_batch_stats();
    EXPECT_DOUBLE_EQ(b.modelled_submit_us, preset.submit_us);
    EXPECT_DOUBLE_EQ(b.modelled_us, preset.submit_us + sum);
}

TEST_F(SimDeviceStats, ModelIgnoresHostSpeed) {
    // The same batch on one host thread or two gives the same modelled time.
    const NpuPreset & preset = *find_npu_preset("halo");
    SimDevice one(1, preset), two(2, preset);
    Batch b1, b2;
    b1.invocations.push_back(to_invocation(make(one, 1024, 4096, 64)));
    b2.invocations.push_back(to_invocation(make(two, 1024, 4096, 64)));
    ASSERT_TRUE(one.run(b1, std::chrono::milliseconds(10000)).ok);
    ASSERT_TRUE(two.run(b2, std::chrono::milliseconds(10000)).ok);
    EXPECT_DOUBLE_EQ(one.last_batch_stats().modelled_us, two.last_batch_stats().modelled_us);
}

TEST_F(SimDeviceStats, EnvironmentSelectsThePreset) {
    setenv("GGML_XDNA_PRESET", "halo", 1);
    SimDevice dev(1);
    unsetenv("GGML_XDNA_PRESET");
    EXPECT_EQ(dev.timing_model().preset().name, "halo");
}

}  // namespace
}  // namespace xdna

namespace xdna {
namespace {

// The device dispatches by kind: a kind the simulator has no engine for is refused before anything
// runs (its output keeps what it held), and so is the host fallback's.
TEST_F(SimDeviceStats, RefusesAKindItHasNoEngineFor) {
    SimDevice dev(1, *find_npu_preset("krackan"));
    MatmulInvocation m = make(dev, 64, 256, 1);
    float * out = static_cast<float *>(m.out.host());
    out[0] = 42.0f;
    Invocation inv = to_invocation(m);
    inv.key.kind = static_cast<KernelKind>(std::variant_size_v<KindParams>);  // one past the last kind
    const Status st = dev.run(Batch{{inv}}, std::chrono::milliseconds(1000));
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.message.find("no simulated kernel of kind"), std::string::npos) << st.message;
    EXPECT_EQ(out[0], 42.0f);
    bool refused = false;
    ThreadPool pool(1);
    const Status host = sim_run_by_kind({inv}, pool, SimExec::twin, nullptr, {}, &refused);
    EXPECT_FALSE(host.ok);
    EXPECT_TRUE(refused);
    EXPECT_EQ(out[0], 42.0f);
}

// A key the device has no kernel for (another design's name, a tile the contract does not allow) is
// refused by has_kernel and by run.
TEST_F(SimDeviceStats, HasKernelReadsTheWholeKey) {
    SimDevice dev(1, *find_npu_preset("krackan"));
    const MatmulContract & c = *matmul_contract_for(GGML_TYPE_Q8_0);
    EXPECT_TRUE(dev.has_kernel(matmul_key(c, c.tile(4))));
    KernelKey other = matmul_key(c, c.tile(4));
    other.design = "matmul_nothing";
    EXPECT_FALSE(dev.has_kernel(other));
    EXPECT_FALSE(dev.has_kernel(matmul_key(c, c.tile(5))));
    Invocation inv = to_invocation(make(dev, 64, 256, 1));
    inv.key.design = "matmul_nothing";
    EXPECT_FALSE(dev.run(Batch{{inv}}, std::chrono::milliseconds(1000)).ok);
}

}  // namespace
}  // namespace xdna
