// The flash_attn kind's parameter block (runtime/invocation.h holds it in Invocation::params).
#pragma once

#include "runtime/kernel-kind.h"

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

struct Invocation;
struct TileShape;

// FLASH_ATTN_EXT as ggml lays it out (ggml.c ggml_flash_attn_ext, ggml-cpu/ops.cpp
// ggml_compute_forward_flash_attn_ext_f16_one_chunk): q F32 [d, n_tokens, n_head, n_seq], k and v F16
// or Q8_0 (kv_q8_0; both the same) [d, n_kv, n_head_kv, n_seq_kv] (head h reads KV head h / (n_head / n_head_kv), sequence s reads
// s / (n_seq / n_seq_kv)), an optional F16 mask [n_kv, >= n_tokens, mask_heads, mask_seqs] broadcast over
// heads and sequences, the output F32 [d, n_head, n_tokens, n_seq]. Strides in bytes.
struct FlashAttnParams {
    static constexpr KernelKind kKind = KernelKind::flash_attn;
    static constexpr const char * kName = "flash_attn";

    int64_t d = 0, n_kv = 0, n_tokens = 0, n_head = 0, n_head_kv = 0, n_seq = 0, n_seq_kv = 0;
    int64_t q_nb[4] = {}, k_nb[4] = {}, v_nb[4] = {}, out_nb[4] = {};
    bool    kv_q8_0 = false;  // K and V rows of Q8_0 blocks (34 bytes per 32 values), else F16
    bool    has_mask = false;
    int64_t mask_heads = 1, mask_seqs = 1;
    int64_t mask_nb[4] = {};
    float   scale = 1.0f, max_bias = 0.0f;
    // Where the host reads which blocks the mask hides, when the stream is built (each submission): the mask
    // itself when it is a leaf of the graph (its values set before the graph runs), or the F32 leaf it is
    // cast from in the same graph (llama.cpp's KQ mask: the F16 copy is not there until the cast runs). The
    // invocation's "mask_source" operand holds it, of these strides. none: every block is moved.
    enum class MaskSource : uint8_t { none, f16, f32 };
    MaskSource mask_source = MaskSource::none;
    int64_t    mask_source_nb[4] = {};
    // A causal mask for a model of the run (no data): token t sees positions 0 .. modelled_past + t. -1: none.
    int64_t modelled_past = -1;

    // The bytes of one K or V row of d values.
    int64_t kv_row_bytes() const { return kv_q8_0 ? d / 32 * 34 : d * 2; }
    // Query rows of one KV head in one sequence: its heads times the tokens.
    int64_t group_rows() const { return (n_head / n_head_kv) * n_tokens; }
    // q.k and p.v: 2 d MACs per query row and KV row.
    uint64_t    macs(const TileShape &) const { return static_cast<uint64_t>(2 * d * n_kv * n_tokens * n_head * n_seq); }
    std::string shape_label(const TileShape &) const;  // "tokens x heads/kv_heads x kv x d"
    // The operand the host writes at submission (aie/flash_attn/dataflow.json .host_written "slopes"): the
    // slope tables per KV head and the zero region (flash-attn-sequence.h AttentionSlopesLayout).
    bool host_operand(const Invocation & inv, const std::string & name, std::vector<uint8_t> & out, std::string & err) const;
};

}  // namespace xdna
