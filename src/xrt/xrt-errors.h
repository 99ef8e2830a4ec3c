// Conversion of XRT's failure types into the runtime's plain ones (run-errors.h).
#pragma once

#include "runtime/run-errors.h"
#include "xrt/xrt-headers.h"

#include <exception>
#include <string>

namespace xdna {

RunState run_state_of(ert_cmd_state s);

// errno carried by an XRT exception (XRT throws std::system_error subclasses for driver errors), else 0.
int error_code_of(const std::exception & e);

// describe_xrt_failure() for an exception caught at `step`.
std::string describe_exception(XrtStep step, const std::string & subject, const std::exception & e);

}  // namespace xdna
