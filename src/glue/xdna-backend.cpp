// XDNA backend (stream): runs each run of NPU nodes (MUL_MATs and MUL_MAT_IDs with no host op between
// them, after graph_optimize has moved the independent ones together) as one submission, and the other
// nodes of the graph (a device that owns layers gets all of them) on the host-op path in between.
//
// Per submission: the plan (scratch layout, activation sharing, invocations) comes from a cache keyed
// by the split's shapes and addresses, so after the first token a step only quantizes activations
// (once per distinct src1: Q, K and V share one; a MUL_MAT_ID's rows gathered per selected expert,
// read from its ids), packs weights that were not packed at load (tests'
// compute-buffer weights), submits every invocation at once and waits once.
#include "glue/xdna-backend.h"

#include "glue/host-ops.h"
#include "glue/profiler.h"

#include "devices/open-device.h"
#include "ops/act_quant/act-quant-invocation.h"
#include "ops/act_quant/act-quant-plan.h"
#include "ops/hadamard/hadamard-plan.h"
#include "ops/rms_norm/rms-norm-plan.h"
#include "plan/batch-plan.h"
#include "plan/graph-plan.h"
#include "plan/submission-order.h"
#include "runtime/options.h"
#include "runtime/overwritten-inputs.h"
#include "runtime/thread-pool.h"

#include "ggml-impl.h"

#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace xdna {

namespace {

bool host_ops_enabled() {
    const OptionValue<std::string> o = host_ops_option();
    report_option_error(o.error);
    return o.value == "cpu";
}

std::chrono::milliseconds run_timeout() {
    const OptionValue<std::chrono::milliseconds> t = timeout_option();
    report_option_error(t.error);
    return t.value;
}

// Below this many activation rows, waking the host pool costs more than quantizing inline.
constexpr size_t kInlineQuantizeJobs = 2;

struct BackendContext {
    explicit BackendContext(XdnaDeviceContext & d)
        : dev(d), host_pool(ThreadPool::default_threads()), resolver(d.resolver), fallback(open_host_executor(host_pool)) {
        buffers_freed_since(frees_seen, freed);  // frees before this backend existed concern no plan of it
    }

    XdnaDeviceContext &           dev;
    ThreadPool                    host_pool;  // host-side operand preparation
    const TensorResolver &        resolver;   // the device's, shared with supports_op
    std::unique_ptr<HostExecutor> fallback;   // computes a submission whose device run failed
    std::unique_ptr<DeviceBuffer> scratch;
    PlanCache                     plans;
    GraphPlanCache                graph_plans;     // how each graph splits into host runs and submissions
    std::vector<uint64_t>         graph_sig;       // of the graph being computed, reused
    GraphPlan                     recording;       // the steps of a graph computed without a plan
    std::vector<int>              pending_index;   // graph indices of `pending`
    bool                          recording_on = false;  // walking a graph node by node
    uint64_t                      graph_replays = 0;     // graphs computed from a graph plan
    uint64_t                      frees_seen = 0;  // position in the log of freed buffers
    std::vector<const DeviceBuffer *> freed;
    Profiler                      prof;            // this backend's figures only
    std::vector<uint64_t>         signature;  // of the pending submission, reused
    std::vector<ggml_tensor *>    pending;
    std::vector<ggml_tensor *>    done;       // the nodes of the submission being run
    std::vector<float>            row_scratch;
    OverwrittenInputs             saved_inputs;  // of the submission being run, for the host's recomputation
    RoutedBatch                   routed;       // this ubatch's expert routing (plans with MUL_MAT_IDs)
    struct ExpertRows {
        uint32_t op, group;
        int64_t  r0, r1;
    };
    std::vector<ExpertRows>       expert_jobs;
    std::chrono::milliseconds     timeout = run_timeout();
    bool                          fallback_logged = false;
    bool                          host_ops_on = host_ops_enabled();
    HostOps                       host_ops;   // ops the device does not run (RPC server graphs)
    bool                          whole_graph_logged = false;
    uint64_t                      submissions = 0;    // flushes that reached the device
    // The graph being computed, for the profile: its submissions so far, the ops of the host runs since
    // its last submission, and the host runs that fell between two of its submissions.
    uint64_t                      graph_submissions = 0;
    std::string                   host_since_submit;
    std::vector<std::string>      graph_cuts;
    uint64_t                      fallback_runs = 0;  // of them, computed on the host after a device failure

