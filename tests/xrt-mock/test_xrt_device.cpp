// The XRT device's control flow on the mock XRT (mock-control.h): kernel loading and its failures,
// argument layout as XRT receives it, runlists per hardware context, run errors and timeouts.
#include "runtime/installed-kernels.h"
#include "contracts/weight-layout.h"
#include "control/control-ops.h"
#include "runtime/design-description.h"
#include "runtime/kernel-files.h"
#include "runtime/matmul-sequence.h"
#include "runtime/rows-sequence.h"
#include "ops/add/add-invocation.h"
#include "ops/rms_norm/rms-norm-invocation.h"
#include "ops/scale/scale-invocation.h"
#include "ops/hadamard/hadamard-invocation.h"
#include "ops/flash_attn/flash-attn-invocation.h"
#include "ops/flash_attn/flash-attn-sequence.h"
#include "ops/row_scale/row-scale-invocation.h"
#include "ops/get_rows/get-rows-invocation.h"
#include "ops/rope/rope-invocation.h"
#include "ops/set_rows/set-rows-invocation.h"
#include "runtime/rope-sequence.h"
#include "runtime/scatter-sequence.h"
#include "runtime/gather-sequence.h"
#include "runtime/quant-sequence.h"
#include "ops/act_quant/act-quant-invocation.h"
#include "runtime/design-registry.h"
#include "mock-control.h"
#include "runtime/runtime-log.h"
#include "xrt/xrt-device.h"
#include "xrt/xrt-entry.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace xdna;
using json = nlohmann::json;

namespace {

void write_file(const std::string & path, const std::string & bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A manifest (format 2) design entry of the matmul design serving one contract at one tile.
json entry(const std::string & contract, int n, int k, const std::string & xclbin,
           const std::string & kernel = "MLIR_AIE") {
    return {{"design", "matmul"},
            {"family", matmul_design().design.family_of(contract)},
            {"serves", json::array({{{"contract", contract}, {"tiles", json::array({{{"m", 64}, {"n", n}, {"k", k}}})}}})},
            {"xclbin", xclbin},
            {"kernel", kernel},
            {"npu", {"npu2"}},
            {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                  {{"kind", "instructions"}, {"group_id", 1}},
                                  {{"kind", "instruction_count"}},
                                  {{"kind", "weights"}, {"group_id", 3}},
                                  {{"kind", "activations"}, {"group_id", 4}},
                                  {{"kind", "output"}, {"group_id", 5}},
                                  {{"kind", "params"}, {"group_id", 6}}})}};
}

class XrtDeviceTest : public ::testing::Test {
protected:
    void SetUp() override {
        xrt_mock::reset();
        std::string tmpl = (std::filesystem::temp_directory_path() / "xdna-xrt-test-XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
        ::setenv(kKernelsEnv, dir_.c_str(), 1);
        set_runtime_log_sink([this](LogLevel l, const std::string & m) {
            if (l == LogLevel::error) {
                errors_.push_back(m);
            }
        });
        write_file(dir_ + "/q4k.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 7}}, 1));
        write_file(dir_ + "/q6k.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 7}}, 2));
        npu_.present = true;
        npu_.pci_address = "0000:c5:00.1";
        npu_.generation = NpuGeneration::npu2;
        npu_.name = "NPU Strix Halo";
        npu_.columns = 8;
    }
    void TearDown() override {
        set_runtime_log_sink(nullptr);
        ::unsetenv(kKernelsEnv);
        std::filesystem::remove_all(dir_);
    }

    void write_manifest(const json & kernels) {
        write_file(dir_ + "/manifest.json", json{{"format_version", 2}, {"designs", kernels}}.dump());
    }
    void write_default_manifest() {
        write_manifest(json::array({entry("mm_q4_K_a8", 4, 256, "q4k.xclbin"),
                                    entry("mm_q4_K_a8", 32, 256, "q4k.xclbin"),
                                    entry("mm_q6_K_a8", 4, 256, "q6k.xclbin")}));
    }
    std::unique_ptr<Device> open() {
        std::string why;
        auto        d = open_xrt_device(npu_, why);
        EXPECT_NE(d, nullptr) << why;
        return d;
    }

    // One invocation of `type` with `m` rows, `n` tokens, K = 512, placed at the given offsets.
    MatmulInvocation invocation(ggml_type type, int64_t m, int64_t n, DeviceBuffer & w, size_t w_off,
                                DeviceBuffer & a, size_t a_off, DeviceBuffer & o, size_t o_off) {
        const MatmulContract * c = matmul_contract_for(type);
        MatmulInvocation       inv;
        inv.contract = c;
        inv.tile = c->tile(choose_tile_n(*c, n));
        inv.m = m;
        inv.n = n;
        inv.m_tiles = (m + 63) / 64;
        inv.n_tiles = (n + inv.tile.n - 1) / inv.tile.n;
        inv.k_tiles = 2;
        inv.weight_tile_bytes = 64 * 210;
        FamilyBuffers fb;
        std::string   err;
        EXPECT_TRUE(family_buffers(matmul_design().design, matmul_design().design.family_of(c->name), inv.tile.n, fb, err))
            << err;
        inv.act_tile_bytes = fb.a_obj;  // what the family's cores take
        inv.out_row_stride = m;
        inv.weights = {&w, w_off};
        inv.activations = {&a, a_off};
        inv.out = {&o, o_off};
        return inv;
    }

    // The stream the device must hand the NPU for `inv`: the builder's words for its shape, the C drain
    // at the output's row stride when the drain is exactly the valid part, else at the staging stride.
    static MatmulSequence expected_stream(const MatmulInvocation & inv) {
        const DesignDescription & d = matmul_design().design;
        const int64_t m_rows = (inv.m_tiles + d.core_rows - 1) / d.core_rows * d.core_rows;
        const bool    direct = inv.m == m_rows * 64 && inv.n == inv.n_tiles * inv.tile.n;
        return build_matmul_sequence(d, sequence_shape_of(inv, direct ? inv.out_row_stride : m_rows * 64));
    }

    std::string              dir_;
    NpuInfo                  npu_;
    std::vector<std::string> errors_;
};

}  // namespace

TEST_F(XrtDeviceTest, OpensWithDescriptionAndLoadsKernelsLazily) {
    write_default_manifest();
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    EXPECT_EQ(dev->info().description, "NPU Strix Halo (npu2, 8 columns), XRT 2.26.0");
    EXPECT_FALSE(dev->info().simulated);
    EXPECT_EQ(xrt_mock::control().contexts_created, 0);  // nothing taken before a kernel is asked for

    const MatmulContract & q4k = *matmul_contract_for(GGML_TYPE_Q4_K);
    EXPECT_TRUE(dev->has_kernel(q4k, q4k.tile(4)));
    EXPECT_TRUE(dev->has_kernel(q4k, q4k.tile(32)));
    EXPECT_EQ(xrt_mock::control().contexts_created, 1);  // both tiles share the xclbin's context
    EXPECT_EQ(xrt_mock::control().kernels_opened, 2);
    const MatmulContract & q8 = *matmul_contract_for(GGML_TYPE_Q8_0);
    EXPECT_FALSE(dev->has_kernel(q8, q8.tile(4)));  // no entry
    EXPECT_TRUE(errors_.empty());
}

// Ordered stages: the second stage goes out only after the first completed, in every context the batch
// uses: the same three invocations as two stages execute three runlists (stage 1: both contexts; stage
// 2: the Q4_K one again, reset in between), and the runs are recorded in stage order.
TEST_F(XrtDeviceTest, RunsStagesOneAfterAnother) {
    write_default_manifest();
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto w = dev->allocate(1 << 20, BufferRole::weights);
    auto a = dev->allocate(1 << 16, BufferRole::data);
    auto o = dev->allocate(1 << 16, BufferRole::data);
    ASSERT_TRUE(w && a && o);
    Batch batch;
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q4_K, 100, 3, *w, 0, *a, 0, *o, 0)));
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q6_K, 70, 2, *w, 262144, *a, 16384, *o, 2048)));
    batch.end_stage();
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q4_K, 64, 20, *w, 524288, *a, 32768, *o, 8192)));
    ASSERT_EQ(batch.stages(), 2u);
    xrt_mock::control().drain_row_stride = 256;
    const Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    const auto & c = xrt_mock::control();
    EXPECT_EQ(c.runlists_executed, 3);
    ASSERT_EQ(c.runs.size(), 3u);
    EXPECT_EQ(c.runs[0].params[4], 100u);  // stage 1, Q4_K context
    EXPECT_EQ(c.runs[1].params[4], 70u);   // stage 1, Q6_K context
    EXPECT_EQ(c.runs[2].params[4], 64u);   // stage 2
    // The same batch again reuses the runlists and runs.
    xrt_mock::control().runs.clear();
    ASSERT_TRUE(dev->run(batch, std::chrono::milliseconds(1000)).ok);
    EXPECT_EQ(xrt_mock::control().runs.size(), 3u);
    // Stage marks past the batch are refused before anything runs.
    batch.stage_ends = {2, 7};
    xrt_mock::control().runs.clear();
    const Status bad = dev->run(batch, std::chrono::milliseconds(1000));
    EXPECT_FALSE(bad.ok);
    EXPECT_NE(bad.message.find("stage marks"), std::string::npos) << bad.message;
    EXPECT_TRUE(xrt_mock::control().runs.empty());
}

