// Whether a MUL_MAT's activations can be quantized on the NPU (aie/act_quant) in the submission that
// computes them, instead of on the host between two submissions.
#pragma once

#include "plan/matmul-plan.h"
#include "plan/op-support.h"

#include "ggml.h"

namespace xdna {

// src1 is one F32 matrix (ne2 = ne3 = 1) with contiguous values, the matmul runs an a8 contract whose
// activation layout act_quant_takes (a K of whole 256-value tiles), and the device has the kernel.
bool npu_quantizes_activations(const ggml_tensor * matmul, const TensorResolver & resolve);

// The same for a matmul already planned.
bool npu_quantizes_activations(const ggml_tensor * matmul, const MatmulPlan & plan, const TensorResolver & resolve);

}  // namespace xdna
