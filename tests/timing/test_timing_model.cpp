// The timing model's shape behaviour: more work never takes less modelled time, the modelled rates never
// exceed the roofs they are derived from, and idle columns cost a batch-1 GEMV what they should.
#include "sim/npu-presets.h"
#include "plan/matmul-plan.h"
#include "sim/timing-model.h"
#include "reference-timing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace xdna {
namespace {

const ggml_type kTypes[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K,
                            GGML_TYPE_Q2_K, GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_F32};

// The invocation the planner makes for an M x K weight of `type` times N tokens (operands absent). K is
// rounded up to whole blocks (the sweep includes K = 100); the tile counts are those of the given K.
MatmulInvocation invocation(ggml_type type, int64_t m, int64_t k, int64_t n) {
    const int64_t blck = ggml_blck_size(type);
    MatmulInvocation inv;
    EXPECT_TRUE(invocation_geometry(type, m, (k + blck - 1) / blck * blck, n, inv));
    return inv;
}

double modelled_us(const TimingModel & model, ggml_type t, int64_t m, int64_t k, int64_t n) {
    return model.batch({shape_of(invocation(t, m, k, n))}).total_us;
}

TEST(TimingModel, MoreWorkNeverTakesLessTime) {
    const std::vector<int64_t> sizes = {64, 100, 256, 512, 1024, 2048, 4096, 8192, 14336};
    const std::vector<int64_t> tokens = {1, 2, 4, 5, 8, 16, 32, 33, 64, 128, 256, 512, 1024};
    for (const auto & preset : npu_presets()) {
        const TimingModel model(preset);
        for (ggml_type t : kTypes) {
            SCOPED_TRACE(std::string(preset.name) + " " + ggml_type_name(t));
            for (size_t i = 1; i < sizes.size(); ++i) {
                EXPECT_LE(modelled_us(model, t, sizes[i - 1], 4096, 1), modelled_us(model, t, sizes[i], 4096, 1)) << "M";
                EXPECT_LE(modelled_us(model, t, 4096, sizes[i - 1], 64), modelled_us(model, t, 4096, sizes[i], 64)) << "K";
            }
            for (size_t i = 1; i < tokens.size(); ++i) {
                EXPECT_LE(modelled_us(model, t, 4096, 4096, tokens[i - 1]), modelled_us(model, t, 4096, 4096, tokens[i]))
                    << "N " << tokens[i];
            }
        }
    }
}

TEST(TimingModel, LargeShapesGrowWithWork) {
    // Far from the fixed costs, doubling a dimension must cost clearly more.
    const TimingModel model(*find_npu_preset("krackan"));
    for (ggml_type t : kTypes) {
        EXPECT_GT(modelled_us(model, t, 8192, 4096, 512), 1.5 * modelled_us(model, t, 4096, 4096, 512)) << ggml_type_name(t);
        EXPECT_GT(modelled_us(model, t, 28672, 4096, 1), 1.5 * modelled_us(model, t, 14336, 4096, 1)) << ggml_type_name(t);
    }
}

TEST(TimingModel, RoofsAreNeverExceeded) {
    for (const auto & preset : npu_presets()) {
        const TimingModel model(preset);
        for (ggml_type t : kTypes) {
            for (int64_t m : {64, 512, 4096, 128256}) {
                for (int64_t k : {256, 4096, 14336}) {
                    for (int64_t n : {1, 4, 32, 512}) {
                        const ModelShape s = shape_of(invocation(t, m, k, n));
                        const ModelledTime r = model.invocation(s);
                        SCOPED_TRACE(std::string(ggml_type_name(t)) + " " + std::to_string(m) + "x" + std::to_string(k) +
                                     "x" + std::to_string(n));
                        EXPECT_LE(r.tops(), preset.peak_tops(s.family) * (1 + 1e-9));
                        EXPECT_LE(r.tops(), preset.peak_tops(s.family) * preset.efficiency() * (1 + 1e-9));
                        EXPECT_LE(r.gbs(), preset.dram_gbs * (1 + 1e-9));
                        EXPECT_LE(r.dram_bytes / r.total_us / 1e3, preset.dram_gbs * (1 + 1e-9));
                        EXPECT_LE(r.roofline_fraction(), 1.0 + 1e-9);
                        EXPECT_GT(r.roofline_fraction(), 0.0);
                        EXPECT_GE(r.padded_macs, r.useful_macs);
                        EXPECT_GE(r.dram_bytes, r.unique_bytes * (1 - 1e-12));
                    }
                }
            }
        }
    }
}

// Bytes of one tile, from the contracts' layouts (docs/kernels.md): a Q4_K weight tile is 64 rows of
// 144-byte super-blocks, Q6_K 64 x 210, Q8_0 64 x 8 blocks of 34 bytes; a K-quant activation tile holds
// TN x (256 int8 codes + 16 int16 sums + one fp32 scale), each token tile padded to 64 bytes (1216 at
// TN 4, 9344 at TN 32); a legacy one TN x (256 codes + 8 fp32 scales + 16 int16 sums) = 1280 at TN 4.
constexpr double kQ4KTile = 64 * 144, kQ6KTile = 64 * 210, kQ80Tile = 64 * 8 * 34;
constexpr double kKquantA4 = 1216, kKquantA32 = 9344, kLegacyA4 = 1280;
// W windows: one xclbin per family sizes its W objects to the family's largest tile (aie/matmul/README.md):
// Q6_K's 13440 bytes (plus 64-byte plane padding) for the K-quants, Q8_0's 17408 for the legacy family.
constexpr double kKquantWindow = 13440, kLegacyWindow = 17408;

void expect_reference(const ModelledTime & r, const xdna_test::ReferenceTime & want) {
    EXPECT_EQ(r.columns_used, want.columns);
    EXPECT_EQ(r.cores_used, want.cores);
    EXPECT_NEAR(r.weight_dram_bytes, want.weight_bytes, 1e-9 * want.weight_bytes);
    EXPECT_NEAR(r.dram_bytes, want.dram_bytes, 1e-9 * want.dram_bytes);
    EXPECT_NEAR(r.dram_us, want.dram_us, 1e-12 * want.dram_us);
    EXPECT_NEAR(r.compute_us, want.compute_us, 1e-12 * want.compute_us);
    EXPECT_NEAR(r.total_us, want.total_us, 1e-12 * want.total_us);
}

TEST(TimingModel, InvocationTimeIsTheDocumentedFormula) {
    // compute = the busiest core's output tiles x (tile cycles / clock / efficiency + C drain / clock),
    // dram = max(the design's bytes / bandwidth, the busiest shim channel / 8 bytes per cycle), total =
    // max(compute, dram) + the invocation's setup: each restated in reference-timing.h from the preset's
    // figures and the design's documented schedule, for decode and prefill shapes at both token tiles (a
    // single-buffered C at TN 32 for the K-quants), partial rounds and a partial 4-row group included.
    const NpuPreset p = *find_npu_preset("krackan");
    const TimingModel model(p);
    struct Shape {
        ggml_type type;
        int64_t   m, k, n;
        int       tn;
        double    w_tile, a_tile, w_window;
    };
    const Shape shapes[] = {{GGML_TYPE_Q4_K, 4096, 4096, 1, 4, kQ4KTile, kKquantA4, kKquantWindow},
                            {GGML_TYPE_Q4_K, 4096, 4096, 64, 32, kQ4KTile, kKquantA32, kKquantWindow},
                            {GGML_TYPE_Q4_K, 1024, 4096, 512, 32, kQ4KTile, kKquantA32, kKquantWindow},
                            {GGML_TYPE_Q6_K, 1024, 4096, 1, 4, kQ6KTile, kKquantA4, kKquantWindow},
                            {GGML_TYPE_Q4_K, 14336, 4096, 512, 32, kQ4KTile, kKquantA32, kKquantWindow},
                            {GGML_TYPE_Q6_K, 4096, 14336, 512, 32, kQ6KTile, kKquantA32, kKquantWindow},
                            {GGML_TYPE_Q8_0, 576, 2048, 130, 32, kQ80Tile, 10240, kLegacyWindow},
                            {GGML_TYPE_Q8_0, 320, 2048, 3, 4, kQ80Tile, kLegacyA4, kLegacyWindow}};
    for (const Shape & x : shapes) {
        SCOPED_TRACE(std::string(ggml_type_name(x.type)) + " " + std::to_string(x.m) + "x" + std::to_string(x.k) + "x" +
                     std::to_string(x.n));
        const ModelShape s = shape_of(invocation(x.type, x.m, x.k, x.n));
        ASSERT_EQ(s.tile.n, x.tn);
        const ModelledTime r = model.invocation(s);
        // The model times the fastest layout (n_split and n_shared only for whole groups of 4 token tiles;
        // between equally fast ones, the one that moves fewer bytes; the design's order otherwise).
        const xdna_test::ReferenceTime m_split = xdna_test::reference_time(p, x.type, x.m, x.k, x.n, x.tn, x.w_tile, x.a_tile, x.w_window);
        xdna_test::ReferenceTime want = m_split;
        const char * layout = "m_split";
        if (m_split.n_tiles % 4 == 0) {
            for (const bool shared : {false, true}) {
                const xdna_test::ReferenceTime t =
                    xdna_test::reference_time(p, x.type, x.m, x.k, x.n, x.tn, x.w_tile, x.a_tile, x.w_window, true, shared);
                const bool tie = std::fabs(t.total_us - want.total_us) <= 1e-9 * want.total_us;
                if (tie ? t.dram_bytes < want.dram_bytes : t.total_us < want.total_us) {
                    want = t;
                    layout = shared ? "n_shared" : "n_split";
                }
            }
        }
        EXPECT_STREQ(r.layout, layout);
        expect_reference(r, want);
        EXPECT_DOUBLE_EQ(r.dispatch_us, p.invocation_us);
    }
}

TEST(TimingModel, BatchIsOneSubmissionPlusInvocationsBackToBack) {
    const NpuPreset p = *find_npu_preset("krackan");
    const TimingModel model(p);
    const std::vector<ModelShape> qkv = {shape_of(invocation(GGML_TYPE_Q4_K, 4096, 4096, 1)),
                                         shape_of(invocation(GGML_TYPE_Q4_K, 1024, 4096, 1)),
                                         shape_of(invocation(GGML_TYPE_Q6_K, 1024, 4096, 1))};
    const ModelledBatch b = model.batch(qkv);
    // The invocations' times restated from the preset (reference-timing.h), not taken from the model.
    const double sum =
        xdna_test::reference_time(p, GGML_TYPE_Q4_K, 4096, 4096, 1, 4, kQ4KTile, kKquantA4, kKquantWindow).total_us +
        xdna_test::reference_time(p, GGML_TYPE_Q4_K, 1024, 4096, 1, 4, kQ4KTile, kKquantA4, kKquantWindow).total_us +
        xdna_test::reference_time(p, GGML_TYPE_Q6_K, 1024, 4096, 1, 4, kQ6KTile, kKquantA4, kKquantWindow).total_us;
    // Q4_K, Q4_K, Q6_K: one change of contract, charged once.
    EXPECT_EQ(b.contract_switches, 1);
    EXPECT_DOUBLE_EQ(b.switch_us, p.contract_switch_us);
    EXPECT_NEAR(b.total_us, p.submit_us + sum + p.contract_switch_us, 1e-12 * b.total_us);
    EXPECT_DOUBLE_EQ(b.submit_us, p.submit_us);
    EXPECT_NEAR(b.dispatch_us, p.submit_us + 3 * p.invocation_us, 1e-12 * b.dispatch_us);
    EXPECT_EQ(b.invocations.size(), qkv.size());
    // Three submissions of one invocation each pay the submission three times; the switch is charged
    // only when the caller carries the previous contract across submissions.
    double separate = 0, carried = 0;
    const MatmulContract * last = nullptr;
    for (const auto & s : qkv) {
        separate += model.batch({s}).total_us;
        ModelledBatch one;
        model.batch({s}, one, &last);
        carried += one.total_us;
    }
    EXPECT_NEAR(separate - b.total_us, 2 * p.submit_us - p.contract_switch_us, 1e-6);
    EXPECT_NEAR(carried - b.total_us, 2 * p.submit_us, 1e-6);
    EXPECT_EQ(last, matmul_contract_for(GGML_TYPE_Q6_K));
    EXPECT_EQ(model.batch({}).total_us, 0.0);
}

// Another design layout is another xclbin: a change of layout between consecutive invocations of one
// contract is charged as a switch, like a change of contract, across submissions too when carried.
TEST(TimingModel, ChangeOfLayoutIsChargedAsASwitch) {
    const NpuPreset p = *find_npu_preset("krackan");
    const TimingModel model(p);
    const ModelShape prefill = shape_of(invocation(GGML_TYPE_Q4_K, 4096, 4096, 512));
    const ModelShape decode = shape_of(invocation(GGML_TYPE_Q4_K, 4096, 4096, 1));
    ASSERT_STREQ(model.invocation(prefill).layout, "n_shared");
    ASSERT_STREQ(model.invocation(decode).layout, "m_split");
    EXPECT_EQ(model.batch({prefill, prefill}).contract_switches, 0);
    const ModelledBatch b = model.batch({prefill, decode, decode, prefill});
    EXPECT_EQ(b.contract_switches, 2);
    EXPECT_DOUBLE_EQ(b.switch_us, 2 * p.contract_switch_us);
    const MatmulContract * last = nullptr;
    const char * layout = nullptr;
    ModelledBatch one;
    model.batch({prefill}, one, &last, &layout);
    EXPECT_STREQ(layout, "n_shared");
    model.batch({decode}, one, &last, &layout);
    EXPECT_EQ(one.contract_switches, 1);
    EXPECT_STREQ(layout, "m_split");
}

// Each kind's design is an xclbin of its own (aie/<kind>/): a RMS_NORM after an ADD switches as a matmul
// after either does; two invocations of one kind in a row do not.
TEST(TimingModel, ChangeOfKindIsChargedAsASwitch) {
    const NpuPreset p = *find_npu_preset("krackan");
    const TimingModel model(p);
    auto glue = [](KernelKind kind) {
        ModelShape s;
        s.kind = kind;
        s.kind_cores = s.kind_columns = 1;
        s.activation_bytes = s.out_bytes = 16384;
        return s;
    };
    const ModelShape add = glue(KernelKind::add), norm = glue(KernelKind::rms_norm);
    const ModelShape mm = shape_of(invocation(GGML_TYPE_Q4_K, 4096, 4096, 1));
    EXPECT_EQ(model.batch({add, add}).contract_switches, 0);
    EXPECT_EQ(model.batch({add, norm}).contract_switches, 1);
    EXPECT_EQ(model.batch({add, norm, mm, norm, add}).contract_switches, 4);
    const ModelledBatch b = model.batch({norm, mm, mm, norm});
    EXPECT_EQ(b.contract_switches, 2);
    EXPECT_DOUBLE_EQ(b.switch_us, 2 * p.contract_switch_us);
}

// A program linked into another kind's design (the Hadamard rotations in set_rows' and flash_attn's)
// runs in that xclbin: no switch between it and that kind, one against any other.
TEST(TimingModel, AProgramInAnotherKindsDesignSwitchesWithThatDesign) {
    const TimingModel model(*find_npu_preset("krackan"));
    auto glue = [](KernelKind kind) {
        ModelShape s;
        s.kind = kind;
        s.kind_cores = s.kind_columns = 1;
        s.activation_bytes = s.out_bytes = 16384;
        return s;
    };
    ModelShape in_set_rows = glue(KernelKind::hadamard), in_flash_attn = glue(KernelKind::hadamard), own = glue(KernelKind::hadamard);
    in_set_rows.design_kind = KernelKind::set_rows;
    in_flash_attn.design_kind = KernelKind::flash_attn;
    const ModelShape rope = glue(KernelKind::rope), writes = glue(KernelKind::set_rows), attention = glue(KernelKind::flash_attn);
    EXPECT_EQ(model.batch({rope, in_set_rows, in_set_rows, writes, attention, in_flash_attn}).contract_switches, 2);
    EXPECT_EQ(model.batch({rope, own, own, writes, attention, own}).contract_switches, 4);
    EXPECT_EQ(model.batch({in_set_rows, in_flash_attn}).contract_switches, 1);
}

TEST(TimingModel, Batch1GemvUsesOnlyColumnsWithWork) {
    const TimingModel model(*find_npu_preset("krackan"));
    // 64 rows: one row tile, padded to a group of 4 (the design splits whole groups over a column's
    // cores), so one column and its 4 cores; 8192 rows: every column, every core.
    const ModelledTime one = model.invocation(shape_of(invocation(GGML_TYPE_Q8_0, 64, 14336, 1)));
    const ModelledTime all = model.invocation(shape_of(invocation(GGML_TYPE_Q8_0, 8192, 14336, 1)));
    EXPECT_EQ(one.columns_used, 1);
    EXPECT_EQ(one.cores_used, 4);
    EXPECT_EQ(all.columns_used, 8);
    EXPECT_EQ(all.cores_used, 32);
    // One column streams at its shim's rate, below the DRAM bandwidth; all columns reach the DRAM's.
    EXPECT_LT(one.bandwidth_gbs, 0.6 * all.bandwidth_gbs);
    // 16 row tiles of a GQA K projection keep 16 of 32 cores busy.
    const ModelledTime k = model.invocation(shape_of(invocation(GGML_TYPE_Q4_K, 1024, 4096, 1)));
    EXPECT_EQ(k.cores_used, 16);
}

TEST(TimingModel, PaddedMacsAreComputed) {
    const TimingModel model(*find_npu_preset("krackan"));
    // N = 1 runs on a 4-token tile: four times the useful MACs, the same waves as N = 4.
    const ModelledTime n1 = model.invocation(shape_of(invocation(GGML_TYPE_Q4_K, 4096, 4096, 1)));
    const ModelledTime n4 = model.invocation(shape_of(invocation(GGML_TYPE_Q4_K, 4096, 4096, 4)));
    EXPECT_DOUBLE_EQ(n1.padded_macs, 4 * n1.useful_macs);
    EXPECT_DOUBLE_EQ(n1.compute_us, n4.compute_us);
    // M = 65 pays for two row tiles.
    const ModelledTime m65 = model.invocation(shape_of(invocation(GGML_TYPE_Q4_K, 65, 4096, 32)));
    EXPECT_DOUBLE_EQ(m65.padded_macs, 128.0 * 32 * 4096);
}

// What binds each phase follows from the design's own traffic (sim/design-traffic.h), not from a wish:
// decode streams the weights once; at pp512 the column-broadcast layout with the activations shared by
// the columns (n_shared) reads W 4 times and A once per round for the whole array, so the weights
// outweigh A and C and the 14336 x 4096 projection is bound by its kernels' cycles. The same shape in
// n_split, where every column streams A for itself, moves about 2.6x the bytes and is DRAM-bound.
TEST(TimingModel, DecodeIsDramBoundAndPrefillIsBoundByTheKernels) {
    const TimingModel model(*find_npu_preset("krackan"));
    const ModelledTime decode = model.invocation(shape_of(invocation(GGML_TYPE_Q4_K, 14336, 4096, 1)));
    ModelShape pp = shape_of(invocation(GGML_TYPE_Q4_K, 14336, 4096, 512));
    const ModelledTime prefill = model.invocation(pp);
    pp.layout = "n_split";
    const ModelledTime per_column = model.invocation(pp);
    EXPECT_STREQ(decode.bound(), "dram");
    std::printf("  prefill: compute %.1f us, dram %.1f us (%.1f MB, W %.1f MB), layout %s; n_split: dram %.1f us (%.1f MB)\n",
                prefill.compute_us, prefill.dram_us, prefill.dram_bytes / 1e6, prefill.weight_dram_bytes / 1e6, prefill.layout,
                per_column.dram_us, per_column.dram_bytes / 1e6);
    EXPECT_STREQ(prefill.layout, "n_shared");
    EXPECT_STREQ(prefill.bound(), "compute");
    EXPECT_LT(prefill.dram_bytes - prefill.weight_dram_bytes, prefill.weight_dram_bytes);  // W outweighs A and C
    EXPECT_STREQ(per_column.layout, "n_split");
    EXPECT_STREQ(per_column.bound(), "dram");
    EXPECT_GT(per_column.dram_bytes - per_column.weight_dram_bytes, 2 * per_column.weight_dram_bytes);  // A and C outweigh W
    EXPECT_DOUBLE_EQ(per_column.weight_dram_bytes, prefill.weight_dram_bytes);  // 224 row tiles: whole rounds, no copies
}

// GGML_XDNA_W_OBJECTS=exact: the contract's own xclbin reads W in windows of its tile, so a Q4_K decode
// moves 9216 / 13440 of the family xclbin's W bytes (the K-quant family's object is Q6_K's tile) and is
// that much faster, DRAM-bound; Q6_K, the family's largest, moves the same either way. shape_of follows
// the option, as the simulator does.
TEST(TimingModel, ExactXclbinsChargeNoWindowOverFetch) {
    const TimingModel model(*find_npu_preset("krackan"));
    ModelShape q4 = shape_of(invocation(GGML_TYPE_Q4_K, 14336, 4096, 1));
    ModelShape q6 = shape_of(invocation(GGML_TYPE_Q6_K, 14336, 4096, 1));
    EXPECT_FALSE(q4.exact_w);
    const ModelledTime q4_family = model.invocation(q4), q6_family = model.invocation(q6);
    q4.exact_w = q6.exact_w = true;
    const ModelledTime q4_exact = model.invocation(q4), q6_exact = model.invocation(q6);
    EXPECT_DOUBLE_EQ(q4_exact.weight_dram_bytes * 13440.0, q4_family.weight_dram_bytes * 9216.0);
    EXPECT_LT(q4_exact.total_us, q4_family.total_us);
    EXPECT_DOUBLE_EQ(q6_exact.weight_dram_bytes, q6_family.weight_dram_bytes);
    setenv("GGML_XDNA_W_OBJECTS", "exact", 1);
    EXPECT_TRUE(shape_of(invocation(GGML_TYPE_Q4_K, 4096, 4096, 1)).exact_w);
    unsetenv("GGML_XDNA_W_OBJECTS");
}

TEST(TimingModel, ScaleWorkComesFromTheKernelCode) {
    // Contracts: the block-scale work is in the kernel's op counts, so the old per-format scale knobs do
    // not move them; Q6_K (16 sub-blocks, the high-bit operand) costs more cycles per MAC at TN = 4 than
    // Q4_K. Shapes without kernel code still pay the block-scale ops they state.
    NpuPreset p = *find_npu_preset("krackan");
    const ModelShape s = shape_of(invocation(GGML_TYPE_Q4_K, 4096, 4096, 512));
    const double base = TimingModel(p).invocation(s).compute_us;
    p.scale_group = 256;
    p.scale_ops_per_cycle = 1;
    EXPECT_DOUBLE_EQ(TimingModel(p).invocation(s).compute_us, base);
    EXPECT_TRUE(TimingModel(p).invocation(s).from_kernel_code);
    const TimingModel k(*find_npu_preset("krackan"));
    EXPECT_GT(k.tile_cycles(shape_of(invocation(GGML_TYPE_Q6_K, 4096, 4096, 1))),
              k.tile_cycles(shape_of(invocation(GGML_TYPE_Q4_K, 4096, 4096, 1))));
    ModelShape g = gemm_shape(KernelFamily::int8_plain, 4096, 4096, 4096, {64, 64, 64}, 1, 1, 4);
    const double plain = k.invocation(g).compute_us;
    g.scale_ops_per_k = 1.0 / 32;
    EXPECT_GT(k.invocation(g).compute_us, plain);
    EXPECT_FALSE(k.invocation(g).from_kernel_code);
}

}  // namespace
}  // namespace xdna
