// Shim DMA buffer descriptors, queue pushes and their limits (shim-bd.h).
//
// Register facts, AIE2P (npu2), from Xilinx/aie-rt driver/src/global/xaie2pgbl_params.h at 3640b761ded1
// (npu1's xaiemlgbl_params.h has the same shim BD layout, so npu1 vectors check it too):
//   BD n of a shim tile at 0x1D000 + 0x20 n, 8 words:
//   w0 buffer_length[31:0]
//   w1 base_address_low[31:2]
//   w2 enable_packet[30] out_of_order_bd_id[29:24] packet_id[23:19] packet_type[18:16] base_address_high[15:0]
//   w3 secure_access[30] d0_wrap[29:20] d0_stepsize[19:0]
//   w4 burst_length[31:30] d1_wrap[29:20] d1_stepsize[19:0]
//   w5 smid[31:28] axcache[27:24] axqos[23:20] d2_stepsize[19:0]
//   w6 iteration_current[31:26] iteration_wrap[25:20] iteration_stepsize[19:0]
//   w7 tlast_suppress[31] next_bd[30:27] use_next_bd[26] valid_bd[25] lock_rel_value[24:18]
//      lock_rel_id[16:13] lock_acq_enable[12] lock_acq_value[11:5] lock_acq_id[3:0]
//   channel control / task queue: S2MM 0 at 0x1D200/0x1D204, S2MM 1 0x1D208/0x1D20C,
//                                 MM2S 0 at 0x1D210/0x1D214, MM2S 1 0x1D218/0x1D21C
//   task queue word: enable_token_issue[31] repeat_count[23:16] start_bd_id[3:0]
// Tile address: column << 25 | row << 20 (mlir-aie NPU2 target model; golden vectors agree).
// Limits (aie-rt Aie2PShimDmaProp): address 4-byte aligned below 2^48, stepsizes <= 2^20 - 1,
// wraps <= 1023, iteration wrap and current <= 63.
#include "control/shim-bd.h"

#include <string>

