// How failures of the NPU runtime become messages: command states and errno-carrying exceptions.
//
// The XRT device converts XRT's types (ert_cmd_state, std::system_error, xrt::runlist::command_error)
// into the plain values below; everything else lives here so it is testable without XRT.
#pragma once

#include "runtime/device.h"

#include <chrono>
#include <string>

namespace xdna {

// Mirrors XRT's ert_cmd_state (ert.h) value for value; the XRT device checks this at compile time.
enum class RunState : int {
    unknown = 0,
    new_cmd = 1,
    queued = 2,
    running = 3,
    completed = 4,
    error = 5,
    abort = 6,
    submitted = 7,
    timeout = 8,
    no_response = 9,
    soft_kernel_error = 10,
    soft_kernel_crashed = 11,
};

// Any value outside the known states maps to unknown.
RunState run_state_from_code(int code);

// Short name, e.g. "timeout".
const char * run_state_name(RunState s);

// Success only for `completed`; any other final state is an error naming `what` (e.g. the kernel and
// its position in the batch) and what the state means for the user.
Status run_state_status(RunState s, const std::string & what);

// Steps of driving the NPU that can fail, for messages.
enum class XrtStep {
    open_device,
    load_xclbin,
    find_kernel,
    register_xclbin,
    create_context,
    open_kernel,
    load_instructions,
    allocate,
    submit,
    wait,
};

// One line: what failed, on what, the likely cause for this errno (0 when the exception carried none),
// and the runtime's own text. E.g. "cannot create a hardware context for mm.xclbin: the NPU is busy ...".
std::string describe_xrt_failure(XrtStep step, const std::string & subject, int err_code, const std::string & what);

// The message of a batch that did not finish within `timeout`.
std::string describe_run_timeout(std::chrono::milliseconds timeout, size_t invocations);

}  // namespace xdna
