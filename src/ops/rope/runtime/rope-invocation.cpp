#include "ops/rope/rope-invocation.h"

#include "ggml.h"

#include <cstdio>

namespace xdna {

std::string RopeParams::shape_label(const TileShape &) const {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%lld x %lld x %lld (%d, %s%s)", static_cast<long long>(n_tokens),
                  static_cast<long long>(n_heads), static_cast<long long>(ne0), angles.n_dims,
                  mode == RopeMode::neox ? "neox" : "norm", angles.has_freq_factors ? ", ff" : "");
    return buf;
}

KernelKey rope_key(RopeMode mode) {
    KernelKey k;
    k.kind = KernelKind::rope;
    k.design = kRopeDesign;
    k.variant = mode == RopeMode::neox ? kRopeNeoxVariant : kRopeNormVariant;
    k.tile = TileShape{0, 0, 0};
    return k;
}

namespace {

// The rows of a tokens x heads block: one run per row when the heads of a token follow each other
// without a gap and the tokens likewise, else one covering run per token.
Operand rows_operand(const char * role, BufferSlice s, const RopeParams & p, int64_t head_stride, int64_t token_stride,
                     Access access) {
    const uint64_t row = static_cast<uint64_t>(p.ne0) * sizeof(float);
    if (head_stride == p.ne0 && token_stride == head_stride * p.n_heads) {
        return {role, s, row, p.n_tokens * p.n_heads, row, access};
    }
    const uint64_t token_run = static_cast<uint64_t>(p.n_heads - 1) * head_stride * sizeof(float) + row;
    return {role, s, token_run, p.n_tokens, static_cast<uint64_t>(token_stride) * sizeof(float), access};
}

}  // namespace

Invocation to_invocation(const RopeInvocation & r) {
    Invocation inv;
    inv.key = rope_key(r.p.mode);
    inv.params = r.p;
    inv.add_operand(rows_operand("x", r.x, r.p, r.p.x_head_stride, r.p.x_token_stride, Access::read));
    const uint64_t pos_bytes = static_cast<uint64_t>(r.p.n_tokens) * sizeof(int32_t);
    inv.add_operand({"pos", r.pos, pos_bytes, 1, pos_bytes, Access::read});
    if (r.p.angles.has_freq_factors) {
        const uint64_t ff_bytes = static_cast<uint64_t>(r.p.angles.n_dims / 2) * sizeof(float);
        inv.add_operand({"freq_factors", r.freq_factors, ff_bytes, 1, ff_bytes, Access::read});
    }
    inv.add_operand(rows_operand("y", r.y, r.p, r.p.y_head_stride, r.p.y_token_stride, Access::write));
    return inv;
}

RopeInvocation rope_of(const Invocation & inv) {
    GGML_ASSERT(inv.kind() == KernelKind::rope);
    RopeInvocation r;
    r.p = std::get<RopeParams>(inv.params);
    r.x = inv.operand("x")->slice;
    r.pos = inv.operand("pos")->slice;
    if (const Operand * ff = inv.operand("freq_factors")) r.freq_factors = ff->slice;
    r.y = inv.operand("y")->slice;
    return r;
}

}  // namespace xdna
