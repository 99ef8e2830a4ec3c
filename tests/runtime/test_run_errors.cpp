// Error mapping: command states and errno-carrying failures become one clear line each.
#include "runtime/run-errors.h"

#include <gtest/gtest.h>

#include <cerrno>

using namespace xdna;

TEST(RunErrors, StatesMirrorErtValues) {
    // ert_cmd_state in XRT's ert.h: NEW = 1 ... SKCRASHED = 11. The XRT build static_asserts the same.
    EXPECT_EQ(run_state_from_code(1), RunState::new_cmd);
    EXPECT_EQ(run_state_from_code(4), RunState::completed);
    EXPECT_EQ(run_state_from_code(5), RunState::error);
    EXPECT_EQ(run_state_from_code(6), RunState::abort);
    EXPECT_EQ(run_state_from_code(8), RunState::timeout);
    EXPECT_EQ(run_state_from_code(9), RunState::no_response);
    EXPECT_EQ(run_state_from_code(11), RunState::soft_kernel_crashed);
    EXPECT_EQ(run_state_from_code(0), RunState::unknown);
    EXPECT_EQ(run_state_from_code(12), RunState::unknown);
    EXPECT_EQ(run_state_from_code(-4), RunState::unknown);
}

TEST(RunErrors, OnlyCompletedIsSuccess) {
    EXPECT_TRUE(run_state_status(RunState::completed, "x").ok);
    for (int code = 0; code <= 12; ++code) {
        const RunState s = run_state_from_code(code);
        if (s == RunState::completed) {
            continue;
        }
        const Status st = run_state_status(s, "invocation 2 of 5 (mm_q4_K_a8, tile 64x4x256)");
        EXPECT_FALSE(st.ok) << code;
        EXPECT_EQ(st.message.rfind("invocation 2 of 5 (mm_q4_K_a8, tile 64x4x256) ended in state '", 0), 0u)
            << st.message;
    }
}

TEST(RunErrors, StateMessagesSayWhatHappened) {
    EXPECT_NE(run_state_status(RunState::error, "r").message.find("'error': the kernel reported an error"),
              std::string::npos);
    EXPECT_NE(run_state_status(RunState::abort, "r").message.find("an earlier command of the batch failed"),
              std::string::npos);
    EXPECT_NE(run_state_status(RunState::timeout, "r").message.find("timed the command out"), std::string::npos);
    EXPECT_NE(run_state_status(RunState::no_response, "r").message.find("stopped responding"), std::string::npos);
    EXPECT_NE(run_state_status(RunState::running, "r").message.find("had not finished"), std::string::npos);
    EXPECT_NE(run_state_status(RunState::unknown, "r").message.find("'unknown state'"), std::string::npos);
}

TEST(RunErrors, BusyContextNamesOtherProcesses) {
    const std::string m = describe_xrt_failure(XrtStep::create_context, "/k/mm.xclbin", EBUSY, "DRM_IOCTL failed");
    EXPECT_EQ(m,
              "cannot create a hardware context for /k/mm.xclbin: the NPU has no free hardware context or columns "
              "(another process, or another model in this process, holds them) (DRM_IOCTL failed)");
    EXPECT_NE(describe_xrt_failure(XrtStep::create_context, "a", ENOSPC, "").find("no free hardware context"),
              std::string::npos);
}

TEST(RunErrors, HintsPerErrnoAndStep) {
    EXPECT_NE(describe_xrt_failure(XrtStep::open_device, "0000:c5:00.1", ENOENT, "No such device")
                  .find("cannot open the NPU 0000:c5:00.1: XRT sees no NPU (is XRT's amdxdna plug-in"),
              std::string::npos);
    // XRT's "No such device with index '0'" comes without an errno.
    EXPECT_EQ(describe_xrt_failure(XrtStep::open_device, "", 0, "No such device with index '0'"),
              "cannot open the NPU: XRT could not open the device (No such device with index '0')");
    EXPECT_NE(describe_xrt_failure(XrtStep::allocate, "4096 bytes", ENOMEM, "").find("out of memory"),
              std::string::npos);
    EXPECT_NE(describe_xrt_failure(XrtStep::open_device, "x", EACCES, "").find("permission denied"), std::string::npos);
    EXPECT_NE(describe_xrt_failure(XrtStep::load_xclbin, "a.xclbin", EINVAL, "").find("rejected as invalid"),
              std::string::npos);
    EXPECT_EQ(describe_xrt_failure(XrtStep::submit, "invocation 1 of 1", 0, "bad arg"),
              "cannot submit invocation 1 of 1 (bad arg)");
}

TEST(RunErrors, TimeoutMessage) {
    const std::string m = describe_run_timeout(std::chrono::milliseconds(2500), 7);
    EXPECT_NE(m.find("batch of 7 kernel invocations within 2500 ms"), std::string::npos) << m;
    EXPECT_NE(m.find("GGML_XDNA_TIMEOUT_MS"), std::string::npos);
    EXPECT_NE(m.find("disabled"), std::string::npos);
}