TEST_F(XrtDeviceTest, RunsABatchAcrossTwoContextsAndReusesRuns) {
    write_default_manifest();
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto w = dev->allocate(1 << 20, BufferRole::weights);
    auto a = dev->allocate(1 << 16, BufferRole::data);
    auto o = dev->allocate(1 << 16, BufferRole::data);
    ASSERT_TRUE(w && a && o);

    Batch batch;
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q4_K, 100, 3, *w, 0, *a, 0, *o, 0)));
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q6_K, 70, 2, *w, 262144, *a, 16384, *o, 2048)));
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q4_K, 64, 20, *w, 524288, *a, 32768, *o, 8192)));
    std::memset(o->host_ptr(), 0, o->size());
    // None of the three drains exactly its valid part (m is not a whole 4-row group of 64-row tiles):
    // the NPU drains C into a staging output at 256 floats per token, the device copies the valid part.
    xrt_mock::control().drain_row_stride = 256;
    MatmulSequence want[3];
    for (int i = 0; i < 3; ++i) {
        want[i] = expected_stream(matmul_of(batch.invocations[i]));
        ASSERT_TRUE(want[i].ok()) << want[i].error;
    }

    const Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    const auto & c = xrt_mock::control();
    EXPECT_EQ(c.contexts_created, 2);
    EXPECT_EQ(c.runlists_executed, 2);  // one per hardware context
    ASSERT_EQ(c.runs.size(), 3u);
    // Runlists go out in order of first use: the Q4_K context, then Q6_K.
    const auto & r0 = c.runs[0];
    EXPECT_EQ(r0.opcode, 3u);
    // The instruction BO holds exactly the stream built for the invocation's shape, and it decodes.
    EXPECT_EQ(r0.instruction_count, want[0].words.size());
    EXPECT_EQ(r0.instructions, want[0].words);
    EXPECT_TRUE(xdna::control::decode(r0.instructions.data(), r0.instructions.size()).ok());
    EXPECT_EQ(r0.weights_offset, 0u);
    EXPECT_EQ(r0.weights_size, want[0].weights_bytes);  // what the W DMAs read, from the operand on
    EXPECT_EQ(r0.output_size, want[0].out_bytes);        // the staged drain
    ASSERT_EQ(r0.params.size(), 12u);
    EXPECT_EQ(r0.params[4], 100u);
    EXPECT_EQ(r0.params[5], 3u);
    const auto & r1 = c.runs[1];  // the prefill-tile Q4_K invocation, same context
    EXPECT_EQ(r1.instructions, want[2].words);
    EXPECT_NE(r1.instructions, r0.instructions);
    EXPECT_EQ(r1.weights_offset, 524288u);
    EXPECT_EQ(r1.activations_offset, 32768u);
    EXPECT_EQ(r1.output_offset, 0u);  // every output drains into its slot's own staging BO
    EXPECT_EQ(r1.context, r0.context);
    const auto & r2 = c.runs[2];
    EXPECT_EQ(r2.instructions, want[1].words);
    EXPECT_NE(r2.context, r0.context);
    EXPECT_EQ(r2.params[4], 70u);

    // The mock wrote 1000 * token + row + 0.5 into every valid output element, at each invocation's offset.
    const float * out = static_cast<const float *>(o->host_ptr());
    EXPECT_EQ(out[0], 0.5f);
    EXPECT_EQ(out[2 * 100 + 99], 2099.5f);
    EXPECT_EQ(out[2048 / 4 + 1 * 70 + 5], 1005.5f);
    EXPECT_EQ(out[8192 / 4 + 19 * 64 + 63], 19063.5f);
    EXPECT_EQ(out[2 * 100 + 100], 0.0f);  // past the valid part: untouched
    EXPECT_GE(c.syncs_from_device, 3);
    EXPECT_EQ(c.instruction_bos, 3);  // one stream per shape
    ASSERT_EQ(dev->last_stats().size(), 3u);
    EXPECT_EQ(dev->last_stats()[0].macs, batch.invocations[0].macs());

    // A second batch reuses runs, kernels, contexts and runlists.
    ASSERT_TRUE(dev->run(batch, std::chrono::milliseconds(1000)).ok);
    EXPECT_EQ(c.runs.size(), 6u);
    EXPECT_EQ(c.kernels_opened, 3);
    EXPECT_EQ(c.contexts_created, 2);
    EXPECT_EQ(c.runlists_created, 2);
    EXPECT_EQ(c.instruction_bos, 3);  // the streams were built once and reused
    EXPECT_EQ(c.runs[3].instructions, want[0].words);
    EXPECT_TRUE(errors_.empty()) << errors_.front();
}

// A shape the builder refuses fails that batch with the builder's reason; nothing is submitted.
TEST_F(XrtDeviceTest, ShapeWithoutAStreamFailsWithTheReason) {
    write_default_manifest();
    auto dev = open();
    auto w = dev->allocate(1 << 20, BufferRole::weights);
    auto a = dev->allocate(1 << 16, BufferRole::data);
    auto o = dev->allocate(1 << 16, BufferRole::data);
    MatmulInvocation inv = invocation(GGML_TYPE_Q4_K, 256, 4, *w, 0, *a, 0, *o, 0);
    inv.act_tile_bytes += 4;  // not what the family's cores take
    Batch batch;
    batch.invocations.push_back(to_invocation(inv));
    const Status st = dev->run(batch, std::chrono::milliseconds(100));
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.message.find("no instruction stream for this shape: activation tile of"), std::string::npos) << st.message;
    EXPECT_EQ(xrt_mock::control().runs.size(), 0u);
}

// When the drain is exactly the valid part, the output goes straight to the operand (no staging).
TEST_F(XrtDeviceTest, WholeGroupsDrainStraightIntoTheOutput) {
    write_default_manifest();
    auto dev = open();
    auto w = dev->allocate(1 << 20, BufferRole::weights);
    auto a = dev->allocate(1 << 16, BufferRole::data);
    auto o = dev->allocate(1 << 16, BufferRole::data);
    std::memset(o->host_ptr(), 0, o->size());
    const MatmulInvocation inv = invocation(GGML_TYPE_Q4_K, 256, 4, *w, 0, *a, 0, *o, 1024);
    const MatmulSequence   want = expected_stream(inv);
    ASSERT_TRUE(want.ok()) << want.error;
    Batch batch;
    batch.invocations.push_back(to_invocation(inv));
    const Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    const auto & r = xrt_mock::control().runs.at(0);
    EXPECT_EQ(r.instructions, want.words);
    // Even a drain that could write the output in place goes to the slot's staging BO (no late writes
    // into ggml memory after a timeout, docs/reliability.md); the values still land in the output.
    EXPECT_EQ(r.output_offset, 0u);
    EXPECT_EQ(r.output_size, want.out_bytes);
    const float * out = static_cast<const float *>(o->host_ptr());
    EXPECT_EQ(out[1024 / 4 + 3 * 256 + 255], 3255.5f);
}

TEST_F(XrtDeviceTest, ContextsAreSharedAcrossDevicesInTheProcess) {
    write_default_manifest();
    auto d1 = open();
    auto d2 = open();
    const MatmulContract & q4k = *matmul_contract_for(GGML_TYPE_Q4_K);
    EXPECT_TRUE(d1->has_kernel(q4k, q4k.tile(4)));
    EXPECT_TRUE(d2->has_kernel(q4k, q4k.tile(4)));
    EXPECT_EQ(xrt_mock::control().contexts_created, 1);
    EXPECT_EQ(xrt_mock::control().devices_opened, 1);
}

TEST_F(XrtDeviceTest, KernelMissingFromXclbinFallsBackWithOneLine) {
    write_manifest(json::array({entry("mm_q4_K_a8", 4, 256, "q4k.xclbin", "MLIR_AIE_2")}));
    auto                   dev = open();
    const MatmulContract & q4k = *matmul_contract_for(GGML_TYPE_Q4_K);
    EXPECT_FALSE(dev->has_kernel(q4k, q4k.tile(4)));
    EXPECT_FALSE(dev->has_kernel(q4k, q4k.tile(4)));  // asked again: no second attempt, no second line
    ASSERT_EQ(errors_.size(), 1u);
    EXPECT_NE(errors_[0].find("designs[0] matmul/kquant (mm_q4_K_a8, tile 64x4x256): xclbin " + dir_ +
                              "/q4k.xclbin has no kernel 'MLIR_AIE_2' (it has: MLIR_AIE); its matmuls run on the CPU"),
              std::string::npos)
        << errors_[0];
    EXPECT_EQ(xrt_mock::control().contexts_created, 0);
}

TEST_F(XrtDeviceTest, ArgumentCountAndGroupMismatchesAreCaught) {
    write_file(dir_ + "/eight.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 8}}, 3));
    json bad_group = entry("mm_q6_K_a8", 4, 256, "q6k.xclbin");
    bad_group["args"][4]["group_id"] = 9;
    write_manifest(json::array({entry("mm_q4_K_a8", 4, 256, "eight.xclbin"), bad_group}));
    auto                   dev = open();
    const MatmulContract & q4k = *matmul_contract_for(GGML_TYPE_Q4_K);
    const MatmulContract & q6k = *matmul_contract_for(GGML_TYPE_Q6_K);
    EXPECT_FALSE(dev->has_kernel(q4k, q4k.tile(4)));
    EXPECT_FALSE(dev->has_kernel(q6k, q6k.tile(4)));
    ASSERT_EQ(errors_.size(), 2u);
    EXPECT_NE(errors_[0].find("the manifest lists 7 arguments, kernel 'MLIR_AIE' in " + dir_ + "/eight.xclbin has 8"),
              std::string::npos)
        << errors_[0];
    EXPECT_NE(errors_[1].find("field 'args[4].group_id' is 9 but kernel 'MLIR_AIE' in " + dir_ +
                              "/q6k.xclbin uses memory group 4"),
              std::string::npos)
        << errors_[1];
}

TEST_F(XrtDeviceTest, BusyNpuFallsBackWithOneLinePerXclbin) {
    write_default_manifest();
    auto dev = open();
    xrt_mock::control().context_errno = EBUSY;
    const MatmulContract & q4k = *matmul_contract_for(GGML_TYPE_Q4_K);
    EXPECT_FALSE(dev->has_kernel(q4k, q4k.tile(4)));
    EXPECT_FALSE(dev->has_kernel(q4k, q4k.tile(32)));  // same xclbin: already failed with the first
    ASSERT_EQ(errors_.size(), 1u);
    EXPECT_NE(errors_[0].find("cannot create a hardware context for " + dir_ + "/q4k.xclbin: the NPU has no free "
                              "hardware context or columns (another process, or another model in this process, "
                              "holds them)"),
              std::string::npos)
        << errors_[0];
    EXPECT_NE(errors_[0].find("the matmuls of designs[0] matmul/kquant (mm_q4_K_a8, tile 64x4x256), designs[1] "
                              "matmul/kquant (mm_q4_K_a8, tile 64x32x256) run on the CPU"),
              std::string::npos)
        << errors_[0];

    // A batch that still reaches the device for such a kernel fails cleanly instead of running.
    auto  w = dev->allocate(1 << 20, BufferRole::weights);
    Batch batch;
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q4_K, 64, 1, *w, 0, *w, 0, *w, 0)));
    const Status st = dev->run(batch, std::chrono::milliseconds(100));
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.message.find("no NPU kernel is loaded for it"), std::string::npos) << st.message;
}

