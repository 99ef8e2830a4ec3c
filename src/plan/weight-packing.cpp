#include "plan/weight-packing.h"

#include "plan/matmul-plan.h"

namespace xdna {

const std::vector<WeightPackingRule> & weight_packing_rules() {
    static const std::vector<WeightPackingRule> rules = {
        {"matmul", matmul_weight_layout},
    };
    return rules;
}

bool packed_layout_for(const ggml_tensor * t, WeightLayout & L, const char ** consumer) {
    for (const WeightPackingRule & r : weight_packing_rules()) {
        if (r.layout_of(t, L)) {
            if (consumer != nullptr) {
                *consumer = r.consumer;
            }
            return true;
        }
    }
    return false;
}

}  // namespace xdna