    bool depends_on_pending(const ggml_tensor * t) const {
        for (const ggml_tensor * s = t; s != nullptr; s = s->view_src) {
            for (const ggml_tensor * p : pending) {
                if (p == s) {
                    return true;
                }
            }
        }
        return false;
    }

    // Whether `node` can read `t`, the output of a pending node, in a later stage of the same
    // submission (plan/batch-plan.h): `t` must be final in device memory when the NPU has run its
    // producer (a MUL_MAT_ID's outputs are, when the NPU moves its rows; when the host does, it scatters
    // them afterwards). A matmul reads it only as its activations, quantized on the NPU, and only as the
    // producer's own tensor (the quantization is shared by tensor); a MUL_MAT_ID only as its src1, when
    // the NPU gathers its rows (its ids are read by the host at submission); an op of another kind reads
    // it as it is, or a view of it (a ROPE reads the reshape of its projection's output).
    bool chains_on_pending(const ggml_tensor * node, int slot, const ggml_tensor * t) const {
        const ggml_tensor * producer = nullptr;
        const bool          any_view = node->op != GGML_OP_MUL_MAT && node->op != GGML_OP_MUL_MAT_ID;
        // A matmul reads its producer's own tensor, or a whole reshape of it (reshaped_source).
        const ggml_tensor * first = any_view ? t : reshaped_source(t);
        for (const ggml_tensor * s = first; s != nullptr && producer == nullptr; s = any_view ? s->view_src : nullptr) {
            for (const ggml_tensor * p : pending) {
                producer = p == s ? p : producer;
            }
        }
        if (producer == nullptr) {
            return false;
        }
        const OpKind pk = op_kind(producer);
        if (pk == OpKind::matmul_id && !npu_routes_experts(producer, resolver)) {
            return false;
        }
        if (node->op == GGML_OP_MUL_MAT && op_kind(node) != OpKind::hadamard) {  // a rotation reads F32 rows as any glue op
            return slot == 1 && pk != OpKind::matmul && pk != OpKind::matmul_id && npu_quantizes_activations(node, resolver);
        }
        if (node->op == GGML_OP_MUL_MAT_ID) {
            return slot == 1 && npu_routes_experts(node, resolver);
        }
        return true;
    }

