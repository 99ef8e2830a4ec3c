#include "invocation-shape.h"

#include "activation-layout.h"
#include "weight-layout.h"

namespace xdna_bench {

xdna::MatmulInvocation invocation_shape(ggml_type type, int64_t m, int64_t k, int64_t n, bool & ok) {
    xdna::MatmulInvocation inv;
    const xdna::MatmulContract * c = xdna::matmul_contract_for(type);
    const int64_t ne[4] = {k, m, 1, 1};
    xdna::WeightLayout w;
    ok = c != nullptr && xdna::make_weight_layout(type, ne, w);
    if (!ok) {
        return inv;
    }
    const xdna::ActivationLayout a = xdna::make_activation_layout(*c, k, w.padded_k(), n);
    inv.contract = c;
    inv.tile = c->tile(a.tile_n);
    inv.m = m;
    inv.n = n;
    inv.m_tiles = w.m_tiles;
    inv.n_tiles = a.n_pad / inv.tile.n;
    inv.k_tiles = w.k_tiles;
    inv.weight_tile_bytes = w.tile_bytes;
    inv.act_row_bytes = a.row_bytes;
    inv.out_row_stride = m;
    return inv;
}

}  // namespace xdna_bench
