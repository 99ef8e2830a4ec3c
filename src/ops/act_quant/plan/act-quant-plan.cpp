#include "ops/act_quant/act-quant-plan.h"

#include "ops/act_quant/act-quant-invocation.h"

namespace xdna {

bool npu_quantizes_activations(const ggml_tensor * matmul, const MatmulPlan & plan, const TensorResolver & resolve) {
    const ggml_tensor * src1 = matmul->src[1];
    if (matmul->op != GGML_OP_MUL_MAT || src1->type != GGML_TYPE_F32 || src1->nb[0] != sizeof(float) ||
        src1->nb[1] % sizeof(float) != 0 || src1->ne[2] != 1 || src1->ne[3] != 1 || !act_quant_takes(plan.activations)) {
        return false;
    }
    return !resolve.has_kernel || resolve.has_kernel(act_quant_key(plan.activations));
}

const ggml_tensor * reshaped_source(const ggml_tensor * t) {
    while (t->view_src != nullptr && t->view_offs == 0 && ggml_is_contiguous(t) && ggml_is_contiguous(t->view_src) &&
           ggml_nbytes(t) == ggml_nbytes(t->view_src)) {
        t = t->view_src;
    }
    return t;
}

bool npu_quantizes_activations(const ggml_tensor * matmul, const TensorResolver & resolve) {
    if (matmul->op != GGML_OP_MUL_MAT) {
        return false;
    }
    MatmulChoice choice;
    MatmulPlan   plan;
    std::string  why;
    return choose_matmul(matmul, resolve, choice, why) && plan_matmul(matmul, choice, plan, why) &&
           npu_quantizes_activations(matmul, plan, resolve);
}

}  // namespace xdna
