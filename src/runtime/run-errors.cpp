#include "runtime/run-errors.h"

#include <cerrno>

namespace xdna {

RunState run_state_from_code(int code) {
    if (code >= static_cast<int>(RunState::new_cmd) && code <= static_cast<int>(RunState::soft_kernel_crashed)) {
        return static_cast<RunState>(code);
    }
    return RunState::unknown;
}

const char * run_state_name(RunState s) {
    switch (s) {
        case RunState::new_cmd: return "new";
        case RunState::queued: return "queued";
        case RunState::running: return "running";
        case RunState::completed: return "completed";
        case RunState::error: return "error";
        case RunState::abort: return "abort";
        case RunState::submitted: return "submitted";
        case RunState::timeout: return "timeout";
        case RunState::no_response: return "no response";
        case RunState::soft_kernel_error: return "soft kernel error";
        case RunState::soft_kernel_crashed: return "soft kernel crashed";
        case RunState::unknown: break;
    }
    return "unknown state";
}

Status run_state_status(RunState s, const std::string & what) {
    std::string meaning;
    switch (s) {
        case RunState::completed:
            return Status::success();
        case RunState::error:
            meaning = "the kernel reported an error; its output is not valid";
            break;
        case RunState::abort:
            meaning = "aborted, because an earlier command of the batch failed or its hardware context was reset";
            break;
        case RunState::timeout:
            meaning = "the NPU firmware timed the command out and reset its hardware context";
            break;
        case RunState::no_response:
            meaning = "the NPU stopped responding; the device may need a driver reload or a reboot";
            break;
        case RunState::soft_kernel_error:
        case RunState::soft_kernel_crashed:
            meaning = "a soft kernel failed (not expected on an NPU)";
            break;
        case RunState::new_cmd:
        case RunState::queued:
        case RunState::running:
        case RunState::submitted:
            meaning = "the command had not finished when its result was read";
            break;
        case RunState::unknown:
            meaning = "the runtime returned a state this backend does not know";
            break;
    }
    return Status::error(what + " ended in state '" + run_state_name(s) + "': " + meaning);
}

namespace {

const char * step_text(XrtStep step) {
    switch (step) {
        case XrtStep::open_device: return "cannot open the NPU";
        case XrtStep::load_xclbin: return "cannot load xclbin";
        case XrtStep::find_kernel: return "kernel not found in xclbin";
        case XrtStep::register_xclbin: return "cannot register xclbin";
        case XrtStep::create_context: return "cannot create a hardware context for";
        case XrtStep::open_kernel: return "cannot open kernel";
        case XrtStep::load_instructions: return "cannot load the instruction stream of";
        case XrtStep::allocate: return "cannot allocate";
        case XrtStep::submit: return "cannot submit";
        case XrtStep::wait: return "waiting failed for";
    }
    return "NPU runtime failure in";
}

// The likely cause behind an errno at a step, in the user's terms.
std::string hint(XrtStep step, int e) {
    switch (e) {
        case EBUSY:
        case EAGAIN:
        case ENOSPC:
            if (step == XrtStep::create_context || step == XrtStep::register_xclbin) {
                return "the NPU has no free hardware context or columns (another process, or another model in "
                       "this process, holds them)";
            }
            return "the NPU is busy";
        case EACCES:
        case EPERM:
            return "permission denied (the user needs read/write access to /dev/accel/accel*)";
        case ENOENT:
        case ENODEV:
            return step == XrtStep::open_device
                       ? "XRT sees no NPU (is XRT's amdxdna plug-in, libxrt_driver_xdna.so, installed?)"
                       : "not found";
        case ENOMEM:
            return "out of memory (NPU-addressable memory is limited to part of system RAM)";
        case ETIME:
        case ETIMEDOUT:
            return "timed out";
        case EINVAL:
            return step == XrtStep::load_xclbin || step == XrtStep::register_xclbin || step == XrtStep::create_context
                       ? "rejected as invalid (built for another NPU generation or corrupt?)"
                       : "invalid argument";
        case EIO:
            return "I/O error from the driver";
        default:
            break;
    }
    if (step == XrtStep::open_device) {
        return "XRT could not open the device";
    }
    return {};
}

}  // namespace

std::string describe_xrt_failure(XrtStep step, const std::string & subject, int err_code, const std::string & what) {
    std::string s = step_text(step);
    if (!subject.empty()) {
        s += " " + subject;
    }
    const std::string h = hint(step, err_code);
    if (!h.empty()) {
        s += ": " + h;
    }
    if (!what.empty()) {
        s += " (" + what + ")";
    }
    return s;
}

std::string describe_run_timeout(std::chrono::milliseconds timeout, size_t invocations) {
    return "the NPU did not finish a batch of " + std::to_string(invocations) + " kernel invocations within " +
           std::to_string(timeout.count()) +
           " ms (GGML_XDNA_TIMEOUT_MS); the device is disabled for this process because the commands may still "
           "write to their buffers";
}

}  // namespace xdna
