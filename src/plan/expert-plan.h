// Planning MUL_MAT_ID (mixture of experts): dst[:, e, t] = W[ids[e, t]] x src1[:, e % ne11, t].
//
// A MUL_MAT_ID becomes, per ubatch, one matmul invocation per *selected* expert, all in the same Batch
// as the split's other matmuls (one submission). Each invocation is an ordinary matmul contract call:
// its weights are that expert's slice of the packed expert stack (weight-layout.h: [mat][m_tile]
// [k_tile][tile], so an expert is one contiguous run), its activations are the tokens routed to it,
// gathered by the host while it quantizes them (it quantizes every src1 anyway), and its output goes
// to a staging area that the host scatters back into dst's (slot, token) rows. An expert no token
// selects gets no invocation: its weights are never streamed. The NPU data movement this stands for is
// aie/matmul_id/README.md.
//
// Why matmul invocations over expert slices and not a kernel kind of its own: the core kernels and
// the tile ABI are exactly the matmul's, the only new thing is which W run the shim streams and where
// A comes from and C goes, and all three are decided on the host from the ids before submission. A
// separate kind would carry the same fields plus a list. (Folding the per-expert invocations of one
// MUL_MAT_ID into one instruction stream, to save the per-invocation setup, is a device-side choice
// that needs no new kind either: aie/matmul_id/README.md.)
//
// Two parts: ExpertPlan depends only on shapes (cached with the batch plan); ExpertRouting is read
// from the ids for every ubatch.
#pragma once

#include "contracts/activation-layout.h"
#include "contracts/matmul-contract.h"
#include "contracts/weight-layout.h"
#include "plan/op-support.h"
#include "runtime/device.h"

#include "ggml.h"

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

struct ExpertPlan {
    const MatmulContract * contract = nullptr;
    WeightLayout     weights;          // the whole expert stack, one matrix per expert
    int64_t          n_expert = 0;     // src0->ne[2]
    int64_t          n_used = 0;       // ids->ne[0]: experts per token
    int64_t          n_tokens = 0;     // ids->ne[1]
    int64_t          src1_rows = 0;    // src1->ne[1]: n_used, or 1 when every slot reads the same row
    std::vector<int> tiles;            // token tiles the device has for the contract, ascending
    int64_t          out_row_stride = 0;  // floats per staging row: whole 64-row tiles (the NPU's C
                                          // drain writes whole tiles, aie/matmul/README.md)
    size_t act_bytes = 0;              // scratch for the gathered activations, worst case over routings
    size_t out_bytes = 0;              // scratch for the staged outputs, worst case over routings
    // The NPU moves the rows (npu_routes_experts): src1's rows are gathered into fp32 rows in scratch and
    // quantized there, and the staged outputs gathered into dst, all by invocations of the submission.
    bool    on_npu = false;
    int64_t src1_row_stride = 0;       // floats between src1's rows (src1_rows of each token, contiguous)
    int64_t dst_row_stride = 0;        // floats between dst's (slot, token) rows

    int64_t pairs() const { return n_used * n_tokens; }
    // With one token (decode) the NPU quantizes src1's rows where they are, once for all experts (no
    // gather): each expert's matmul reads the token tile that holds its slot's row (route_experts).
    // With more, the gather lays each expert's rows out as its token tiles (each the tile its rows choose,
    // the experts of one tile together), so that one quantization per tile size makes every expert's
    // activation tiles.
    bool    gathers_rows() const { return n_tokens > 1; }
    int64_t staged_rows() const { return static_cast<int64_t>(out_bytes / sizeof(float)) / out_row_stride; }  // worst case
    size_t  row_bytes() const { return static_cast<size_t>(staged_rows() * weights.k) * sizeof(float); }  // gathered src1 rows
    size_t  ids_bytes() const { return static_cast<size_t>(staged_rows() + pairs()) * sizeof(int32_t); }  // both gathers' ids
};

// Plan a MUL_MAT_ID that choose_matmul_id() accepted; false with `why` otherwise.
bool plan_matmul_id(const ggml_tensor * dst, const TensorResolver & resolve, const MatmulChoice & choice, ExpertPlan & plan,
                    std::string & why);

