// The runtime-parameter barrier and the RTP words across invocations (aie/matmul/README.md, "The
// runtime-parameter barrier"; sim/core-locks.h).
//
// 1. The lock as the core uses it, on hand-computed cases: an equal acquire waits for the value and
//    leaves it, a greater-equal acquire takes it, a release adds, the stream's set writes the value;
//    out-of-range values and a core spinning through an open barrier are reported.
// 2. Two consecutive invocations with different contracts and shapes on the same cores (one loaded
//    design): with the committed design both give the kernels mode's bits; with the design as it was
//    (no release after the RTP reads) the first is right and the second fails, naming the core, the
//    lock and the stale parameters. A barrier that never opens is a reported hang naming core and lock.
// 3. An invocation the design cannot take is refused with its reason before anything of its
//    submission runs, and the host fallback computes it.
#include "contracts/matmul-contract.h"
#include "runtime/invocation-args.h"
#include "runtime/matmul-sequence.h"
#include "runtime/thread-pool.h"
#include "sim/core-locks.h"
#include "sim/dma-interpreter.h"
#include "sim/sim-device.h"
#include "sim/sim-host-executor.h"
#include "sim/sim-matmul.h"
#include "sim/sim-stream.h"
#include "sim-operands.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace xdna;
using xdna_test::HostBuffer;

const DesignDescription & design() { return matmul_design().design; }

// The committed design with its core program's release dropped: the design before the fix.
DesignDescription without_release() {
    DesignDescription d = design();
    d.barrier_release_value = 0;
    return d;
}

void write_rtp(const DesignDescription & d, CoreSide & c, uint32_t contract, uint32_t out_tiles, uint32_t k_tiles) {
    c.memory[d.rtp_core_address + 4 * d.rtp_contract] = contract;
    c.memory[d.rtp_core_address + 4 * d.rtp_out_tiles] = out_tiles;
    c.memory[d.rtp_core_address + 4 * d.rtp_k_tiles] = k_tiles;
    c.memory[d.rtp_core_address + 4 * d.rtp_version] = d.rtp_layout_version;
}

// --- 1. The lock --------------------------------------------------------------------------------------

TEST(CoreBarrier, EqualAcquireLeavesTheValueAndTheReleaseAdds) {
    const DesignDescription & d = design();
    ASSERT_FALSE(d.barrier_acquire_ge);
    ASSERT_EQ(d.barrier_value, 1u);
    ASSERT_EQ(d.barrier_acquire_value, 1u);
    ASSERT_EQ(d.barrier_release_value, 1u);
    LoadedDesign l;
    load_design(d, "kquant", 4, l);
    CoreSide & c = l.core(0, 0);
    std::string err;
    EXPECT_EQ(c.phase, CoreSide::Phase::waiting);
    EXPECT_EQ(c.lock, 0u);  // IRON's barrier starts at 0: the core waits
    EXPECT_FALSE(barrier_try_pass(d, c, err));
    write_rtp(d, c, 2, 5, 7);
    ASSERT_TRUE(barrier_set(d, c, 1, err)) << err;
    // Passed: acquire_equal(1) leaves 1, release(1) makes it 2.
    EXPECT_EQ(c.phase, CoreSide::Phase::running);
    EXPECT_EQ(c.lock, 2u);
    EXPECT_EQ(c.params.contract, 2u);
    EXPECT_EQ(c.params.out_tiles, 5u);
    EXPECT_EQ(c.params.k_tiles, 7u);
    // Its work done, it loops back and waits: 2 is not 1.
    EXPECT_FALSE(barrier_pass_done(d, c, true, err));
    EXPECT_TRUE(err.empty()) << err;
    EXPECT_EQ(c.phase, CoreSide::Phase::waiting);
    EXPECT_EQ(describe_core(d, c), "waits for lock 15 == 1, it holds 2");
    // Words written while it waits are read at the next set: the next invocation's.
    EXPECT_EQ(core_memory_write_hazard(d, c, d.rtp_core_address), "");
    write_rtp(d, c, 0, 3, 4);
    ASSERT_TRUE(barrier_set(d, c, 1, err)) << err;
    EXPECT_EQ(c.params.out_tiles, 3u);
    EXPECT_EQ(c.params.k_tiles, 4u);
    EXPECT_EQ(c.lock, 2u);
    EXPECT_EQ(c.passes, 2u);
    // While it runs, a write to its RTP words is a hazard (it has read them for this pass).
    EXPECT_NE(core_memory_write_hazard(d, c, d.rtp_core_address + 4), "");
}

