// XDNA buffer type: device-visible memory that holds both the model's weights and activations.
//
// When the buffer's usage is WEIGHTS (llama.cpp's model loader sets it before loading), set_tensor
// converts each weight matrix of a type with an NPU contract into the packed tile layout, once, in place:
// the buffer holds the only copy. get_tensor undoes the conversion byte-exactly, so the scheduler
// can still hand a weight to the CPU. Every other buffer is plain memory in ggml's layout.
#include "glue/xdna-device-context.h"

#include "contracts/weight-layout.h"
#include "plan/weight-packing.h"
#include "runtime/options.h"

#include "ggml-impl.h"

#include <algorithm>
#include <deque>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace xdna {

namespace {

constexpr size_t kAlignment = 64;

// A packed tensor whose tile padding is zeroed: keyed by where its data starts, with its layout. Keyed by
// memory, not by tensor pointer: a ggml_tensor struct may be reused at the same address for another
// tensor (and another tensor may occupy this memory later).
struct ClearedPadding {
    size_t       end;  // data + L.total_bytes, as an offset in the buffer
    WeightLayout layout;
};

struct XdnaBufferContext {
    std::unique_ptr<DeviceBuffer>    memory;
    std::mutex                       mutex;
    std::map<size_t, ClearedPadding> padding_cleared;  // by buffer offset of the packed tensor's data

