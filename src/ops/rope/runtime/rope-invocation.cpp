#include "ops/rope/rope-invocation.h"

#include "ops/rope/rope-table.h"
#include "runtime/design-registry.h"

#include "ggml.h"

#include <cstdio>
#include <cstring>

namespace xdna {

std::string RopeParams::shape_label(const TileShape &) const {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%lld x %lld x %lld (%d, %s%s)", static_cast<long long>(n_tokens),
                  static_cast<long long>(n_heads), static_cast<long long>(ne0), angles.n_dims,
                  mode == RopeMode::neox ? "neox" : "norm", angles.has_freq_factors ? ", ff" : "");
    return buf;
}

KernelKey rope_key(RopeMode mode, int tile) {
    KernelKey k;
    k.kind = KernelKind::rope;
    k.design = kRopeDesign;
    k.variant = mode == RopeMode::neox ? kRopeNeoxVariant : kRopeNormVariant;
    k.tile = TileShape{0, tile, 0};
    return k;
}

const DesignRead & rope_design() {
    return built_in_design(kRopeDesign);
}

bool rope_row_has_xclbin(int64_t ne0) {
    // Both families have xclbins at the same row lengths.
    const DesignRead & d = rope_design();
    return d.ok() && ne0 > 0 && ne0 <= (int64_t(1) << 20) && d.design.kernel_stack("norm", static_cast<int>(ne0)) != nullptr;
}

std::vector<std::pair<std::string, uint32_t>> RopeParams::runtime_words() const {
    return {{"n_dims", static_cast<uint32_t>(angles.n_dims)}};
}

size_t rope_angle_bytes(const Invocation & inv) {
    const RopeParams & p = std::get<RopeParams>(inv.params);
    return static_cast<size_t>(p.n_tokens * p.ne0) * sizeof(float);
}

bool rope_angle_rows(const Invocation & inv, void * out, std::string & err) {
    const RopeInvocation r = rope_of(inv);
    const float * ff = r.p.angles.has_freq_factors ? static_cast<const float *>(r.freq_factors.host()) : nullptr;
    const std::shared_ptr<RopeAngleTable> table = rope_angle_table(r.p.angles, ff);
    const auto * pos = static_cast<const int32_t *>(r.pos.host());
    const size_t row_bytes = static_cast<size_t>(r.p.ne0) * sizeof(float), angle_bytes = static_cast<size_t>(r.p.angles.n_dims) * sizeof(float);
    auto * dst = static_cast<uint8_t *>(out);
    for (int64_t t = 0; t < r.p.n_tokens; ++t, dst += row_bytes) {
        const float * row = table->row(pos[t]);
        if (row == nullptr) {
            err = "position " + std::to_string(pos[t]) + " is outside the angle table [0, " + std::to_string(kRopeMaxPosition) + ")";
            return false;
        }
        std::memcpy(dst, row, angle_bytes);
        std::memset(dst + angle_bytes, 0, row_bytes - angle_bytes);  // the padding to the head row's length
    }
    return true;
}

bool RopeParams::host_operand(const Invocation & inv, const std::string & name, std::vector<uint8_t> & out, std::string & err) const {
    if (name != "cs") {
        err = "a rope invocation has no operand '" + name + "' the host writes (its angle rows are cs)";
        return false;
    }
    out.resize(rope_angle_bytes(inv));
    return rope_angle_rows(inv, out.data(), err);
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
    inv.key = rope_key(r.p.mode, rope_row_has_xclbin(r.p.ne0) ? static_cast<int>(r.p.ne0) : 0);
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