TEST(CoreBarrier, WithoutTheReleaseTheNextPassDoesNotWait) {
    const DesignDescription d = without_release();
    LoadedDesign l;
    load_design(d, "kquant", 4, l);
    CoreSide & c = l.core(1, 2);
    std::string err;
    write_rtp(d, c, 1, 6, 2);
    ASSERT_TRUE(barrier_set(d, c, 1, err)) << err;
    EXPECT_EQ(c.lock, 1u);  // the equal acquire left it open
    // The pass done, the core passes again at once with the same words: the previous invocation's.
    ASSERT_TRUE(barrier_pass_done(d, c, true, err)) << err;
    EXPECT_EQ(c.phase, CoreSide::Phase::running);
    EXPECT_EQ(c.params.out_tiles, 6u);
    EXPECT_EQ(c.passes, 2u);
    const std::string why = core_memory_write_hazard(d, c, d.rtp_core_address);
    EXPECT_NE(why.find("passed its barrier again without a new set"), std::string::npos) << why;
    EXPECT_NE(why.find("does not release the barrier"), std::string::npos) << why;
    EXPECT_NE(why.find("previous invocation's parameters"), std::string::npos) << why;
    // A core with no work passes forever: spinning, not an endless loop of the model.
    CoreSide & idle = l.core(7, 3);
    write_rtp(d, idle, 1, 0, 2);
    ASSERT_TRUE(barrier_set(d, idle, 1, err)) << err;
    ASSERT_TRUE(barrier_pass_done(d, idle, false, err)) << err;
    EXPECT_EQ(idle.phase, CoreSide::Phase::spinning);
    EXPECT_NE(core_memory_write_hazard(d, idle, d.rtp_core_address).find("previous invocation"), std::string::npos);
    // A new set lets the acquire decide again.
    ASSERT_TRUE(barrier_set(d, idle, 1, err)) << err;
    EXPECT_EQ(idle.phase, CoreSide::Phase::running);
}

TEST(CoreBarrier, GreaterEqualAcquireTakesTheValueAndRangesAreChecked) {
    DesignDescription d = design();
    d.barrier_acquire_ge = true;
    d.barrier_release_value = 0;
    LoadedDesign l;
    load_design(d, "float", 32, l);
    CoreSide & c = l.core(0, 0);
    std::string err;
    write_rtp(d, c, 0, 1, 1);
    // Set 3: acquire_ge(1) takes 1 per pass, so the core passes three times and then waits at 0.
    ASSERT_TRUE(barrier_set(d, c, 3, err)) << err;
    EXPECT_EQ(c.lock, 2u);
    ASSERT_TRUE(barrier_pass_done(d, c, true, err)) << err;
    EXPECT_EQ(c.lock, 1u);
    ASSERT_TRUE(barrier_pass_done(d, c, true, err)) << err;
    EXPECT_EQ(c.lock, 0u);
    EXPECT_FALSE(barrier_pass_done(d, c, true, err));
    EXPECT_TRUE(err.empty()) << err;
    EXPECT_EQ(c.phase, CoreSide::Phase::waiting);
    EXPECT_EQ(c.passes, 3u);
    // A lock holds 0..63.
    EXPECT_FALSE(barrier_set(d, c, 64, err));
    EXPECT_NE(err.find("lock 15, which holds 0..63"), std::string::npos) << err;
    // A release past 63 is reported, not wrapped.
    DesignDescription big = design();
    big.barrier_release_value = 63;
    CoreSide o;
    err.clear();
    write_rtp(big, o, 0, 1, 1);
    EXPECT_FALSE(barrier_set(big, o, 1, err));
    EXPECT_NE(err.find("past its largest value 63"), std::string::npos) << err;
}

// --- 2. Two invocations on the same cores -----------------------------------------------------------

struct Case {
    xdna_test::SimOperands o;
    std::unique_ptr<HostBuffer> out_ref, out;
};

const MatmulContract & contract(const char * name) {
    for (const MatmulContract & c : all_matmul_contracts()) {
        if (std::string(c.name) == name) {
            return c;
        }
    }
    ADD_FAILURE() << name;
    return all_matmul_contracts().front();
}