    void              note_frees();
    const BatchPlan * plan_for_pending();
    ggml_status       replay(ggml_cgraph * graph, const GraphPlan & plan);
    ggml_status       walk(ggml_cgraph * graph);
    void              quantize(const BatchPlan & plan, const std::vector<ggml_tensor *> & nodes);
    void              gather_experts(const BatchPlan & plan, const std::vector<ggml_tensor *> & nodes);
    ggml_status       flush();
    ggml_status       compute(ggml_cgraph * graph);
    ggml_status       compute_nodes(ggml_cgraph * graph);
    void              note_host_ops(const ggml_cgraph * graph, int i0, int i1);
    bool              runs_on_device(const ggml_tensor * node) const;
    ggml_status       run_on_host(ggml_cgraph * graph, int & i);
};

// Device buffers freed since the last look: the plans pointing into them are dropped, and every graph
// plan (a freed buffer's address may come back holding other tensors).
void BackendContext::note_frees() {
    if (!buffers_freed_since(frees_seen, freed)) {
        plans.clear();  // too many frees since the last look to tell which plans they concern
        graph_plans.clear();
        return;
    }
    if (!freed.empty()) {
        graph_plans.clear();
    }
    for (const DeviceBuffer * b : freed) {
        plans.drop_referencing(b);
    }
}

const BatchPlan * BackendContext::plan_for_pending() {
    note_frees();
    batch_signature(pending, resolver, signature);
    if (const BatchPlan * cached = plans.find(signature)) {
        return cached;
    }
    auto plan = std::make_unique<BatchPlan>();
    std::string why;
    if (!layout_batch(pending, resolver, *plan, why)) {
        GGML_LOG_ERROR("xdna: cannot plan: %s\n", why.c_str());
        return nullptr;
    }
    if (!scratch || scratch->size() < plan->scratch_bytes) {
        // Cached plans keep their offsets; they are pointed at the new, larger buffer.
        std::unique_ptr<DeviceBuffer> grown = dev.device->allocate(plan->scratch_bytes, BufferRole::data);
        if (!grown) {
            GGML_LOG_ERROR("xdna: cannot allocate %zu bytes of scratch memory\n", plan->scratch_bytes);
            return nullptr;
        }
        plans.retarget(scratch.get(), grown.get());
        scratch = std::move(grown);
    }
    if (!fill_invocations(*plan, resolver, scratch.get(), why)) {
        GGML_LOG_ERROR("xdna: %s\n", why.c_str());
        return nullptr;
    }
    return plans.insert(signature, std::move(plan));
}

// `nodes` are this graph's MUL_MATs, in the order the plan was made for (the signature guarantees
// their shapes, strides and addresses match); a cached plan's own node pointers may be long gone.
void BackendContext::quantize(const BatchPlan & plan, const std::vector<ggml_tensor *> & nodes) {
    char * base = static_cast<char *>(scratch->host_ptr());
    const size_t k = static_cast<size_t>(plan.max_k_pad);
    row_scratch.resize(k * host_pool.size());
    auto job = [&](int64_t i, int thread) {
        const QuantizeJob & j = plan.quantize_jobs[i];
        const PlannedOp & p = plan.ops[j.op];
        ggml_tensor * dst = nodes[j.op];
        const ggml_tensor * src1 = dst->src[1];
        const ActivationLayout & al = p.plan.activations;
        const int64_t i2 = j.slice % src1->ne[2], i3 = j.slice / src1->ne[2];
        // A bfp16 tile flags its non-finite tokens and the kernel makes their outputs NaN
        // (BlockActTileFormat): nothing is left for the host to do after the run.
        quantize_activation_rows(src1, i2, i3, al, j.r0, j.r1, base + p.act_offset + j.slice * al.total_bytes,
                                 row_scratch.data() + thread * k);
    };
    const int64_t n = static_cast<int64_t>(plan.quantize_jobs.size());
    if (plan.quantize_jobs.size() <= kInlineQuantizeJobs) {
        for (int64_t i = 0; i < n; ++i) {
            job(i, 0);
        }
    } else {
        host_pool.parallel_for(n, job);
    }
}

// The rows routed to each selected expert, quantized into that expert's activation tiles (padding
// rows as zeros); weights that were not packed at load are packed for the selected experts only.
void BackendContext::gather_experts(const BatchPlan & plan, const std::vector<ggml_tensor *> & nodes) {
    char * base = static_cast<char *>(scratch->host_ptr());
    expert_jobs.clear();
    for (size_t i = 0; i < plan.ops.size(); ++i) {
        const PlannedOp & p = plan.ops[i];
        if (!p.is(PlannedForm::experts)) {
            continue;
        }
        const ExpertRouting & r = routed.routing[i];
        for (size_t g = 0; g < r.groups.size(); ++g) {
            const int64_t n_pad = p.experts.on_npu ? 0 : r.groups[g].activations.n_pad;  // on_npu: quantized by the NPU
            for (int64_t r0 = 0; r0 < n_pad; r0 += 8) {
                expert_jobs.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(g), r0, std::min<int64_t>(n_pad, r0 + 8)});
            }
            if (!p.packed_weights) {
                pack_plain_weight_matrix(nodes[i]->src[0], p.experts.weights, r.groups[g].expert, base + p.weight_offset);
            }
        }
        if (!p.packed_weights) {
            clear_weight_padding(p.experts.weights, base + p.weight_offset);
        }
    }
    const size_t k = static_cast<size_t>(plan.max_k_pad);
    row_scratch.resize(k * host_pool.size());
    auto job = [&](int64_t i, int thread) {
        const ExpertRows & j = expert_jobs[i];
        const PlannedOp & p = plan.ops[j.op];
        const ExpertRouting & r = routed.routing[j.op];
        const ExpertGroup & g = r.groups[j.group];
        const ggml_tensor * src1 = nodes[j.op]->src[1];
        for (int64_t row = j.r0; row < j.r1; ++row) {
            const void * src = row < g.activations.n ? pair_source_row(src1, p.experts, r.pair[g.first + row]) : nullptr;
            quantize_activation_row(src1, src, g.activations, row, base + p.expert_act_offset + g.act_offset,
                                    row_scratch.data() + thread * k);
        }
    };
    host_pool.parallel_for(static_cast<int64_t>(expert_jobs.size()), job);
}

