#include "ops/flash_attn/flash-attn-invocation.h"

#include "ops/flash_attn/flash-attn-sequence.h"
#include "runtime/design-registry.h"

#include "ggml.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace xdna {

std::string FlashAttnParams::shape_label(const TileShape &) const {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%lld x %lld/%lld x %lld x %lld%s", static_cast<long long>(n_tokens * n_seq),
                  static_cast<long long>(n_head), static_cast<long long>(n_head_kv), static_cast<long long>(n_kv),
                  static_cast<long long>(d), has_mask ? " (mask)" : "");
    return buf;
}

namespace {

const char * const kVariants[] = {kFlashAttnVariant, kFlashAttnBfp16Variant, kFlashAttnQ8Variant, kFlashAttnQ8Bfp16Variant};

// The design's own string for `variant` (its programs are compared by name), kFlashAttnVariant if none.
const char * canonical(const char * variant) {
    for (const char * v : kVariants) {
        if (variant != nullptr && std::strcmp(variant, v) == 0) return v;
    }
    return kFlashAttnVariant;
}

bool named(const char * variant, const char * a, const char * b) {
    return variant != nullptr && (std::strcmp(variant, a) == 0 || std::strcmp(variant, b) == 0);
}

}  // namespace

const char * flash_attn_variant(bool bfp16, bool kv_q8_0) {
    if (kv_q8_0) return bfp16 ? kFlashAttnQ8Bfp16Variant : kFlashAttnQ8Variant;
    return bfp16 ? kFlashAttnBfp16Variant : kFlashAttnVariant;
}

KernelKey flash_attn_key(const char * variant, int64_t head_dim) {
    KernelKey k;
    k.kind = KernelKind::flash_attn;
    k.design = kFlashAttnDesign;
    k.variant = canonical(variant);
    k.tile = TileShape{0, static_cast<int>(head_dim), 0};
    return k;
}

bool flash_attn_bfp16(const KernelKey & key) { return named(key.variant, kFlashAttnBfp16Variant, kFlashAttnQ8Bfp16Variant); }
bool flash_attn_q8_0(const KernelKey & key) { return named(key.variant, kFlashAttnQ8Variant, kFlashAttnQ8Bfp16Variant); }
bool flash_attn_bfp16(const FlashAttnInvocation & f) { return named(f.variant, kFlashAttnBfp16Variant, kFlashAttnQ8Bfp16Variant); }
bool flash_attn_q8_0(const FlashAttnInvocation & f) { return named(f.variant, kFlashAttnQ8Variant, kFlashAttnQ8Bfp16Variant); }

namespace {

// The bytes from a view's first element to just past its last: ne[i] - 1 steps of nb[i] in each dim.
uint64_t span(const int64_t ne[4], const int64_t nb[4], uint64_t elem) {
    uint64_t s = elem;
    for (int i = 0; i < 4; ++i) s += static_cast<uint64_t>(ne[i] - 1) * static_cast<uint64_t>(nb[i]);
    return s;
}

Operand whole(const char * role, BufferSlice s, uint64_t bytes, Access access) { return {role, s, bytes, 1, bytes, access}; }

}  // namespace

Invocation to_invocation(const FlashAttnInvocation & f) {
    const FlashAttnParams & p = f.p;
    Invocation inv;
    inv.key = flash_attn_key(f.variant, p.d);
    inv.params = p;
    const int64_t q_ne[4] = {p.d, p.n_tokens, p.n_head, p.n_seq};
    const int64_t kv_ne[4] = {1, p.n_kv, p.n_head_kv, p.n_seq_kv};  // a row's bytes as one element: Q8_0 rows are blocks
    const int64_t out_ne[4] = {p.d, p.n_head, p.n_tokens, p.n_seq};
    inv.add_operand(whole("q", f.q, span(q_ne, p.q_nb, sizeof(float)), Access::read));
    inv.add_operand(whole("k", f.k, span(kv_ne, p.k_nb, static_cast<uint64_t>(p.kv_row_bytes())), Access::read));
    inv.add_operand(whole("v", f.v, span(kv_ne, p.v_nb, static_cast<uint64_t>(p.kv_row_bytes())), Access::read));
    if (p.has_mask) {
        const int64_t mask_ne[4] = {p.n_kv, p.n_tokens, p.mask_heads, p.mask_seqs};
        inv.add_operand(whole("mask", f.mask, span(mask_ne, p.mask_nb, 2), Access::read));
    }
    inv.add_operand(whole("out", f.out, span(out_ne, p.out_nb, sizeof(float)), Access::write));
    if (p.has_mask && p.mask_source != FlashAttnParams::MaskSource::none) {
        const int64_t mask_ne[4] = {p.n_kv, p.n_tokens, p.mask_heads, p.mask_seqs};
        Operand o = whole("mask_source", f.mask_source,
                          span(mask_ne, p.mask_source_nb, p.mask_source == FlashAttnParams::MaskSource::f32 ? 4 : 2), Access::read);
        o.rows_moved = 0;  // read by the host at submission, no byte of it by the design
        inv.add_operand(o);
    }
    return inv;
}

FlashAttnInvocation flash_attn_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::flash_attn);
    FlashAttnInvocation f;
    f.p = std::get<FlashAttnParams>(inv.params);
    f.variant = canonical(inv.key.variant);
    f.q = inv.operand("q")->slice;
    f.k = inv.operand("k")->slice;
    f.v = inv.operand("v")->slice;
    if (const Operand * m = inv.operand("mask")) f.mask = m->slice;
    if (const Operand * m = inv.operand("mask_source")) f.mask_source = m->slice;
    f.out = inv.operand("out")->slice;
    return f;
}

bool FlashAttnParams::host_operand(const Invocation & inv, const std::string & name, std::vector<uint8_t> & out, std::string & err) const {
    if (name != "slopes") {
        err = "a flash_attn invocation has no operand '" + name + "' the host writes (its slopes are 'slopes')";
        return false;
    }
    const DesignRead & design = built_in_design(kFlashAttnDesign);
    AttentionSlopesLayout L;
    if (!design.ok() || !attention_slopes_layout(design.design, flash_attn_q8_0(inv.key) ? "q8_0" : "f16", d, n_head, n_head_kv, L, err)) {
        if (!design.ok()) err = design.error;
        return false;
    }
    out.assign(L.bytes, 0);  // the zero region included
    const int64_t ratio = n_head / n_head_kv;
    auto * table = reinterpret_cast<float *>(out.data());
    for (int64_t g = 0; g < n_head_kv; ++g) {
        for (int64_t i = 0; i < L.per_kv_head; ++i) table[g * L.per_kv_head + i] = flash_attn_slope(*this, g * ratio + i % ratio);
    }
    return true;
}

float flash_attn_slope(const FlashAttnParams & p, int64_t h) {
    if (!(p.max_bias > 0.0f)) return 1.0f;
    // ggml-cpu/ops.cpp: n_head_log2 = 2^floor(log2(n_head)), m0 and m1, then powf per head.
    const uint32_t n_head_log2 = 1u << static_cast<uint32_t>(std::floor(std::log2(static_cast<double>(p.n_head))));
    const float m0 = powf(2.0f, -(p.max_bias) / n_head_log2);
    const float m1 = powf(2.0f, -(p.max_bias / 2.0f) / n_head_log2);
    const uint32_t hh = static_cast<uint32_t>(h);
    return hh < n_head_log2 ? powf(m0, hh + 1) : powf(m1, 2 * (hh - n_head_log2) + 1);
}

}  // namespace xdna
