// ggml registry "XDNA" and its device: what llama.cpp sees when it loads libggml-xdna.so.
//
// The device registers as a GPU by default (GGML_XDNA_DEVICE_TYPE): llama.cpp's -ngl (all layers by
// default) then gives it the layers, the output layer and the KV cache, and a whole forward pass reaches
// one graph_compute. It claims every op the NPU runs (the matmuls) and every op the host-op path can
// compute on the device's own memory (glue/host-ops.h). As an ACCEL device (GGML_XDNA_DEVICE_TYPE=accel)
// llama.cpp adds it to every context beside the CPU and offers its buffer type first for weights: the
// matmul weights reach it, every other op and the KV cache stay on the CPU.
#include "ggml-xdna.h"
#include "glue/host-ops.h"
#include "glue/xdna-backend.h"
#include "glue/xdna-device-context.h"

#include "devices/open-device.h"
#include "plan/op-support.h"
#include "runtime/options.h"
#include "runtime/runtime-log.h"

#include "ggml-impl.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unistd.h>

namespace xdna {

namespace {

XdnaDeviceContext * dctx(ggml_backend_dev_t dev) {
    return static_cast<XdnaDeviceContext *>(dev->context);
}

const char * dev_get_name(ggml_backend_dev_t dev) {
    return dctx(dev)->name.c_str();
}

const char * dev_get_description(ggml_backend_dev_t dev) {
    return dctx(dev)->description.c_str();
}

// MemAvailable of /proc/meminfo in bytes (memory the kernel can hand out without swapping, page cache
// included: the model file llama.cpp has just mmap'd is in it), 0 if unknown.
size_t mem_available_bytes() {
    size_t bytes = 0;
    if (FILE * f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        unsigned long long kb = 0;
        while (std::fgets(line, sizeof line, f) != nullptr) {
            if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                bytes = static_cast<size_t>(kb) * 1024;
                break;
            }
        }
        std::fclose(f);
    }
    return bytes;
}

void dev_get_memory(ggml_backend_dev_t, size_t * free, size_t * total) {
    // What the NPU can address. It has no memory of its own: its DMA reaches system memory through the
    // IOMMU, and on Linux an XRT buffer object is pinned system memory with no carve-out that this
    // project knows of (a reading, not a maintainer's statement: amd/xdna-driver issue 57). FastFlowLM
    // documents "under 50% of DRAM" for its runtime; inferred here to be a Windows shared-memory limit,
    // not one of the Linux driver. So total is the system's memory and free is what the kernel can still
    // give without swapping (MemAvailable, not MemFree, which leaves out the page cache that holds the
    // mmap'd model). Device and host share this memory: a user who fits a model must not count it twice.
    // Unverified on hardware: a driver limit would lower both.
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGE_SIZE);
    *total = pages > 0 ? static_cast<size_t>(pages) * page : 0;
    size_t avail = mem_available_bytes();
    if (avail == 0) {
        const long av = sysconf(_SC_AVPHYS_PAGES);
        avail = av > 0 ? static_cast<size_t>(av) * page : 0;
    }
    *free = std::min(avail, *total);
}

enum ggml_backend_dev_type dev_get_type(ggml_backend_dev_t dev) {
    return dctx(dev)->owns_layers ? GGML_BACKEND_DEVICE_TYPE_GPU : GGML_BACKEND_DEVICE_TYPE_ACCEL;
}

void dev_get_props(ggml_backend_dev_t dev, ggml_backend_dev_props * props) {
    props->name = dev_get_name(dev);
    props->description = dev_get_description(dev);
    props->type = dev_get_type(dev);
    props->device_id = nullptr;
    dev_get_memory(dev, &props->memory_free, &props->memory_total);
    props->caps = {
        /* .async                = */ false,
        /* .host_buffer          = */ false,
        // No buffer_from_host_ptr: wrapping mmap'd file memory would skip set_tensor, and with it the
        // one-time conversion of the weights into the kernels' layout.
        /* .buffer_from_host_ptr = */ false,
        /* .events               = */ false,
        /* .mmap_support         = */ true,
    };
}

ggml_backend_t dev_init_backend(ggml_backend_dev_t dev, const char *) {
    return make_backend(*dctx(dev), dev);
}

ggml_backend_buffer_type_t dev_get_buffer_type(ggml_backend_dev_t dev) {
    return &dctx(dev)->buffer_type;
}

