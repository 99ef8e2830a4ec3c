#include "activation-layout.h"

#include "cpu-traits.h"

#include <cstring>

namespace xdna {

ActivationLayout make_activation_layout(const MatmulContract & c, int64_t k, int64_t k_pad, int64_t n, int tile_n) {
    ActivationLayout L;
    L.act_type = c.act_type;
    L.k = k;
    L.k_pad = k_pad;
    L.n = n;
    L.tile_n = tile_n > 0 ? tile_n : choose_tile_n(c, n);
    L.n_pad = (n + L.tile_n - 1) / L.tile_n * L.tile_n;
    L.row_bytes = ggml_row_size(c.act_type, k_pad);
    L.total_bytes = L.row_bytes * L.n_pad;
    return L;
}

namespace {

// One row of src1 as floats; contiguous F32 rows are read in place by the caller instead.
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

}  // namespace

void quantize_activation_rows(const ggml_tensor * src1, int64_t i2, int64_t i3, const ActivationLayout & L,
                              int64_t r0, int64_t r1, void * dst, float * scratch) {
    const ggml_from_float_t from_float = cpu_traits(L.act_type)->from_float;
    auto * out = static_cast<char *>(dst);
    for (int64_t r = r0; r < r1; ++r) {
        char * out_row = out + r * L.row_bytes;
        if (r >= L.n) {
            std::memset(out_row, 0, L.row_bytes);
            continue;
        }
        const char * row = static_cast<const char *>(src1->data) + r * src1->nb[1] + i2 * src1->nb[2] + i3 * src1->nb[3];
        const float * x;
        if (src1->type == GGML_TYPE_F32 && src1->nb[0] == sizeof(float) && L.k == L.k_pad) {
            x = reinterpret_cast<const float *>(row);
        } else {
            load_row(src1, row, L.k, scratch);
            std::memset(scratch + L.k, 0, (L.k_pad - L.k) * sizeof(float));
            x = scratch;
        }
        from_float(x, out_row, L.k_pad);
    }
}

}  // namespace xdna
