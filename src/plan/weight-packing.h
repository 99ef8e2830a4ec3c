// Which layout a weight tensor takes in XDNA memory, chosen by the ops that consume weights.
//
// ggml sizes and fills a tensor before any graph exists, so the op that will read a weight is not known
// when its memory is reserved. Each op that wants its weights in a layout of its own states which
// tensors it packs and how (a rule); the buffer asks the rules in turn and a tensor takes the layout of
// the first one that claims it, or stays in ggml's layout. Today one op packs: the matmul (MUL_MAT and
// MUL_MAT_ID) takes the matrices of a contract's weight type in its packed tiles; a norm weight, a bias
// or RoPE's frequency factors match no rule and are read in ggml's layout (the host-op path, the glue
// kernels). An op that reads a tensor another op's rule packed is refused by its planner
// (TensorResolver::packed_or_view_of_packed), never handed bytes it does not understand.
#pragma once

#include "contracts/weight-layout.h"

#include "ggml.h"

#include <vector>

namespace xdna {

struct WeightPackingRule {
    const char * consumer;  // "matmul": the ops whose rule it is
    // The layout `t` takes for this consumer; false when the rule does not claim it.
    bool (*layout_of)(const ggml_tensor * t, WeightLayout & L);
};

// Every op's rule, in the order they are asked.
const std::vector<WeightPackingRule> & weight_packing_rules();

// The layout of the first rule that claims `t`, and that rule's consumer; false (ggml's layout) if none.
bool packed_layout_for(const ggml_tensor * t, WeightLayout & L, const char ** consumer = nullptr);

}  // namespace xdna
