#include "sim/kernel-cycles.h"

#include "sim/tile-kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace xdna {

namespace {

// Larger than any tile of any contract (matmul_tiles.h: W <= 17408, A <= 2 x 9280 (both K halves at
// TN 64), C <= 16384 bytes).
constexpr size_t kTileBufferBytes = 32 * 1024;

struct FreeAligned {
    void operator()(uint8_t * p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t, FreeAligned>;

AlignedBuffer zeroed_buffer() {
    AlignedBuffer b(static_cast<uint8_t *>(std::aligned_alloc(64, kTileBufferBytes)));
    std::memset(b.get(), 0, kTileBufferBytes);
    return b;
}

std::vector<KernelProfile> measure_all() {
    std::vector<KernelProfile> out;
    // A thread of its own: fresh per-thread counters and core state, whatever thread asks first.
    std::thread worker([&out] {
        AlignedBuffer w = zeroed_buffer(), a = zeroed_buffer(), c = zeroed_buffer();
        float * cf = reinterpret_cast<float *>(c.get());
        for (const MatmulContract & contract : all_matmul_contracts()) {
            for (int tn : contract.tile_n) {
                const TileEntry * e = find_tile_entry(contract, tn);
                const ZeroFn zero = zero_kernel(tn);
                if (e == nullptr || e->kernel == nullptr || zero == nullptr) {
                    continue;
                }
                KernelProfile p;
                p.contract = contract.name;
                p.tile_n = tn;
                sim_reset_core_state();
                const CoreOps before = sim_thread_core_ops();
                zero(cf);
                p.zero = sim_thread_core_ops();
                p.zero -= before;
                p.call = measure_tile_kernel(e->kernel, w.get(), a.get(), cf);
                p.calls_per_k_tile = act_k_parts(contract, tn);
                out.push_back(p);
            }
        }
    });
    worker.join();
    return out;
}

}  // namespace

SlotCycles core_cycles(const CoreOps & ops, const NpuPreset & p) {
    SlotCycles c;
    // The int8 x int4 mmul is counted as one vector instruction; at the int8 rate it occupies the
    // vector slot for 1024 / 512 = 2 cycles.
    const double int4_cycles = 1024.0 / p.int4_macs_per_cycle;
    c.vector = static_cast<double>(ops.vector) + static_cast<double>(ops.mmul_i8xi4) * (int4_cycles - 1.0);
    c.move = static_cast<double>(ops.move);
    c.load = std::max(std::ceil((ops.load + ops.unpack) / 2.0), static_cast<double>(ops.unpack));
    c.store = static_cast<double>(ops.store);
    c.scalar = static_cast<double>(ops.scalar);
    const std::pair<const char *, double> slots[] = {
        {"vector", c.vector}, {"move", c.move}, {"load", c.load}, {"store", c.store}, {"scalar", c.scalar}};
    for (const auto & [name, cycles] : slots) {
        if (cycles > c.slot_max) {
            c.slot_max = cycles;
            c.binding = name;
        }
    }
    c.overhead = p.call_overhead_cycles + p.pipelined_loop_cycles * static_cast<double>(ops.pipelined_loops);
    c.total = c.slot_max + c.overhead;
    return c;
}

CoreOps measure_tile_kernel(ProfiledTileFn kernel, const uint8_t * w, const uint8_t * a, float * c) {
    sim_reset_core_state();
    const CoreOps before = sim_thread_core_ops();
    kernel(w, a, c);
    CoreOps ops = sim_thread_core_ops();
    ops -= before;
    return ops;
}

CoreOps measure_on_own_thread(const std::function<void()> & call) {
    CoreOps ops;
    std::thread worker([&] {
        sim_reset_core_state();
        const CoreOps before = sim_thread_core_ops();
        call();
        ops = sim_thread_core_ops();
        ops -= before;
    });
    worker.join();
    return ops;
}

CoreOps interpolate_call_ops(const CoreOps & at_lanes, const CoreOps & at_chunk, int64_t n, int lanes, int chunk) {
    const double steps = static_cast<double>(chunk / lanes - 1), at = static_cast<double>(n / lanes - 1);
    auto lerp = [&](uint64_t one, uint64_t full) {
        const double per = (static_cast<double>(full) - static_cast<double>(one)) / steps;
        return static_cast<uint64_t>(static_cast<double>(one) + per * at + 0.5);
    };
    CoreOps o;
    o.vector = lerp(at_lanes.vector, at_chunk.vector);
    o.move = lerp(at_lanes.move, at_chunk.move);
    o.load = lerp(at_lanes.load, at_chunk.load);
    o.unpack = lerp(at_lanes.unpack, at_chunk.unpack);
    o.store = lerp(at_lanes.store, at_chunk.store);
    o.scalar = lerp(at_lanes.scalar, at_chunk.scalar);
    o.pipelined_loops = at_lanes.pipelined_loops;
    return o;
}

const KernelProfile * kernel_profile(const MatmulContract & contract, int tile_n) {
    static const std::vector<KernelProfile> profiles = measure_all();
    for (const KernelProfile & p : profiles) {
        if (p.tile_n == tile_n && std::strcmp(p.contract, contract.name) == 0) {
            return &p;
        }
    }
    return nullptr;
}

const KernelProfile * kernel_profile(ggml_type weight_type, int tile_n) {
    const MatmulContract * contract = matmul_contract_for(weight_type);
    return contract != nullptr ? kernel_profile(*contract, tile_n) : nullptr;
}

CoreOps reference_tile_ops(KernelFamily family, const TileShape & tile, int64_t k_tiles, double out_bytes_per_value,
                           const NpuPreset & p) {
    const double macs = static_cast<double>(tile.m) * tile.n * tile.k * k_tiles;
    const double mmuls = macs / p.family_macs_per_cycle(family);  // vector-slot instructions
    CoreOps ops;
    ops.vector = static_cast<uint64_t>(std::ceil(mmuls));
    ops.load = static_cast<uint64_t>(std::ceil(mmuls / 2));  // 2 x 2 blocking: 2 A + 2 B loads per 4 mmuls
    ops.store = static_cast<uint64_t>(std::ceil(static_cast<double>(tile.m) * tile.n * out_bytes_per_value / 64));
    // pipelined_loops stays 0: the published kernels' loop nests are not modelled (the knob defaults to 0).
    ops.mmul_macs = static_cast<uint64_t>(macs);
    return ops;
}

}  // namespace xdna