// Operands of an invocation in whole 4-row groups and token tiles (the drain writes the output in
// place), and its reference: the kernels mode (no stream, no DMA model, no barrier).
Case make_run(const char * name, int tn, int64_t m, int64_t k_tiles, int64_t n, std::mt19937_64 & g, ThreadPool & pool) {
    Case r;
    r.o = xdna_test::make_sim_operands(contract(name), tn, m, k_tiles, n, g);
    const size_t bytes = static_cast<size_t>(m * n) * 4;
    r.out_ref = std::make_unique<HostBuffer>(bytes);
    r.out = std::make_unique<HostBuffer>(bytes);
    std::memset(r.out_ref->host_ptr(), 0, bytes);
    std::memset(r.out->host_ptr(), 0xFF, bytes);
    MatmulInvocation inv = r.o.inv;
    inv.out = {r.out_ref.get(), 0};
    sim_run_matmul(inv, pool, SimExec::kernels);
    r.o.inv.out = {r.out.get(), 0};
    return r;
}

// The invocation's stream built from the committed description (the words do not depend on the
// release: the core program does), run by the interpreter under description `d` on `loaded`.
DmaRun run_stream(const DesignDescription & d, LoadedDesign & loaded, const MatmulInvocation & inv, ThreadPool & pool) {
    const MatmulSequence seq = build_matmul_sequence(design(), sequence_shape_of(inv, inv.out_row_stride));
    EXPECT_TRUE(seq.ok()) << seq.error;
    ParamWords params{};
    std::string err;
    EXPECT_TRUE(pack_params(inv, params, err)) << err;
    std::vector<DmaArgument> args(4);
    args[d.arg_weights] = {static_cast<uint8_t *>(inv.weights.host()), inv.weights.buffer->size()};
    args[d.arg_activations] = {static_cast<uint8_t *>(inv.activations.host()), inv.activations.buffer->size()};
    args[d.arg_out] = {static_cast<uint8_t *>(inv.out.host()), inv.out.buffer->size()};
    args[d.arg_params] = {reinterpret_cast<uint8_t *>(params.data()), sizeof(params)};
    return run_control_stream(d, seq.family, inv.tile.n, seq.words.data(), seq.words.size(), args, &pool, loaded);
}

bool same_bits(const Case & r) {
    return std::memcmp(r.out_ref->host_ptr(), r.out->host_ptr(), r.out->size()) == 0;
}

bool has_values(const Case & r) {
    const auto * f = static_cast<const float *>(r.out_ref->host_ptr());
    size_t nonzero = 0;
    for (size_t i = 0; i < r.out_ref->size() / 4; ++i) nonzero += f[i] != 0.0f;
    return nonzero > r.out_ref->size() / 8;
}

// Two kquant invocations at TN 4: Q4_K over 3 groups (columns 3..7 idle) with 3 K tiles and 2 token
// tiles, then Q6_K over 9 groups (two rounds on column 0) with 2 K tiles and 1 token tile.
class BarrierTwoInvocations : public ::testing::Test {
protected:
    void SetUp() override {
        std::mt19937_64 g(xdna_test::test_seed());
        first = make_run("mm_q4_K_a8", 4, 64 * 4 * 3, 3, 8, g, pool);
        second = make_run("mm_q6_K_a8", 4, 64 * 4 * 9, 2, 4, g, pool);
        ASSERT_TRUE(has_values(first) && has_values(second));
    }
    ThreadPool pool{2};
    Case first, second;
};

TEST_F(BarrierTwoInvocations, CommittedDesignRunsBothRight) {
    SCOPED_TRACE(testing::Message() << "seed " << xdna_test::test_seed());
    LoadedDesign loaded;
    const DmaRun a = run_stream(design(), loaded, first.o.inv, pool);
    ASSERT_TRUE(a.ok()) << a.error;
    EXPECT_TRUE(same_bits(first));
    const DmaRun b = run_stream(design(), loaded, second.o.inv, pool);
    std::printf("  committed design, second invocation: %s\n", b.ok() ? "ran, bit-identical to the kernels mode" : b.error.c_str());
    ASSERT_TRUE(b.ok()) << b.error;
    EXPECT_TRUE(same_bits(second));
    EXPECT_EQ(loaded.invocations, 2u);
    // Every core passed its barrier once per invocation and waits with the lock released to 2.
    for (const CoreSide & c : loaded.cores) {
        EXPECT_EQ(c.passes, 2u);
        EXPECT_EQ(c.phase, CoreSide::Phase::waiting);
        EXPECT_EQ(c.lock, 2u);
    }
    // And back to the first shape on the same cores.
    std::memset(first.out->host_ptr(), 0xFF, first.out->size());
    const DmaRun c = run_stream(design(), loaded, first.o.inv, pool);
    ASSERT_TRUE(c.ok()) << c.error;
    EXPECT_TRUE(same_bits(first));
}