ggml_status BackendContext::flush() {
    if (pending.empty()) {
        return GGML_STATUS_SUCCESS;
    }
    const auto t0 = Profiler::clock::now();
    if (recording_on) {
        recording.steps.push_back({false, 0, 0, pending_index});
    }
    pending_index.clear();
    const BatchPlan * plan = plan_for_pending();
    if (plan == nullptr) {
        pending.clear();
        return GGML_STATUS_FAILED;
    }
    const Batch * batch = &plan->batch;
    if (plan->has_experts) {
        std::string why;
        if (!route_batch(*plan, pending, resolver, scratch.get(), routed, why)) {
            GGML_LOG_ERROR("xdna: %s\n", why.c_str());
            pending.clear();
            return GGML_STATUS_FAILED;
        }
        batch = &routed.batch;
        gather_experts(*plan, pending);
    }
    quantize(*plan, pending);
    if (plan->has_zeros) {
        // The block the NPU's activation quantizations read their padding rows from: every plan shares
        // scratch, so another plan's data may lie there; the copy to the device below carries the zeros.
        std::memset(static_cast<char *>(scratch->host_ptr()) + plan->zeros_offset, 0, kActQuantZeroBytes);
    }
    for (size_t i = 0; i < plan->ops.size(); ++i) {
        const PlannedOp & p = plan->ops[i];
        if (!p.packed_weights && p.is(PlannedForm::matmul)) {
            pack_plain_weights(pending[i]->src[0], p.plan.weights, static_cast<char *>(scratch->host_ptr()) + p.weight_offset);
        }
    }
    // MUL_MAT_IDs' staged outputs go to dst after the run; the nodes are kept for that.
    std::vector<ggml_tensor *> & nodes = done;
    nodes.swap(pending);
    pending.clear();
    scratch->sync_to_device(0, plan->scratch_bytes);

    if (graph_submissions > 0 && !host_since_submit.empty()) {
        graph_cuts.push_back(host_since_submit);  // a host run between two submissions of this graph
    }
    host_since_submit.clear();
    ++graph_submissions;

    // A run that fails part-way may have overwritten memory an earlier stage read (ggml's allocator
    // reuses an input's memory once its last reader is done, and the stages keep that order): the
    // recomputation on the host needs those inputs as they were.
    saved_inputs.save(*batch);
    std::lock_guard<std::mutex> lock(dev.run_mutex);
    const auto t1 = Profiler::clock::now();
    const Status st = dev.device->run(*batch, timeout);
    ++submissions;
    if (!st.ok) {
        // The contracts' functional twins compute the same results on the host: the graph goes on,
        // slower, instead of failing or producing what a failed run left in the outputs.
        if (!fallback_logged) {
            GGML_LOG_ERROR("xdna: device run failed: %s; computing these matmuls on the CPU (logged once)\n",
                           st.message.c_str());
            fallback_logged = true;
        }
        ++fallback_runs;
        prof.record_fallback(*batch, st.message);
        // MUL_MAT_IDs' outputs are then scattered below, as after a device run.
        saved_inputs.restore();
        const Status host = fallback->run(*batch);
        if (!host.ok) {
            GGML_LOG_ERROR("xdna: the host cannot compute this submission either: %s; the graph fails\n", host.message.c_str());
            return GGML_STATUS_FAILED;
        }
    } else if (prof.enabled()) {
        prof.record(*batch, dev.device->last_stats(), dev.device->last_batch_stats(), t0, t1, Profiler::clock::now());
    }
    const bool host_scatters = std::any_of(plan->ops.begin(), plan->ops.end(),
                                           [](const PlannedOp & p) { return p.is(PlannedForm::experts) && !p.experts.on_npu; });
    if (host_scatters) {
        scratch->sync_from_device(0, plan->scratch_bytes);
        for (size_t i = 0; i < plan->ops.size(); ++i) {
            const PlannedOp & p = plan->ops[i];
            if (p.is(PlannedForm::experts) && !p.experts.on_npu) {
                scatter_expert_outputs(p.experts, routed.routing[i], static_cast<char *>(scratch->host_ptr()) + p.expert_out_offset,
                                       nodes[i]);
            }
        }
    }
    return GGML_STATUS_SUCCESS;
}

