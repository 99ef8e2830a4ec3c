// Planning FLASH_ATTN_EXT for the NPU (aie/flash_attn): F32 queries, an F16 K and V of head dim 32, 64 or 128
// (the llama.cpp default cache type), GQA by any whole ratio, an optional F16 mask read as data (any mask:
// causal, padded, sliding-window), ALiBi slopes. Softcapping, attention sinks, other KV types and head
// dims stay on the host-op path, with the reason.
#pragma once

#include "ops/flash_attn/flash-attn-invocation.h"
#include "plan/op-support.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

bool flash_attn_supported(const ggml_tensor * fa, const TensorResolver & resolve, std::string & why);

// One invocation for the node (every sequence, KV head and query row of it), appended to `out`.
bool plan_flash_attn(const ggml_tensor * fa, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why);

}  // namespace xdna
