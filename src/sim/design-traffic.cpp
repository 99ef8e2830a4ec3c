#include "sim/design-traffic.h"

#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"
#include "contracts/weight-layout.h"

#include <map>
#include <mutex>
#include <set>
#include <tuple>

namespace xdna {

bool design_stream_shape(const ModelShape & s, int columns, const std::string & layout, MatmulSequenceShape & out) {
    const MatmulContract * c = model_contract(s);
    if (c == nullptr) {
        return false;
    }
    const int64_t ne[4] = {c->tile_k, c->tile_m, 1, 1};
    WeightLayout L;
    if (!make_weight_layout(c->weight_type, ne, L)) {
        return false;
    }
    out = {};
    out.contract = c->name;
    out.tile_n = s.tile.n;
    out.m_tiles = s.m_tiles;
    out.n_tiles = s.n_tiles;
    out.k_tiles = s.k_tiles;
    out.weight_tile_bytes = L.tile_bytes;
    out.act_tile_bytes = activation_tile_bytes(*c, s.tile.n);
    out.columns = columns;
    out.layout = layout;
    out.exact = s.exact_w;
    const int64_t group = kWeightRowTileGroup;
    out.out_row_stride = (s.m_tiles + group - 1) / group * group * c->tile_m;
    return true;
}

DesignFigures design_figures(const DesignDescription & d, const MatmulSequenceShape & shape) {
    DesignFigures f;
    const MatmulSequence seq = build_matmul_sequence(d, shape, SequenceOutput::figures);
    f.m_tiles = shape.m_tiles;
    f.layout = shape.layout;
    f.n_tiles = shape.n_tiles;
    f.k_tiles = shape.k_tiles;
    if (!seq.ok()) {
        f.error = seq.error;
        return f;
    }
    f.family = seq.family;
    f.layout = seq.layout;
    f.traffic = seq.traffic;
    f.w_window = seq.buffers.w_obj;
    f.w_tile = shape.weight_tile_bytes;
    f.a_tile = shape.act_tile_bytes;
    f.m_rows = seq.m_groups * d.layout(seq.layout)->w_parts;  // row tiles moved: whole row units
    f.max_core_tiles = seq.max_core_tiles;
    f.cores_used = seq.cores_used;
    f.columns_used = seq.columns_used;
    return f;
}

const char * design_refusal(const std::string & reason) {
    static std::mutex mu;
    static std::set<std::string> reasons;  // never erased: the model hands the pointers out
    std::lock_guard<std::mutex> lock(mu);
    return reasons.insert(reason).first->c_str();
}

std::shared_ptr<const DesignFigures> design_figures(const ModelShape & s, int columns, const std::string & layout) {
    using Key = std::tuple<const MatmulContract *, int, int64_t, int64_t, int64_t, int, std::string, bool>;
    static std::mutex mu;
    static std::map<Key, std::shared_ptr<const DesignFigures>> cache;
    const Key key{model_contract(s), s.tile.n, s.m_tiles, s.n_tiles, s.k_tiles, columns, layout, s.exact_w};
    {
        std::lock_guard<std::mutex> lock(mu);
        auto it = cache.find(key);
        if (it != cache.end()) {
            return it->second;
        }
    }
    auto f = std::make_shared<DesignFigures>();
    MatmulSequenceShape shape;
    const DesignRead & design = matmul_design();
    if (!design.ok()) {
        f->error = design.error;
    } else if (!design_stream_shape(s, columns, layout, shape)) {
        f->error = std::string("no contract for ") + ggml_type_name(s.weight_type);
    } else {
        *f = design_figures(design.design, shape);
    }
    std::lock_guard<std::mutex> lock(mu);
    if (cache.size() >= (1u << 16)) {
        return f;  // a model uses a few dozen shapes; past this bound, build each time rather than grow
    }
    return cache.emplace(key, std::move(f)).first->second;
}

}  // namespace xdna