// Whether a node reaching this backend is a matmul the device computes. The scheduler only sends
// those (and views); an RPC server sends whole layers, so with host ops on, a MUL_MAT is checked too.
bool BackendContext::runs_on_device(const ggml_tensor * node) const {
    const OpKind kind = op_kind(node);
    if (kind != OpKind::matmul && kind != OpKind::matmul_id && kind != OpKind::noop && kind != OpKind::unsupported) {
        std::string why;
        return host_ops_on && op_supported(node, resolver, why);  // the scheduler gives it only with host ops
    }
    if (kind != OpKind::matmul && kind != OpKind::matmul_id) {
        return false;
    }
    if (!host_ops_on) {
        return true;  // as before: the scheduler asked supports_op
    }
    std::string why;
    return op_supported(node, resolver, why);
}

// Nodes from `i` up to the next device matmul run on the host, after the pending submission (ggml's
// allocator may give a host op's output the memory of a tensor a pending matmul still reads). On
// return, `i` is the last node of the run.
ggml_status BackendContext::run_on_host(ggml_cgraph * graph, int & i) {
    if (!host_ops_on) {
        GGML_LOG_ERROR("xdna: unsupported op %s reached the backend (GGML_XDNA_HOST_OPS=off)\n", ggml_op_desc(graph->nodes[i]));
        pending.clear();
        return GGML_STATUS_FAILED;
    }
    const ggml_status st = flush();
    if (st != GGML_STATUS_SUCCESS) {
        return st;
    }
    int end = i + 1;
    while (end < graph->n_nodes && !runs_on_device(graph->nodes[end])) {
        ++end;
    }
    const auto t0 = Profiler::clock::now();
    if (recording_on) {
        recording.steps.push_back({true, i, end, {}});
    }
    const ggml_status hs = host_ops.run(graph, i, end);
    if (prof.enabled()) {
        prof.record_host_run(graph, i, end, t0, Profiler::clock::now());
        note_host_ops(graph, i, end);
    }
    i = end - 1;
    return hs;
}

// The distinct ops of host nodes [i0, i1), in order, joined by '+': how the profile names a host run.
void BackendContext::note_host_ops(const ggml_cgraph * graph, int i0, int i1) {
    for (int i = i0; i < i1; ++i) {
        const ggml_tensor * n = graph->nodes[i];
        if (ggml_op_is_empty(n->op) || (n->flags & GGML_TENSOR_FLAG_COMPUTE) == 0) {
            continue;
        }
        const std::string op = ggml_op_desc(n);
        const std::string padded = "+" + host_since_submit + "+";
        if (padded.find("+" + op + "+") == std::string::npos) {
            host_since_submit += (host_since_submit.empty() ? "" : "+") + op;
        }
    }
}

ggml_status BackendContext::compute(ggml_cgraph * graph) {
    graph_submissions = 0;
    host_since_submit.clear();
    graph_cuts.clear();
    const uint64_t    replays_before = graph_replays;
    const ggml_status st = compute_nodes(graph);
    prof.record_graph(graph_submissions, graph_cuts, graph_replays > replays_before);
    return st;
}

// A graph seen before (same nodes, shapes, strides, types and addresses) runs its recorded steps; any
// other is walked node by node and its steps recorded (plan/graph-plan.h).
ggml_status BackendContext::compute_nodes(ggml_cgraph * graph) {
    note_frees();
    graph_signature(graph, graph_sig);
    if (const GraphPlan * known = graph_plans.find(graph_sig)) {
        ++graph_replays;
        return replay(graph, *known);
    }
    recording.steps.clear();
    pending_index.clear();
    recording_on = true;
    const ggml_status walked = walk(graph);
    recording_on = false;
    if (walked == GGML_STATUS_SUCCESS) {
        graph_plans.insert(graph_sig, std::move(recording));
        recording = {};
    }
    return walked;
}

