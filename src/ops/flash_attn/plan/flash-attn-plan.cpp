#include "ops/flash_attn/flash-attn-plan.h"

#include "xdna_aie/flash_attn_tiles.h"

#include "ops/flash_attn/flash-attn-sequence.h"
#include "runtime/design-registry.h"
#include "runtime/options.h"
#include "runtime/runtime-log.h"

#include <cstring>

namespace xdna {

namespace {

// The products GGML_XDNA_FA_PRODUCTS chooses (bfp16 unless it says fp32; a bad value is reported by the
// option check and takes the default).
bool products_bfp16() {
    const OptionValue<std::string> o = fa_products_option();
    return !(o.set && o.value == "fp32");
}

bool strides_of(const ggml_tensor * t, size_t elem) {
    return t->nb[0] == elem && t->nb[1] % elem == 0 && t->nb[2] % elem == 0 && t->nb[3] % elem == 0;
}

// K or V rows: F16 values, or Q8_0 blocks whose rows and heads start on 32-bit words (the shim's BDs
// address words: a Q8_0 row is not a whole number of them unless its head dim is a multiple of 64).
bool kv_strides(const ggml_tensor * t) {
    if (t->type == GGML_TYPE_F16) return strides_of(t, 2);
    return t->nb[0] == ggml_type_size(GGML_TYPE_Q8_0) && t->nb[1] % 4 == 0 && t->nb[2] % 4 == 0 && t->nb[3] % 4 == 0;
}

// The invocation's parameters from the op's tensors (ggml's layouts, strides in bytes).
FlashAttnParams params_of(const ggml_tensor * fa) {
    const ggml_tensor * q = fa->src[0];
    const ggml_tensor * k = fa->src[1];
    const ggml_tensor * v = fa->src[2];
    const ggml_tensor * mask = fa->src[3];
    FlashAttnParams p;
    p.kv_q8_0 = k->type == GGML_TYPE_Q8_0;
    p.d = q->ne[0];
    p.n_tokens = q->ne[1];
    p.n_head = q->ne[2];
    p.n_seq = q->ne[3];
    p.n_kv = k->ne[1];
    p.n_head_kv = k->ne[2];
    p.n_seq_kv = k->ne[3];
    for (int i = 0; i < 4; ++i) {
        p.q_nb[i] = static_cast<int64_t>(q->nb[i]);
        p.k_nb[i] = static_cast<int64_t>(k->nb[i]);
        p.v_nb[i] = static_cast<int64_t>(v->nb[i]);
        p.out_nb[i] = static_cast<int64_t>(fa->nb[i]);
    }
    p.has_mask = mask != nullptr;
    if (mask != nullptr) {
        p.mask_heads = mask->ne[2];
        p.mask_seqs = mask->ne[3];
        for (int i = 0; i < 4; ++i) p.mask_nb[i] = static_cast<int64_t>(mask->nb[i]);
    }
    p.scale = op_param_f32(fa, 0);
    p.max_bias = op_param_f32(fa, 1);
    return p;
}

bool same_shape(const ggml_tensor * a, const ggml_tensor * b) {
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        if (a->ne[i] != b->ne[i]) return false;
    }
    return true;
}

}  // namespace

const ggml_tensor * flash_attn_mask_source(const ggml_tensor * fa, bool & f32) {
    f32 = false;
    const ggml_tensor * mask = fa->src[3];
    if (mask == nullptr || mask->type != GGML_TYPE_F16) return nullptr;
    // A leaf: no op of the graph writes it, so its values are the ones set before the graph runs.
    if (mask->op == GGML_OP_NONE && mask->view_src == nullptr) return mask;
    const ggml_tensor * src = mask->src[0];
    if (mask->op == GGML_OP_CPY && src != nullptr && src->type == GGML_TYPE_F32 && src->op == GGML_OP_NONE && src->view_src == nullptr &&
        same_shape(src, mask) && src->nb[0] == sizeof(float)) {
        f32 = true;
        return src;
    }
    return nullptr;
}