    // Forget every cleared region overlapping [begin, end): something else was written there.
    void forget_overlapping(size_t begin, size_t end) {
        auto it = padding_cleared.lower_bound(begin);
        if (it != padding_cleared.begin() && std::prev(it)->second.end > begin) {
            --it;
        }
        while (it != padding_cleared.end() && it->first < end) {
            it = padding_cleared.erase(it);
        }
    }
};

bool same_layout(const WeightLayout & a, const WeightLayout & b) {
    return a.type == b.type && a.k == b.k && a.rows == b.rows && a.mats == b.mats && a.total_bytes == b.total_bytes;
}

XdnaBufferContext * ctx_of(ggml_backend_buffer_t buffer) {
    return static_cast<XdnaBufferContext *>(buffer->context);
}

// Packed layout of a tensor that could be a weight: the layout the ops that consume weights choose
// (plan/weight-packing.h; today the matmul's, for the matrices of a contract type). A vector in a weight
// buffer (a norm weight, a bias, RoPE frequency factors) matches no rule and is read in ggml's layout.
//
// The size a buffer type reserves cannot depend on the buffer's usage (ggml asks before the buffer
// exists), so every such leaf is reserved at its packed size, in compute buffers too.
bool packable_layout(const ggml_tensor * t, WeightLayout & L) {
    return packed_layout_for(t, L);
}

// The log of freed device buffers (see buffers_freed_since). Bounded: a backend that has not looked
// for this many frees drops all its plans instead.
constexpr size_t kFreeLogCapacity = 4096;

struct FreeLog {
    std::mutex                         mutex;
    uint64_t                           next = 0;  // sequence number of the next free
    std::deque<const DeviceBuffer *>   freed;     // frees [next - freed.size(), next)
};

FreeLog & free_log() {
    static FreeLog log;
    return log;
}

void buffer_free(ggml_backend_buffer_t buffer) {
    XdnaBufferContext * ctx = ctx_of(buffer);
    {
        FreeLog & log = free_log();
        std::lock_guard<std::mutex> lock(log.mutex);
        log.freed.push_back(ctx->memory.get());
        if (log.freed.size() > kFreeLogCapacity) {
            log.freed.pop_front();
        }
        ++log.next;
    }
    delete ctx;
}

void * buffer_get_base(ggml_backend_buffer_t buffer) {
    return ctx_of(buffer)->memory->host_ptr();
}

size_t tensor_offset(ggml_backend_buffer_t buffer, const ggml_tensor * t) {
    return static_cast<const char *>(t->data) - static_cast<const char *>(buffer_get_base(buffer));
}

void ensure_padding_cleared(ggml_backend_buffer_t buffer, const ggml_tensor * t, const WeightLayout & L) {
    auto * ctx = ctx_of(buffer);
    const size_t begin = tensor_offset(buffer, t);
    std::lock_guard<std::mutex> lock(ctx->mutex);
    auto it = ctx->padding_cleared.find(begin);
    if (it != ctx->padding_cleared.end() && it->second.end == begin + L.total_bytes && same_layout(it->second.layout, L)) {
        return;
    }
    ctx->forget_overlapping(begin, begin + L.total_bytes);
    clear_weight_padding(L, t->data);
    ctx->padding_cleared.emplace(begin, ClearedPadding{begin + L.total_bytes, L});
}

void warn_if_malformed(const ggml_tensor * t, const void * data, size_t offset, size_t size) {
    // A NaN/Inf block scale is stored faithfully (the CPU would compute NaN from it too), but say so.
    // Every whole block inside the write is checked, whatever the write's alignment (a loader may upload
    // in chunks that split rows); only a block split between two writes goes unchecked.
    const size_t block = ggml_type_size(t->type);
    const size_t first = (offset + block - 1) / block * block;
    const size_t last = (offset + size) / block * block;
    if (last > first && !ggml_validate_row_data(t->type, static_cast<const char *>(data) + (first - offset), last - first)) {
        GGML_LOG_WARN("xdna: tensor '%s' (%s) holds NaN/Inf values or block scales; stored unchanged\n", t->name,
                      ggml_type_name(t->type));
    }
}

void buffer_set_tensor(ggml_backend_buffer_t buffer, ggml_tensor * t, const void * data, size_t offset, size_t size) {
    DeviceBuffer * mem = ctx_of(buffer)->memory.get();
    WeightLayout L;
    if (t->view_src != nullptr && tensor_is_packed(t->view_src) && make_weight_layout(t->view_src->type, t->view_src->ne, L)) {
        warn_if_malformed(t->view_src, data, t->view_offs + offset, size);
        ensure_padding_cleared(buffer, t->view_src, L);
        pack_weight_bytes(L, data, t->view_offs + offset, size, t->view_src->data);
        mem->sync_to_device(tensor_offset(buffer, t->view_src), L.total_bytes);
        return;
    }
    if (tensor_is_packed(t) && make_weight_layout(t->type, t->ne, L)) {
        GGML_ASSERT(tensor_offset(buffer, t) + L.total_bytes <= buffer->size);
        warn_if_malformed(t, data, offset, size);
        ensure_padding_cleared(buffer, t, L);
        pack_weight_bytes(L, data, offset, size, t->data);
        // The packed pieces of a partial write are scattered over the whole packed tensor.
        mem->sync_to_device(tensor_offset(buffer, t), L.total_bytes);
        return;
    }
    {
        // Plain bytes over memory a packed tensor used: its cleared padding is gone.
        auto * ctx = ctx_of(buffer);
        std::lock_guard<std::mutex> lock(ctx->mutex);
        ctx->forget_overlapping(tensor_offset(buffer, t) + offset, tensor_offset(buffer, t) + offset + size);
    }
    std::memcpy(static_cast<char *>(t->data) + offset, data, size);
    mem->sync_to_device(tensor_offset(buffer, t) + offset, size);
}

void buffer_get_tensor(ggml_backend_buffer_t buffer, const ggml_tensor * t, void * data, size_t offset, size_t size) {
    WeightLayout L;
    if (t->view_src != nullptr && tensor_is_packed(t->view_src) && make_weight_layout(t->view_src->type, t->view_src->ne, L)) {
        unpack_weight_bytes(L, t->view_src->data, t->view_offs + offset, size, data);
        return;
    }
    if (tensor_is_packed(t) && make_weight_layout(t->type, t->ne, L)) {
        unpack_weight_bytes(L, t->data, offset, size, data);
        return;
    }
    // Results the device wrote must be visible to the host first.
    ctx_of(buffer)->memory->sync_from_device(tensor_offset(buffer, t) + offset, size);
    std::memcpy(data, static_cast<const char *>(t->data) + offset, size);
}

void buffer_memset_tensor(ggml_backend_buffer_t buffer, ggml_tensor * t, uint8_t value, size_t offset, size_t size) {
    if (tensor_is_packed(t) || (t->view_src != nullptr && tensor_is_packed(t->view_src))) {
        // Packed: the bytes go to their packed positions, a bounded piece at a time (not a temporary as
        // large as the write, which can be a whole weight).
        constexpr size_t kPiece = 64 * 1024;
        const std::vector<uint8_t> bytes(std::min(size, kPiece), value);
        for (size_t done = 0; done < size; done += kPiece) {
            buffer_set_tensor(buffer, t, bytes.data(), offset + done, std::min(kPiece, size - done));
        }
        return;
    }
    {
        auto * ctx = ctx_of(buffer);
        std::lock_guard<std::mutex> lock(ctx->mutex);
        ctx->forget_overlapping(tensor_offset(buffer, t) + offset, tensor_offset(buffer, t) + offset + size);
    }
    std::memset(static_cast<char *>(t->data) + offset, value, size);
    ctx_of(buffer)->memory->sync_to_device(tensor_offset(buffer, t) + offset, size);
}

bool buffer_cpy_tensor(ggml_backend_buffer_t buffer, const ggml_tensor * src, ggml_tensor * dst) {
    if (src->buffer == nullptr || !ggml_backend_buffer_is_host(src->buffer) || !ggml_is_contiguous(src)) {
        return false;  // ggml falls back to get_tensor + set_tensor
    }
    buffer_set_tensor(buffer, dst, src->data, 0, ggml_nbytes(src));
    return true;
}

void buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    auto * ctx = ctx_of(buffer);
    std::lock_guard<std::mutex> lock(ctx->mutex);
    std::memset(ctx->memory->host_ptr(), value, buffer->size);
    if (value != 0) {
        // The padding of the packed weights known here now holds `value`: zero it again, or a K padding
        // of non-zero (possibly NaN) scales would reach the kernels.
        char * base = static_cast<char *>(ctx->memory->host_ptr());
        for (const auto & [begin, cleared] : ctx->padding_cleared) {
            clear_weight_padding(cleared.layout, base + begin);
        }
    }
    ctx->memory->sync_to_device(0, buffer->size);
}

