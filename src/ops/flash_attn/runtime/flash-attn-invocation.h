// The flash_attn kind (FLASH_ATTN_EXT with an F16 KV cache) as its planner builds it and its engines read it.
#pragma once

#include "runtime/invocation.h"

namespace xdna {

// The flash_attn design (aie/flash_attn) and its two programs: the products as emulated fp32 multiplies
// (fa_block_f16) or on the bfp16 matrix unit (fa_block_f16_bfp16). No dataflow.json yet (its README says why).
inline constexpr const char * kFlashAttnDesign = "flash_attn";
inline constexpr const char * kFlashAttnVariant = "fa_block_f16";
inline constexpr const char * kFlashAttnBfp16Variant = "fa_block_f16_bfp16";

struct FlashAttnInvocation {
    BufferSlice     q, k, v, mask, out;  // mask: unset unless p.has_mask
    FlashAttnParams p;
    const char *    variant = kFlashAttnBfp16Variant;  // the program (its key's variant)
};

// `variant`: kFlashAttnVariant or kFlashAttnBfp16Variant; the planner's choice follows GGML_XDNA_FA_PRODUCTS.
KernelKey flash_attn_key(const char * variant);
bool      flash_attn_bfp16(const KernelKey & key);  // the bfp16 program
inline bool flash_attn_bfp16(const FlashAttnInvocation & f) { return f.variant == kFlashAttnBfp16Variant; }

// Its operands: q, k, v (and the mask) read, each as the whole span its strides reach; out written.
Invocation to_invocation(const FlashAttnInvocation & f);
FlashAttnInvocation flash_attn_of(const Invocation & inv);

// ALiBi's slope of head h (1 without max_bias), as ggml's CPU backend computes it.
float flash_attn_slope(const FlashAttnParams & p, int64_t h);

}  // namespace xdna
