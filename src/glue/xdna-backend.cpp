// XDNA backend (stream): runs the MUL_MATs of each graph split as batches of kernel invocations.
//
// Per batch: activations are quantized once per distinct src1 (Q, K and V share one conversion),
// weights not already packed at load (e.g. test tensors in a compute buffer) are packed into scratch,
// and all invocations go to the device in one submission, waited on once.
#include "xdna-device-context.h"

#include "matmul-plan.h"
#include "thread-pool.h"

#include "ggml-impl.h"

#include <chrono>
#include <cstdlib>
#include <map>
#include <tuple>
#include <vector>

namespace xdna {

namespace {

constexpr size_t kScratchAlign = 64;

size_t align_up(size_t x) {
    return (x + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

std::chrono::milliseconds run_timeout() {
    const char * s = std::getenv("GGML_XDNA_TIMEOUT_MS");
    const long ms = s ? std::atol(s) : 0;
    return std::chrono::milliseconds(ms > 0 ? ms : 10000);
}

struct PendingMatmul {
    ggml_tensor * node;
    MatmulPlan    plan;
    size_t        act_offset = 0;     // in scratch
    bool          packed_weights = false;
    size_t        weight_offset = 0;  // in scratch when !packed_weights
};

struct BackendContext {
    explicit BackendContext(XdnaDeviceContext & d) : dev(d), host_pool(ThreadPool::default_threads()) {}

    XdnaDeviceContext &           dev;
    ThreadPool                    host_pool;  // host-side operand preparation
    std::unique_ptr<DeviceBuffer> scratch;
    std::vector<PendingMatmul>    pending;
    std::vector<float>            row_scratch;
    std::chrono::milliseconds     timeout = run_timeout();

    bool depends_on_pending(const ggml_tensor * t) const {
        for (const ggml_tensor * s = t; s != nullptr; s = s->view_src) {
            for (const auto & p : pending) {
                if (p.node == s) {
                    return true;
                }
            }
        }
        return false;
    }

    ggml_status flush();
    ggml_status compute(ggml_cgraph * graph);
};

BufferSlice slice_of(const ggml_tensor * t) {
    DeviceBuffer * buf = device_buffer_of(t->buffer);
    if (buf == nullptr) {
        return {};
    }
    return {buf, static_cast<size_t>(static_cast<const char *>(t->data) - static_cast<const char *>(buf->host_ptr()))};
}

ggml_status BackendContext::flush() {
    if (pending.empty()) {
        return GGML_STATUS_SUCCESS;
    }
    // Scratch layout: one activation operand per distinct (src1, format, padded K, token tile), then
    // packed copies of weights that were not packed at load.
    using ActKey = std::tuple<const ggml_tensor *, ggml_type, int64_t, int>;
    std::map<ActKey, size_t> act_offsets;
    std::vector<const PendingMatmul *> act_owners;
    size_t size = 0;
    for (auto & p : pending) {
        const ActivationLayout & al = p.plan.activations;
        const ActKey key{p.node->src[1], al.act_type, al.k_pad, al.tile_n};
        auto it = act_offsets.find(key);
        if (it == act_offsets.end()) {
            it = act_offsets.emplace(key, size).first;
            size = align_up(size + p.plan.activation_bytes());
            act_owners.push_back(&p);
        }
        p.act_offset = it->second;
        p.packed_weights = tensor_is_packed(p.node->src[0]);
        if (!p.packed_weights) {
            p.weight_offset = size;
            size = align_up(size + p.plan.weights.total_bytes);
        }
    }
    if (!scratch || scratch->size() < size) {
        scratch.reset();
        scratch = dev.device->allocate(size, BufferRole::data);
        if (!scratch) {
            GGML_LOG_ERROR("xdna: cannot allocate %zu bytes of scratch memory\n", size);
            pending.clear();
            return GGML_STATUS_ALLOC_FAILED;
        }
    }
    char * scratch_base = static_cast<char *>(scratch->host_ptr());

    // Quantize each activation operand once, in parallel over chunks of rows.
    struct RowJob {
        const PendingMatmul * p;
        int64_t slice, r0, r1;
    };
    std::vector<RowJob> jobs;
    constexpr int64_t kRowsPerJob = 8;
    for (const PendingMatmul * p : act_owners) {
        const ActivationLayout & al = p->plan.activations;
        for (int64_t s = 0; s < p->plan.n_slices; ++s) {
            for (int64_t r = 0; r < al.n_pad; r += kRowsPerJob) {
                jobs.push_back({p, s, r, std::min(al.n_pad, r + kRowsPerJob)});
            }
        }
    }
    int64_t max_k = 0;
    for (const PendingMatmul * p : act_owners) {
        max_k = std::max(max_k, p->plan.activations.k_pad);
    }
    row_scratch.resize(static_cast<size_t>(max_k) * host_pool.size());
    host_pool.parallel_for(static_cast<int64_t>(jobs.size()), [&](int64_t i, int thread) {
        const RowJob & j = jobs[i];
        const ActivationLayout & al = j.p->plan.activations;
        const ggml_tensor * src1 = j.p->node->src[1];
        const int64_t i2 = j.slice % src1->ne[2], i3 = j.slice / src1->ne[2];
        quantize_activation_rows(src1, i2, i3, al, j.r0, j.r1,
                                 scratch_base + j.p->act_offset + j.slice * al.total_bytes,
                                 row_scratch.data() + static_cast<size_t>(thread) * max_k);
    });
    for (const auto & p : pending) {
        if (!p.packed_weights) {
            pack_plain_weights(p.node->src[0], p.plan.weights, scratch_base + p.weight_offset);
        }
    }
    scratch->sync_to_device(0, size);

    Batch batch;
    for (const auto & p : pending) {
        const MatmulPlan & plan = p.plan;
        const ggml_tensor * dst = p.node;
        const BufferSlice w = p.packed_weights ? slice_of(p.node->src[0]) : BufferSlice{scratch.get(), p.weight_offset};
        const BufferSlice out = slice_of(dst);
        if (w.buffer == nullptr || out.buffer == nullptr) {
            GGML_LOG_ERROR("xdna: %s: operand not in device memory\n", dst->name);
            pending.clear();
            return GGML_STATUS_FAILED;
        }
        for (int64_t s = 0; s < plan.n_slices; ++s) {
            const int64_t i2 = s % dst->ne[2], i3 = s / dst->ne[2];
            MatmulInvocation inv;
            inv.contract = plan.contract;
            inv.tile = plan.contract->tile(plan.activations.tile_n);
            inv.weights = {w.buffer, w.offset + plan.weights.mat_bytes * plan.weight_matrix(s)};
            inv.activations = {scratch.get(), p.act_offset + plan.activations.total_bytes * s};
            inv.out = {out.buffer, out.offset + i2 * dst->nb[2] + i3 * dst->nb[3]};
            inv.m = dst->ne[0];
            inv.n = dst->ne[1];
            inv.m_tiles = plan.weights.m_tiles;
            inv.n_tiles = plan.activations.n_pad / inv.tile.n;
            inv.k_tiles = plan.weights.k_tiles;
            inv.weight_tile_bytes = plan.weights.tile_bytes;
            inv.act_row_bytes = plan.activations.row_bytes;
            inv.out_row_stride = static_cast<int64_t>(dst->nb[1] / sizeof(float));
            batch.matmuls.push_back(inv);
        }
    }
    pending.clear();

    std::lock_guard<std::mutex> lock(dev.run_mutex);
    const Status st = dev.device->run(batch, timeout);
    if (!st.ok) {
        GGML_LOG_ERROR("xdna: device run failed: %s\n", st.message.c_str());
        return GGML_STATUS_FAILED;
    }
    return GGML_STATUS_SUCCESS;
}

ggml_status BackendContext::compute(ggml_cgraph * graph) {
    for (int i = 0; i < graph->n_nodes; ++i) {
        ggml_tensor * node = graph->nodes[i];
        if ((node->flags & GGML_TENSOR_FLAG_COMPUTE) == 0) {
            continue;
        }
        switch (node->op) {
            case GGML_OP_NONE:
            case GGML_OP_RESHAPE:
            case GGML_OP_VIEW:
            case GGML_OP_PERMUTE:
            case GGML_OP_TRANSPOSE:
                break;
            case GGML_OP_MUL_MAT: {
                // A matmul reading the output of one still pending must wait for that batch.
                if (depends_on_pending(node->src[0]) || depends_on_pending(node->src[1])) {
                    const ggml_status st = flush();
                    if (st != GGML_STATUS_SUCCESS) {
                        return st;
                    }
                }
                PendingMatmul p{node, {}};
                std::string why;
                if (!plan_matmul(node, p.plan, why)) {
                    GGML_LOG_ERROR("xdna: %s: cannot plan: %s\n", node->name, why.c_str());
                    pending.clear();
                    return GGML_STATUS_FAILED;
                }
                pending.push_back(std::move(p));
                break;
            }
            default:
                GGML_LOG_ERROR("xdna: unsupported op %s reached the backend\n", ggml_op_desc(node));
                pending.clear();
                return GGML_STATUS_FAILED;
        }
    }
    return flush();
}

BackendContext * ctx_of(ggml_backend_t backend) {
    return static_cast<BackendContext *>(backend->context);
}

const char * backend_get_name(ggml_backend_t backend) {
    return ctx_of(backend)->dev.name.c_str();
}

void backend_free(ggml_backend_t backend) {
    delete ctx_of(backend);
    delete backend;
}

ggml_status backend_graph_compute(ggml_backend_t backend, ggml_cgraph * graph) {
    return ctx_of(backend)->compute(graph);
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
    /* .graph_optimize      = */ nullptr,
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

}  // namespace xdna