TEST_F(BarrierTwoInvocations, DesignWithoutTheReleaseFailsTheSecond) {
    SCOPED_TRACE(testing::Message() << "seed " << xdna_test::test_seed());
    const DesignDescription old = without_release();
    LoadedDesign loaded;
    // The first invocation is right: the barrier was closed when the stream set it.
    const DmaRun a = run_stream(old, loaded, first.o.inv, pool);
    ASSERT_TRUE(a.ok()) << a.error;
    EXPECT_TRUE(same_bits(first));
    // Its cores looped back and passed again at once: the active ones run the first shape again, the
    // idle ones spin.
    EXPECT_EQ(loaded.core(0, 0).phase, CoreSide::Phase::running);
    EXPECT_EQ(loaded.core(7, 0).phase, CoreSide::Phase::spinning);
    // The second fails, naming the core, the lock and why: the parameters it runs with are stale.
    const DmaRun b = run_stream(old, loaded, second.o.inv, pool);
    std::printf("  design without the release, second invocation: %s\n", b.ok() ? "ran" : b.error.c_str());
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.error.find("core (0, 2)"), std::string::npos) << b.error;
    EXPECT_NE(b.error.find("lock 15"), std::string::npos) << b.error;
    EXPECT_NE(b.error.find("runs contract 0, 2 output tiles x 3 K tiles"), std::string::npos) << b.error;
    EXPECT_NE(b.error.find("previous invocation's parameters"), std::string::npos) << b.error;
    // A failed run unloads the design: the next invocation starts from a fresh load, and is right.
    EXPECT_FALSE(loaded.loaded());
    const DmaRun c = run_stream(old, loaded, second.o.inv, pool);
    ASSERT_TRUE(c.ok()) << c.error;
    EXPECT_TRUE(same_bits(second));
}

// The second invocation with the first one's shape and another contract of the family (Q5_K after Q4_K):
// the loop counts a core read for the first invocation happen to fit the second's stream, so without the
// release an NPU core would run the Q4_K kernel on Q5_K tiles, giving wrong numbers without a hang. The
// model reports it all the same; the committed design runs it right.
TEST_F(BarrierTwoInvocations, StaleContractOfTheSameShapeIsReported) {
    std::mt19937_64 g(xdna_test::test_seed() + 1);
    SCOPED_TRACE(testing::Message() << "seed " << xdna_test::test_seed());
    Case other = make_run("mm_q5_K_a8", 4, 64 * 4 * 3, 3, 8, g, pool);
    LoadedDesign fixed, old;
    ASSERT_TRUE(run_stream(design(), fixed, first.o.inv, pool).ok());
    const DmaRun b = run_stream(design(), fixed, other.o.inv, pool);
    ASSERT_TRUE(b.ok()) << b.error;
    EXPECT_TRUE(same_bits(other));
    const DesignDescription d_old = without_release();
    ASSERT_TRUE(run_stream(d_old, old, first.o.inv, pool).ok());
    const DmaRun s = run_stream(d_old, old, other.o.inv, pool);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error.find("runs contract 0, 2 output tiles x 3 K tiles"), std::string::npos) << s.error;
}

// The same two invocations through the simulated device in stream mode, one submission each: the
// device keeps the loaded design between submissions (both right, every core passed twice).
TEST_F(BarrierTwoInvocations, SimDeviceKeepsTheLoadedDesignAcrossSubmissions) {
    StreamContexts contexts;
    ASSERT_TRUE(sim_run_matmuls_stream({to_invocation(first.o.inv)}, pool, contexts).ok);
    const Status st = sim_run_matmuls_stream({to_invocation(second.o.inv)}, pool, contexts);
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_TRUE(same_bits(first));
    EXPECT_TRUE(same_bits(second));
    const LoadedDesign & l = contexts.design("kquant", 4, "m_split");  // the default layout, by its name
    EXPECT_EQ(l.invocations, 2u);
    EXPECT_EQ(l.cores.front().passes, 2u);
    SimDevice dev(2);
    dev.set_exec(SimExec::stream);
    std::memset(first.out->host_ptr(), 0xFF, first.out->size());
    std::memset(second.out->host_ptr(), 0xFF, second.out->size());
    ASSERT_TRUE(dev.run({{to_invocation(first.o.inv)}}, std::chrono::milliseconds(0)).ok);
    const Status sd = dev.run({{to_invocation(second.o.inv)}}, std::chrono::milliseconds(0));
    ASSERT_TRUE(sd.ok) << sd.message;
    EXPECT_TRUE(same_bits(first));
    EXPECT_TRUE(same_bits(second));
}

