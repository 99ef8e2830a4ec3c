// Planning a whole submission: the MUL_MATs of one graph split become one Batch of invocations,
// with one activation operand per distinct src1 and a scratch layout for everything the host prepares.
// A BatchPlan depends only on tensor shapes, strides, types and addresses, so it is built once per
// graph shape and reused for every token that has that shape (see PlanCache).
#pragma once

#include "plan/expert-plan.h"
#include "plan/matmul-plan.h"
#include "runtime/device.h"

#include "ggml.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace xdna {

// How a node of the submission is planned: a MUL_MAT (its MatmulPlan, invocations made by
// fill_invocations), a MUL_MAT_ID (its ExpertPlan, invocations made per ubatch by route_batch), or a node
// of any other kind (ops/<op>/plan: its invocations made when planned, `own`).
enum class PlannedForm : uint8_t { matmul, experts, own };

struct PlannedOp {
    const ggml_tensor * node = nullptr;  // the node it was planned from: valid only while planning
    PlannedForm form = PlannedForm::matmul;
    // matmul: its plan, and its activation operand in scratch (shared by equal src1).
    MatmulPlan plan;
    size_t act_offset = 0;
    bool   quantizes = false;     // this op's src1 is quantized here (first op reading it)
    // src1 is the output of an earlier op of this batch, quantized on the NPU (aie/act_quant) in the
    // stage after it; this matmul runs in the stage after that. With `quantizes`: the op whose
    // activation operand the act_quant invocation writes.
    bool   act_on_npu = false;
    // With `quantizes` and `act_on_npu`: the own op (an RMS_NORM with its weight, one row) whose program
    // also makes these activation tiles (ops/rms_norm: rms_norm_fuse_quant), so no act_quant invocation
    // runs; -1: act_quant's.
    int32_t act_by_op = -1;
    bool   packed_weights = true; // matmul, experts: src0 was packed at load; otherwise packed into scratch per run
    size_t weight_offset = 0;     // scratch offset of the packed src0 when !packed_weights
    // experts: the plan, and the scratch offsets of its gathered activations and staged outputs.
    ExpertPlan experts;
    size_t     expert_act_offset = 0;
    size_t     expert_out_offset = 0;
    // experts.on_npu: the scratch offsets of the gathered fp32 rows and of the two gathers' ids.
    size_t     expert_rows_offset = 0;
    size_t     expert_ids_offset = 0;
    // experts.on_npu: an earlier op of the plan whose gathered rows, activation tiles and gather ids this
    // one reads (same_expert_activations: gate and up), its three offsets above being that op's; or -1.
    int32_t    expert_rows_of = -1;
    // own: its invocations; it needs no scratch and nothing prepared on the host.
    std::vector<Invocation> own;
    // own, an RMS_NORM a later matmul's act_by_op names: its invocation also writes that matmul's
    // activation tiles, at this scratch offset, `quant_block` values per scale (0: it does not).
    int    quant_block = 0;
    size_t quant_offset = 0;

    bool is(PlannedForm f) const { return form == f; }
};

// Rows [r0, r1) of slice `slice` of ops[op]'s activation operand.
struct QuantizeJob {
    uint32_t op;
    int64_t  slice, r0, r1;
};

struct BatchPlan {
    std::vector<PlannedOp>     ops;
    std::vector<QuantizeJob>   quantize_jobs;
    int64_t                    max_k_pad = 0;   // longest padded activation row (host scratch floats)
    size_t                     scratch_bytes = 0;
    // Where scratch holds kActQuantZeroBytes of zeros for the NPU's activation quantizations (the
    // padding rows of a last token tile: aie/act_quant), when any is planned. The backend writes the
    // zeros before each run (other plans share scratch); nothing of this plan writes there.
    bool                       has_zeros = false;
    size_t                     zeros_offset = 0;
    // The invocations, ready to submit, in stages: every op that reads nothing this batch writes (the
    // ops of other kinds, the matmuls of host-quantized activations); the NPU quantizations of their
    // outputs; the matmuls that read those.
    Batch                      batch;
    bool                       has_experts = false;  // some op is a MUL_MAT_ID: submit route_batch()'s
    // With has_experts, per invocation of `batch`: -1, or where route_batch() puts the invocations of a
    // MUL_MAT_ID the NPU moves (experts.on_npu), which depend on the routing: 3 * op for its gather of
    // src1's rows, 3 * op + 1 for its quantization, 3 * op + 2 for its matmuls (an op that reads another's
    // rows, PlannedOp::expert_rows_of, holds only the last). The invocation there only holds the stage: it
    // touches the memory any routing's invocations may touch, so that nothing that conflicts with them
    // shares their stage.
    std::vector<int32_t>       expert_part;
};

// A plan with MUL_MAT_IDs, for one ubatch: each one's ids routed, and the Batch to submit: the plan's
// invocations with the routed ones of NPU-moved MUL_MAT_IDs in their stages, then, in the last stage,
// one per expert a token selected of the host-moved ones. Reused between ubatches (no reallocation).
// The NPU-moved ones' gather ids are written into scratch's host memory, to be synced with it.
struct RoutedBatch {
    std::vector<ExpertRouting> routing;  // per op of the plan (empty for MUL_MATs)
    std::vector<BufferSlice>   weights;  // per op of the plan: a MUL_MAT_ID's expert stack
    Batch                      batch;
};
bool route_batch(const BatchPlan & plan, const std::vector<ggml_tensor *> & nodes, const TensorResolver & resolve,
                 DeviceBuffer * scratch, RoutedBatch & routed, std::string & why);

// Lay out scratch for `nodes` (MUL_MATs, MUL_MAT_IDs and the nodes of other kinds, each planned as choose_matmul() / choose_matmul_id() decide with `resolve`; see
// op-support.h for TensorResolver). Call fill_invocations() once scratch of plan.scratch_bytes exists.
bool layout_batch(const std::vector<ggml_tensor *> & nodes, const TensorResolver & resolve, BatchPlan & plan,
                  std::string & why);
bool fill_invocations(BatchPlan & plan, const TensorResolver & resolve, DeviceBuffer * scratch, std::string & why);

// What identifies a plan: per node, its op and op parameters, and every address, shape, stride and type
// of it and of each of its sources, by slot, that it was planned from.
// Written into `sig` (reused between calls: this runs for every submission).
void batch_signature(const std::vector<ggml_tensor *> & nodes, const TensorResolver & resolve, std::vector<uint64_t> & sig);

// FNV-1a over a signature's words: the key of the plan caches (this one and the graph plans').
uint64_t signature_hash(const std::vector<uint64_t> & signature);

// Plans by signature.
class PlanCache {
public:
    const BatchPlan * find(const std::vector<uint64_t> & signature) const;
    const BatchPlan * insert(const std::vector<uint64_t> & signature, std::unique_ptr<BatchPlan> plan);
    // The scratch buffer grew into a new allocation: point every cached plan at it (offsets stay valid).
    void retarget(const DeviceBuffer * from, DeviceBuffer * to);
    // A device buffer was freed: forget every plan that points into it (its address may be reused).
    // Returns how many plans were dropped.
    size_t drop_referencing(const DeviceBuffer * freed);
    void clear() { plans_.clear(); }
    uint64_t plans_built() const { return built_; }
    size_t size() const { return plans_.size(); }

private:
    struct Entry {
        std::vector<uint64_t>      signature;
        std::unique_ptr<BatchPlan> plan;
    };
    std::unordered_multimap<uint64_t, Entry> plans_;
    uint64_t built_ = 0;
};

}  // namespace xdna