bool flash_attn_supported(const ggml_tensor * fa, const TensorResolver & resolve, std::string & why) {
    const ggml_tensor * q = fa->src[0];
    const ggml_tensor * k = fa->src[1];
    const ggml_tensor * v = fa->src[2];
    const ggml_tensor * mask = fa->src[3];
    if (fa->op != GGML_OP_FLASH_ATTN_EXT || q == nullptr || k == nullptr || v == nullptr) {
        why = "FLASH_ATTN_EXT without q, k and v";
        return false;
    }
    const bool kv_q8_0 = k->type == GGML_TYPE_Q8_0;
    if (q->type != GGML_TYPE_F32 || (k->type != GGML_TYPE_F16 && !kv_q8_0) || v->type != k->type || fa->type != GGML_TYPE_F32) {
        why = std::string("FLASH_ATTN_EXT on the NPU takes F32 q and a KV cache of F16 or Q8_0, K and V alike (here q ") +
              ggml_type_name(q->type) + ", k " + ggml_type_name(k->type) + ", v " + ggml_type_name(v->type) + ")";
        return false;
    }
    const int64_t d = q->ne[0];
    if (k->ne[0] != d || v->ne[0] != d || !xdna_aie::fa_head_fits(static_cast<int>(d))) {
        why = "FLASH_ATTN_EXT head dims " + std::to_string(k->ne[0]) + "/" + std::to_string(v->ne[0]) +
              " (the NPU takes equal K and V head dims of 32, 64 or 128)";
        return false;
    }
    if (kv_q8_0 && !xdna_aie::fa_q8_0_head_fits(static_cast<int>(d))) {
        why = "FLASH_ATTN_EXT with a Q8_0 KV cache and head dim " + std::to_string(d) +
              " (the NPU takes 64 or 128: a head's 34-byte blocks must start on a 32-bit word for the shim's DMA)";
        return false;
    }
    if (op_param_f32(fa, 2) != 0.0f) {
        why = "FLASH_ATTN_EXT with logit softcapping (no tanh on the NPU yet)";
        return false;
    }
    if (fa->src[4] != nullptr) {
        why = "FLASH_ATTN_EXT with attention sinks";
        return false;
    }
    if (v->ne[1] != k->ne[1] || v->ne[2] != k->ne[2] || v->ne[3] != k->ne[3] || k->ne[1] < 1 || k->ne[2] < 1 ||
        q->ne[2] % k->ne[2] != 0 || q->ne[3] % k->ne[3] != 0) {
        why = "FLASH_ATTN_EXT: K and V of one shape, whole GQA and sequence ratios";
        return false;
    }
    if (!strides_of(q, sizeof(float)) || !kv_strides(k) || !kv_strides(v) || !strides_of(fa, sizeof(float)) ||
        fa->ne[0] != d || fa->ne[1] != q->ne[2] || fa->ne[2] != q->ne[1] || fa->ne[3] != q->ne[3]) {
        why = "FLASH_ATTN_EXT: rows of contiguous values (Q8_0 rows at 32-bit word offsets), the output as ggml lays it out";
        return false;
    }
    if (mask != nullptr && (mask->type != GGML_TYPE_F16 || !strides_of(mask, 2) || mask->ne[0] < k->ne[1] ||
                            mask->ne[1] < q->ne[1] || q->ne[2] % mask->ne[2] != 0 || q->ne[3] % mask->ne[3] != 0)) {
        why = "FLASH_ATTN_EXT mask: F16, a row per query of at least n_kv values, broadcast by whole ratios";
        return false;
    }
    for (const ggml_tensor * t : {q, k, v, mask}) {
        if (t != nullptr && resolve.packed_or_view_of_packed(t)) {
            why = "FLASH_ATTN_EXT of a packed weight";
            return false;
        }
    }
    if (resolve.has_kernel && !resolve.has_kernel(flash_attn_key(flash_attn_variant(products_bfp16(), kv_q8_0), d))) {
        why = std::string("the device has no flash_attn kernel ") + flash_attn_variant(products_bfp16(), kv_q8_0);
        return false;
    }
    // What the design's data movement takes (its description's rules, which the stream builder applies):
    // a mask per head, or mask rows of an odd number of halves (a BD steps whole words), go to the host
    // path here, not to a submission an NPU would refuse. The kernels mode could run them; the NPU cannot.
    const DesignRead & design = built_in_design(kFlashAttnDesign);
    std::string err;
    const AttentionShape shape = attention_shape(params_of(fa), flash_attn_variant(products_bfp16(), kv_q8_0));
    if (!design.ok() || !attention_shape_fits(design.design, shape, err)) {
        why = "FLASH_ATTN_EXT: " + (design.ok() ? err : design.error);
        return false;
    }
    // Each xclbin moves the objects of one layout: the device must have one of a layout that holds the
    // shape's tasks (a manifest of decode xclbins alone holds no task of two tokens).
    if (resolve.has_kernel_in_layout) {
        const KernelKey key = flash_attn_key(flash_attn_variant(products_bfp16(), kv_q8_0), d);
        std::string     holding;
        for (const LayoutDesc * L : attention_layouts_holding(design.design, shape)) {
            if (resolve.has_kernel_in_layout(key, L->name)) {
                return true;
            }
            holding += (holding.empty() ? "" : ", ") + L->name;
        }
        why = "FLASH_ATTN_EXT: the device has no flash_attn kernel of a layout holding tasks of " +
              std::to_string(attention_task_tokens(design.design, shape)) + " tokens (" +
              (holding.empty() ? std::string("no layout holds them") : "layouts that do: " + holding) + ")";
        return false;
    }
    return true;
}