// Whether the NPU moves a planned MUL_MAT_ID's rows itself (GGML_XDNA_NPU_OPS=glue or layer), so that
// nothing of it runs on the host between submissions and it can sit in the middle of one (the router's
// host run before it is the only cut a MoE layer needs):
//   - a gather (aie/get_rows) of the src1 row of every (slot, token) pair, grouped by expert, into fp32
//     rows in scratch; its ids are the routing's, written by the host at submission like GET_ROWS's;
//   - per selected expert, the quantization (aie/act_quant) of its rows into its activation tiles;
//   - the expert matmuls, as on the host-moved path, into the staging rows;
//   - a gather of the staged rows into dst's (slot, token) rows: every pair is one staged row, so dst is
//     src1's gather run backwards, and no drain writes the padding rows of a token tile into dst.
// Sets plan.on_npu and the strides; false with `why` (the host then moves the rows, as before).
bool npu_routes_experts(const ggml_tensor * dst, ExpertPlan & plan, const TensorResolver & resolve, std::string & why);
// The same from the node alone (what the backend asks before letting the node join a submission).
bool npu_routes_experts(const ggml_tensor * dst, const TensorResolver & resolve);

// Whether two NPU-moved MUL_MAT_IDs that read the same src1 and ids tensors (the caller checks that: gate
// and up of a MoE FFN) make the same gathered rows and activation tiles, so that the second may read the
// first's: the same routing (experts, slots, tokens) over the same rows, quantized for the same contract
// at the same tiles. Its gather and its quantization are then not made at all.
bool same_expert_activations(const ExpertPlan & a, const ExpertPlan & b);

// One selected expert: the tokens routed to it this ubatch.
struct ExpertGroup {
    int32_t          expert = 0;
    int64_t          first = 0;       // its first entry in ExpertRouting::pair
    int64_t          rows = 0;        // its entries there: the (slot, token) pairs routed to it
    ActivationLayout activations;     // its gathered rows (n = rows routed to it)
    size_t           act_offset = 0;  // within the plan's activation scratch
    int64_t          out_row0 = 0;    // its first row in the staging area
    int64_t          tile_row = 0;    // NPU-moved, one token: the row of its token tile that is its slot's
};

struct ExpertRouting {
    std::vector<ExpertGroup> groups;  // selected experts, ascending (NPU-gathered rows: by tile, then expert)
    int64_t                  staged_rows = 0;  // the groups' rows padded to their token tiles
    std::vector<int64_t>     pair;    // per gathered row: slot + token * n_used, grouped by expert
    std::vector<int64_t>     count;   // scratch for the counting sort, one per expert
};

// Read `ids` (host-visible memory) and group the (slot, token) pairs by expert. False with `why` when
// an id is outside [0, n_expert): the CPU would index outside the weights; here it is an error.
bool route_experts(const ggml_tensor * ids, const ExpertPlan & plan, ExpertRouting & routing, std::string & why);

// The matmul invocations of one routed MUL_MAT_ID, appended to `batch`: one per selected expert.
// `weights` is the packed expert stack, `act` and `out` the plan's two scratch areas.
void expert_invocations(const ExpertPlan & plan, const ExpertRouting & routing, BufferSlice weights, BufferSlice act,
                        BufferSlice out, std::vector<Invocation> & batch);

// The ids of an NPU-moved MUL_MAT_ID's two gathers, into host-visible memory before the submission
// (the ExpertPlan::ids_bytes area): per gathered row, laid out as the staged rows, the src1 row it reads
// (a padding row of a token tile reads its group's first row: its outputs are never read); then per
// (slot, token) row of dst, its staged row.
void write_expert_gather_ids(const ExpertPlan & plan, const ExpertRouting & routing, int32_t * ids);

// The gather of src1's rows into `rows` (routing.staged_rows of them) and the gather of the staged
// rows `out` into dst (one per (slot, token) pair: the same shape for every routing).
Invocation expert_rows_gather(const ExpertPlan & plan, const ExpertRouting & routing, BufferSlice src1, BufferSlice ids,
                              BufferSlice rows);
Invocation expert_outputs_gather(const ExpertPlan & plan, BufferSlice out, BufferSlice ids, BufferSlice dst);

// The quantization of each selected expert's rows into its activation tiles, appended to `batch`: from the
// gathered `rows`, or with one token src1's rows where they are, once for all experts.
void expert_quantizations(const ExpertPlan & plan, const ExpertRouting & routing, BufferSlice src1, BufferSlice rows,
                          BufferSlice act, BufferSlice zeros, std::vector<Invocation> & batch);

// The src1 row that (slot, token) pair `pair` (slot + token * n_used) multiplies.
const void * pair_source_row(const ggml_tensor * src1, const ExpertPlan & plan, int64_t pair);

// Copy the staged output rows into dst (M floats per (slot, token) row).
void scatter_expert_outputs(const ExpertPlan & plan, const ExpertRouting & routing, const void * staged, ggml_tensor * dst);

}  // namespace xdna