TEST_F(XrtDeviceTest, XclbinRejectedByXrtAndFileChangedAfterLoad) {
    write_file(dir_ + "/foreign.xclbin", std::string(xrt_mock::make_xclbin({}, 4)).replace(456, 4, "XXXX"));
    // Data buffers in another order than the design's sequence arguments: the built streams would
    // patch the weights' address into the activations' BD.
    json swapped = entry("mm_q6_K_a8", 4, 256, "q6k.xclbin");
    swapped["args"][3]["kind"] = "activations";
    swapped["args"][4]["kind"] = "weights";
    write_manifest(json::array({entry("mm_q4_K_a8", 4, 256, "foreign.xclbin"), swapped}));
    auto dev = open();
    const MatmulContract & q4k = *matmul_contract_for(GGML_TYPE_Q4_K);
    const MatmulContract & q6k = *matmul_contract_for(GGML_TYPE_Q6_K);
    EXPECT_FALSE(dev->has_kernel(q4k, q4k.tile(4)));
    EXPECT_FALSE(dev->has_kernel(q6k, q6k.tile(4)));
    ASSERT_EQ(errors_.size(), 2u);
    EXPECT_NE(errors_[0].find("cannot load xclbin " + dir_ + "/foreign.xclbin: rejected as invalid"), std::string::npos)
        << errors_[0];
    EXPECT_NE(errors_[1].find("field 'args[3]' ('activations') is data buffer 0 of the kernel, but design matmul "
                              "patches it as sequence argument 1"),
              std::string::npos)
        << errors_[1];
}

TEST_F(XrtDeviceTest, FailedRunReportsItsStateAndTheDeviceRecovers) {
    write_default_manifest();
    auto dev = open();
    auto w = dev->allocate(1 << 20, BufferRole::weights);
    auto a = dev->allocate(1 << 16, BufferRole::data);
    auto o = dev->allocate(1 << 16, BufferRole::data);
    Batch batch;
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q4_K, 64, 1, *w, 0, *a, 0, *o, 0)));
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q4_K, 64, 2, *w, 0, *a, 0, *o, 1024)));
    xrt_mock::control().fail_run = 1;
    xrt_mock::control().fail_state = 5;  // ERT_CMD_STATE_ERROR
    Status st = dev->run(batch, std::chrono::milliseconds(1000));
    EXPECT_FALSE(st.ok);
    EXPECT_EQ(st.message, "invocation 2 of 2 (mm_q4_K_a8, tile 64x4x256) ended in state 'error': the kernel "
                          "reported an error; its output is not valid");
    EXPECT_TRUE(dev->last_stats().empty());

    xrt_mock::control().fail_run = 0;
    xrt_mock::control().fail_state = 6;  // ERT_CMD_STATE_ABORT
    xrt_mock::control().runs.clear();
    st = dev->run(batch, std::chrono::milliseconds(1000));
    EXPECT_NE(st.message.find("ended in state 'abort'"), std::string::npos) << st.message;

    xrt_mock::control().fail_run = -1;
    st = dev->run(batch, std::chrono::milliseconds(1000));
    EXPECT_TRUE(st.ok) << st.message;  // the runlists were reset: the same runs go out again
    EXPECT_EQ(dev->last_stats().size(), 2u);
}

TEST_F(XrtDeviceTest, TimeoutDisablesTheDevice) {
    write_default_manifest();
    auto dev = open();
    auto w = dev->allocate(1 << 20, BufferRole::weights);
    auto a = dev->allocate(1 << 16, BufferRole::data);
    auto o = dev->allocate(1 << 16, BufferRole::data);
    Batch batch;
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q4_K, 64, 1, *w, 0, *a, 0, *o, 0)));
    xrt_mock::control().hang = true;
    Status st = dev->run(batch, std::chrono::milliseconds(250));
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.message.find("did not finish a batch of 1 kernel invocations within 250 ms"), std::string::npos)
        << st.message;
    ASSERT_EQ(errors_.size(), 1u);
    const int executed = xrt_mock::control().runlists_executed;
    xrt_mock::control().hang = false;
    st = dev->run(batch, std::chrono::milliseconds(250));
    EXPECT_FALSE(st.ok);  // nothing is submitted after a timeout
    EXPECT_NE(st.message.find("the device is disabled"), std::string::npos) << st.message;
    EXPECT_EQ(xrt_mock::control().runlists_executed, executed);
}

TEST_F(XrtDeviceTest, ALateCompletionAfterATimeoutWritesNoCallerMemory) {
    // The batch times out while its runs are still "on the NPU"; they finish afterwards and write their
    // outputs. The output buffer (ggml's compute buffer in the backend) and the activations must not
    // change: the late writes land in the retired staging buffer.
    write_default_manifest();
    auto dev = open();
    auto w = dev->allocate(1 << 20, BufferRole::weights);
    auto a = dev->allocate(1 << 16, BufferRole::data);
    auto o = dev->allocate(1 << 16, BufferRole::data);
    Batch batch;
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q4_K, 100, 3, *w, 0, *a, 0, *o, 0)));
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q6_K, 70, 2, *w, 65536, *a, 4096, *o, 2048)));
    std::memset(o->host_ptr(), 0x5a, o->size());
    std::memset(a->host_ptr(), 0x3c, a->size());
    const std::vector<char> out_before(static_cast<char *>(o->host_ptr()), static_cast<char *>(o->host_ptr()) + o->size());
    const std::vector<char> act_before(static_cast<char *>(a->host_ptr()), static_cast<char *>(a->host_ptr()) + a->size());

    xrt_mock::control().hang = true;
    const Status st = dev->run(batch, std::chrono::milliseconds(50));
    ASSERT_FALSE(st.ok);
    xrt_mock::control().hang = false;
    const size_t runs_before = xrt_mock::control().runs.size();
    EXPECT_EQ(xrt_mock::complete_hung_runs(), 2);  // the late completions happen, and write
    EXPECT_EQ(xrt_mock::control().runs.size(), runs_before + 2);
    EXPECT_EQ(0, std::memcmp(o->host_ptr(), out_before.data(), out_before.size())) << "a late write reached the output";
    EXPECT_EQ(0, std::memcmp(a->host_ptr(), act_before.data(), act_before.size()));
}

// Packed weights carry the tail room their instruction stream reads (contracts/weight-layout.h): for
// every contract, the last expert of a stack of 3 matrices of M = 67 rows (2 row tiles of a group of 4)
// in a buffer of exactly the packed tensor's size runs with the weights argument mapping that buffer's
// own bytes (a sub-buffer, not a staging copy) and exactly the stream's window. A buffer 4 bytes short
// fails the batch with the sizes, before anything is submitted.
// A contract's decode token tile, or its only one (the bfp16 prefill contracts take TN 32 only).
int token_tile(const MatmulContract & c) { return contract_allows_tile(c, c.tile(4)) ? 4 : 32; }

TEST_F(XrtDeviceTest, WeightsAreReadInPlaceForEveryContractAtOddRowsAndTheLastExpert) {
    json entries = json::array();
    for (const MatmulContract & c : all_matmul_contracts()) {
        const std::string file = std::string(c.name) + ".xclbin";
        write_file(dir_ + "/" + file, xrt_mock::make_xclbin({{"MLIR_AIE", 7}}, static_cast<int>(entries.size()) + 3));
        entries.push_back(entry(c.name, token_tile(c), c.tile_k, file));
    }
    write_manifest(entries);
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    const DesignDescription & d = matmul_design().design;
    for (const MatmulContract & c : all_matmul_contracts()) {
        SCOPED_TRACE(c.name);
        const int tn = token_tile(c);
        const int64_t m = 67, mats = 3, n = 3;
        const int64_t ne[4] = {c.tile_k + ggml_blck_size(c.weight_type), m, mats, 1};
        WeightLayout L;
        ASSERT_TRUE(make_weight_layout(c.weight_type, ne, L));
        FamilyBuffers fb;
        std::string   err;
        ASSERT_TRUE(family_buffers(d, d.family_of(c.name), tn, fb, err)) << err;
        MatmulInvocation inv;
        inv.contract = &c;
        inv.tile = c.tile(tn);
        inv.m = m;
        inv.n = n;
        inv.m_tiles = L.m_tiles;
        inv.n_tiles = 1;
        inv.k_tiles = L.k_tiles;
        inv.weight_tile_bytes = L.tile_bytes;
        inv.act_tile_bytes = fb.a_obj;
        inv.out_row_stride = m;
        auto w = dev->allocate(L.total_bytes, BufferRole::weights);
        auto a = dev->allocate(inv.activation_bytes(), BufferRole::data);
        auto o = dev->allocate(n * m * sizeof(float), BufferRole::data);
        ASSERT_TRUE(w && a && o);
        const size_t last = static_cast<size_t>(mats - 1) * L.mat_bytes;
        inv.weights = {w.get(), last};
        inv.activations = {a.get(), 0};
        inv.out = {o.get(), 0};
        const MatmulSequence want = expected_stream(inv);
        ASSERT_TRUE(want.ok()) << want.error;
        EXPECT_EQ(want.weights_bytes, L.stream_bytes());
        EXPECT_EQ(last + want.weights_bytes, L.total_bytes);  // the last window ends at the tensor's end

        xrt_mock::control().runs.clear();
        Batch batch;
        batch.invocations.push_back(to_invocation(inv));
        Status st = dev->run(batch, std::chrono::milliseconds(1000));
        ASSERT_TRUE(st.ok) << st.message;
        ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
        const auto & r = xrt_mock::control().runs[0];
        EXPECT_EQ(r.weights_data, static_cast<const char *>(w->host_ptr()) + last) << "the weights were copied";
        EXPECT_EQ(r.weights_offset, last);
        EXPECT_EQ(r.weights_size, want.weights_bytes);

        auto cut = dev->allocate(L.total_bytes - 4, BufferRole::weights);
        ASSERT_TRUE(cut);
        inv.weights = {cut.get(), last};
        batch.invocations[0] = to_invocation(inv);
        xrt_mock::control().runs.clear();
        st = dev->run(batch, std::chrono::milliseconds(1000));
        EXPECT_FALSE(st.ok);
        EXPECT_NE(st.message.find("the weights hold " + std::to_string(want.weights_bytes - 4) + " bytes"), std::string::npos)
            << st.message;
        EXPECT_NE(st.message.find("reads " + std::to_string(want.weights_bytes)), std::string::npos) << st.message;
        EXPECT_TRUE(xrt_mock::control().runs.empty());
    }
    EXPECT_TRUE(errors_.empty()) << errors_.front();
}