bool plan_flash_attn(const ggml_tensor * fa, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why) {
    if (!flash_attn_supported(fa, resolve, why)) {
        return false;
    }
    const ggml_tensor * q = fa->src[0];
    const ggml_tensor * k = fa->src[1];
    const ggml_tensor * v = fa->src[2];
    const ggml_tensor * mask = fa->src[3];
    FlashAttnInvocation f;
    f.p = params_of(fa);
    f.variant = flash_attn_variant(products_bfp16(), f.p.kv_q8_0);
    f.q = resolve.slice_of(q);
    f.k = resolve.slice_of(k);
    f.v = resolve.slice_of(v);
    f.out = resolve.slice_of(fa);
    if (mask != nullptr) {
        f.mask = resolve.slice_of(mask);
        bool f32 = false;
        const ggml_tensor * src = flash_attn_mask_source(fa, f32);
        const BufferSlice at = src != nullptr ? resolve.slice_of(src) : BufferSlice{};
        // A source outside device memory (a mask left in a host buffer): every block is moved.
        if (at.buffer != nullptr && src->nb[1] % src->nb[0] == 0) {
            f.mask_source = at;
            f.p.mask_source = f32 ? FlashAttnParams::MaskSource::f32 : FlashAttnParams::MaskSource::f16;
            for (int i = 0; i < 4; ++i) f.p.mask_source_nb[i] = static_cast<int64_t>(src->nb[i]);
            runtime_log_debug_once(std::string("FLASH_ATTN_EXT: the mask's hidden blocks read from ") +
                                   (f32 ? "the F32 mask it is cast from" : "the F16 mask") + " when each stream is built");
        } else {
            runtime_log_debug_once("FLASH_ATTN_EXT: every block moved (the mask is neither a leaf of the graph nor cast from an F32 one in "
                                   "device memory, so its values are not there when the stream is built)");
        }
    }
    if (f.q.buffer == nullptr || f.k.buffer == nullptr || f.v.buffer == nullptr || f.out.buffer == nullptr ||
        (mask != nullptr && f.mask.buffer == nullptr)) {
        why = "FLASH_ATTN_EXT operand not in device memory";
        return false;
    }
    if (k->type == GGML_TYPE_Q8_0 && (f.k.offset % 4 != 0 || f.v.offset % 4 != 0)) {
        why = "FLASH_ATTN_EXT: a Q8_0 K or V view that does not start on a 32-bit word";
        return false;
    }
    out.push_back(to_invocation(f));
    return true;
}

}  // namespace xdna