void buffer_reset(ggml_backend_buffer_t buffer) {
    auto * ctx = ctx_of(buffer);
    std::lock_guard<std::mutex> lock(ctx->mutex);
    ctx->padding_cleared.clear();
}

const ggml_backend_buffer_i kBufferInterface = {
    /* .free_buffer     = */ buffer_free,
    /* .get_base        = */ buffer_get_base,
    /* .init_tensor     = */ nullptr,
    /* .memset_tensor   = */ buffer_memset_tensor,
    /* .set_tensor      = */ buffer_set_tensor,
    /* .get_tensor      = */ buffer_get_tensor,
    /* .set_tensor_2d   = */ nullptr,
    /* .get_tensor_2d   = */ nullptr,
    /* .cpy_tensor      = */ buffer_cpy_tensor,
    /* .clear           = */ buffer_clear,
    /* .reset           = */ buffer_reset,
};

const char * buft_get_name(ggml_backend_buffer_type_t buft) {
    return static_cast<XdnaDeviceContext *>(buft->context)->name.c_str();
}

size_t buft_get_max_size(ggml_backend_buffer_type_t);

ggml_backend_buffer_t buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    auto * dctx = static_cast<XdnaDeviceContext *>(buft->context);
    auto ctx = std::make_unique<XdnaBufferContext>();
    ctx->memory = dctx->device->allocate(size, BufferRole::data);
    if (!ctx->memory) {
        GGML_LOG_ERROR("xdna: failed to allocate %zu bytes of device memory\n", size);
        return nullptr;
    }
    GGML_LOG_DEBUG("xdna: allocated a buffer of %zu bytes (at most %zu)\n", size, buft_get_max_size(buft));
    return ggml_backend_buffer_init(buft, kBufferInterface, ctx.release(), size);
}

