// What the host-built streams of the rows and norm movements (rows-sequence.cpp, norm-sequence.cpp)
// emit for a shim transfer: the BD's words and the patch that points it into a kernel argument, then
// the queue push that starts it as a task. Every BD is checked against the hardware's field widths
// first; the reason of a refusal lands in the sequence's error.
#pragma once

#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "runtime/design-description.h"

#include <cstdint>
#include <string>

namespace xdna {

struct ShimTaskEmitter {
    control::ControlStream stream;
    std::string            error;

    // BD `id` of `column` from `b`, pointed at argument `arg`, `offset` bytes in.
    bool bd(uint32_t column, uint32_t id, const control::ShimBdOrError & b, int arg, uint64_t offset, const std::string & what) {
        if (!b.ok()) {
            error = what + ": " + b.error;
            return false;
        }
        if (auto why = control::check_shim_bd(b.bd)) {
            error = what + ": " + *why;
            return false;
        }
        const auto words = control::encode_shim_bd(b.bd);
        const uint32_t addr = control::shim_bd_address(column, id);
        stream.ops.push_back(control::BlockWrite{addr, std::vector<uint32_t>(words.begin(), words.end())});
        stream.ops.push_back(control::AddressPatch{addr + 4, static_cast<uint32_t>(arg), offset});
        return true;
    }
    // Queue BD `id` on the channel of shim FIFO `f` as a task run repeat + 1 times.
    void push(uint32_t column, const FifoDesc & f, uint32_t id, bool token, uint32_t repeat) {
        const control::QueuePush q{id, repeat, token};
        stream.ops.push_back(control::Write32{
            control::shim_queue_address(column, f.shim_mm2s ? 1u : 0u, static_cast<uint32_t>(f.shim_channel)),
            control::encode_queue_push(q)});
    }
};

}  // namespace xdna
