// Planning RMS_NORM for the NPU: alone, or fused with the MUL by its weight that follows it (llama.cpp's
// build_norm: mul(rms_norm(x), w)). Only what the rms_norm design takes (aie/rms_norm/README.md) is
// accepted; everything else stays on the host-op path, with the reason.
#pragma once

#include "ops/rms_norm/rms-norm-invocation.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

// Whether the design takes this RMS_NORM node (F32 rows of a multiple of 32 values up to the design's
// longest row, eps of at least 2^-100, rows strided within each (i2, i3) slice); `why` says why not.
bool rms_norm_supported(const ggml_tensor * norm, std::string & why);

// The RMS_NORM a MUL by a norm weight fuses with: mul's src0 is `norm`, src1 an F32 row of the norm's
// row length, one for all rows or one per row (same shape), in device memory and not packed. The
// caller has checked with ggml_can_fuse that the norm's only use is this MUL.
bool rms_norm_mul_fusable(const ggml_tensor * mul, const TensorResolver & resolve, std::string & why);
// Whether a MUL node is planned with the RMS_NORM before it (reading the norm's input): a MUL of an
// RMS_NORM that rms_norm_mul_fusable accepts. The backend fuses such a pair when ggml_can_fuse allows;
// when it does not (the norm has other readers), the MUL still computes norm(x) * w from x, the same
// bits as the two steps. Any other MUL is a plain elementwise MUL (ops/add).
bool mul_fuses_rms_norm(const ggml_tensor * mul, const TensorResolver & resolve);

// `node` is an RMS_NORM (alone) or a MUL fused with the RMS_NORM that is its src0. One invocation per
// (i2, i3) slice of the rows, appended to `out`.
bool plan_rms_norm(const ggml_tensor * node, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why);

}  // namespace xdna
