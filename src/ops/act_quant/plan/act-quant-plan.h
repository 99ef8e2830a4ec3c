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

// The tensor whose values `t` holds in the same order: t, or the tensor a whole, contiguous reshape of it
// views (the output projection reads the 2-D reshape of the attention's output). A matmul whose
// activations are such a reshape of an op of the submission reads that op's output.
const ggml_tensor * reshaped_source(const ggml_tensor * t);

// The same for a matmul already planned.
bool npu_quantizes_activations(const ggml_tensor * matmul, const MatmulPlan & plan, const TensorResolver & resolve);

}  // namespace xdna