size_t buft_get_alignment(ggml_backend_buffer_type_t) {
    return kAlignment;
}

size_t buft_get_alloc_size(ggml_backend_buffer_type_t, const ggml_tensor * t) {
    WeightLayout L;
    size_t bytes = ggml_nbytes(t);
    if (packable_layout(t, L) && L.total_bytes > bytes) {
        bytes = L.total_bytes;
    }
    return bytes;
}

// One buffer is one kernel argument, whose operands the control code addresses by their offsets in it:
// those must fit 32 bits, so no buffer is larger than 4 GiB (GGML_XDNA_MAX_BUFFER_MB). ggml splits what is
// larger (ggml_backend_alloc_ctx_tensors_from_buft for weights and the KV cache, ggml-alloc's chunks for
// compute buffers); no tensor spans two buffers.
size_t buft_get_max_size(ggml_backend_buffer_type_t) {
    static const size_t max = [] {
        const OptionValue<size_t> o = max_buffer_option();
        report_option_error(o.error);
        return o.value;
    }();
    return max;
}

bool buft_is_host(ggml_backend_buffer_type_t) {
    // Not host memory in ggml's sense: weights are not in ggml's layout, so nobody may read them directly.
    return false;
}

}  // namespace

void init_buffer_type(XdnaDeviceContext & ctx, ggml_backend_dev_t dev) {
    ctx.buffer_type.iface = {
        /* .get_name       = */ buft_get_name,
        /* .alloc_buffer   = */ buft_alloc_buffer,
        /* .get_alignment  = */ buft_get_alignment,
        /* .get_max_size   = */ buft_get_max_size,
        /* .get_alloc_size = */ buft_get_alloc_size,
        /* .is_host        = */ buft_is_host,
    };
    ctx.buffer_type.device = dev;
    ctx.buffer_type.context = &ctx;
}

bool buffers_freed_since(uint64_t & seen, std::vector<const DeviceBuffer *> & freed) {
    FreeLog & log = free_log();
    std::lock_guard<std::mutex> lock(log.mutex);
    freed.clear();
    const uint64_t first = log.next - log.freed.size();
    const bool complete = seen >= first;
    for (uint64_t i = std::max(seen, first); i < log.next; ++i) {
        freed.push_back(log.freed[i - first]);
    }
    seen = log.next;
    return complete;
}

bool is_xdna_buffer(ggml_backend_buffer_t buffer) {
    return buffer != nullptr && buffer->iface.get_base == buffer_get_base;
}

DeviceBuffer * device_buffer_of(ggml_backend_buffer_t buffer) {
    return is_xdna_buffer(buffer) ? ctx_of(buffer)->memory.get() : nullptr;
}

bool tensor_is_packed(const ggml_tensor * t) {
    WeightLayout L;
    return t->buffer != nullptr && is_xdna_buffer(t->buffer) &&
           ggml_backend_buffer_get_usage(t->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS && packable_layout(t, L);
}

TensorResolver make_tensor_resolver(XdnaDeviceContext & ctx) {
    TensorResolver r;
    r.slice_of = [](const ggml_tensor * t) -> BufferSlice {
        DeviceBuffer * buf = device_buffer_of(t->buffer);
        if (buf == nullptr) {
            return {};
        }
        return {buf, static_cast<size_t>(static_cast<const char *>(t->data) - static_cast<const char *>(buf->host_ptr()))};
    };
    r.is_packed = tensor_is_packed;
    Device * device = ctx.device.get();
    r.has_kernel = [device](const KernelKey & key) { return device->has_kernel(key); };
    r.has_kernel_in_layout = [device](const KernelKey & key, const std::string & layout) {
        return device->has_kernel_in_layout(key, layout);
    };
    return r;
}

}  // namespace xdna
