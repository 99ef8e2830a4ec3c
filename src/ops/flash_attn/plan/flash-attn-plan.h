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

// The tensor whose values say which blocks the mask hides, read by the host when it builds each
// submission's stream (the stream then moves no block that every query row of a task has hidden past its
// last visible position): the mask itself when it is a leaf of the graph (its values are set before the
// graph runs), or the F32 leaf it is cast from (llama.cpp's KQ mask, cast to F16 for flash attention by a
// CPY of the same graph, whose output is not there yet when the device builds the streams of the
// submission). nullptr: no such tensor (the stream moves every block). `f32` says which of the two.
const ggml_tensor * flash_attn_mask_source(const ggml_tensor * fa, bool & f32);

// One invocation for the node (every sequence, KV head and query row of it), appended to `out`.
bool plan_flash_attn(const ggml_tensor * fa, const TensorResolver & resolve, std::vector<Invocation> & out, std::string & why);

}  // namespace xdna
