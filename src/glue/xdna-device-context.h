// State shared by the ggml device, its buffer type and every backend (stream) created on it.
#pragma once

#include "plan/op-support.h"
#include "runtime/device.h"

#include "ggml-backend-impl.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace xdna {

struct XdnaDeviceContext {
    std::unique_ptr<Device>   device;
    TensorResolver            resolver;  // what supports_op and the planner ask of this device (op-support.h)
    std::string               name;
    std::string               description;
    ggml_backend_buffer_type  buffer_type{};
    std::mutex                run_mutex;  // one submission at a time per device
    bool                      owns_layers = false;  // registered as GPU (GGML_XDNA_DEVICE_TYPE=gpu)
};

// Buffer type of the device: weights (converted at load) and activations alike.
void init_buffer_type(XdnaDeviceContext & ctx, ggml_backend_dev_t dev);

// Cached plans hold pointers into device buffers, so a plan made before a buffer was freed may point at
// memory that is gone (or reused at the same address). Every free is logged with a sequence number;
// each backend drops only the plans that point into the buffers freed since it last looked.
// `seen` is the caller's position in the log, advanced to its end. Returns false when the log no
// longer reaches back to `seen` (many frees since): the caller must then drop every plan.
bool buffers_freed_since(uint64_t & seen, std::vector<const DeviceBuffer *> & freed);

// Whether `buffer` was allocated by an XDNA buffer type.
bool is_xdna_buffer(ggml_backend_buffer_t buffer);

// Device memory behind an XDNA ggml buffer.
DeviceBuffer * device_buffer_of(ggml_backend_buffer_t buffer);

// Whether `t` is stored in the packed weight layout: a whole (non-view) tensor of a type with an NPU
// contract in an XDNA buffer whose usage is WEIGHTS.
bool tensor_is_packed(const ggml_tensor * t);

// The device as the planner and the op predicate see it: tensors' device memory, packed weights, and
// `ctx.device`'s kernels.
TensorResolver make_tensor_resolver(XdnaDeviceContext & ctx);


}  // namespace xdna
