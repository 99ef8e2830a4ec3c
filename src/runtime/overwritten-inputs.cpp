#include "runtime/overwritten-inputs.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace xdna {

namespace {

struct Span {
    const DeviceBuffer * buffer;
    uint64_t             begin, end;
};

Span span_of(const Operand & o) { return {o.slice.buffer, o.slice.offset, o.slice.offset + o.extent()}; }

bool overlap(const Span & a, const Span & b) { return a.buffer == b.buffer && a.begin < b.end && b.begin < a.end; }

// Every byte of its extent is written: all rows, and no gaps between them.
bool writes_in_full(const Operand & o) {
    return o.written() && o.slice.buffer != nullptr && o.rows_moved < 0 && (o.rows <= 1 || o.row_stride == o.row_bytes);
}

// Whether the union of `written` covers `s`.
bool covered(const Span & s, const std::vector<Span> & written) {
    std::vector<std::pair<uint64_t, uint64_t>> parts;
    for (const Span & w : written) {
        if (overlap(w, s)) parts.emplace_back(w.begin, w.end);
    }
    std::sort(parts.begin(), parts.end());
    uint64_t reached = s.begin;
    for (const auto & [b, e] : parts) {
        if (b > reached) return false;
        reached = std::max(reached, e);
        if (reached >= s.end) return true;
    }
    return reached >= s.end;
}

}  // namespace

void OverwrittenInputs::save(const Batch & batch) {
    regions_.clear();
    used_ = 0;
    std::vector<Span> writes;  // everything the batch writes, any stage
    for (const Invocation & inv : batch.invocations) {
        for (const Operand & o : inv.operands()) {
            if (o.written() && o.slice.buffer != nullptr && o.extent() > 0) writes.push_back(span_of(o));
        }
    }
    if (writes.empty()) return;

    std::vector<Span> earlier_full;  // written in full by the stages before the current one
    for (size_t s = 0; s < batch.stages(); ++s) {
        const size_t first = batch.stage_begin(s), last = batch.stage_end(s);
        for (size_t i = first; i < last; ++i) {
            for (const Operand & in : batch.invocations[i].operands()) {
                if (in.written() || in.slice.buffer == nullptr || in.extent() == 0) continue;
                const Span sp = span_of(in);
                if (std::none_of(writes.begin(), writes.end(), [&](const Span & w) { return overlap(w, sp); })) continue;
                if (covered(sp, earlier_full)) continue;  // recomputed before it is read again
                const bool have = std::any_of(regions_.begin(), regions_.end(), [&](const Region & r) {
                    return r.slice.buffer == in.slice.buffer && r.slice.offset == in.slice.offset && r.bytes == in.extent();
                });
                if (have) continue;
                regions_.push_back({in.slice, in.extent(), used_});
                used_ += in.extent();
            }
        }
        for (size_t i = first; i < last; ++i) {
            for (const Operand & o : batch.invocations[i].operands()) {
                if (writes_in_full(o) && o.extent() > 0) earlier_full.push_back(span_of(o));
            }
        }
    }
    if (arena_.size() < used_) arena_.resize(used_);
    for (const Region & r : regions_) {
        std::memcpy(arena_.data() + r.at, r.slice.host(), r.bytes);
    }
}

void OverwrittenInputs::restore() const {
    for (const Region & r : regions_) {
        std::memcpy(r.slice.host(), arena_.data() + r.at, r.bytes);
        r.slice.buffer->sync_to_device(r.slice.offset, r.bytes);
    }
}

}  // namespace xdna