namespace xdna::control {

namespace {

constexpr uint32_t kShimBdBase = 0x1D000;
constexpr uint32_t kShimBdStride = 0x20;
constexpr uint32_t kShimS2mmQueue = 0x1D204;
constexpr uint32_t kShimMm2sQueue = 0x1D214;
constexpr uint32_t kShimChannelStride = 0x8;

constexpr uint32_t field(uint32_t value, uint32_t width, uint32_t lsb) {
    return (value & ((width == 32 ? 0u : (1u << width)) - 1u)) << lsb;
}
constexpr uint32_t take(uint32_t word, uint32_t width, uint32_t lsb) {
    return (word >> lsb) & ((width == 32 ? 0u : (1u << width)) - 1u);
}
int32_t sign_extend7(uint32_t v) { return (v & 0x40) ? int32_t(v) - 0x80 : int32_t(v); }

std::string too_wide(const char * name, uint64_t value, uint32_t bits) {
    return std::string(name) + " " + std::to_string(value) + " exceeds its " + std::to_string(bits) + "-bit field (max " +
           std::to_string((uint64_t(1) << bits) - 1) + ")";
}

}  // namespace

uint32_t tile_address(uint32_t column, uint32_t row, uint32_t offset) {
    return (column & 0x7F) << 25 | (row & 0x1F) << 20 | (offset & 0xFFFFF);
}

uint32_t shim_bd_address(uint32_t column, uint32_t bd_id) {
    return tile_address(column, 0, kShimBdBase + (bd_id & 0xF) * kShimBdStride);
}

uint32_t shim_queue_address(uint32_t column, uint32_t direction, uint32_t channel) {
    const uint32_t base = direction == 0 ? kShimS2mmQueue : kShimMm2sQueue;
    return tile_address(column, 0, base + (channel & 1) * kShimChannelStride);
}

bool ShimBd::operator==(const ShimBd & o) const {
    return buffer_length == o.buffer_length && base_address == o.base_address && enable_packet == o.enable_packet &&
           out_of_order_id == o.out_of_order_id && packet_id == o.packet_id && packet_type == o.packet_type &&
           secure_access == o.secure_access && d0_wrap == o.d0_wrap && d0_stepsize == o.d0_stepsize &&
           burst_length == o.burst_length && d1_wrap == o.d1_wrap && d1_stepsize == o.d1_stepsize && smid == o.smid &&
           axcache == o.axcache && axqos == o.axqos && d2_stepsize == o.d2_stepsize &&
           iteration_current == o.iteration_current && iteration_wrap == o.iteration_wrap &&
           iteration_stepsize == o.iteration_stepsize && tlast_suppress == o.tlast_suppress && next_bd == o.next_bd &&
           use_next_bd == o.use_next_bd && valid_bd == o.valid_bd && lock_rel_value == o.lock_rel_value &&
           lock_rel_id == o.lock_rel_id && lock_acq_enable == o.lock_acq_enable && lock_acq_value == o.lock_acq_value &&
           lock_acq_id == o.lock_acq_id;
}

std::array<uint32_t, kShimBdWords> encode_shim_bd(const ShimBd & bd) {
    std::array<uint32_t, kShimBdWords> w{};
    w[0] = bd.buffer_length;
    w[1] = uint32_t(bd.base_address) & 0xFFFFFFFCu;
    w[2] = field(bd.enable_packet, 1, 30) | field(bd.out_of_order_id, 6, 24) | field(bd.packet_id, 5, 19) |
           field(bd.packet_type, 3, 16) | field(uint32_t(bd.base_address >> 32), 16, 0);
    w[3] = field(bd.secure_access, 1, 30) | field(bd.d0_wrap, 10, 20) | field(bd.d0_stepsize, 20, 0);
    w[4] = field(bd.burst_length, 2, 30) | field(bd.d1_wrap, 10, 20) | field(bd.d1_stepsize, 20, 0);
    w[5] = field(bd.smid, 4, 28) | field(bd.axcache, 4, 24) | field(bd.axqos, 4, 20) | field(bd.d2_stepsize, 20, 0);
    w[6] = field(bd.iteration_current, 6, 26) | field(bd.iteration_wrap, 6, 20) | field(bd.iteration_stepsize, 20, 0);
    w[7] = field(bd.tlast_suppress, 1, 31) | field(bd.next_bd, 4, 27) | field(bd.use_next_bd, 1, 26) |
           field(bd.valid_bd, 1, 25) | field(uint32_t(bd.lock_rel_value), 7, 18) | field(bd.lock_rel_id, 4, 13) |
           field(bd.lock_acq_enable, 1, 12) | field(uint32_t(bd.lock_acq_value), 7, 5) | field(bd.lock_acq_id, 4, 0);
    return w;
}

ShimBd decode_shim_bd(const std::array<uint32_t, kShimBdWords> & w) {
    ShimBd bd;
    bd.buffer_length = w[0];
    bd.base_address = uint64_t(take(w[2], 16, 0)) << 32 | (w[1] & 0xFFFFFFFCu);
    bd.enable_packet = take(w[2], 1, 30);
    bd.out_of_order_id = take(w[2], 6, 24);
    bd.packet_id = take(w[2], 5, 19);
    bd.packet_type = take(w[2], 3, 16);
    bd.secure_access = take(w[3], 1, 30);
    bd.d0_wrap = take(w[3], 10, 20);
    bd.d0_stepsize = take(w[3], 20, 0);
    bd.burst_length = take(w[4], 2, 30);
    bd.d1_wrap = take(w[4], 10, 20);
    bd.d1_stepsize = take(w[4], 20, 0);
    bd.smid = take(w[5], 4, 28);
    bd.axcache = take(w[5], 4, 24);
    bd.axqos = take(w[5], 4, 20);
    bd.d2_stepsize = take(w[5], 20, 0);
    bd.iteration_current = take(w[6], 6, 26);
    bd.iteration_wrap = take(w[6], 6, 20);
    bd.iteration_stepsize = take(w[6], 20, 0);
    bd.tlast_suppress = take(w[7], 1, 31);
    bd.next_bd = take(w[7], 4, 27);
    bd.use_next_bd = take(w[7], 1, 26);
    bd.valid_bd = take(w[7], 1, 25);
    bd.lock_rel_value = sign_extend7(take(w[7], 7, 18));
    bd.lock_rel_id = take(w[7], 4, 13);
    bd.lock_acq_enable = take(w[7], 1, 12);
    bd.lock_acq_value = sign_extend7(take(w[7], 7, 5));
    bd.lock_acq_id = take(w[7], 4, 0);
    return bd;
}

std::optional<std::string> check_shim_bd(const ShimBd & bd) {
    if (bd.base_address % 4 != 0) return "base address " + std::to_string(bd.base_address) + " is not 4-byte aligned";
    if (bd.base_address > ShimLimits::max_base_address) return too_wide("base address", bd.base_address, 48);
    struct Field {
        const char * name;
        uint32_t value;
        uint32_t bits;
    };
    const Field fields[] = {
        {"out_of_order_id", bd.out_of_order_id, 6}, {"packet_id", bd.packet_id, 5},
        {"packet_type", bd.packet_type, 3},         {"d0_wrap", bd.d0_wrap, 10},
        {"d0_stepsize", bd.d0_stepsize, 20},        {"burst_length", bd.burst_length, 2},
        {"d1_wrap", bd.d1_wrap, 10},                {"d1_stepsize", bd.d1_stepsize, 20},
        {"smid", bd.smid, 4},                       {"axcache", bd.axcache, 4},
        {"axqos", bd.axqos, 4},                     {"d2_stepsize", bd.d2_stepsize, 20},
        {"iteration_current", bd.iteration_current, 6}, {"iteration_wrap", bd.iteration_wrap, 6},
        {"iteration_stepsize", bd.iteration_stepsize, 20}, {"next_bd", bd.next_bd, 4},
        {"lock_rel_id", bd.lock_rel_id, 4},         {"lock_acq_id", bd.lock_acq_id, 4},
    };
    for (const Field & f : fields)
        if (f.value >> f.bits) return too_wide(f.name, f.value, f.bits);
    if (bd.lock_rel_value < -64 || bd.lock_rel_value > 63)
        return "lock_rel_value " + std::to_string(bd.lock_rel_value) + " outside the signed 7-bit field (-64..63)";
    if (bd.lock_acq_value < -64 || bd.lock_acq_value > 63)
        return "lock_acq_value " + std::to_string(bd.lock_acq_value) + " outside the signed 7-bit field (-64..63)";
    if (bd.valid_bd && bd.buffer_length == 0) return "a valid BD with buffer_length 0 moves nothing";
    return std::nullopt;
}

ShimBdOrError shim_bd_from_pattern(const ShimBdPattern & p) {
    ShimBdOrError r;
    auto fail = [&](std::string e) {
        r.error = std::move(e);
        return r;
    };
    if (p.base_address % 4 != 0) return fail("base address " + std::to_string(p.base_address) + " is not 4-byte aligned");
    if (p.base_address > ShimLimits::max_base_address) return fail(too_wide("base address", p.base_address, 48));
    for (int d = 0; d < 3; ++d)
        if (p.sizes[d] == 0) return fail("d" + std::to_string(d) + " size is 0");
    if (p.iterations == 0) return fail("iteration count is 0");

    const uint64_t length = uint64_t(p.sizes[0]) * p.sizes[1] * p.sizes[2];
    if (length > UINT32_MAX) return fail("buffer length " + std::to_string(length) + " words exceeds its 32-bit field");

    ShimBd & bd = r.bd;
    bd.base_address = p.base_address;
    bd.buffer_length = uint32_t(length);
    bd.burst_length = kShimBurst512;
    bd.axcache = kShimAxCacheDefault;
    bd.valid_bd = true;

    // A contiguous run needs no address generation: mlir-aie leaves the wraps and steps at 0 and lets
    // buffer_length alone describe it, which also lifts the 1023-word limit of a d0 wrap.
    const bool linear = p.strides[0] == 1 && (p.sizes[1] == 1 || uint64_t(p.strides[1]) == p.sizes[0]) &&
                        (p.sizes[2] == 1 || uint64_t(p.strides[2]) == uint64_t(p.sizes[0]) * p.sizes[1]);
    if (!linear) {
        // Dimension d of size 1 never steps, so its stride is irrelevant (written as 0, as mlir-aie does).
        auto step = [&](int d, uint32_t & out) -> std::string {
            if (p.sizes[d] == 1) return {};
            if (p.strides[d] == 0) return "d" + std::to_string(d) + " stride 0 with size " + std::to_string(p.sizes[d]) +
                                          " (a repeat of the same words): not expressible in a shim BD";
            if (p.strides[d] > ShimLimits::max_stride)
                return "d" + std::to_string(d) + " stride " + std::to_string(p.strides[d]) + " words exceeds the 20-bit step field (max " +
                       std::to_string(ShimLimits::max_stride) + " words)";
            out = p.strides[d] - 1;
            return {};
        };
        if (p.sizes[0] > ShimLimits::max_wrap)
            return fail("d0 size " + std::to_string(p.sizes[0]) + " exceeds the 10-bit wrap field (max 1023)");
        if (p.sizes[1] > ShimLimits::max_wrap)
            return fail("d1 size " + std::to_string(p.sizes[1]) + " exceeds the 10-bit wrap field (max 1023)");
        for (int d = 0; d < 3; ++d) {
            uint32_t * out = d == 0 ? &bd.d0_stepsize : d == 1 ? &bd.d1_stepsize : &bd.d2_stepsize;
            if (std::string e = step(d, *out); !e.empty()) return fail(e);
        }
        bd.d0_wrap = p.sizes[0];
        bd.d1_wrap = p.sizes[1];
    }
    if (p.iterations > 1) {
        if (p.iterations > ShimLimits::max_iterations)
            return fail("iteration count " + std::to_string(p.iterations) + " exceeds the 6-bit iteration wrap (max " +
                        std::to_string(ShimLimits::max_iterations) + ")");
        if (p.iteration_stride == 0)
            return fail("iteration stride 0 (a pure repeat): use the queue push repeat count instead");
        if (p.iteration_stride > ShimLimits::max_stride)
            return fail("iteration stride " + std::to_string(p.iteration_stride) + " words exceeds the 20-bit step field (max " +
                        std::to_string(ShimLimits::max_stride) + " words)");
        bd.iteration_wrap = p.iterations - 1;
        bd.iteration_stepsize = p.iteration_stride - 1;
    }
    return r;
}

ShimBdOrError shim_bd_from_byte_pattern(const ShimBdPattern & b) {
    ShimBdOrError r;
    auto fail = [&](std::string e) {
        r.error = std::move(e);
        return r;
    };
    // The shim DMA moves 32-bit words: the innermost run must be whole contiguous words, and every
    // outer step must land on a word boundary.
    if (b.base_address % 4 != 0) return fail("offset " + std::to_string(b.base_address) + " bytes is not 4-byte aligned");
    if (b.strides[0] != 1 && b.sizes[0] > 1)
        return fail("d0 stride " + std::to_string(b.strides[0]) + " bytes: the innermost dimension must be contiguous bytes");
    if (b.sizes[0] % 4 != 0) return fail("d0 size " + std::to_string(b.sizes[0]) + " bytes is not a multiple of 4");
    for (int d = 1; d < 3; ++d)
        if (b.sizes[d] > 1 && b.strides[d] % 4 != 0)
            return fail("d" + std::to_string(d) + " stride " + std::to_string(b.strides[d]) + " bytes is not a multiple of 4");
    if (b.iterations > 1 && b.iteration_stride % 4 != 0)
        return fail("iteration stride " + std::to_string(b.iteration_stride) + " bytes is not a multiple of 4");
    ShimBdPattern w = b;
    w.sizes[0] = b.sizes[0] / 4;
    w.strides[0] = 1;
    w.strides[1] = b.strides[1] / 4;
    w.strides[2] = b.strides[2] / 4;
    w.iteration_stride = b.iteration_stride / 4;
    return shim_bd_from_pattern(w);
}

uint32_t encode_queue_push(const QueuePush & push) {
    return field(push.bd_id, 4, 0) | field(push.repeat_count, 8, 16) | field(push.issue_token, 1, 31);
}

QueuePush decode_queue_push(uint32_t word) {
    return QueuePush{take(word, 4, 0), take(word, 8, 16), take(word, 1, 31) != 0};
}

std::optional<std::string> check_queue_push(const QueuePush & push) {
    if (push.bd_id >= kShimBdCount) return "BD id " + std::to_string(push.bd_id) + " exceeds the 16 BDs of a shim tile";
    if (push.repeat_count > ShimLimits::max_repeat_count)
        return "repeat count " + std::to_string(push.repeat_count) + " exceeds 255 (8-bit field)";
    return std::nullopt;
}

}  // namespace xdna::control
