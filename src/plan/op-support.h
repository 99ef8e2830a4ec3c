// Whether the XDNA device runs an op, and if not, why: the one predicate that supports_op
// (glue/xdna-registry.cpp), the backend (glue/xdna-backend.cpp) and the planner (plan/batch-plan.cpp)
// all ask, so what the device claims is exactly what it can plan and run.
#pragma once

#include "contracts/matmul-contract.h"
#include "runtime/device.h"

#include "ggml.h"

#include <functional>
#include <string>
#include <vector>

namespace xdna {

// How the planner reaches the device: the slice behind a tensor (null buffer if not device memory),
// whether a tensor is a weight packed at load, and which kernels the device has.
struct TensorResolver {
    std::function<BufferSlice(const ggml_tensor *)>                slice_of;
    std::function<bool(const ggml_tensor *)>                       is_packed;   // empty: nothing is
    std::function<bool(const KernelKey &)>                         has_kernel;  // empty: every kernel
    // Whether the kernel is built in a design layout (Device::has_kernel_in_layout); empty: every layout
    // of a kernel it has.
    std::function<bool(const KernelKey &, const std::string &)>    has_kernel_in_layout;

    // t is a weight packed at load, or a view into one: not in ggml's layout, so no op but the matmul
    // that owns it can read it.
    bool packed_or_view_of_packed(const ggml_tensor * t) const {
        return is_packed && (is_packed(t) || (t->view_src != nullptr && is_packed(t->view_src)));
    }
};

// Word i of an op's parameters as ggml.c's ggml_set_op_params wrote it (an int32 or a float's bits).
int32_t op_param_i32(const ggml_tensor * t, int i);
float   op_param_f32(const ggml_tensor * t, int i);

// What the backend does with a graph node.
enum class OpKind {
    noop,         // views and reshapes: nothing to compute
    matmul,       // MUL_MAT: runs on the device if choose_matmul() accepts it
    matmul_id,    // MUL_MAT_ID (mixture of experts): runs on the device if choose_matmul_id() accepts it
    rms_norm,     // RMS_NORM (GGML_XDNA_NPU_OPS=rms_norm|glue): on the device if rms_norm_supported() accepts
                  // it; a MUL by its weight right after it rides in the same invocation (ops/rms_norm)
    add,          // ADD (GGML_XDNA_NPU_OPS=glue): on the device if add_supported() accepts it (ops/add)
    glu,          // GLU (GGML_XDNA_NPU_OPS=glue): SwiGLU on the device if glu_supported() accepts it (ops/glu)
    rope,         // ROPE (GGML_XDNA_NPU_OPS=glue): on the device if rope_supported() accepts it (ops/rope)
    get_rows,     // GET_ROWS (GGML_XDNA_NPU_OPS=glue): on the device if get_rows_supported() accepts it (ops/get_rows)
    set_rows,     // SET_ROWS (GGML_XDNA_NPU_OPS=glue): on the device if set_rows_supported() accepts it (ops/set_rows)
    scale,        // SCALE (GGML_XDNA_NPU_OPS=glue): on the device if scale_supported() accepts it (ops/scale)
    flash_attn,   // FLASH_ATTN_EXT (GGML_XDNA_NPU_OPS=layer): on the device if flash_attn_supported() accepts it (ops/flash_attn)
    hadamard,     // a MUL_MAT by a Hadamard matrix (its hint; GGML_XDNA_NPU_OPS=glue) of a shape the design takes:
                  // on the device if hadamard_supported() accepts it (ops/hadamard); other shapes are `matmul`
    row_scale,    // a MUL by one value per row (GGML_XDNA_NPU_OPS=glue; MoE's expert outputs by their weights): on
                  // the device if row_scale_supported() accepts it (ops/row_scale)
    unsupported,  // everything else stays on the CPU
};
OpKind op_kind(const ggml_tensor * op);

// Whether GGML_XDNA_NPU_OPS (read once per process) offers `op` ("rms_norm", "add") to the NPU.
bool npu_op_offered(const char * op);

// GGML_XDNA_PREFILL=bfp16 (read once per process): batches of more than kDecodeTokens tokens with a
// weight type that has a prefill contract (matmul-contract.h) take it.
bool prefill_contracts_enabled();

// Whether the NPU can compute this MUL_MAT at all (types, strides, shapes); `why` says why not.
bool matmul_supported(const ggml_tensor * dst, std::string & why);

// How a MUL_MAT the device accepts runs: its contract and token-tile width.
struct MatmulChoice {
    const MatmulContract * contract = nullptr;
    int                    tile_n = 0;
};

// The decision for one MUL_MAT: neither operand is (a view into) a weight packed at load, except src0
// as a whole; matmul_supported() holds; and the device has a kernel for the contract at some token tile
// (any tile serves any batch size: an invocation loops over token tiles). False with `why` otherwise.
bool choose_matmul(const ggml_tensor * dst, const TensorResolver & resolve, MatmulChoice & choice, std::string & why);

// The decision for one MUL_MAT_ID (dst[:, e, t] = src0[:, :, ids[e, t]] x src1[:, e % src1->ne[1], t]):
// ids is I32, the weights are one stack of experts (ne[3] == 1) that the same conditions as MUL_MAT
// accept, and the device has a kernel for the contract at some token tile. Each selected expert then
// runs as one matmul invocation of that contract over its own slice of the stack (expert-plan.h).
// `choice.tile_n` is the tile the whole ubatch would take; each expert's group of tokens chooses its own.
bool choose_matmul_id(const ggml_tensor * dst, const TensorResolver & resolve, MatmulChoice & choice, std::string & why);

// A node the backend runs as an op of another kind than matmul (its folder in src/ops/): RMS_NORM, the MUL
// fused after an RMS_NORM (the node that stands for the pair), ADD. True with its invocations appended
// to `out`; false with `why` empty for a node of no such kind, with `why` set when the op refuses it.
bool plan_other_kind(const ggml_tensor * node, const TensorResolver & resolve, std::vector<Invocation> & out,
                     std::string & why);

// The decision for any op: no-ops yes, MUL_MAT per choose_matmul(), MUL_MAT_ID per choose_matmul_id(),
// RMS_NORM when offered to the NPU and the device has its kernel, everything else no.
bool op_supported(const ggml_tensor * op, const TensorResolver & resolve, std::string & why);

}  // namespace xdna