// A barrier the stream never opens (the core waits for 2, the stream sets 1): the first sync cannot
// complete, and the error names the waiting cores and their lock, instead of looping.
TEST_F(BarrierTwoInvocations, BarrierThatNeverOpensIsAReportedHang) {
    DesignDescription d = design();
    d.barrier_acquire_value = 2;
    LoadedDesign loaded;
    const DmaRun r = run_stream(d, loaded, first.o.inv, pool);
    std::printf("  barrier that never opens: %s\n", r.ok() ? "ran" : r.error.c_str());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error.find("can never complete"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("core (0, 2) waits for lock 15 == 2, it holds 1"), std::string::npos) << r.error;
}

// --- 3. Refused before submission -----------------------------------------------------------------

TEST(StreamRefusal, RtpWordsTheCoreCannotHoldAreRefused) {
    MatmulSequenceShape s;
    s.contract = "mm_q4_K_a8";
    s.tile_n = 4;
    s.m_tiles = 8;
    s.k_tiles = 2;
    s.out_row_stride = 512;
    s.weight_tile_bytes = 9216;
    s.act_tile_bytes = 1216;
    // At the bound, on a description whose words hold at most 6: 2 groups in one round, so column 0 runs
    // n_tiles output tiles: 6 is taken, 7 is refused (first, so that a builder without the check stops
    // the test here instead of building the stream below).
    DesignDescription small = design();
    small.rtp_word_max = 6;
    s.n_tiles = 6;
    EXPECT_TRUE(build_matmul_sequence(small, s).ok());
    s.n_tiles = 7;
    const MatmulSequence seven = build_matmul_sequence(small, s);
    ASSERT_FALSE(seven.ok());
    EXPECT_NE(seven.error.find("'output tiles' of column 0 would be 7"), std::string::npos) << seven.error;
    // The committed design: int32 words.
    s.n_tiles = int64_t(1) << 31;  // output tiles of column 0: 2^31, one past int32
    const MatmulSequence seq = build_matmul_sequence(design(), s);
    ASSERT_FALSE(seq.ok());
    EXPECT_NE(seq.error.find("RTP word 'output tiles' of column 0 would be 2147483648: the core program reads it as an int32"),
              std::string::npos) << seq.error;
    EXPECT_TRUE(seq.words.empty());
    s.n_tiles = 1;
    s.contract = "mm_nothing";
    EXPECT_NE(build_matmul_sequence(design(), s).error.find("serves no contract"), std::string::npos);
}

// A submission whose second invocation needs more K chunks than the design's BD slots hold: the device
// refuses the submission with the reason and nothing of it runs (the first invocation's output is
// untouched); the host fallback then computes both, as the kernels would.
TEST(StreamRefusal, SubmissionIsRefusedBeforeAnythingRunsAndTheHostComputesIt) {
    std::mt19937_64 g(xdna_test::test_seed());
    SCOPED_TRACE(testing::Message() << "seed " << xdna_test::test_seed());
    ThreadPool pool(2);
    Case good = make_run("mm_q4_K_a8", 4, 64 * 4, 2, 4, g, pool);
    Case bad = make_run("mm_q4_K_a8", 4, 64, 3 * 64 + 1, 1, g, pool);  // 193 K tiles: 4 chunks of at most 64
    const Batch batch{{to_invocation(good.o.inv), to_invocation(bad.o.inv)}};
    SimDevice dev(2);
    dev.set_exec(SimExec::stream);
    const Status st = dev.run(batch, std::chrono::milliseconds(0));
    std::printf("  refused: %s\n", st.ok ? "ran" : st.message.c_str());
    ASSERT_FALSE(st.ok);
    EXPECT_NE(st.message.find("invocation 1"), std::string::npos) << st.message;
    EXPECT_NE(st.message.find("needs 4 chunks"), std::string::npos) << st.message;
    const auto * untouched = static_cast<const uint8_t *>(good.out->host_ptr());
    for (size_t i = 0; i < good.out->size(); ++i) ASSERT_EQ(untouched[i], 0xFF) << "byte " << i << " was written";
    // What the backend does after a failed run: the host computes the batch.
    make_sim_host_executor(pool)->run(batch);
    EXPECT_TRUE(same_bits(good));
    EXPECT_TRUE(same_bits(bad));
    EXPECT_TRUE(has_values(bad));
}

}  // namespace