// An exact xclbin ("w_objects": "exact", build-npu-kernels.sh --exact) has W objects of its contract's own
// tile: the device sends it the stream built for those (windows of the tile), not the family's.
TEST_F(XrtDeviceTest, ExactXclbinsGetStreamsOfTheirOwnWObjects) {
    json e = entry("mm_q4_K_a8", 4, 256, "q4k.xclbin");
    e["w_objects"] = "exact";
    write_file(dir_ + "/q4k.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 7}}, 3));
    write_manifest(json::array({e}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto w = dev->allocate(1 << 20, BufferRole::weights);
    auto a = dev->allocate(1 << 16, BufferRole::data);
    auto o = dev->allocate(1 << 16, BufferRole::data);
    MatmulInvocation inv = invocation(GGML_TYPE_Q4_K, 256, 1, *w, 0, *a, 0, *o, 0);
    inv.weight_tile_bytes = 64 * 144;  // Q4_K's own tile (the helper's is the family's largest)
    MatmulSequenceShape shape = sequence_shape_of(inv, inv.out_row_stride);
    const MatmulSequence family = build_matmul_sequence(matmul_design().design, shape);
    shape.exact = true;
    const MatmulSequence own = build_matmul_sequence(matmul_design().design, shape);
    ASSERT_TRUE(family.ok() && own.ok()) << family.error << own.error;
    ASSERT_NE(family.words, own.words);
    xrt_mock::control().runs.clear();
    Batch batch;
    batch.invocations.push_back(to_invocation(inv));
    const Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
    EXPECT_EQ(xrt_mock::control().runs[0].instructions, own.words);
    EXPECT_EQ(xrt_mock::control().runs[0].weights_size, own.weights_bytes);
}

TEST_F(XrtDeviceTest, RefusesForeignBuffersAndOutOfRangeOperands) {
    write_default_manifest();
    auto dev = open();
    auto w = dev->allocate(1 << 20, BufferRole::weights);
    auto o = dev->allocate(1 << 16, BufferRole::data);
    struct HostBuffer final : DeviceBuffer {
        std::vector<char> b = std::vector<char>(1 << 16);
        void *            host_ptr() override { return b.data(); }
        size_t            size() const override { return b.size(); }
        void              sync_to_device(size_t, size_t) override {}
        void              sync_from_device(size_t, size_t) override {}
    } host;
    Batch batch;
    batch.invocations.push_back(to_invocation(invocation(GGML_TYPE_Q4_K, 64, 1, *w, 0, host, 0, *o, 0)));
    Status st = dev->run(batch, std::chrono::milliseconds(100));
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.message.find("activations operand is not NPU memory"), std::string::npos) << st.message;

    batch.invocations[0] = to_invocation(invocation(GGML_TYPE_Q4_K, 64, 1, *w, (1 << 20) - 100, *o, 0, *o, 0));
    st = dev->run(batch, std::chrono::milliseconds(100));
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.message.find("weight operand range"), std::string::npos) << st.message;
    EXPECT_TRUE(xrt_mock::control().runs.empty());
}

TEST_F(XrtDeviceTest, OpenFailuresExplainThemselves) {
    std::string why;
    // No manifest.
    EXPECT_EQ(open_xrt_device(npu_, why), nullptr);
    EXPECT_NE(why.find("no kernel manifest at " + dir_ + "/manifest.json"), std::string::npos) << why;
    // Nothing for this generation.
    write_manifest(json::array({entry("mm_q4_K_a8", 4, 256, "q4k.xclbin")}));
    npu_.generation = NpuGeneration::npu1;
    EXPECT_EQ(open_xrt_device(npu_, why), nullptr);
    EXPECT_NE(why.find("has no usable kernel for npu1"), std::string::npos) << why;
    // XRT cannot open the device: reported before the manifest is looked at.
    npu_.generation = NpuGeneration::npu2;
    xrt_mock::control().open_errno = ENODEV;
    EXPECT_EQ(open_xrt_device(npu_, why), nullptr);
    EXPECT_NE(why.find("cannot open the NPU 0000:c5:00.1: XRT sees no NPU"), std::string::npos) << why;
}

// A rows design (aie/add) on the NPU: its manifest entry (the family at one chunk size, operands by
// name), the stream the simulator runs (the builder's words for the invocation's rows shape), each
// operand as a sub-buffer of exactly its extent, and the output drained into the staging BO with only
// its rows copied into place: the gaps between strided rows keep their values.
TEST_F(XrtDeviceTest, RunsARowsDesignsStreamWithItsOperandsByName) {
    write_file(dir_ + "/add256.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 6}}, 3));  // opcode, instructions, count, a, b, y
    json e = {{"design", "add"}, {"family", "binary"}, {"tile", 256}, {"xclbin", "add256.xclbin"}, {"kernel", "MLIR_AIE"},
              {"npu", {"npu2"}},
              {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                    {{"kind", "instructions"}, {"group_id", 1}},
                                    {{"kind", "instruction_count"}},
                                    {{"kind", "operand"}, {"name", "a"}, {"group_id", 3}},
                                    {{"kind", "operand"}, {"name", "b"}, {"group_id", 4}},
                                    {{"kind", "operand"}, {"name", "y"}, {"group_id", 5}}})}};
    write_manifest(json::array({e}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto buf = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(buf);
    // 3 rows of 1536 values (6 chunks of 256 over 2 core rows), 1600 floats apart; b one row for all.
    AddInvocation r;
    r.p = {3, 1536, 1600, 0, 1600, false};
    r.a = {buf.get(), 4096};
    r.b = {buf.get(), 65536};
    r.y = {buf.get(), 131072};
    const Invocation inv = to_invocation(r);
    EXPECT_EQ(inv.key.tile.n, 256);
    EXPECT_TRUE(dev->has_kernel(inv.key));
    EXPECT_FALSE(dev->has_kernel(add_key(false, 512)));  // no xclbin of that chunk size
    EXPECT_TRUE(dev->has_kernel(add_key(true, 256)));    // MUL: the family's second program, same xclbin
    auto * y = reinterpret_cast<float *>(static_cast<char *>(buf->host_ptr()) + 131072);
    for (int i = 0; i < 3 * 1600; ++i) y[i] = -1.0f;
    xrt_mock::control().rows_fill = true;
    xrt_mock::control().rows_fill_value = 42.5f;
    Batch batch;
    batch.invocations.push_back(inv);
    const Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_TRUE(errors_.empty()) << errors_.front();
    ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
    const xrt_mock::RecordedRun & run = xrt_mock::control().runs[0];
    RowsShape shape;
    std::string err;
    ASSERT_TRUE(rows_shape_of(inv, find_design("add")->design, shape, err)) << err;
    const RowsSequence want = build_rows_sequence(find_design("add")->design, shape);
    ASSERT_TRUE(want.ok()) << want.error;
    EXPECT_EQ(run.instructions, want.words);
    EXPECT_EQ(run.instruction_count, want.words.size());
    EXPECT_EQ(run.weights_offset, 4096u);  // argument 3: a, (3 - 1) x 1600 + 1536 floats
    EXPECT_EQ(run.weights_size, (2u * 1600 + 1536) * 4);
    EXPECT_EQ(run.activations_offset, 65536u);  // argument 4: b, its one row
    EXPECT_EQ(run.activations_size, 1536u * 4);
    for (int row = 0; row < 3; ++row) {
        for (int i = 0; i < 1600; ++i) {
            ASSERT_EQ(y[row * 1600 + i], i < 1536 ? 42.5f : -1.0f) << "row " << row << " value " << i;
        }
    }
}

// The norm design (aie/rms_norm: its own movement, runtime/norm-sequence.h) through the same resolve:
// its stream as the simulator builds it, x and y by name, and the weight argument of the program
// without a weight bound to memory no BD reads (the kernel still takes the argument).
TEST_F(XrtDeviceTest, RunsTheNormDesignsStreamAndBindsTheArgumentItDoesNotRead) {
    write_file(dir_ + "/norm1024.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 6}}, 3));  // opcode, instructions, count, x, w, y
    json e = {{"design", "rms_norm"}, {"family", "norm"}, {"tile", 1024}, {"xclbin", "norm1024.xclbin"}, {"kernel", "MLIR_AIE"},
              {"npu", {"npu2"}},
              {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                    {{"kind", "instructions"}, {"group_id", 1}},
                                    {{"kind", "instruction_count"}},
                                    {{"kind", "operand"}, {"name", "x"}, {"group_id", 3}},
                                    {{"kind", "operand"}, {"name", "weight"}, {"group_id", 4}},
                                    {{"kind", "operand"}, {"name", "y"}, {"group_id", 5}}})}};
    write_manifest(json::array({e}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto buf = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(buf);
    // 2 rows of 4096 values (tile 1024), x 4100 floats apart, y 4104, no weight.
    RmsNormInvocation r;
    r.p.rows = 2;
    r.p.cols = 4096;
    r.p.eps = 1e-6f;
    r.p.inv_cols = 1.0f / 4096;
    r.p.with_weight = false;
    r.p.x_row_stride = 4100;
    r.p.y_row_stride = 4104;
    r.x = {buf.get(), 4096};
    r.y = {buf.get(), 131072};
    const Invocation inv = to_invocation(r);
    EXPECT_EQ(inv.key.tile.n, 1024);
    EXPECT_TRUE(dev->has_kernel(inv.key));
    EXPECT_TRUE(dev->has_kernel(rms_norm_key(true, 4096)));    // with the weight: the family's first program
    EXPECT_FALSE(dev->has_kernel(rms_norm_key(false, 4064)));  // tile 32: no xclbin of that chunk size
    auto * y = reinterpret_cast<float *>(static_cast<char *>(buf->host_ptr()) + 131072);
    for (int i = 0; i < 2 * 4104; ++i) y[i] = -1.0f;
    xrt_mock::control().rows_fill = true;
    xrt_mock::control().rows_fill_value = 7.25f;
    Batch batch;
    batch.invocations.push_back(inv);
    const Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_TRUE(errors_.empty()) << errors_.front();
    ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
    const xrt_mock::RecordedRun & run = xrt_mock::control().runs[0];
    RowsShape shape;
    std::string err;
    ASSERT_TRUE(rows_shape_of(inv, find_design("rms_norm")->design, shape, err)) << err;
    const RowsSequence want = build_rows_sequence(find_design("rms_norm")->design, shape);
    ASSERT_TRUE(want.ok()) << want.error;
    EXPECT_EQ(run.instructions, want.words);
    EXPECT_EQ(run.weights_offset, 4096u);  // argument 3: x, 4100 + 4096 floats
    EXPECT_EQ(run.weights_size, (4100u + 4096) * 4);
    EXPECT_EQ(run.activations_offset, 4096u);  // argument 4: the unread weight, bound to x's memory
    for (int row = 0; row < 2; ++row) {
        for (int i = 0; i < 4104; ++i) {
            ASSERT_EQ(y[row * 4104 + i], i < 4096 ? 7.25f : -1.0f) << "row " << row << " value " << i;
        }
    }
}


// The scale design (aie/scale: the rows movement with one input and two fp32 RTP words) through the
// same resolve: its stream as the simulator builds it, s and b's bits in its RTP words, x and y by name,
// only y's rows copied back.
TEST_F(XrtDeviceTest, RunsTheScaleDesignsStreamWithItsWords) {
    write_file(dir_ + "/scale512.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 5}}, 3));  // opcode, instructions, count, x, y
    json e = {{"design", "scale"}, {"family", "scale"}, {"tile", 512}, {"xclbin", "scale512.xclbin"}, {"kernel", "MLIR_AIE"},
              {"npu", {"npu2"}},
              {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                    {{"kind", "instructions"}, {"group_id", 1}},
                                    {{"kind", "instruction_count"}},
                                    {{"kind", "operand"}, {"name", "x"}, {"group_id", 3}},
                                    {{"kind", "operand"}, {"name", "y"}, {"group_id", 4}}})}};
    write_manifest(json::array({e}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto buf = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(buf);
    // 4 rows of 3072 values (3 groups of 2 chunks of 512), x 3100 floats apart, y 3080; s < 0 (its sign bit
    // set: a word past an int32 count), a bias.
    ScaleInvocation r;
    r.p = {4, 3072, 3100, 3080, -0.3125f, 1.5f};
    r.x = {buf.get(), 4096};
    r.y = {buf.get(), 131072};
    const Invocation inv = to_invocation(r);
    EXPECT_EQ(inv.key.tile.n, 512);
    EXPECT_TRUE(dev->has_kernel(inv.key));
    EXPECT_FALSE(dev->has_kernel(scale_key(1024)));  // no xclbin of that chunk size
    auto * y = reinterpret_cast<float *>(static_cast<char *>(buf->host_ptr()) + 131072);
    for (int i = 0; i < 4 * 3080; ++i) y[i] = -1.0f;
    xrt_mock::control().rows_fill = true;
    xrt_mock::control().rows_fill_value = 3.75f;
    Batch batch;
    batch.invocations.push_back(inv);
    const Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_TRUE(errors_.empty()) << errors_.front();
    ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
    const xrt_mock::RecordedRun & run = xrt_mock::control().runs[0];
    RowsShape shape;
    std::string err;
    ASSERT_TRUE(rows_shape_of(inv, find_design("scale")->design, shape, err)) << err;
    const RowsSequence want = build_rows_sequence(find_design("scale")->design, shape);
    ASSERT_TRUE(want.ok()) << want.error;
    EXPECT_EQ(run.instructions, want.words);
    uint32_t s_bits = 0;
    const float s = -0.3125f;
    std::memcpy(&s_bits, &s, 4);
    EXPECT_NE(std::find(run.instructions.begin(), run.instructions.end(), s_bits), run.instructions.end())
        << "s's bits are not among the stream's words";
    EXPECT_EQ(run.weights_offset, 4096u);  // argument 3: x, 3 x 3100 + 3072 floats
    EXPECT_EQ(run.weights_size, (3u * 3100 + 3072) * 4);
    for (int row = 0; row < 4; ++row) {
        for (int i = 0; i < 3080; ++i) {
            ASSERT_EQ(y[row * 3080 + i], i < 3072 ? 3.75f : -1.0f) << "row " << row << " value " << i;
        }
    }
}

// The hadamard design (aie/hadamard: the rows movement with one input and one core row, one xclbin per
// transform length) through the same resolve: its stream as the simulator builds it, the scale's bits in
// its RTP words, x and y by name, only y's rows copied back; a length without an xclbin is no kernel.
TEST_F(XrtDeviceTest, RunsTheHadamardDesignsStreamWithItsScale) {
    write_file(dir_ + "/hadamard128.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 5}}, 3));  // opcode, instructions, count, x, y
    json e = {{"design", "hadamard"}, {"family", "hadamard"}, {"tile", 128}, {"xclbin", "hadamard128.xclbin"}, {"kernel", "MLIR_AIE"},
              {"npu", {"npu2"}},
              {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                    {{"kind", "instructions"}, {"group_id", 1}},
                                    {{"kind", "instruction_count"}},
                                    {{"kind", "operand"}, {"name", "x"}, {"group_id", 3}},
                                    {{"kind", "operand"}, {"name", "y"}, {"group_id", 4}}})}};
    write_manifest(json::array({e}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto buf = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(buf);
    // 8 heads of 128 read from rows 384 floats apart (a fused row's view), y rows 136 apart.
    HadamardInvocation h;
    h.p.rows = 8;
    h.p.n = 128;
    h.p.x_row_stride = 384;
    h.p.y_row_stride = 136;
    h.p.scale = 1.0f / sqrtf(128.0f);
    h.x = {buf.get(), 4096};
    h.y = {buf.get(), 131072};
    const Invocation inv = to_invocation(h);
    EXPECT_EQ(inv.key.tile.n, 128);
    EXPECT_TRUE(dev->has_kernel(inv.key));
    EXPECT_FALSE(dev->has_kernel(hadamard_key(64)));  // no xclbin of that length
    auto * y = reinterpret_cast<float *>(static_cast<char *>(buf->host_ptr()) + 131072);
    for (int i = 0; i < 8 * 136; ++i) y[i] = -1.0f;
    xrt_mock::control().rows_fill = true;
    xrt_mock::control().rows_fill_value = 0.5f;
    Batch batch;
    batch.invocations.push_back(inv);
    const Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_TRUE(errors_.empty()) << errors_.front();
    ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
    const xrt_mock::RecordedRun & run = xrt_mock::control().runs[0];
    RowsShape shape;
    std::string err;
    ASSERT_TRUE(rows_shape_of(inv, hadamard_design().design, shape, err)) << err;
    const RowsSequence want = build_rows_sequence(hadamard_design().design, shape);
    ASSERT_TRUE(want.ok()) << want.error;
    EXPECT_EQ(run.instructions, want.words);
    uint32_t bits = 0;
    std::memcpy(&bits, &h.p.scale, 4);
    EXPECT_NE(std::find(run.instructions.begin(), run.instructions.end(), bits), run.instructions.end())
        << "the scale's bits are not among the stream's words";
    EXPECT_EQ(run.weights_offset, 4096u);  // argument 3: x, 7 x 384 + 128 floats
    EXPECT_EQ(run.weights_size, (7u * 384 + 128) * 4);
    for (int row = 0; row < 8; ++row) {
        for (int i = 0; i < 136; ++i) {
            ASSERT_EQ(y[row * 136 + i], i < 128 ? 0.5f : -1.0f) << "row " << row << " value " << i;
        }
    }
}

namespace {

// A flash_attn manifest entry of the F16 cache at head dim 128 (`layout` "": none named): its kernel's 5
// placed arguments, aiecc's bo0..bo4.
json attention_entry(const std::string & xclbin, const std::string & kernel, const std::string & layout = "") {
    json e = {{"design", "flash_attn"}, {"family", "f16"}, {"tile", 128}, {"xclbin", xclbin}, {"kernel", kernel},
              {"npu", {"npu2"}},
              {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                    {{"kind", "instructions"}, {"group_id", 1}},
                                    {{"kind", "instruction_count"}},
                                    {{"kind", "placed"}, {"group_id", 3}},
                                    {{"kind", "placed"}, {"group_id", 4}},
                                    {{"kind", "placed"}, {"group_id", 5}},
                                    {{"kind", "placed"}, {"group_id", 6}},
                                    {{"kind", "placed"}, {"group_id", 7}}})}};
    if (!layout.empty()) e["layout"] = layout;
    return e;
}

// `tokens` query rows of 32 heads over 8 KV heads and 100 KV rows (a last block of 4), laid out as ggml has
// them: q, the mask and out in `act`; cache rows of all 8 heads in `cache`, V before K.
FlashAttnInvocation attention_invocation(DeviceBuffer * act, DeviceBuffer * cache, int64_t tokens, float max_bias) {
    FlashAttnInvocation f;
    FlashAttnParams & p = f.p;
    p.d = 128;
    p.n_kv = 100;
    p.n_tokens = tokens;
    p.n_head = 32;
    p.n_head_kv = 8;
    p.n_seq = p.n_seq_kv = 1;
    p.has_mask = true;
    p.max_bias = max_bias;
    p.scale = 0.088f;
    const int64_t row = 8 * 128 * 2;
    const int64_t q_nb[4] = {4, 512, 512 * tokens, 512 * tokens * 32}, kv_nb[4] = {2, row, 256, row * 100},
                  out_nb[4] = {4, 512, 512 * 32, 512 * 32 * tokens}, mask_nb[4] = {2, 256, 256 * tokens, 256 * tokens};
    for (int i = 0; i < 4; ++i) {
        p.q_nb[i] = q_nb[i];
        p.k_nb[i] = p.v_nb[i] = kv_nb[i];
        p.out_nb[i] = out_nb[i];
        p.mask_nb[i] = mask_nb[i];
    }
    f.variant = kFlashAttnBfp16Variant;
    f.q = {act, 4096};
    f.mask = {act, static_cast<size_t>(4096 + 16384 * tokens + 1024)};
    f.out = {act, 512 << 10};
    f.v = {cache, 0};
    f.k = {cache, 262144};
    return f;
}

}  // namespace

// The attention design (aie/flash_attn): 7 operands in the kernel's 5 buffer arguments, placed by the
// buffers they live in (q and the mask in the compute buffer, K and V in the cache's, out alone and
// staged, the slopes and the partial states' scratch in the slot's own buffer); its stream the
// simulator's with every address patch moved to its operand's argument; K and V bound to the end of the
// whole last block the stream reads; only out copied back; a head dim without an xclbin is no kernel.
TEST_F(XrtDeviceTest, RunsTheAttentionDesignsStreamWithItsOperandsPlacedByBuffer) {
    write_file(dir_ + "/fa_f16_128.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 8}}, 3));
    write_manifest(json::array({attention_entry("fa_f16_128.xclbin", "MLIR_AIE")}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto act = dev->allocate(1 << 20, BufferRole::data);
    auto cache = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(act && cache);
    // A decode token; ALiBi so the slopes differ per head.
    const FlashAttnInvocation f = attention_invocation(act.get(), cache.get(), 1, 8.0f);
    const FlashAttnParams & p = f.p;
    const int64_t row = 8 * 128 * 2;
    const Invocation inv = to_invocation(f);
    EXPECT_EQ(inv.key.tile.n, 128);
    EXPECT_TRUE(dev->has_kernel(inv.key));
    EXPECT_FALSE(dev->has_kernel(flash_attn_key(kFlashAttnBfp16Variant, 64)));  // no xclbin of that head dim
    auto * out = reinterpret_cast<float *>(static_cast<char *>(act->host_ptr()) + (512 << 10));
    for (int i = 0; i < 32 * 128 + 16; ++i) out[i] = -1.0f;
    xrt_mock::control().rows_fill = true;
    xrt_mock::control().rows_fill_arg = 5;  // out, the third placed argument
    xrt_mock::control().params_arg = -1;    // argument 6 is the slopes' and scratch's buffer, no parameter words
    xrt_mock::control().rows_fill_value = 0.25f;
    Batch batch;
    batch.invocations.push_back(inv);
    const Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_TRUE(errors_.empty()) << errors_.front();
    ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
    const xrt_mock::RecordedRun & run = xrt_mock::control().runs[0];
    const DesignDescription & d = find_design("flash_attn")->design;
    AttentionShape shape;
    std::string err;
    ASSERT_TRUE(attention_shape_of(inv, d, shape, err)) << err;
    shape.layout = "attention";  // the manifest entry names no layout: its xclbin is the design's first layout's
    const AttentionSequence seq = build_attention_sequence(d, shape);
    ASSERT_TRUE(seq.ok()) << seq.error;
    AttentionArguments want;
    ASSERT_TRUE(attention_arguments(inv, d, seq, want, err)) << err;
    std::vector<uint32_t> placed_words;
    ASSERT_TRUE(place_arguments(seq.words, want.places, placed_words, err)) << err;
    EXPECT_EQ(run.instructions, placed_words);
    EXPECT_NE(placed_words, seq.words);  // the patches moved
    auto size_of = [&](int idx) {
        for (const auto & [i, s] : run.buffer_sizes) {
            if (i == idx) return s;
        }
        return size_t(0);
    };
    // Argument 3: q and the mask, from q to the mask's last row.
    EXPECT_EQ(run.weights_offset, 4096u);
    EXPECT_EQ(run.weights_size, 16384u + 1024 + 256);
    // Argument 4: V then K, to the end of K's last whole block of 32 rows (128 rows, past its 100).
    EXPECT_EQ(run.activations_offset, 0u);
    EXPECT_EQ(run.activations_size, 262144u + 127 * row + 7 * 256 + 256);
    EXPECT_GT(seq.reach_of("k"), inv.operand("k")->extent());
    EXPECT_EQ(size_of(5), 32u * 128 * 4);                                 // out, staged
    EXPECT_GE(size_of(6), want.held_bytes);                               // the slopes, then the scratch
    EXPECT_EQ(want.held_bytes - want.partials_at, 8u * 8 * 8320);        // 8 state objects per column
    EXPECT_GT(size_of(7), 0u);                                            // spare: bound, named by no BD
    // The slopes as the host wrote them: per KV head 16 + 4 values, value i head 4 g + i % 4's slope.
    const std::vector<uint8_t> * held = nullptr;
    for (const auto & [i, data] : run.buffer_data) {
        if (i == 6) held = &data;
    }
    ASSERT_NE(held, nullptr);
    ASSERT_GE(held->size(), seq.slopes.bytes);
    const auto * table = reinterpret_cast<const float *>(held->data());
    for (int64_t g = 0; g < 8; ++g) {
        for (int64_t i = 0; i < 20; ++i) {
            ASSERT_EQ(table[g * 20 + i], flash_attn_slope(p, 4 * g + i % 4)) << "KV head " << g << " value " << i;
        }
    }
    EXPECT_NE(table[0], table[1]);
    for (uint64_t b = seq.slopes.zeros_offset; b < seq.slopes.steps_offset; ++b) ASSERT_EQ((*held)[b], 0) << "zero region byte " << b;
    // Then the stream's step words: per round and core its column's block steps and its own.
    ASSERT_FALSE(seq.step_words.empty());
    ASSERT_EQ(seq.slopes.bytes, seq.slopes.steps_offset + 4 * seq.step_words.size());
    EXPECT_EQ(0, std::memcmp(held->data() + seq.slopes.steps_offset, seq.step_words.data(), 4 * seq.step_words.size()));
    for (int i = 0; i < 32 * 128 + 16; ++i) {
        ASSERT_EQ(out[i], i < 32 * 128 ? 0.25f : -1.0f) << "value " << i;
    }
}

// A manifest of the decode layout's entry alone (build-npu-kernels.sh --attention-layout decode): the
// device has the kernel, but in that layout only, which the planner asks (Device::has_kernel_in_layout)
// before it sends a multi-token FLASH_ATTN_EXT here.
TEST_F(XrtDeviceTest, SaysWhichLayoutsItsAttentionKernelsAreBuiltIn) {
    write_file(dir_ + "/fa_f16_128_decode.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE_DECODE", 8}}, 4));
    write_manifest(json::array({attention_entry("fa_f16_128_decode.xclbin", "MLIR_AIE_DECODE", "decode")}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto act = dev->allocate(1 << 20, BufferRole::data);
    auto cache = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(act && cache);
    const Invocation inv = to_invocation(attention_invocation(act.get(), cache.get(), 1, 0.0f));
    EXPECT_TRUE(dev->has_kernel(inv.key));
    EXPECT_TRUE(dev->has_kernel_in_layout(inv.key, "decode"));
    EXPECT_FALSE(dev->has_kernel_in_layout(inv.key, "attention"));
}

// A manifest listing both layouts' entries of one (family, head dim) (two xclbins, told apart here by
// their kernels' names): a decoded token runs on the decode entry with the decode layout's stream (one
// mask row a block), a multi-token invocation on the attention entry with the attention layout's; each
// xclbin gets its own hardware context. With only the attention entry a decoded token runs the attention
// layout (RunsTheAttentionDesignsStreamWithItsOperandsPlacedByBuffer).
TEST_F(XrtDeviceTest, RunsEachAttentionInvocationOnTheEntryOfItsStreamsLayout) {
    write_file(dir_ + "/fa_f16_128.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 8}}, 3));
    write_file(dir_ + "/fa_f16_128_decode.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE_DECODE", 8}}, 4));
    // The attention entry first and naming no layout: the one a caller that does not ask for a layout gets.
    write_manifest(json::array({attention_entry("fa_f16_128.xclbin", "MLIR_AIE"),
                                attention_entry("fa_f16_128_decode.xclbin", "MLIR_AIE_DECODE", "decode")}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto act = dev->allocate(1 << 20, BufferRole::data);
    auto cache = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(act && cache);
    auto invocation_of = [&](int64_t tokens) { return to_invocation(attention_invocation(act.get(), cache.get(), tokens, 0.0f)); };
    const DesignDescription & d = find_design("flash_attn")->design;
    // The words the device must hand the NPU for `inv` in `layout`, placed as the device places them.
    auto placed_words_of = [&](const Invocation & inv, const std::string & layout) {
        AttentionShape shape;
        std::string err;
        EXPECT_TRUE(attention_shape_of(inv, d, shape, err)) << err;
        shape.layout = layout;
        const AttentionSequence seq = build_attention_sequence(d, shape);
        EXPECT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.layout, layout);
        AttentionArguments want;
        EXPECT_TRUE(attention_arguments(inv, d, seq, want, err)) << err;
        std::vector<uint32_t> words;
        EXPECT_TRUE(place_arguments(seq.words, want.places, words, err)) << err;
        return words;
    };
    xrt_mock::control().rows_fill = true;
    xrt_mock::control().rows_fill_arg = 5;
    xrt_mock::control().params_arg = -1;
    xrt_mock::control().rows_fill_value = 0.25f;

    const Invocation decode = invocation_of(1);
    const Invocation prefill = invocation_of(4);
    EXPECT_TRUE(dev->has_kernel(decode.key));
    {
        AttentionShape shape;
        std::string err;
        ASSERT_TRUE(attention_shape_of(decode, d, shape, err)) << err;
        ASSERT_EQ(attention_layout(d, shape, err)->name, "decode");
        ASSERT_TRUE(attention_shape_of(prefill, d, shape, err)) << err;
        ASSERT_EQ(attention_layout(d, shape, err)->name, "attention");
    }
    for (int pass = 0; pass < 2; ++pass) {  // the second reuses the kernels, their contexts and streams
        for (const Invocation * inv : {&decode, &prefill}) {
            const bool one = inv == &decode;
            SCOPED_TRACE(std::string(one ? "a decoded token" : "4 tokens") + ", pass " + std::to_string(pass));
            xrt_mock::control().runs.clear();
            Batch batch;
            batch.invocations.push_back(*inv);
            const Status st = dev->run(batch, std::chrono::milliseconds(1000));
            ASSERT_TRUE(st.ok) << st.message;
            EXPECT_TRUE(errors_.empty()) << errors_.front();
            ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
            const xrt_mock::RecordedRun & run = xrt_mock::control().runs[0];
            EXPECT_EQ(run.kernel, one ? "MLIR_AIE_DECODE" : "MLIR_AIE");
            const std::vector<uint32_t> want = placed_words_of(*inv, one ? "decode" : "attention");
            EXPECT_EQ(run.instructions, want);
            if (one) {
                EXPECT_NE(run.instructions, placed_words_of(*inv, "attention"));  // the layouts' streams differ
            }
        }
    }
    EXPECT_EQ(xrt_mock::control().contexts_created, 2);  // one per xclbin, kept across batches
}

// The row_scale design (aie/row_scale: the rows movement with a second input of one value per row)
// through the same resolve: its stream as the simulator builds it, x, w and y by name, w's extent one
// value per row at its stride, only y's rows copied back.
TEST_F(XrtDeviceTest, RunsTheRowScaleDesignsStreamWithAValuePerRow) {
    write_file(dir_ + "/row_scale1024.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 6}}, 3));  // opcode, instructions, count, x, w, y
    json e = {{"design", "row_scale"}, {"family", "row_scale"}, {"tile", 1024}, {"xclbin", "row_scale1024.xclbin"}, {"kernel", "MLIR_AIE"},
              {"npu", {"npu2"}},
              {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                    {{"kind", "instructions"}, {"group_id", 1}},
                                    {{"kind", "instruction_count"}},
                                    {{"kind", "operand"}, {"name", "x"}, {"group_id", 3}},
                                    {{"kind", "operand"}, {"name", "w"}, {"group_id", 4}},
                                    {{"kind", "operand"}, {"name", "y"}, {"group_id", 5}}})}};
    write_manifest(json::array({e}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto buf = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(buf);
    // A decode token's 8 expert outputs of 2048 values, their weights 2 floats apart.
    RowScaleInvocation r;
    r.p = {8, 2048, 2048, 2, 2048};
    r.x = {buf.get(), 4096};
    r.w = {buf.get(), 512};
    r.y = {buf.get(), 131072};
    const Invocation inv = to_invocation(r);
    EXPECT_EQ(inv.key.tile.n, 1024);
    EXPECT_TRUE(dev->has_kernel(inv.key));
    auto * y = reinterpret_cast<float *>(static_cast<char *>(buf->host_ptr()) + 131072);
    for (int i = 0; i < 8 * 2048 + 16; ++i) y[i] = -1.0f;
    xrt_mock::control().rows_fill = true;
    xrt_mock::control().rows_fill_value = 2.5f;
    Batch batch;
    batch.invocations.push_back(inv);
    const Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_TRUE(errors_.empty()) << errors_.front();
    ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
    const xrt_mock::RecordedRun & run = xrt_mock::control().runs[0];
    RowsShape shape;
    std::string err;
    ASSERT_TRUE(rows_shape_of(inv, row_scale_design().design, shape, err)) << err;
    const RowsSequence want = build_rows_sequence(row_scale_design().design, shape);
    ASSERT_TRUE(want.ok()) << want.error;
    EXPECT_EQ(run.instructions, want.words);
    EXPECT_EQ(want.traffic.of("w"), 8u * 4);
    EXPECT_EQ(run.weights_offset, 4096u);  // argument 3: x
    EXPECT_EQ(run.weights_size, 8u * 2048 * 4);
    for (int i = 0; i < 8 * 2048 + 16; ++i) {
        ASSERT_EQ(y[i], i < 8 * 2048 ? 2.5f : -1.0f) << "value " << i;
    }
}

// The gather design (aie/get_rows: DMAs only, the ids read by the host at submission): the stream of the
// ids as they are when the batch runs, src and y bound by name (the ids are no argument of the NPU
// program), only y's rows copied back; new ids, a new stream, the same invocation.
TEST_F(XrtDeviceTest, RunsTheGatherDesignsStreamFromTheIdsAtSubmission) {
    write_file(dir_ + "/gather1024.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 5}}, 3));  // opcode, instructions, count, src, y
    json e = {{"design", "get_rows"}, {"family", "gather"}, {"tile", 1024}, {"xclbin", "gather1024.xclbin"}, {"kernel", "MLIR_AIE"},
              {"npu", {"npu2"}},
              {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                    {{"kind", "instructions"}, {"group_id", 1}},
                                    {{"kind", "instruction_count"}},
                                    {{"kind", "operand"}, {"name", "src"}, {"group_id", 3}},
                                    {{"kind", "operand"}, {"name", "y"}, {"group_id", 4}}})}};
    write_manifest(json::array({e}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto buf = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(buf);
    // 3 ids into 10 source rows of 2048 values (tile 1024), y rows 2050 floats apart.
    auto * ids = reinterpret_cast<int32_t *>(static_cast<char *>(buf->host_ptr()) + 512);
    ids[0] = 7;
    ids[1] = 2;
    ids[2] = 3;
    GetRowsInvocation g;
    g.p = {3, 2048, 10, 2048, 2050};
    g.src = {buf.get(), 4096};
    g.ids = {buf.get(), 512};
    g.y = {buf.get(), 131072};
    const Invocation inv = to_invocation(g);
    EXPECT_EQ(inv.key.tile.n, 1024);
    EXPECT_TRUE(dev->has_kernel(inv.key));
    EXPECT_FALSE(dev->has_kernel(get_rows_key(512)));
    auto * y = reinterpret_cast<float *>(static_cast<char *>(buf->host_ptr()) + 131072);
    for (int i = 0; i < 3 * 2050; ++i) y[i] = -1.0f;
    xrt_mock::control().rows_fill = true;
    xrt_mock::control().rows_fill_value = 9.5f;
    auto expected = [&] {
        GatherShape shape;
        std::string err;
        EXPECT_TRUE(gather_shape_of(inv, find_design("get_rows")->design, shape, err)) << err;
        return build_gather_sequence(find_design("get_rows")->design, shape);
    };
    Batch batch;
    batch.invocations.push_back(inv);
    Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_TRUE(errors_.empty()) << errors_.front();
    ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
    const RowsSequence first = expected();
    ASSERT_TRUE(first.ok()) << first.error;
    EXPECT_EQ(xrt_mock::control().runs[0].instructions, first.words);
    EXPECT_EQ(xrt_mock::control().runs[0].weights_offset, 4096u);  // argument 3: src, all of its rows
    EXPECT_EQ(xrt_mock::control().runs[0].weights_size, 9u * 2048 * 4 + 2048 * 4);
    for (int row = 0; row < 3; ++row) {
        for (int i = 0; i < 2050; ++i) {
            ASSERT_EQ(y[row * 2050 + i], i < 2048 ? 9.5f : -1.0f) << "row " << row << " value " << i;
        }
    }
    // The next token's ids: the same invocation, its stream built from them.
    ids[0] = 0;
    st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    ASSERT_EQ(xrt_mock::control().runs.size(), 2u);
    const RowsSequence second = expected();
    EXPECT_NE(second.words, first.words);
    EXPECT_EQ(xrt_mock::control().runs[1].instructions, second.words);
    // An id past the source: the submission fails with the reason, before any run.
    ids[1] = 10;
    st = dev->run(batch, std::chrono::milliseconds(1000));
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.message.find("outside the 10 rows"), std::string::npos) << st.message;
    EXPECT_EQ(xrt_mock::control().runs.size(), 2u);
}

// The set_rows design (aie/set_rows: the scatter movement): the stream built from the ids at submission
// (the KV cache's write rows), x bound over its rows, the cache bound in place (not staged: the stream
// writes only the rows the ids name, and a staged copy of the whole cache would write every other row
// too), synced back after the run; new ids give a new stream; two rows with one id fail the submission
// before any run.
TEST_F(XrtDeviceTest, RunsTheScatterDesignsStreamIntoTheCacheInPlace) {
    write_file(dir_ + "/sr.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 5}}, 3));  // opcode, instructions, count, x, y
    json e = {{"design", "set_rows"}, {"family", "f16"}, {"tile", 1024}, {"xclbin", "sr.xclbin"}, {"kernel", "MLIR_AIE"},
              {"npu", {"npu2"}},
              {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                    {{"kind", "instructions"}, {"group_id", 1}},
                                    {{"kind", "instruction_count"}},
                                    {{"kind", "operand"}, {"name", "x"}, {"group_id", 3}},
                                    {{"kind", "operand"}, {"name", "y"}, {"group_id", 4}}})}};
    write_manifest(json::array({e}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto buf = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(buf);
    // 2 K rows of 1024 values (tile 1024) into cells 5 and 9 of a 16-cell F16 cache.
    auto * ids = reinterpret_cast<int64_t *>(static_cast<char *>(buf->host_ptr()) + 512);
    ids[0] = 5;
    ids[1] = 9;
    SetRowsInvocation sr;
    sr.p.rows = 2;
    sr.p.cols = 1024;
    sr.p.y_rows = 16;
    sr.p.x_row_stride = 1024;
    sr.p.y_row_stride = 1024;
    sr.x = {buf.get(), 4096};
    sr.ids = {buf.get(), 512};
    sr.y = {buf.get(), 65536};
    const Invocation inv = to_invocation(sr);
    EXPECT_EQ(inv.key.tile.n, 1024);
    EXPECT_TRUE(dev->has_kernel(inv.key));
    EXPECT_FALSE(dev->has_kernel(set_rows_key(true, 1024)));  // no Q8_0 xclbin in this manifest
    xrt_mock::control().rows_fill = true;
    xrt_mock::control().rows_fill_value = 2.5f;
    auto expected = [&] {
        ScatterShape shape;
        std::string err;
        EXPECT_TRUE(scatter_shape_of(inv, find_design("set_rows")->design, shape, err)) << err;
        return build_scatter_sequence(find_design("set_rows")->design, shape);
    };
    Batch batch;
    batch.invocations.push_back(inv);
    Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_TRUE(errors_.empty()) << errors_.front();
    ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
    const RowsSequence first = expected();
    ASSERT_TRUE(first.ok()) << first.error;
    EXPECT_EQ(xrt_mock::control().runs[0].instructions, first.words);
    EXPECT_EQ(xrt_mock::control().runs[0].weights_offset, 4096u);  // argument 3: x, its 2 rows
    EXPECT_EQ(xrt_mock::control().runs[0].weights_size, 2u * 1024 * 4);
    // Argument 4: the cache itself, at its offset and over all 16 rows (no staging BO): what the kernel
    // wrote is in the buffer ggml reads.
    EXPECT_EQ(xrt_mock::control().runs[0].activations_offset, 65536u);
    EXPECT_EQ(xrt_mock::control().runs[0].activations_size, 16u * 1024 * 2);
    const auto * cache = reinterpret_cast<const float *>(static_cast<char *>(buf->host_ptr()) + 65536);
    EXPECT_EQ(cache[0], 2.5f);
    EXPECT_EQ(cache[16 * 1024 / 2 - 1], 2.5f);
    // The next token's cells: the same invocation, its stream built from them.
    ids[0] = 6;
    ids[1] = 7;
    st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    ASSERT_EQ(xrt_mock::control().runs.size(), 2u);
    const RowsSequence second = expected();
    EXPECT_NE(second.words, first.words);
    EXPECT_EQ(xrt_mock::control().runs[1].instructions, second.words);
    // Two rows into one cell: the submission fails with the reason, before any run.
    ids[1] = 6;
    st = dev->run(batch, std::chrono::milliseconds(1000));
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.message.find("names two rows"), std::string::npos) << st.message;
    EXPECT_EQ(xrt_mock::control().runs.size(), 2u);
}

// The rope design (aie/rope: the rope movement): the stream of the shape as the simulator builds it (the
// same for every token), x and y bound by name, and the angle rows of the positions as they are at
// submission written into the run slot's own buffer for the cs argument; a position outside the angle
// table fails the submission before any run.
TEST_F(XrtDeviceTest, RunsTheRopeDesignsStreamWithTheAngleRowsOfThePositions) {
    write_file(dir_ + "/rope.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 6}}, 3));  // opcode, instructions, count, x, cs, y
    json e = {{"design", "rope"}, {"family", "norm"}, {"tile", 128}, {"xclbin", "rope.xclbin"}, {"kernel", "MLIR_AIE"},
              {"npu", {"npu2"}},
              {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                    {{"kind", "instructions"}, {"group_id", 1}},
                                    {{"kind", "instruction_count"}},
                                    {{"kind", "operand"}, {"name", "x"}, {"group_id", 3}},
                                    {{"kind", "operand"}, {"name", "cs"}, {"group_id", 4}},
                                    {{"kind", "operand"}, {"name", "y"}, {"group_id", 5}}})}};
    write_manifest(json::array({e}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto buf = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(buf);
    // 2 tokens x 4 heads of 128, at positions 7 and 300.
    auto * pos = reinterpret_cast<int32_t *>(static_cast<char *>(buf->host_ptr()) + 256);
    pos[0] = 7;
    pos[1] = 300;
    RopeInvocation rp;
    rp.p.mode = RopeMode::norm;
    rp.p.angles.n_dims = 128;
    rp.p.angles.n_ctx_orig = 4096;
    rp.p.ne0 = 128;
    rp.p.n_heads = 4;
    rp.p.n_tokens = 2;
    rp.p.x_head_stride = rp.p.y_head_stride = 128;
    rp.p.x_token_stride = rp.p.y_token_stride = 512;
    rp.x = {buf.get(), 4096};
    rp.pos = {buf.get(), 256};
    rp.y = {buf.get(), 65536};
    const Invocation inv = to_invocation(rp);
    EXPECT_EQ(inv.key.tile.n, 128);
    EXPECT_TRUE(dev->has_kernel(inv.key));
    EXPECT_FALSE(dev->has_kernel(rope_key(RopeMode::neox, 128)));
    xrt_mock::control().rows_fill = true;
    xrt_mock::control().rows_fill_value = 1.25f;
    Batch batch;
    batch.invocations.push_back(inv);
    Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_TRUE(errors_.empty()) << errors_.front();
    ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
    RopeShape shape;
    std::string err;
    ASSERT_TRUE(rope_shape_of(inv, find_design("rope")->design, shape, err)) << err;
    const RowsSequence seq = build_rope_sequence(find_design("rope")->design, shape);
    ASSERT_TRUE(seq.ok()) << seq.error;
    EXPECT_EQ(xrt_mock::control().runs[0].instructions, seq.words);
    EXPECT_EQ(xrt_mock::control().runs[0].weights_offset, 4096u);  // argument 3: x, 2 x 4 rows of 128
    EXPECT_EQ(xrt_mock::control().runs[0].weights_size, 8u * 128 * 4);
    // Argument 4: the angle rows, one per token, as the host makes them from the positions now.
    std::vector<uint8_t> want;
    ASSERT_TRUE(inv.host_operand("cs", want, err)) << err;
    ASSERT_EQ(want.size(), 2u * 128 * 4);
    EXPECT_EQ(xrt_mock::control().runs[0].activations_size, want.size());
    EXPECT_EQ(xrt_mock::control().runs[0].activations_data, want);
    const auto * y = reinterpret_cast<const float *>(static_cast<char *>(buf->host_ptr()) + 65536);
    EXPECT_EQ(y[0], 1.25f);
    EXPECT_EQ(y[8 * 128 - 1], 1.25f);
    // The next token's positions: the same stream, new angle rows.
    pos[0] = 8;
    pos[1] = 301;
    st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    ASSERT_EQ(xrt_mock::control().runs.size(), 2u);
    EXPECT_EQ(xrt_mock::control().runs[1].instructions, seq.words);
    std::vector<uint8_t> next;
    ASSERT_TRUE(inv.host_operand("cs", next, err)) << err;
    EXPECT_NE(next, want);
    EXPECT_EQ(xrt_mock::control().runs[1].activations_data, next);
    // A position outside the angle table: the submission fails with the reason, before any run.
    pos[1] = -3;
    st = dev->run(batch, std::chrono::milliseconds(1000));
    EXPECT_FALSE(st.ok);
    EXPECT_NE(st.message.find("outside the angle table"), std::string::npos) << st.message;
    EXPECT_EQ(xrt_mock::control().runs.size(), 2u);
}

// The act_quant design (aie/act_quant: the quant movement): the stream of the shape as the simulator
// builds it, x, tiles and zeros bound by name, the tiles copied back whole; its key at the family's token
// and K tile.
TEST_F(XrtDeviceTest, RunsTheActQuantDesignsStreamWithItsZeros) {
    write_file(dir_ + "/aq.xclbin", xrt_mock::make_xclbin({{"MLIR_AIE", 6}}, 3));  // opcode, instructions, count, x, zeros, tiles
    json e = {{"design", "act_quant"}, {"family", "a8_b256_n4"}, {"tile", 4}, {"xclbin", "aq.xclbin"}, {"kernel", "MLIR_AIE"},
              {"npu", {"npu2"}},
              {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                    {{"kind", "instructions"}, {"group_id", 1}},
                                    {{"kind", "instruction_count"}},
                                    {{"kind", "operand"}, {"name", "x"}, {"group_id", 3}},
                                    {{"kind", "operand"}, {"name", "zeros"}, {"group_id", 4}},
                                    {{"kind", "operand"}, {"name", "tiles"}, {"group_id", 5}}})}};  // inputs, then the output
    write_manifest(json::array({e}));
    auto dev = open();
    ASSERT_NE(dev, nullptr);
    auto buf = dev->allocate(1 << 20, BufferRole::data);
    ASSERT_TRUE(buf);
    // 3 tokens of 1024 values (4 K tiles of 256, one token tile of 4: one padding row), x 1030 floats apart.
    ActQuantInvocation a;
    a.p.n = 3;
    a.p.k = 1024;
    a.p.tile_n = 4;
    a.p.tile_k = 256;
    a.p.format = ActFormat::a8_b256;
    a.p.act_block = 256;
    a.p.n_tiles = 1;
    a.p.k_tiles = 4;
    a.p.tile_bytes = 1216;
    a.p.x_row_stride = 1030;
    a.x = {buf.get(), 4096};
    a.tiles = {buf.get(), 65536};
    a.zeros = {buf.get(), 131072};
    const Invocation inv = to_invocation(a);
    EXPECT_TRUE(dev->has_kernel(inv.key)) << (errors_.empty() ? std::string("no error logged") : errors_.front());
    ActivationLayout other;
    other.format = ActFormat::a8_b256;
    other.tile_n = 32;
    other.tile_k = 256;
    other.k = other.k_pad = 256;
    EXPECT_FALSE(dev->has_kernel(act_quant_key(other)));  // no xclbin of that token tile
    auto * tiles = reinterpret_cast<float *>(static_cast<char *>(buf->host_ptr()) + 65536);
    for (int i = 0; i < 4 * 1216 / 4 + 16; ++i) tiles[i] = -1.0f;
    xrt_mock::control().rows_fill = true;
    xrt_mock::control().rows_fill_value = 2.5f;
    Batch batch;
    batch.invocations.push_back(inv);
    const Status st = dev->run(batch, std::chrono::milliseconds(1000));
    ASSERT_TRUE(st.ok) << st.message;
    EXPECT_TRUE(errors_.empty()) << errors_.front();
    ASSERT_EQ(xrt_mock::control().runs.size(), 1u);
    QuantShape shape;
    std::string err;
    ASSERT_TRUE(quant_shape_of(inv, find_design("act_quant")->design, shape, err)) << err;
    const RowsSequence want = build_quant_sequence(find_design("act_quant")->design, shape);
    ASSERT_TRUE(want.ok()) << want.error;
    EXPECT_EQ(xrt_mock::control().runs[0].instructions, want.words);
    EXPECT_EQ(xrt_mock::control().runs[0].weights_offset, 4096u);  // argument 3: x, 2 x 1030 + 1024 floats
    EXPECT_EQ(xrt_mock::control().runs[0].weights_size, (2u * 1030 + 1024) * 4);
    EXPECT_EQ(xrt_mock::control().runs[0].activations_offset, 131072u);  // argument 4: the zeros
    for (int i = 0; i < 4 * 1216 / 4 + 16; ++i) {
        ASSERT_EQ(tiles[i], i < 4 * 1216 / 4 ? 2.5f : -1.0f) << "word " << i;
    }
}
