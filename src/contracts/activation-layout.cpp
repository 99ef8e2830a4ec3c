#include "contracts/activation-layout.h"

#include "contracts/bfp16-codec.h"
#include "contracts/tile-codec.h"

#include <algorithm>
#include <cstring>

namespace xdna {

size_t activation_object_bytes(const MatmulContract & c, int tile_n) {
    if (c.act_format == ActFormat::bfp16) {
        return static_cast<size_t>(xdna_aie::BlockActTileFormat{tile_n, c.tile_k / act_k_parts(c, tile_n)}.tile_bytes());
    }
    const int block = act_format_block(c.act_format);
    if (block > 0) {
        return static_cast<size_t>(xdna_aie::ActTileFormat{tile_n, c.tile_k, block}.tile_bytes());
    }
    return static_cast<size_t>(xdna_aie::FloatActTileFormat{tile_n, c.tile_k, c.act_format == ActFormat::f32 ? 4 : 2}.tile_bytes());
}

size_t activation_tile_bytes(const MatmulContract & c, int tile_n) {
    return activation_object_bytes(c, tile_n) * static_cast<size_t>(act_k_parts(c, tile_n));
}

ActivationLayout make_activation_layout(const MatmulContract & c, int64_t k, int64_t k_pad, int64_t n, int tile_n) {
    ActivationLayout L;
    L.format = c.act_format;
    L.k = k;
    L.k_pad = k_pad;
    L.n = n;
    L.tile_n = tile_n > 0 ? tile_n : choose_tile_n(c, n);
    L.k_parts = act_k_parts(c, L.tile_n);
    L.tile_k = c.tile_k / L.k_parts;
    L.n_pad = (n + L.tile_n - 1) / L.tile_n * L.tile_n;
    L.n_tiles = L.n_pad / L.tile_n;
    L.k_tiles = k_pad / L.tile_k;
    L.tile_bytes = activation_object_bytes(c, L.tile_n);
    L.total_bytes = L.tile_bytes * L.n_tiles * L.k_tiles;
    return L;
}

namespace {

// One row of src1 as floats.
void load_row(const ggml_tensor * t, const char * row, int64_t k, float * out) {
    const size_t nb0 = t->nb[0];
    switch (t->type) {
        case GGML_TYPE_F32:
            for (int64_t i = 0; i < k; ++i) {
                out[i] = *reinterpret_cast<const float *>(row + i * nb0);
            }
            break;
        case GGML_TYPE_F16:
            for (int64_t i = 0; i < k; ++i) {
                out[i] = ggml_fp16_to_fp32(*reinterpret_cast<const ggml_fp16_t *>(row + i * nb0));
            }
            break;
        case GGML_TYPE_BF16:
            for (int64_t i = 0; i < k; ++i) {
                out[i] = ggml_bf16_to_fp32(*reinterpret_cast<const ggml_bf16_t *>(row + i * nb0));
            }
            break;
        default:
            GGML_ABORT("xdna: activation type %s not supported", ggml_type_name(t->type));
    }
}

// One token's K values of one K tile as bfp16 blocks (values beyond valid_k are 0), and the token's
// flag byte: 1 when a value is a NaN or an infinity (the kernel then makes the token's outputs NaN), else
// 0. False for such a token. The flag bytes of a tile are the tokens' own, so rows quantized in parallel
// never share one.
bool store_bfp16_token(const float * x, int valid_k, int t, const ActivationLayout & L, uint8_t * tile) {
    const xdna_aie::BlockActTileFormat f{L.tile_n, L.tile_k};
    bool finite = true;
    for (int kb = 0; kb < L.tile_k / xdna_aie::kBfp16Block; ++kb) {
        float v[xdna_aie::kBfp16Block] = {};
        for (int i = 0; i < xdna_aie::kBfp16Block; ++i) {
            const int k = kb * xdna_aie::kBfp16Block + i;
            if (x != nullptr && k < valid_k) v[i] = x[k];
        }
        finite &= bfp16_encode_block(v, tile + f.block_offset(t, kb));
    }
    tile[f.flags_offset() + t] = finite ? 0 : 1;
    if (t == 0) {  // the plane's alignment padding, zero as the NPU quantizer leaves it (token 0 writes no other's flag)
        std::memset(tile + f.flags_offset() + L.tile_n, 0, static_cast<size_t>(f.tile_bytes() - f.flags_offset() - L.tile_n));
    }
    return finite;
}

FloatAct float_kind(ActFormat f) {
    return f == ActFormat::f16 ? FloatAct::f16 : f == ActFormat::bf16 ? FloatAct::bf16 : FloatAct::f32;
}

}  // namespace

bool quantize_activation_row(const ggml_tensor * src1, const void * row, const ActivationLayout & L, int64_t r, void * dst,
                             float * scratch) {
    auto * out = static_cast<uint8_t *>(dst);
    const int64_t nt = r / L.tile_n;
    const int t = static_cast<int>(r % L.tile_n);
    const float * x = nullptr;
    if (row != nullptr) {
        if (src1->type == GGML_TYPE_F32 && src1->nb[0] == sizeof(float)) {
            x = static_cast<const float *>(row);
        } else {
            load_row(src1, static_cast<const char *>(row), L.k, scratch);
            x = scratch;
        }
    }
    bool finite = true;
    for (int64_t kt = 0; kt < L.k_tiles; ++kt) {
        uint8_t * tile = out + L.tile_offset(nt, kt);
        const int64_t k0 = kt * L.tile_k;
        const int valid_k = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(L.tile_k, L.k - k0)));
        const float * xk = (x != nullptr && valid_k > 0) ? x + k0 : nullptr;
        if (L.format == ActFormat::bfp16) {
            finite &= store_bfp16_token(xk, valid_k, t, L, tile);
        } else if (L.quantized()) {
            const xdna_aie::ActTileFormat f = L.quant_tile();
            if (t == 0) {
                clear_activation_tile_padding(f, tile);
            }
            quantize_activation_token(xk, valid_k, t, f, tile);
        } else {
            store_float_activation_token(xk, valid_k, t, float_kind(L.format), L.float_tile(), tile);
        }
    }
    return finite;
}

bool quantize_activation_rows(const ggml_tensor * src1, int64_t i2, int64_t i3, const ActivationLayout & L,
                              int64_t r0, int64_t r1, void * dst, float * scratch, std::vector<int64_t> * non_finite) {
    bool finite = true;
    for (int64_t r = r0; r < r1; ++r) {
        const char * row = r < L.n ? static_cast<const char *>(src1->data) + r * src1->nb[1] + i2 * src1->nb[2] + i3 * src1->nb[3]
                                   : nullptr;
        if (!quantize_activation_row(src1, row, L, r, dst, scratch)) {
            finite = false;
            if (non_finite != nullptr) non_finite->push_back(r);
        }
    }
    return finite;
}

}  // namespace xdna