ggml_status BackendContext::walk(ggml_cgraph * graph) {
    const uint64_t host_before = host_ops.nodes_run();
    int            matmuls = 0;
    for (int i = 0; i < graph->n_nodes; ++i) {
        ggml_tensor * node = graph->nodes[i];
        if ((node->flags & GGML_TENSOR_FLAG_COMPUTE) == 0) {
            continue;
        }
        if (op_kind(node) == OpKind::noop) {
            continue;
        }
        if (!runs_on_device(node)) {
            const ggml_status st = run_on_host(graph, i);
            if (st != GGML_STATUS_SUCCESS) {
                return st;
            }
            continue;
        }
        // RMS_NORM followed by the MUL by its weight (llama.cpp's build_norm), the norm used by nothing
        // else: one invocation computes both, and the MUL node stands for the pair.
        const ggml_tensor * reads[3] = {node->src[0], node->src[1], node->src[2]};
        if (node->op == GGML_OP_RMS_NORM) {
            static constexpr ggml_op kNormMul[] = {GGML_OP_RMS_NORM, GGML_OP_MUL};
            std::string why;
            if (ggml_can_fuse(graph, i, kNormMul, 2) && rms_norm_mul_fusable(graph->nodes[i + 1], resolver, why)) {
                ++i;
                node = graph->nodes[i];
                reads[1] = node->src[1];  // the weight; reads[0] stays the norm's input
            }
        }
        // A node reading the output of one still pending must wait for that submission (src[2]: the
        // expert ids of a MUL_MAT_ID), except a matmul whose activations are the output of a pending
        // op of another kind (a norm): they are quantized on the NPU in a later stage of the same
        // submission (plan/batch-plan.h).
        bool joins = true, depends = false;
        for (int slot = 0; slot < 3; ++slot) {
            if (depends_on_pending(reads[slot])) {
                depends = true;
                joins = joins && chains_on_pending(node, slot, reads[slot]);
            }
        }
        if (depends && !joins) {
            const ggml_status st = flush();
            if (st != GGML_STATUS_SUCCESS) {
                return st;
            }
        }
        pending.push_back(node);
        pending_index.push_back(i);
        ++matmuls;
    }
    const ggml_status st = flush();
    if (st == GGML_STATUS_SUCCESS && !whole_graph_logged && host_ops.nodes_run() > host_before) {
        // Said once: a server that never frees its backend (ggml-rpc-server) prints no profile.
        whole_graph_logged = true;
        GGML_LOG_INFO("xdna: first graph with host ops: %d nodes, %d matmuls computed by %s, %llu nodes on the host\n",
                      graph->n_nodes, matmuls, dev.name.c_str(),
                      static_cast<unsigned long long>(host_ops.nodes_run() - host_before));
    }
    return st;
}

ggml_status BackendContext::replay(ggml_cgraph * graph, const GraphPlan & plan) {
    for (const GraphStep & step : plan.steps) {
        if (step.host) {
            const auto        t0 = Profiler::clock::now();
            const ggml_status hs = host_ops.run(graph, step.i0, step.i1);
            if (prof.enabled()) {
                prof.record_host_run(graph, step.i0, step.i1, t0, Profiler::clock::now());
                note_host_ops(graph, step.i0, step.i1);
            }
            if (hs != GGML_STATUS_SUCCESS) {
                return hs;
            }
            continue;
        }
        pending.clear();
        for (int i : step.nodes) {
            pending.push_back(graph->nodes[i]);
        }
        const ggml_status st = flush();
        if (st != GGML_STATUS_SUCCESS) {
            return st;
        }
    }
    return GGML_STATUS_SUCCESS;
}

BackendContext * ctx_of(ggml_backend_t backend) {
    return static_cast<BackendContext *>(backend->context);
}

const char * backend_get_name(ggml_backend_t backend) {
    return ctx_of(backend)->dev.name.c_str();
}

void backend_free(ggml_backend_t backend) {
    BackendContext * ctx = ctx_of(backend);
    if (ctx->host_ops.nodes_run() > 0) {
        GGML_LOG_INFO("xdna: %llu nodes of graphs sent to this backend were computed on the host (GGML_XDNA_HOST_OPS=cpu)\n",
                      static_cast<unsigned long long>(ctx->host_ops.nodes_run()));
    }
    ctx->prof.report(ctx->dev.description.c_str());
    if (ctx->submissions > 0) {
        // One line per backend: a run that silently took the slow path is visible in its log (a warning
        // when it did, so that tools which show only warnings show it).
        const ggml_log_level level = ctx->fallback_runs > 0 ? GGML_LOG_LEVEL_WARN : GGML_LOG_LEVEL_INFO;
        ggml_log_internal(level, "xdna: %s: %llu of %llu submissions fell back to the CPU after a device failure\n",
                          ctx->dev.name.c_str(), static_cast<unsigned long long>(ctx->fallback_runs),
                          static_cast<unsigned long long>(ctx->submissions));
    }
    delete ctx;
    delete backend;
}

