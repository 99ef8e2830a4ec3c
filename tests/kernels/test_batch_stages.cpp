// Ordered stages of a Batch on the simulator and its host fallback: a stage reads what the stage before
// it wrote. The second invocation's activations ARE the first one's output (an fp32 matmul result read
// as the F32 contract's activation tiles), so the staged batch must give exactly what running the two
// as separate submissions, one after the other, gives. Run on four threads: a device that ignored the
// stage mark would start the second invocation's tiles while the first's are still being written.
#include "runtime/host-executor.h"
#include "sim/npu-presets.h"
#include "sim/sim-device.h"
#include "sim/sim-host-executor.h"
#include "sim-operands.h"


#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace {

using namespace xdna;
using xdna_test::HostBuffer;

struct TwoStages {
    xdna_test::SimOperands      first;  // Q8_0, many row tiles
    std::unique_ptr<HostBuffer> mid;    // its output, the second one's activations
    xdna_test::SimOperands      second; // F32 weights x F32 activation tiles
    std::unique_ptr<HostBuffer> out;
    MatmulInvocation            a, b;

    explicit TwoStages(uint64_t seed) {
        std::mt19937_64 g(seed);
        const MatmulContract & q8 = *matmul_contract_for(GGML_TYPE_Q8_0);
        const MatmulContract & f32 = *matmul_contract_for(GGML_TYPE_F32);
        second = xdna_test::make_sim_operands(f32, 4, 64, 2, 3, g);
        const size_t need = second.al.total_bytes;
        // Enough rows that the first output covers the second's activation operand, and many row tiles.
        const int64_t m = std::max<int64_t>(4096, static_cast<int64_t>((need / 4 + 3) / 4));
        first = xdna_test::make_sim_operands(q8, 4, m, 4, 4, g);
        mid = std::make_unique<HostBuffer>(static_cast<size_t>(m) * 4 * sizeof(float));
        out = std::make_unique<HostBuffer>(64 * 3 * sizeof(float));
        a = first.inv;
        a.out = {mid.get(), 0};
        b = second.inv;
        b.activations = {mid.get(), 0};
        b.out = {out.get(), 0};
        EXPECT_GE(mid->size(), b.activation_bytes());
    }
    void clear() {
        std::memset(mid->host_ptr(), 0, mid->size());
        std::memset(out->host_ptr(), 0x55, out->size());
    }
    Batch staged() const {
        Batch batch;
        batch.invocations.push_back(to_invocation(a));
        batch.end_stage();
        batch.invocations.push_back(to_invocation(b));
        return batch;
    }
};

class BatchStages : public ::testing::Test {
protected:
    void SetUp() override {}
};

TEST_F(BatchStages, AStageReadsWhatTheStageBeforeItWrote) {
    TwoStages t(0x5ea9e5);
    SimDevice dev(4, *find_npu_preset("krackan"));
    // The reference: two submissions, one after the other.
    t.clear();
    ASSERT_TRUE(dev.run(Batch{{to_invocation(t.a)}}, std::chrono::milliseconds(60000)).ok);
    ASSERT_TRUE(dev.run(Batch{{to_invocation(t.b)}}, std::chrono::milliseconds(60000)).ok);
    std::vector<uint8_t> want(t.out->size());
    std::memcpy(want.data(), t.out->host_ptr(), want.size());
    // The second stage depends on the first: with nothing written yet, its result is another.
    bool nonzero = false;
    for (int i = 0; i < 64 * 3; ++i) nonzero = nonzero || static_cast<const float *>(t.out->host_ptr())[i] != 0.0f;
    ASSERT_TRUE(nonzero);

    for (int rep = 0; rep < 3; ++rep) {
        SCOPED_TRACE(rep);
        t.clear();
        const Batch batch = t.staged();
        ASSERT_EQ(batch.stages(), 2u);
        const Status st = dev.run(batch, std::chrono::milliseconds(60000));
        ASSERT_TRUE(st.ok) << st.message;
        EXPECT_EQ(std::memcmp(want.data(), t.out->host_ptr(), want.size()), 0);
        ASSERT_EQ(dev.last_stats().size(), 2u);
    }

    // The host fallback runs stages in order too.
    ThreadPool pool(4);
    auto host = make_sim_host_executor(pool);
    t.clear();
    ASSERT_TRUE(host->run(t.staged()).ok);
    EXPECT_EQ(std::memcmp(want.data(), t.out->host_ptr(), want.size()), 0);
}

TEST_F(BatchStages, MarksOutsideTheBatchAreRefused) {
    TwoStages t(7);
    SimDevice dev(2, *find_npu_preset("krackan"));
    t.clear();
    Batch batch = t.staged();
    batch.stage_ends = {1, 5};  // past the batch
    Status st = dev.run(batch, std::chrono::milliseconds(1000));
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.message.find("stage marks"), std::string::npos) << st.message;
    batch.stage_ends = {1, 1};  // not ascending
    EXPECT_FALSE(dev.run(batch, std::chrono::milliseconds(1000)).ok);
    // Nothing ran: the output keeps its fill.
    EXPECT_EQ(static_cast<const uint8_t *>(t.out->host_ptr())[0], 0x55);
    Batch one;
    EXPECT_EQ(one.stages(), 1u);
    one.end_stage();  // an empty stage is not a stage
    EXPECT_TRUE(one.stage_ends.empty());
}

}  // namespace
