#include "plan/op-support.h"

#include "ops/add/add-plan.h"
#include "ops/flash_attn/flash-attn-plan.h"
#include "ops/get_rows/get-rows-plan.h"
#include "ops/glu/glu-plan.h"
#include "ops/hadamard/hadamard-plan.h"
#include "ops/row_scale/row-scale-plan.h"
#include "ops/rms_norm/rms-norm-plan.h"
#include "ops/rope/rope-plan.h"
#include "ops/scale/scale-plan.h"
#include "ops/set_rows/set-rows-plan.h"

#include "runtime/options.h"
#include "runtime/runtime-log.h"

#include "ggml-backend.h"

#include <cstring>

namespace xdna {

OpKind op_kind(const ggml_tensor * op) {
    switch (op->op) {
        case GGML_OP_NONE:
        case GGML_OP_RESHAPE:
        case GGML_OP_VIEW:
        case GGML_OP_PERMUTE:
        case GGML_OP_TRANSPOSE:
            return OpKind::noop;
        case GGML_OP_MUL_MAT: {
            if (!hadamard_hinted(op) || !npu_op_offered("hadamard")) return OpKind::matmul;  // every other MUL_MAT, on every walk
            std::string why;
            return hadamard_shape_supported(op, why) ? OpKind::hadamard : OpKind::matmul;
        }
        case GGML_OP_MUL_MAT_ID:
            return OpKind::matmul_id;
        case GGML_OP_RMS_NORM:
            return npu_op_offered("rms_norm") ? OpKind::rms_norm : OpKind::unsupported;
        case GGML_OP_MUL:
            if (mul_by_row_values(op)) {  // b of one value per row: the row_scale design (ops/row_scale)
                return npu_op_offered("row_scale") ? OpKind::row_scale : OpKind::unsupported;
            }
            [[fallthrough]];
        case GGML_OP_ADD:  // MUL: the add design's second program (a MUL after RMS_NORM: with the norm, ops/rms_norm)
            return npu_op_offered("add") ? OpKind::add : OpKind::unsupported;
        case GGML_OP_GLU:
            return npu_op_offered("glu") ? OpKind::glu : OpKind::unsupported;
        case GGML_OP_ROPE:
            return npu_op_offered("rope") ? OpKind::rope : OpKind::unsupported;
        case GGML_OP_GET_ROWS:
            return npu_op_offered("get_rows") ? OpKind::get_rows : OpKind::unsupported;
        case GGML_OP_SET_ROWS:
            return npu_op_offered("set_rows") ? OpKind::set_rows : OpKind::unsupported;
        case GGML_OP_SCALE:
            return npu_op_offered("scale") ? OpKind::scale : OpKind::unsupported;
        case GGML_OP_CPY:  // F32 to F16 rows: the set_rows program with row r to row r (ops/set_rows)
            return npu_op_offered("set_rows") ? OpKind::set_rows : OpKind::unsupported;
        case GGML_OP_FLASH_ATTN_EXT:
            return npu_op_offered("flash_attn") ? OpKind::flash_attn : OpKind::unsupported;
        default:
            return OpKind::unsupported;
    }
}

int32_t op_param_i32(const ggml_tensor * t, int i) {
    int32_t v;
    std::memcpy(&v, reinterpret_cast<const int32_t *>(t->op_params) + i, sizeof v);
    return v;
}

float op_param_f32(const ggml_tensor * t, int i) {
    float v;
    std::memcpy(&v, reinterpret_cast<const int32_t *>(t->op_params) + i, sizeof v);
    return v;
}

bool npu_op_offered(const char * op) {
    static const std::string value = [] {
        const OptionValue<std::string> o = npu_ops_option();
        report_option_error(o.error);
        return o.value;
    }();
    const std::string name = op;
    if (name == "rms_norm") return value == "rms_norm" || value == "glue" || value == "layer";
    if (name == "add" || name == "glu" || name == "rope" || name == "get_rows" || name == "set_rows" || name == "scale" || name == "hadamard" ||
        name == "row_scale") {
        return value == "glue" || value == "layer";
    }
    if (name == "flash_attn") return value == "layer";
    return false;
}

namespace {

// What MUL_MAT and MUL_MAT_ID share: a weight type with a contract, float activations, an F32 output
// with contiguous rows, weight rows of whole blocks along dim 0, and equal K.
bool operands_supported(const ggml_tensor * dst, std::string & why) {
    const ggml_tensor * src0 = dst->src[0];
    const ggml_tensor * src1 = dst->src[1];
    if (matmul_contract_for(src0->type) == nullptr) {
        why = std::string("no NPU kernel for weight type ") + ggml_type_name(src0->type);
        return false;
    }
    if (src1->type != GGML_TYPE_F32 && src1->type != GGML_TYPE_F16 && src1->type != GGML_TYPE_BF16) {
        why = std::string("activation type ") + ggml_type_name(src1->type);
        return false;
    }
    if (dst->type != GGML_TYPE_F32 || dst->nb[0] != sizeof(float)) {
        why = "output must be F32 with contiguous rows";
        return false;
    }
    if (src0->nb[0] != ggml_type_size(src0->type)) {
        // Only transposed F32/F16/BF16 weights can get here; ggml blocks always run along dim 0.
        why = "weights with non-contiguous rows";
        return false;
    }
    if (src0->ne[0] != src1->ne[0]) {
        why = "inconsistent shapes";
        return false;
    }
    if (src0->ne[0] % ggml_blck_size(src0->type) != 0) {
        why = "weight row length is not a whole number of blocks";
        return false;
    }
    return true;
}

// Neither operand is (a view into) a weight packed at load, except src0 as a whole.
bool no_packed_views(const ggml_tensor * dst, const TensorResolver & resolve, std::string & why) {
    const ggml_tensor * src0 = dst->src[0];
    const ggml_tensor * src1 = dst->src[1];
    if (resolve.is_packed) {
        // A view into a packed weight is not in ggml's layout and not a whole packed matrix.
        if (src0->view_src != nullptr && resolve.is_packed(src0->view_src)) {
            why = "weights are a view into a weight packed at load";
            return false;
        }
        if (resolve.is_packed(src1) || (src1->view_src != nullptr && resolve.is_packed(src1->view_src))) {
            why = "activations are (a view into) a weight packed at load";
            return false;
        }
    }
    return true;
}

// src0 is not another backend's weight, and the device has a kernel for its contract at a token tile
// for `n_tokens` (operands_supported() has found the contract).
bool choose_kernel(const ggml_tensor * dst, int64_t n_tokens, const TensorResolver & resolve, MatmulChoice & choice,
                   std::string & why) {
    const ggml_tensor * src0 = dst->src[0];
    // A weight that lives in another backend's memory (llama.cpp keeps tied embeddings, used as the
    // output head, in a CPU buffer for get_rows) would have to be re-packed into NPU tiles for every
    // token: more work than the matmul itself. Its owner computes it.
    const ggml_tensor * w = src0->view_src != nullptr ? src0->view_src : src0;
    if (w->buffer != nullptr && ggml_backend_buffer_get_usage(w->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS &&
        !(resolve.is_packed && resolve.is_packed(w))) {
        why = "weights in a weight buffer but not packed for the NPU (another backend's, or a vector): they would "
              "be re-packed for every token";
        return false;
    }
    const MatmulContract * c = matmul_contract_for(src0->type);
    // A prefill batch takes the prefill contract when asked for and installed; otherwise the default
    // contract, with the reason at debug level.
    if (n_tokens > kDecodeTokens && prefill_contracts_enabled()) {
        const MatmulContract * p = prefill_contract_for(src0->type);
        if (p == nullptr) {
            runtime_log_debug_once(std::string("no bfp16 prefill contract for ") + ggml_type_name(src0->type) +
                                   ": its integer contract serves prefill");
        } else if (resolve.has_kernel && choose_tile_n(*p, n_tokens, [&](const TileShape & t) { return resolve.has_kernel(matmul_key(*p, t)); }) == 0) {
            runtime_log_debug_once(std::string("the device has no ") + p->name + " kernel: " + c->name + " serves prefill");
        } else {
            c = p;
        }
    }
    // Only what the device has a kernel for (an NPU runs what its manifest installs); any token tile
    // serves any batch size, so one installed width is enough.
    const int tile_n = resolve.has_kernel
                           ? choose_tile_n(*c, n_tokens, [&](const TileShape & t) { return resolve.has_kernel(matmul_key(*c, t)); })
                           : choose_tile_n(*c, n_tokens);
    if (tile_n == 0) {
        why = std::string("no kernel for ") + c->name + " at any token tile";
        return false;
    }
    choice.contract = c;
    choice.tile_n = tile_n;
    return true;
}

}  // namespace

bool prefill_contracts_enabled() {
    static const bool on = [] {
        const OptionValue<std::string> o = prefill_option();
        if (!o.error.empty()) report_option_error(o.error);
        return o.value == "bfp16";
    }();
    return on;
}

bool matmul_supported(const ggml_tensor * dst, std::string & why) {
    const ggml_tensor * src0 = dst->src[0];
    const ggml_tensor * src1 = dst->src[1];
    if (!operands_supported(dst, why)) {
        return false;
    }
    if (src1->ne[2] % src0->ne[2] != 0 || src1->ne[3] % src0->ne[3] != 0) {
        why = "inconsistent shapes";
        return false;
    }
    return true;
}

bool choose_matmul(const ggml_tensor * dst, const TensorResolver & resolve, MatmulChoice & choice, std::string & why) {
    return no_packed_views(dst, resolve, why) && matmul_supported(dst, why) &&
           choose_kernel(dst, dst->src[1]->ne[1], resolve, choice, why);
}

bool choose_matmul_id(const ggml_tensor * dst, const TensorResolver & resolve, MatmulChoice & choice, std::string & why) {
    const ggml_tensor * src0 = dst->src[0];
    const ggml_tensor * src1 = dst->src[1];
    const ggml_tensor * ids = dst->src[2];
    if (ids == nullptr || ids->type != GGML_TYPE_I32 || ids->nb[0] != sizeof(int32_t)) {
        why = "expert ids must be contiguous I32 rows";
        return false;
    }
    // ggml_mul_mat_id's own shape rules, checked again: a graph built by hand may break them.
    if (src0->ne[3] != 1 || src1->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1 || ids->ne[1] != src1->ne[2] ||
        (src1->ne[1] != 1 && src1->ne[1] != ids->ne[0]) || dst->ne[0] != src0->ne[1] || dst->ne[1] != ids->ne[0] ||
        dst->ne[2] != ids->ne[1]) {
        why = "inconsistent MUL_MAT_ID shapes";
        return false;
    }
    // The token tile of a ubatch routed to one expert; each expert's group chooses again at run time.
    return no_packed_views(dst, resolve, why) && operands_supported(dst, why) &&
           choose_kernel(dst, src1->ne[2], resolve, choice, why);
}

bool plan_other_kind(const ggml_tensor * node, const TensorResolver & resolve, std::vector<Invocation> & out,
                     std::string & why) {
    why.clear();
    if (mul_fuses_rms_norm(node, resolve)) {
        return plan_rms_norm(node, resolve, out, why);  // the MUL stands for the pair
    }
    switch (op_kind(node)) {
        case OpKind::rms_norm: return plan_rms_norm(node, resolve, out, why);
        case OpKind::add: return plan_add(node, resolve, out, why);
        case OpKind::glu: return plan_glu(node, resolve, out, why);
        case OpKind::rope: return plan_rope(node, resolve, out, why);
        case OpKind::get_rows: return plan_get_rows(node, resolve, out, why);
        case OpKind::set_rows: return plan_set_rows(node, resolve, out, why);
        case OpKind::scale: return plan_scale(node, resolve, out, why);
        case OpKind::flash_attn: return plan_flash_attn(node, resolve, out, why);
        case OpKind::hadamard: return plan_hadamard(node, resolve, out, why);
        case OpKind::row_scale: return plan_row_scale(node, resolve, out, why);
        default: return false;
    }
}

bool op_supported(const ggml_tensor * op, const TensorResolver & resolve, std::string & why) {
    if (op_kind(op) == OpKind::add && mul_fuses_rms_norm(op, resolve)) {
        return true;  // planned with its norm (plan_other_kind)
    }
    switch (op_kind(op)) {
        case OpKind::noop:
            return true;
        case OpKind::matmul: {
            MatmulChoice choice;
            return choose_matmul(op, resolve, choice, why);
        }
        case OpKind::matmul_id: {
            MatmulChoice choice;
            return choose_matmul_id(op, resolve, choice, why);
        }
        case OpKind::rms_norm:
            if (resolve.has_kernel && !resolve.has_kernel(rms_norm_key(false, op->ne[0]))) {
                why = "the device has no rms_norm kernel";
                return false;
            }
            return rms_norm_supported(op, why);
        case OpKind::add:
            return add_supported(op, resolve, why);
        case OpKind::glu:
            return glu_supported(op, resolve, why);
        case OpKind::rope:
            return rope_supported(op, resolve, why);
        case OpKind::get_rows:
            return get_rows_supported(op, resolve, why);
        case OpKind::set_rows:
            return set_rows_supported(op, resolve, why);
        case OpKind::scale:
            return scale_supported(op, resolve, why);
        case OpKind::flash_attn:
            return flash_attn_supported(op, resolve, why);
        case OpKind::hadamard:
            return hadamard_supported(op, resolve, why);
        case OpKind::row_scale:
            return row_scale_supported(op, resolve, why);
        case OpKind::unsupported:
            break;
    }
    why = std::string("no NPU kernel for op ") + ggml_op_desc(op);
    return false;
}

}  // namespace xdna
