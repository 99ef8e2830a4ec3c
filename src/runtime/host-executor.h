// Computing a batch on the host instead of the device.
//
// When a device run fails (device error, timeout, a kernel that will not load), the backend still owes
// the graph its results: a HostExecutor computes the same batch on the host CPU, exactly as the kernel
// contracts define it. The device factory (devices/open-device.h) hands one out; the caller does not
// know which implementation it is (today: the contracts' functional twins of the simulator).
#pragma once

#include "runtime/device.h"

namespace xdna {

class HostExecutor {
public:
    virtual ~HostExecutor() = default;

    // Compute every invocation of `batch` on the host; the operands are read and the outputs written
    // through the buffers' host pointers. An invocation of a kind it has no implementation for fails
    // the whole batch before anything is computed (never skipped: its outputs would keep whatever the
    // failed device run left there).
    virtual Status run(const Batch & batch) = 0;
};

}  // namespace xdna
