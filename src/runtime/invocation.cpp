#include "runtime/invocation.h"

#include "ggml.h"

#include <cstdio>
#include <cstring>
#include <type_traits>
#include <utility>

namespace xdna {

namespace {
// Whether a parameter block has `runtime_words()` (the words its design's core program reads from it).
template <typename P, typename = void> struct GivesRuntimeWords : std::false_type {};
template <typename P>
struct GivesRuntimeWords<P, std::void_t<decltype(std::declval<const P &>().runtime_words())>> : std::true_type {};

// Whether a parameter block has `host_operand(inv, name, out, err)` (operands the host writes at submission).
template <typename P, typename = void> struct GivesHostOperands : std::false_type {};
template <typename P>
struct GivesHostOperands<P, std::void_t<decltype(std::declval<const P &>().host_operand(
                                std::declval<const Invocation &>(), std::declval<const std::string &>(),
                                std::declval<std::vector<uint8_t> &>(), std::declval<std::string &>()))>> : std::true_type {};

template <size_t... I> const char * kind_name_at(size_t i, std::index_sequence<I...>) {
    static const char * const names[] = {std::variant_alternative_t<I, KindParams>::kName...};
    return i < sizeof...(I) ? names[i] : "?";
}
}  // namespace

const char * kernel_kind_name(KernelKind kind) {
    return kind_name_at(static_cast<size_t>(kind), std::make_index_sequence<std::variant_size_v<KindParams>>{});
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
    return std::visit([&](const auto & p) { return p.shape_label(key.tile); }, params);
}

uint64_t Invocation::macs() const {
    return std::visit([&](const auto & p) { return p.macs(key.tile); }, params);
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

std::vector<std::pair<std::string, uint32_t>> Invocation::runtime_words() const {
    return std::visit(
        [](const auto & p) -> std::vector<std::pair<std::string, uint32_t>> {
            if constexpr (GivesRuntimeWords<std::decay_t<decltype(p)>>::value) {
                return p.runtime_words();
            } else {
                return {};
            }
        },
        params);
}

bool Invocation::host_operand(const std::string & name, std::vector<uint8_t> & out, std::string & err) const {
    return std::visit(
        [&](const auto & p) -> bool {
            if constexpr (GivesHostOperands<std::decay_t<decltype(p)>>::value) {
                return p.host_operand(*this, name, out, err);
            } else {
                err = std::string("a ") + p.kName + " invocation has no operand '" + name + "' the host writes";
                return false;
            }
        },
        params);
}

}  // namespace xdna