ggml_status backend_graph_compute(ggml_backend_t backend, ggml_cgraph * graph) {
    return ctx_of(backend)->compute(graph);
}

// Before the scheduler allocates a split: the NPU's nodes that do not depend on the host ops between
// them move together, into one submission, then the NPU's nodes of one kind, into fewer changes of program
// (plan/submission-order.h).
void backend_graph_optimize(ggml_backend_t backend, ggml_cgraph * graph, ggml_backend_graph_optimize_params * params) {
    BackendContext * ctx = ctx_of(backend);
    // Each node's kind as the NPU runs it, -1 for a node it does not run, decided once: the passes ask
    // about a node many times. A MUL_MAT by a Hadamard matrix is the rotation's program, not a matmul's.
    std::unordered_map<const ggml_tensor *, int> kinds;
    kinds.reserve(static_cast<size_t>(graph->n_nodes));
    for (int i = 0; i < graph->n_nodes; ++i) {
        const ggml_tensor * n = graph->nodes[i];
        const bool npu = (n->flags & GGML_TENSOR_FLAG_COMPUTE) != 0 && ctx->runs_on_device(n);
        kinds[n] = npu ? static_cast<int>(n->op) + (hadamard_hinted(n) ? GGML_OP_COUNT : 0) : -1;
    }
    const auto kind_of = [&kinds](const ggml_tensor * n) {
        const auto it = kinds.find(n);
        return it != kinds.end() ? it->second : -1;
    };
    const auto on_npu = [&kind_of](const ggml_tensor * n) { return kind_of(n) >= 0; };
    group_npu_nodes(graph->nodes, graph->n_nodes, on_npu);
    group_nodes_by_kind(graph->nodes, graph->n_nodes, on_npu, kind_of);
    if (params != nullptr && params->add_alloc_dep != nullptr) {
        keep_run_inputs(graph->nodes, graph->n_nodes, on_npu, kind_of, [params](ggml_tensor * t, ggml_tensor * until) {
            params->add_alloc_dep(params->user_data, t, until);
        });
    }
}

const ggml_backend_i kBackendInterface = {
    /* .get_name            = */ backend_get_name,
    /* .free                = */ backend_free,
    /* .set_tensor_async    = */ nullptr,
    /* .get_tensor_async    = */ nullptr,
    /* .set_tensor_2d_async = */ nullptr,
    /* .get_tensor_2d_async = */ nullptr,
    /* .cpy_tensor_async    = */ nullptr,
    /* .synchronize         = */ nullptr,
    /* .graph_plan_create   = */ nullptr,
    /* .graph_plan_free     = */ nullptr,
    /* .graph_plan_update   = */ nullptr,
    /* .graph_plan_compute  = */ nullptr,
    /* .graph_compute       = */ backend_graph_compute,
    /* .event_record        = */ nullptr,
    /* .event_wait          = */ nullptr,
    /* .graph_optimize      = */ backend_graph_optimize,
};

ggml_guid_t backend_guid() {
    static ggml_guid guid = {0x58, 0x44, 0x4e, 0x41, 0x32, 0x2d, 0x67, 0x67, 0x6d, 0x6c, 0x2d, 0x6e, 0x70, 0x75, 0x00, 0x01};
    return &guid;
}

}  // namespace

ggml_backend_t make_backend(XdnaDeviceContext & ctx, ggml_backend_dev_t dev) {
    return new ggml_backend{
        /* .guid    = */ backend_guid(),
        /* .iface   = */ kBackendInterface,
        /* .device  = */ dev,
        /* .context = */ new BackendContext(ctx),
    };
}

bool is_xdna_backend(ggml_backend_t backend) {
    return backend != nullptr && ggml_guid_matches(backend->guid, backend_guid());
}

uint64_t backend_plans_built(ggml_backend_t backend) {
    return is_xdna_backend(backend) ? ctx_of(backend)->plans.plans_built() : 0;
}

uint64_t backend_fallback_runs(ggml_backend_t backend) {
    return is_xdna_backend(backend) ? ctx_of(backend)->fallback_runs : 0;
}

uint64_t backend_graph_plans_built(ggml_backend_t backend) {
    return is_xdna_backend(backend) ? ctx_of(backend)->graph_plans.built() : 0;
}

size_t backend_plans_cached(ggml_backend_t backend) {
    return is_xdna_backend(backend) ? ctx_of(backend)->plans.size() : 0;
}

}  // namespace xdna
