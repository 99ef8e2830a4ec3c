#include "runtime/invocation.h"

#include "ggml.h"

#include <cstdio>
#include <cstring>

namespace xdna {

const char * kernel_kind_name(KernelKind kind) {
    switch (kind) {
        case KernelKind::matmul: return "matmul";
    }
    return "?";
}

namespace {
bool same_str(const char * a, const char * b) {
    return a == b || (a != nullptr && b != nullptr && std::strcmp(a, b) == 0);
}
}  // namespace

bool same_key(const KernelKey & a, const KernelKey & b) {
    return a.kind == b.kind && same_str(a.design, b.design) && same_str(a.variant, b.variant) && a.tile.m == b.tile.m &&
           a.tile.n == b.tile.n && a.tile.k == b.tile.k;
}

const Operand * Invocation::operand(const char * role) const {
    for (const Operand & o : operands()) {
        if (same_str(o.role, role)) {
            return &o;
        }
    }
    return nullptr;
}

void Invocation::add_operand(const Operand & o) {
    GGML_ASSERT(n_operands < kMaxOperands && "a kernel kind with more operands than Invocation::kMaxOperands");
    operand_slots[n_operands++] = o;
}

std::string Invocation::shape_label() const {
    char buf[96];
    switch (kind()) {
        case KernelKind::matmul: {
            const MatmulParams & p = std::get<MatmulParams>(params);
            std::snprintf(buf, sizeof buf, "%6lld x %4lld x %5lld", static_cast<long long>(p.m),
                          static_cast<long long>(p.n), static_cast<long long>(p.k_tiles * key.tile.k));
            return buf;
        }
    }
    return {};
}

uint64_t Invocation::macs() const {
    switch (kind()) {
        case KernelKind::matmul: {
            const MatmulParams & p = std::get<MatmulParams>(params);
            return static_cast<uint64_t>(p.m_tiles * key.tile.m) * (p.n_tiles * key.tile.n) * (p.k_tiles * key.tile.k);
        }
    }
    return 0;
}

uint64_t Invocation::bytes_read() const {
    uint64_t n = 0;
    for (const Operand & o : operands()) {
        n += o.written() ? 0 : o.bytes();
    }
    return n;
}

uint64_t Invocation::bytes_written() const {
    uint64_t n = 0;
    for (const Operand & o : operands()) {
        n += o.written() ? o.bytes() : 0;
    }
    return n;
}

}  // namespace xdna
