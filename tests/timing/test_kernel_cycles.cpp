// Cycles from the kernel code (src/sim/kernel-cycles.h): the op counts are those of the real kernels,
// they do not depend on the data, the per-operation table is applied as documented, and one more
// vector operation per sub-block in the Q4_K kernel (a test-only build of aie/matmul/kernels/mm_kquant.cc
// with XDNA_KQ_EXTRA_VECTOR_OP) moves the modelled tile time by exactly that many cycles.
#include "contracts/matmul-contract.h"
#include "sim/kernel-cycles.h"
#include "sim/tile-kernels.h"
#include "sim/timing-model.h"
#include "xdna_aie/matmul_tiles.h"
#include "reference-timing.h"
#include "test-random.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

extern "C" {
void mm_q4_K_a8_n32_extra_vop(const uint8_t * w, const uint8_t * a, float * c);
void mm_q6_K_a8_n4_extra_vop(const uint8_t * w, const uint8_t * a, float * c);
}

namespace xdna {
namespace {

struct Buffer {
    explicit Buffer(size_t n) : p(static_cast<uint8_t *>(std::aligned_alloc(64, n))), size(n) { std::memset(p.get(), 0, n); }
    struct Free {
        void operator()(uint8_t * q) const { std::free(q); }
    };
    std::unique_ptr<uint8_t, Free> p;
    size_t size;
};

bool same(const CoreOps & a, const CoreOps & b) {
    return a.vector == b.vector && a.move == b.move && a.load == b.load && a.unpack == b.unpack && a.store == b.store &&
           a.scalar == b.scalar && a.mmul_macs == b.mmul_macs && a.mmul_i8xi4 == b.mmul_i8xi4 &&
           a.pipelined_loops == b.pipelined_loops;
}

// Pipelined-loop entries per call, from the kernels' loop structure (aie/matmul/kernels/*.cc).
uint64_t expected_pipelined_loops(const MatmulContract & c, int tn) {
    const int groups = tn / 4;  // 4-token groups
    // The bfp16 prefill kernels: K-quants per row group its sub-block (dequantization) loop and two
    // mmul loops; legacy types the same per row group and K half; floats per row block of 8 its
    // conversion loop and one mmul loop.
    if (c.act_format == ActFormat::bfp16) {
        const bool flt = c.weight_type == GGML_TYPE_F16 || c.weight_type == GGML_TYPE_BF16 || c.weight_type == GGML_TYPE_F32;
        if (std::string(c.family) == "legacy_bfp16") return 4 * 2 * (1 + 2);
        // TN 64 (A in K halves): per half call, per row group the dequantization loop and two passes of
        // 4 token groups for each row half; two calls per K tile.
        if (tn == 64) return 2 * 4 * (1 + 2 * 2);
        return flt ? 8 * (1 + 1) : 4 * (1 + 2);
    }
    switch (c.weight_type) {
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K:
        case GGML_TYPE_Q6_K: return tn == 4 ? 2 : 4 * groups / 2;  // TN 4: 2 passes of 2 row groups; 32: 4 x 4 passes
        case GGML_TYPE_Q2_K:
        case GGML_TYPE_Q3_K: return 4 * (tn == 4 ? 1 : groups / 4);  // 4 row groups x blocks of NT = 1 / 4 groups
        case GGML_TYPE_F16:
        case GGML_TYPE_BF16: return tn == 4 ? 1 : 4;  // (8 / RB) x (groups / TGB): RB 8, TGB 1 / RB 2, TGB 8
        case GGML_TYPE_F32: return tn == 4 ? 1 : 8;   // RB 8, TGB 1 / RB 2, TGB 4
        default: return 0;  // Q4_0 ... Q8_0
    }
}

TEST(KernelCycles, EveryContractKernelIsProfiled) {
    for (const auto & c : all_matmul_contracts()) {
        for (int tn : c.tile_n) {
            const KernelProfile * p = kernel_profile(c, tn);
            ASSERT_NE(p, nullptr) << c.name << " TN=" << tn;
            EXPECT_GT(p->call.vector, 0u) << c.name;
            EXPECT_GT(p->call.load, 0u) << c.name;
            // Every MAC of the 64 x TN x TK tile goes through a multiplier lane (padding included): an
            // mmul's, or for F32 (elementwise) a 32-lane fp32 multiply of at least 13 vector instructions.
            const uint64_t tile_macs = uint64_t(c.tile_m) * tn * c.tile_k;
            if (c.weight_type == GGML_TYPE_F32 && c.act_format != ActFormat::bfp16) EXPECT_GE(p->call.vector, 13 * tile_macs / 32) << c.name;
            else EXPECT_GE(p->call.mmul_macs, tile_macs) << c.name;
            // Entries of the loops each kernel asks to be software-pipelined (AIE_PREPARE_FOR_PIPELINING):
            // the K-quant sub-block loop once per pass (NR x NT blocks, mm_kquant.cc "Loop order"), the
            // Q2_K/Q3_K sub-block loop once per (row group, token-group block), the float K loop once per
            // (row block, token-group block); the legacy kernels mark none (their loops call the
            // out-of-line epilogues).
            EXPECT_EQ(p->call.pipelined_loops, expected_pipelined_loops(c, tn)) << c.name << " TN=" << tn;
            EXPECT_EQ(p->zero.pipelined_loops, 1u) << "the C-tile clear's store loop";
            EXPECT_GT(p->zero.store, 0u) << "the C-tile clear stores";
        }
    }
}

// Informational: per contract and token tile, the per-call counts by slot and the modelled cycles
// (krackan, int4 at 512 MAC/cycle), as the timing model takes them.
TEST(KernelCycles, Report) {
    const NpuPreset & p = *find_npu_preset("krackan");
    std::printf("%-14s %4s %8s %8s %8s %8s %8s %6s %10s %8s\n", "contract", "TN", "vector", "move", "load", "unpack", "store",
                "loops", "cycles", "binds");
    for (const auto & c : all_matmul_contracts()) {
        for (int tn : c.tile_n) {
            const KernelProfile * k = kernel_profile(c, tn);
            ASSERT_NE(k, nullptr);
            const SlotCycles s = core_cycles(k->call, p);
            std::printf("%-14s %4d %8llu %8llu %8llu %8llu %8llu %6llu %10.0f %8s\n", c.name, tn,
                        (unsigned long long)k->call.vector, (unsigned long long)k->call.move, (unsigned long long)k->call.load,
                        (unsigned long long)k->call.unpack, (unsigned long long)k->call.store,
                        (unsigned long long)k->call.pipelined_loops, s.total, s.binding);
        }
    }
}

TEST(KernelCycles, OpCountsDoNotDependOnTheData) {
    // The profile is taken once on zero tiles; random tiles (and a second run) must issue the same.
    const uint64_t seed = xdna_test::test_seed();
    std::mt19937_64 rng(seed);
    Buffer w(32 * 1024), a(32 * 1024), c(32 * 1024);
    for (const auto & contract : all_matmul_contracts()) {
        for (int tn : contract.tile_n) {
            const TileEntry * e = find_tile_entry(contract, tn);
            ASSERT_NE(e, nullptr);
            // Random bytes except where a float field would make NaN/inf arithmetic meaningless for the
            // kernel's numerics: counts must not care either way, so plain random bytes are used.
            for (size_t i = 0; i < w.size; ++i) w.p.get()[i] = static_cast<uint8_t>(rng());
            for (size_t i = 0; i < a.size; ++i) a.p.get()[i] = static_cast<uint8_t>(rng());
            // The one branch on data the matmul kernels have: a bfp16 tile's non-finite tokens
            // (BlockActTileFormat flags) get 4 stores of NaN each, on broken input only. The profile
            // charges the finite case, so the flags are kept clear here.
            if (contract.act_format == ActFormat::bfp16) {
                // Every K part's object (act_k_parts: TN 64 takes A in K halves, consecutive).
                const int parts = act_k_parts(contract, tn);
                const xdna_aie::BlockActTileFormat f{tn, contract.tile_k / parts};
                for (int part = 0; part < parts; ++part) {
                    std::memset(a.p.get() + part * f.tile_bytes() + f.flags_offset(), 0, static_cast<size_t>(tn));
                }
            }
            const CoreOps ops = measure_tile_kernel(e->kernel, w.p.get(), a.p.get(), reinterpret_cast<float *>(c.p.get()));
            EXPECT_TRUE(same(ops, kernel_profile(contract, tn)->call))
                << contract.name << " TN=" << tn << " seed " << seed;
        }
    }
}

TEST(KernelCycles, TableIsTheBusiestSlotPlusOverhead) {
    NpuPreset p = *find_npu_preset("krackan");
    p.call_overhead_cycles = 10;
    p.pipelined_loop_cycles = 0.5;
    CoreOps ops;
    ops.vector = 100;
    ops.mmul_i8xi4 = 40;  // counted in vector; 1 extra cycle each at 512 MAC/cycle
    ops.move = 120;
    ops.load = 150;
    ops.unpack = 60;  // (150 + 60) / 2 = 105 load-slot cycles
    ops.store = 90;
    ops.pipelined_loops = 8;
    p.int4_macs_per_cycle = 512;
    SlotCycles c = core_cycles(ops, p);
    EXPECT_DOUBLE_EQ(c.vector, 140);
    EXPECT_DOUBLE_EQ(c.load, 105);
    EXPECT_DOUBLE_EQ(c.slot_max, 140);
    EXPECT_STREQ(c.binding, "vector");
    EXPECT_DOUBLE_EQ(c.total, 140 + 10 + 4);
    p.int4_macs_per_cycle = 1024;
    c = core_cycles(ops, p);
    EXPECT_DOUBLE_EQ(c.slot_max, 120);
    EXPECT_STREQ(c.binding, "move");
    ops.unpack = 200;  // unpacks have one of the two load slots: 200 > (150 + 200) / 2
    EXPECT_DOUBLE_EQ(core_cycles(ops, p).load, 200);
}

TEST(KernelCycles, ModelTileIsCallsPlusClear) {
    const NpuPreset & p = *find_npu_preset("krackan");
    const TimingModel model(p);
    const MatmulContract & c = *matmul_contract_for(GGML_TYPE_Q6_K);
    ModelShape s;
    s.weight_type = GGML_TYPE_Q6_K;
    s.tile = c.tile(32);
    s.k_tiles = 16;
    // The per-operation table applied here to the kernels' counts (reference-timing.h), not core_cycles.
    const KernelProfile & k = *kernel_profile(GGML_TYPE_Q6_K, 32);
    EXPECT_DOUBLE_EQ(model.tile_cycles(s), 16 * xdna_test::reference_call_cycles(k.call, p) +
                                               xdna_test::reference_call_cycles(k.zero, p));
}

// Sub-blocks a call of mm_q<T>_K_a8_n<TN> walks (aie/matmul/kernels/mm_kquant.cc): every pass runs all
// sub-blocks of the 256-K tile; a row group of 16 rows takes TN / 4 / NT passes, NR row groups at once.
int kquant_sub_blocks_per_call(int sub_blocks, int tn) {
    const int nr = tn == 4 ? 2 : 1, nt = tn == 4 ? 1 : 2;  // the kernel's pass shape ("Loop order")
    const int row_groups = 64 / 16;
    return (row_groups / nr) * (tn / 4 / nt) * sub_blocks;
}

TEST(KernelCycles, OneMoreVectorOpPerSubBlockCostsThatManyCycles) {
    const NpuPreset & p = *find_npu_preset("krackan");
    Buffer w(32 * 1024), a(32 * 1024), c(32 * 1024);
    struct Case {
        ggml_type type;
        int tn, sub_blocks;
        ProfiledTileFn variant;
    };
    // Q4_K at TN = 32: the vector slot binds (the mmuls at 2 cycles and the fp32 epilogue), so every
    // added vector instruction is a cycle. Q6_K at TN = 4 binds on the move slot: the added vector
    // operations fit in its free vector cycles and cost nothing (the case where the model must not move).
    const Case cases[] = {{GGML_TYPE_Q4_K, 32, 8, mm_q4_K_a8_n32_extra_vop}, {GGML_TYPE_Q6_K, 4, 16, mm_q6_K_a8_n4_extra_vop}};
    for (const Case & k : cases) {
        const CoreOps base = kernel_profile(k.type, k.tn)->call;
        const CoreOps more = measure_tile_kernel(k.variant, w.p.get(), a.p.get(), reinterpret_cast<float *>(c.p.get()));
        const uint64_t added = kquant_sub_blocks_per_call(k.sub_blocks, k.tn);
        EXPECT_EQ(more.vector - base.vector, added) << ggml_type_name(k.type);
        EXPECT_EQ(more.move, base.move);
        EXPECT_EQ(more.store, base.store);
        EXPECT_EQ(more.load, base.load);
        const SlotCycles before = core_cycles(base, p), after = core_cycles(more, p);
        if (std::string(before.binding) == "vector") {
            EXPECT_DOUBLE_EQ(after.total - before.total, double(added)) << ggml_type_name(k.type);
            // An output tile of K = 4096 calls the kernel 16 times: 16 x added cycles at the tier's efficiency.
            EXPECT_EQ(k.type, GGML_TYPE_Q4_K);
        } else {
            const double room = before.slot_max - before.vector;
            ASSERT_GE(room, double(added)) << "the test case must leave the binding slot unchanged";
            EXPECT_DOUBLE_EQ(after.total, before.total) << ggml_type_name(k.type);
            EXPECT_EQ(k.type, GGML_TYPE_Q6_K);
        }
    }
}

}  // namespace
}  // namespace xdna