// Why an op is refused, at debug level (shown by llama.cpp's tools with -v / --verbose). Once per
// distinct reason: the scheduler asks about every node of every graph.
void log_refusal(const ggml_tensor * op, const std::string & why) {
    static std::mutex            mutex;
    static std::set<std::string> logged;
    std::lock_guard<std::mutex>  lock(mutex);
    if (logged.insert(why).second) {
        GGML_LOG_DEBUG("xdna: %s (%s) refused: %s (each reason logged once)\n", ggml_op_desc(op), op->name,
                       why.c_str());
    }
}

// The NPU's ops first; as a device that owns layers, also every op the host-op path can compute where
// its tensors are (the KV cache ops among them: refusing one would abort ggml's scheduler).
bool dev_supports_op(ggml_backend_dev_t dev, const ggml_tensor * op) {
    std::string why;
    if (op_supported(op, dctx(dev)->resolver, why)) {
        return true;
    }
    if (dctx(dev)->owns_layers) {
        std::string host_why;
        if (HostOps::supports(op, host_why)) {
            return true;
        }
        why += "; host-op path: " + host_why;
    }
    log_refusal(op, why);
    return false;
}

bool dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    return buft == &dctx(dev)->buffer_type;
}

const ggml_backend_device_i kDeviceInterface = {
    /* .get_name             = */ dev_get_name,
    /* .get_description      = */ dev_get_description,
    /* .get_memory           = */ dev_get_memory,
    /* .get_type             = */ dev_get_type,
    /* .get_props            = */ dev_get_props,
    /* .init_backend         = */ dev_init_backend,
    /* .get_buffer_type      = */ dev_get_buffer_type,
    /* .get_host_buffer_type = */ nullptr,
    /* .buffer_from_host_ptr = */ nullptr,
    /* .supports_op          = */ dev_supports_op,
    /* .supports_buft        = */ dev_supports_buft,
    /* .offload_op           = */ nullptr,
    /* .event_new            = */ nullptr,
    /* .event_free           = */ nullptr,
    /* .event_synchronize    = */ nullptr,
};

struct Registry {
    std::unique_ptr<XdnaDeviceContext> context;
    ggml_backend_device                device{};
    bool                               has_device = false;
};

// Which device GGML_XDNA_DEVICE asks for. Unknown values are an error naming the accepted ones.
// Whether the device registers as a GPU that owns layers (GGML_XDNA_DEVICE_TYPE). Owning layers needs
// the host-op path, so GGML_XDNA_DEVICE_TYPE=gpu with GGML_XDNA_HOST_OPS=off is an error and accel applies.
bool device_owns_layers() {
    const OptionValue<std::string> type = device_type_option();
    report_option_error(type.error, type.value);
    const OptionValue<std::string> host = host_ops_option();
    if (type.value == "gpu" && host.value == "off") {
        GGML_LOG_ERROR("xdna: GGML_XDNA_DEVICE_TYPE=gpu needs the host-op path (GGML_XDNA_HOST_OPS=off is set); "
                       "registering as accel\n");
        return false;
    }
    return type.value == "gpu";
}

bool parse_device_choice(DeviceChoice & choice) {
    const OptionValue<DeviceChoice> opt = device_option();
    if (!opt.error.empty()) {
        GGML_LOG_ERROR("xdna: %s. No XDNA device registered.\n", opt.error.c_str());
        return false;
    }
    choice = opt.value;
    return true;
}

std::unique_ptr<Device> open_chosen_device(DeviceChoice choice) {
    std::string why;
    if (choice == DeviceChoice::sim) {
        auto d = open_device(DeviceKind::sim, why);
        if (!d) {
            GGML_LOG_ERROR("xdna: simulator unavailable: %s\n", why.c_str());
        }
        return d;
    }
    auto d = open_device(DeviceKind::xrt, why);
    if (!d) {
        if (choice == DeviceChoice::xrt) {
            GGML_LOG_ERROR("xdna: no XDNA NPU: %s\n", why.c_str());
        } else {
            GGML_LOG_INFO("xdna: no XDNA NPU (%s); no device registered. Set GGML_XDNA_DEVICE=sim to use the simulator.\n",
                          why.c_str());
        }
    }
    return d;
}

const char * reg_get_name(ggml_backend_reg_t) {
    return "XDNA";
}

Registry & registry_state(ggml_backend_reg_t reg) {
    return *static_cast<Registry *>(reg->context);
}

size_t reg_get_device_count(ggml_backend_reg_t reg) {
    return registry_state(reg).has_device ? 1 : 0;
}

