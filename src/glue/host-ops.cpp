#include "glue/host-ops.h"

#include "glue/xdna-device-context.h"

#include "runtime/thread-pool.h"

#include "ggml-impl.h"

#include <atomic>
#include <set>

namespace xdna {

namespace {

// Log each distinct message once: an RPC server computes the same layers for every token.
void log_once(const std::string & message) {
    static std::mutex            mutex;
    static std::set<std::string> said;
    std::lock_guard<std::mutex>  lock(mutex);
    if (said.insert(message).second) {
        GGML_LOG_ERROR("%s\n", message.c_str());
    }
}

// The bytes of `t` inside its XDNA buffer: [offset, offset + size).
bool device_range(const ggml_tensor * t, DeviceBuffer *& mem, size_t & offset, size_t & size) {
    mem = device_buffer_of(t->buffer);
    if (mem == nullptr || t->data == nullptr) {
        return false;
    }
    offset = static_cast<size_t>(static_cast<const char *>(t->data) - static_cast<const char *>(mem->host_ptr()));
    size = ggml_nbytes(t);
    return true;
}

bool is_packed_or_view_of_packed(const ggml_tensor * t) {
    return tensor_is_packed(t) || (t->view_src != nullptr && tensor_is_packed(t->view_src));
}

// Why node `n` cannot be computed on the host ("" if it can): every tensor it touches must be plain
// host-addressable memory in ggml's layout.
std::string host_blocker(const ggml_tensor * n) {
    for (int s = -1; s < GGML_MAX_SRC; ++s) {
        const ggml_tensor * t = s < 0 ? n : n->src[s];
        if (t == nullptr) {
            continue;
        }
        if (is_packed_or_view_of_packed(t)) {
            return std::string("xdna: op ") + ggml_op_desc(n) + " ('" + n->name + "') reads '" + t->name +
                   "', a weight stored in the NPU tile layout; the host cannot compute it";
        }
        ggml_backend_buffer_t b = t->view_src != nullptr ? t->view_src->buffer : t->buffer;
        if (t->data != nullptr && b != nullptr && !is_xdna_buffer(b) && !ggml_backend_buffer_is_host(b)) {
            return std::string("xdna: op ") + ggml_op_desc(n) + " ('" + n->name + "') uses '" + t->name +
                   "' in a buffer of another device (" + ggml_backend_buffer_name(b) + "); the host cannot reach it";
        }
    }
    return {};
}

// ggml's CPU device, looked up until found (every stock tool loads it before it loads a model; a
// test may load it later), then kept: the registry never unloads a backend while others use it.
ggml_backend_dev_t cpu_device() {
    static std::atomic<ggml_backend_dev_t> found{nullptr};
    ggml_backend_dev_t dev = found.load();
    if (dev == nullptr) {
        dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
        found.store(dev);
    }
    return dev;
}

}  // namespace

bool HostOps::supports(const ggml_tensor * op, std::string & why) {
    why = host_blocker(op);
    if (!why.empty()) {
        return false;
    }
    ggml_backend_dev_t cpu = cpu_device();
    if (cpu == nullptr) {
        why = "no CPU backend is loaded in this process";
        return false;
    }
    if (!ggml_backend_dev_supports_op(cpu, op)) {
        why = std::string("the CPU backend does not support ") + ggml_op_desc(op) + " with these types";
        return false;
    }
    return true;
}

HostOps::~HostOps() {
    if (cpu_ != nullptr) {
        ggml_backend_free(cpu_);
    }
}

bool HostOps::ensure_backend() {
    if (cpu_ != nullptr) {
        return true;
    }
    if (init_failed_) {
        return false;
    }
    // Through the registry: a process that loaded backends (ggml_backend_load_all, as every stock tool
    // and ggml-rpc-server do) has the CPU backend's module loaded already.
    ggml_backend_dev_t dev = cpu_device();
    if (dev != nullptr) {
        cpu_ = ggml_backend_dev_init(dev, nullptr);
    }
    if (cpu_ == nullptr) {
        init_failed_ = true;
        log_once("xdna: ops other than MUL_MAT reached the XDNA backend and no CPU backend is loaded to compute "
                 "them (GGML_XDNA_HOST_OPS=cpu needs ggml's CPU backend in the same process)");
        return false;
    }
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    auto set_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"));
    if (set_threads != nullptr) {
        set_threads(cpu_, ThreadPool::default_threads());
    }
    GGML_LOG_INFO("xdna: ops the NPU does not run reached the XDNA backend (as they do from ggml's RPC server); "
                  "computing them on the host with %s (GGML_XDNA_HOST_OPS=off to refuse them)\n",
                  ggml_backend_name(cpu_));
    return true;
}

ggml_status HostOps::run(ggml_cgraph * graph, int i0, int i1) {
    for (int i = i0; i < i1; ++i) {
        const std::string why = host_blocker(graph->nodes[i]);
        if (!why.empty()) {
            log_once(why);
            return GGML_STATUS_FAILED;
        }
    }
    if (!ensure_backend()) {
        return GGML_STATUS_FAILED;
    }
    // Device writes (earlier submissions' outputs) must be visible to the host before it reads them.
    DeviceBuffer * mem = nullptr;
    size_t         off = 0, size = 0;
    for (int i = i0; i < i1; ++i) {
        for (const ggml_tensor * s : graph->nodes[i]->src) {
            if (s != nullptr && device_range(s, mem, off, size)) {
                mem->sync_from_device(off, size);
            }
        }
    }
    ggml_cgraph view = ggml_graph_view(graph, i0, i1);
    const ggml_status st = ggml_backend_graph_compute(cpu_, &view);
    if (st != GGML_STATUS_SUCCESS) {
        log_once(std::string("xdna: the CPU backend failed to compute ops of this graph: ") + ggml_status_to_string(st));
        return st;
    }
    for (int i = i0; i < i1; ++i) {
        if (device_range(graph->nodes[i], mem, off, size)) {
            mem->sync_to_device(off, size);
        }
    }
    nodes_run_ += static_cast<uint64_t>(i1 - i0);
    return GGML_STATUS_SUCCESS;
}

}  // namespace xdna
