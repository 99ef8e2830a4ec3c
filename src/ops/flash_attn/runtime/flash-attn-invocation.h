// The flash_attn kind (FLASH_ATTN_EXT with an F16 or Q8_0 KV cache) as its planner builds it and its engines read it.
#pragma once

#include "runtime/invocation.h"

namespace xdna {

// The flash_attn design (aie/flash_attn) and its programs, one per KV cache type and way of taking the
// products: emulated fp32 multiplies (fa_block_f16, fa_block_q8_0) or the bfp16 matrix unit
// (fa_block_f16_bfp16, fa_block_q8_0_bfp16). Its data movement: aie/flash_attn/dataflow.json, built by flash-attn-sequence.h.
inline constexpr const char * kFlashAttnDesign = "flash_attn";
inline constexpr const char * kFlashAttnVariant = "fa_block_f16";
inline constexpr const char * kFlashAttnBfp16Variant = "fa_block_f16_bfp16";
inline constexpr const char * kFlashAttnQ8Variant = "fa_block_q8_0";
inline constexpr const char * kFlashAttnQ8Bfp16Variant = "fa_block_q8_0_bfp16";

struct FlashAttnInvocation {
    BufferSlice     q, k, v, mask, out;  // mask: unset unless p.has_mask
    BufferSlice     mask_source;         // unset unless p.mask_source (the host reads it; the design moves none of it)
    FlashAttnParams p;
    const char *    variant = kFlashAttnBfp16Variant;  // the program (its key's variant)
};

// The program for the products (bfp16 or fp32: GGML_XDNA_FA_PRODUCTS) on a KV cache of Q8_0 or F16.
const char * flash_attn_variant(bool bfp16, bool kv_q8_0);
// `variant`: one of the four above (anything else: kFlashAttnVariant); `head_dim` the tile (one xclbin per
// KV cache type and head dim: the key of an installed kernel names both).
KernelKey flash_attn_key(const char * variant, int64_t head_dim = 0);
bool      flash_attn_bfp16(const KernelKey & key);  // a bfp16 program
bool      flash_attn_q8_0(const KernelKey & key);   // a program for Q8_0 K/V rows
bool      flash_attn_bfp16(const FlashAttnInvocation & f);
bool      flash_attn_q8_0(const FlashAttnInvocation & f);

// Its operands: q, k, v (and the mask) read, each as the whole span its strides reach; out written; the
// mask's source ("mask_source", read by the host when it builds the stream, moved by no BD: 0 bytes moved).
Invocation to_invocation(const FlashAttnInvocation & f);
FlashAttnInvocation flash_attn_of(const Invocation & inv);

// ALiBi's slope of head h (1 without max_bias), as ggml's CPU backend computes it.
float flash_attn_slope(const FlashAttnParams & p, int64_t h);

}  // namespace xdna