ggml_backend_dev_t reg_get_device(ggml_backend_reg_t reg, size_t index) {
    GGML_ASSERT(index < reg_get_device_count(reg));
    return &registry_state(reg).device;
}

// Extensions for this project's tools and tests (see include/ggml-xdna.h).
uint64_t plans_built(ggml_backend_t backend) {
    return backend_plans_built(backend);
}

uint64_t graph_plans_built(ggml_backend_t backend) {
    return backend_graph_plans_built(backend);
}

uint64_t fallback_runs(ggml_backend_t backend) {
    return backend_fallback_runs(backend);
}

size_t plans_cached(ggml_backend_t backend) {
    return backend_plans_cached(backend);
}

bool set_skip_kernels(ggml_backend_dev_t dev, bool skip) {
    return dev != nullptr && dev->iface.get_name == dev_get_name && dctx(dev)->device->set_skip_kernels(skip);
}

bool set_fail_runs(ggml_backend_dev_t dev, bool fail) {
    return dev != nullptr && dev->iface.get_name == dev_get_name && dctx(dev)->device->set_fail_runs(fail);
}

void * reg_get_proc_address(ggml_backend_reg_t, const char * name) {
    if (std::strcmp(name, "ggml_backend_xdna_set_fail_runs") == 0) {
        return reinterpret_cast<void *>(set_fail_runs);
    }
    if (std::strcmp(name, "ggml_backend_xdna_plans_built") == 0) {
        return reinterpret_cast<void *>(plans_built);
    }
    if (std::strcmp(name, "ggml_backend_xdna_graph_plans_built") == 0) {
        return reinterpret_cast<void *>(graph_plans_built);
    }
    if (std::strcmp(name, "ggml_backend_xdna_fallback_runs") == 0) {
        return reinterpret_cast<void *>(fallback_runs);
    }
    if (std::strcmp(name, "ggml_backend_xdna_plans_cached") == 0) {
        return reinterpret_cast<void *>(plans_cached);
    }
    if (std::strcmp(name, "ggml_backend_xdna_set_skip_kernels") == 0) {
        return reinterpret_cast<void *>(set_skip_kernels);
    }
    return nullptr;
}

const ggml_backend_reg_i kRegistryInterface = {
    /* .get_name         = */ reg_get_name,
    /* .get_device_count = */ reg_get_device_count,
    /* .get_device       = */ reg_get_device,
    /* .get_proc_address = */ reg_get_proc_address,
};

}  // namespace

}  // namespace xdna

ggml_backend_reg_t ggml_backend_xdna_reg(void) {
    using namespace xdna;
    static Registry state;
    static ggml_backend_reg reg = {
        /* .api_version = */ GGML_BACKEND_API_VERSION,
        /* .iface       = */ kRegistryInterface,
        /* .context     = */ &state,
    };
    static bool initialized = [] {
        // The runtime layer's one-line reports go where ggml logs.
        set_runtime_log_sink([](LogLevel level, const std::string & msg) {
            switch (level) {
                case LogLevel::debug: GGML_LOG_DEBUG("xdna: %s\n", msg.c_str()); break;
                case LogLevel::info: GGML_LOG_INFO("xdna: %s\n", msg.c_str()); break;
                case LogLevel::warn: GGML_LOG_WARN("xdna: %s\n", msg.c_str()); break;
                case LogLevel::error: GGML_LOG_ERROR("xdna: %s\n", msg.c_str()); break;
            }
        });
        DeviceChoice choice = DeviceChoice::automatic;
        if (!parse_device_choice(choice)) {
            return true;
        }
        std::unique_ptr<Device> device = open_chosen_device(choice);
        if (!device) {
            return true;
        }
        state.context = std::make_unique<XdnaDeviceContext>();
        state.context->device = std::move(device);
        state.context->resolver = make_tensor_resolver(*state.context);
        state.context->name = state.context->device->info().name;
        state.context->description = state.context->device->info().description;
        state.context->owns_layers = device_owns_layers();
        state.device = {kDeviceInterface, &reg, state.context.get()};
        init_buffer_type(*state.context, &state.device);
        state.has_device = true;
        GGML_LOG_INFO("xdna: device %s: %s (registered as %s)\n", state.context->name.c_str(),
                      state.context->description.c_str(), state.context->owns_layers ? "gpu: it takes layers" : "accel");
        return true;
    }();
    (void) initialized;
    return &reg;
}

GGML_BACKEND_DL_IMPL(ggml_backend_xdna_reg)
