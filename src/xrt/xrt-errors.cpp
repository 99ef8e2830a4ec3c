#include "xrt/xrt-errors.h"

#include <system_error>

namespace xdna {

// RunState mirrors ert_cmd_state so that states read from XRT convert by value.
static_assert(static_cast<int>(RunState::new_cmd) == ERT_CMD_STATE_NEW, "RunState out of sync with ert.h");
static_assert(static_cast<int>(RunState::queued) == ERT_CMD_STATE_QUEUED, "RunState out of sync with ert.h");
static_assert(static_cast<int>(RunState::running) == ERT_CMD_STATE_RUNNING, "RunState out of sync with ert.h");
static_assert(static_cast<int>(RunState::completed) == ERT_CMD_STATE_COMPLETED, "RunState out of sync with ert.h");
static_assert(static_cast<int>(RunState::error) == ERT_CMD_STATE_ERROR, "RunState out of sync with ert.h");
static_assert(static_cast<int>(RunState::abort) == ERT_CMD_STATE_ABORT, "RunState out of sync with ert.h");
static_assert(static_cast<int>(RunState::submitted) == ERT_CMD_STATE_SUBMITTED, "RunState out of sync with ert.h");
static_assert(static_cast<int>(RunState::timeout) == ERT_CMD_STATE_TIMEOUT, "RunState out of sync with ert.h");
static_assert(static_cast<int>(RunState::no_response) == ERT_CMD_STATE_NORESPONSE, "RunState out of sync with ert.h");
static_assert(static_cast<int>(RunState::soft_kernel_error) == ERT_CMD_STATE_SKERROR, "RunState out of sync with ert.h");
static_assert(static_cast<int>(RunState::soft_kernel_crashed) == ERT_CMD_STATE_SKCRASHED,
              "RunState out of sync with ert.h");

RunState run_state_of(ert_cmd_state s) {
    return run_state_from_code(static_cast<int>(s));
}

int error_code_of(const std::exception & e) {
    if (const auto * se = dynamic_cast<const std::system_error *>(&e)) {
        // XRT stores a positive errno; some paths store it negated.
        const int v = se->code().value();
        return v < 0 ? -v : v;
    }
    return 0;
}

std::string describe_exception(XrtStep step, const std::string & subject, const std::exception & e) {
    return describe_xrt_failure(step, subject, error_code_of(e), e.what());
}

}  // namespace xdna
