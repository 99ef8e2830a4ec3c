// XRT's public headers, for every release this backend supports (2.18 and newer).
//
// XRT 2.19 moved the experimental headers (runlist, xclbin, version) from <experimental/...> to
// <xrt/experimental/...>; the old paths still exist there but warn. Pick whichever the installed XRT has.
#pragma once

#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_hw_context.h>
#include <xrt/xrt_kernel.h>

#if __has_include(<xrt/experimental/xrt_kernel.h>)
#    include <xrt/experimental/xrt_kernel.h>  // xrt::runlist
#    include <xrt/experimental/xrt_version.h>
#    include <xrt/experimental/xrt_xclbin.h>
#else
#    include <experimental/xrt_kernel.h>  // xrt::runlist (XRT 2.18)
#    include <experimental/xrt_version.h>
#    include <experimental/xrt_xclbin.h>
#endif
