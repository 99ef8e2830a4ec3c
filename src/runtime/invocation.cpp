#include "runtime/device.h"

namespace xdna {

const char * kernel_kind_name(KernelKind kind) {
    switch (kind) {
        case KernelKind::matmul: return "matmul";
    }
    return "?";
}

const char * Invocation::kernel_name() const {
    switch (kind) {
        case KernelKind::matmul: return matmul.contract ? matmul.contract->name : nullptr;
    }
    return nullptr;
}

std::vector<OperandRef> Invocation::operands() const {
    switch (kind) {
        case KernelKind::matmul:
            return {{"weights", matmul.weights, matmul.weight_bytes(), false},
                    {"activations", matmul.activations, matmul.activation_bytes(), false},
                    {"out", matmul.out, matmul.out_bytes(), true}};
    }
    return {};
}

uint64_t Invocation::macs() const {
    return kind == KernelKind::matmul ? matmul.macs() : 0;
}

uint64_t Invocation::bytes_read() const {
    uint64_t n = 0;
    for (const OperandRef & o : operands()) {
        n += o.written ? 0 : o.bytes;
    }
    return n;
}

uint64_t Invocation::bytes_written() const {
    uint64_t n = 0;
    for (const OperandRef & o : operands()) {
        n += o.written ? o.bytes : 0;
    }
    return n;
}

}  // namespace xdna
