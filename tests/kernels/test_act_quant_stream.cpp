// The act_quant design run as an NPU runs it: the instruction stream built on the host from
// aie/act_quant/dataflow.json (runtime/quant-sequence.h), executed by the simulator's DMA interpreter
// with the design's core program calling the aie/act_quant kernels. Every family's tiles against the
// kernels mode (the same kernel code called tile by tile without the data movement, itself checked
// against references of the stated numerics in test_act_quant.cpp) byte for byte, the padding rows of a
// short last token tile read from the zeros operand; the F32 tiles also against their layout written
// here; the stream's traffic against the design's rules; the description's objects against the tile
// formats of the ABI header.
#include "ops/act_quant/act-quant-invocation.h"
#include "ops/act_quant/sim-act-quant.h"
#include "runtime/design-registry.h"
#include "runtime/quant-sequence.h"
#include "runtime/thread-pool.h"
#include "sim-operands.h"
#include "sim/sim-stream.h"
#include "test-random.h"
#include "xdna_aie/matmul_tiles.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

extern "C" void act_quant_f32_n4(const float * x, uint8_t * tile, int32_t group);  // aie/act_quant/kernels/act_quant.cc

namespace {

using namespace xdna;

struct Family {
    const char * name;
    ActFormat    format;
    int          tile_n, tile_k, group_tokens, tile_bytes;
};

// The tile bytes from the ABI header's formats (not from the description).
const std::vector<Family> & families() {
    using namespace xdna_aie;
    static const std::vector<Family> f = {
        {"a8_b32_n4", ActFormat::a8_b32, 4, 256, 4, ActTileFormat{4, 256, 32}.tile_bytes()},
        {"a8_b32_n32", ActFormat::a8_b32, 32, 256, 4, ActTileFormat{32, 256, 32}.tile_bytes()},
        {"a8_b256_n4", ActFormat::a8_b256, 4, 256, 4, ActTileFormat{4, 256, 256}.tile_bytes()},
        {"a8_b256_n32", ActFormat::a8_b256, 32, 256, 4, ActTileFormat{32, 256, 256}.tile_bytes()},
        {"bfp16_n32", ActFormat::bfp16, 32, 256, 8, BlockActTileFormat{32, 256}.tile_bytes()},
        {"bfp16_k128_n32", ActFormat::bfp16, 32, 128, 8, BlockActTileFormat{32, 128}.tile_bytes()},
        {"bfp16_k64_n32", ActFormat::bfp16, 32, 64, 8, BlockActTileFormat{32, 64}.tile_bytes()},
        {"bfp16_k128_n64", ActFormat::bfp16, 64, 128, 8, BlockActTileFormat{64, 128}.tile_bytes()},
        {"f16_n4", ActFormat::f16, 4, 128, 4, FloatActTileFormat{4, 128, 2}.tile_bytes()},
        {"f16_n32", ActFormat::f16, 32, 128, 4, FloatActTileFormat{32, 128, 2}.tile_bytes()},
        {"bf16_n4", ActFormat::bf16, 4, 128, 4, FloatActTileFormat{4, 128, 2}.tile_bytes()},
        {"bf16_n32", ActFormat::bf16, 32, 128, 4, FloatActTileFormat{32, 128, 2}.tile_bytes()},
        {"f32_n4", ActFormat::f32, 4, 64, 4, FloatActTileFormat{4, 64, 4}.tile_bytes()},
        {"f32_n32", ActFormat::f32, 32, 64, 4, FloatActTileFormat{32, 64, 4}.tile_bytes()},
    };
    return f;
}

struct QuantRun {
    std::vector<uint8_t> tiles;
    Status               st;
    bool                 refused = true;
};

ActQuantParams params_of(const Family & f, int64_t n, int64_t k, int64_t stride) {
    ActQuantParams p;
    p.n = n;
    p.k = k;
    p.tile_n = f.tile_n;
    p.tile_k = f.tile_k;
    p.format = f.format;
    p.act_block = act_format_block(f.format);
    p.n_tiles = (n + f.tile_n - 1) / f.tile_n;
    p.k_tiles = k / f.tile_k;
    p.tile_bytes = static_cast<size_t>(f.tile_bytes);
    p.x_row_stride = stride;
    return p;
}

// The tiles start as 0xA5 everywhere, so a byte the core program leaves unwritten shows.
QuantRun run(const Family & f, int64_t n, int64_t k, int64_t stride, const std::vector<float> & x, bool stream, StreamContexts & ctx,
             bool with_zeros = true, ActQuantKernel broken = nullptr) {
    const ActQuantParams p = params_of(f, n, k, stride);
    const size_t out_bytes = static_cast<size_t>(p.n_tiles * p.k_tiles) * p.tile_bytes;
    xdna_test::HostBuffer xb(x.size() * 4), tb(out_bytes), zb(kActQuantZeroBytes);
    std::memcpy(xb.host_ptr(), x.data(), x.size() * 4);
    std::memset(tb.host_ptr(), 0xA5, out_bytes);
    std::memset(zb.host_ptr(), 0, kActQuantZeroBytes);
    ActQuantInvocation a;
    a.p = p;
    a.x = {&xb, 0};
    a.tiles = {&tb, 0};
    if (with_zeros) {
        a.zeros = {&zb, 0};
    }
    const Invocation inv = to_invocation(a);
    ThreadPool pool(2);
    QuantRun out;
    if (stream) {
        out.st = sim_run_act_quants_stream({inv}, pool, ctx, &out.refused, broken);
    } else {
        out.st = sim_run_act_quants({inv}, pool);
        out.refused = false;
    }
    const auto * t = static_cast<const uint8_t *>(tb.host_ptr());
    out.tiles.assign(t, t + out_bytes);
    return out;
}

}  // namespace

// Every family, at one row, a short last token tile, whole token tiles and strided rows: the stream's
// tiles are the kernels mode's, byte for byte (the padding rows from the zeros operand).
TEST(ActQuantStream, EveryFamilysTilesAreTheKernelsModes) {
    StreamContexts ctx;
    for (const Family & f : families()) {
        for (const auto [n, k_tiles, extra] : {std::tuple<int64_t, int64_t, int64_t>{1, 3, 0},
                                               std::tuple<int64_t, int64_t, int64_t>{f.tile_n + 3, 5, 8},
                                               std::tuple<int64_t, int64_t, int64_t>{2 * f.tile_n, 2, 0}}) {
            const int64_t k = k_tiles * f.tile_k, stride = k + extra;
            SCOPED_TRACE(std::string(f.name) + ": " + std::to_string(n) + " rows of " + std::to_string(k) + ", stride " + std::to_string(stride));
            const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(n * stride), 6.0f);
            const QuantRun s = run(f, n, k, stride, x, true, ctx);
            ASSERT_TRUE(s.st.ok) << s.st.message;
            EXPECT_FALSE(s.refused);
            const QuantRun kern = run(f, n, k, stride, x, false, ctx);
            ASSERT_TRUE(kern.st.ok) << kern.st.message;
            ASSERT_EQ(s.tiles.size(), kern.tiles.size());
            for (size_t i = 0; i < s.tiles.size(); ++i) {
                ASSERT_EQ(s.tiles[i], kern.tiles[i]) << "byte " << i << " of tile " << i / static_cast<size_t>(f.tile_bytes);
            }
        }
    }
}

// The F32 tiles are copies in the float tiles' order ([group][k / 8][token of the group][8]): written here
// from that rule alone, the padding tokens zeros; 70 K tiles over one column: two segments (64 + 6).
TEST(ActQuantStream, F32TilesAreTheirLayoutOfTheRowsAndZeros) {
    const Family & f = families()[12];
    ASSERT_STREQ(f.name, "f32_n4");
    constexpr int64_t n = 3, k_tiles = 70, k = k_tiles * 64, stride = k + 4;
    const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(n * stride), 2.0f);
    StreamContexts ctx;
    // One column: build the shape by hand to pin the columns.
    const DesignRead & d = built_in_design(kActQuantDesign);
    ASSERT_TRUE(d.ok()) << d.error;
    QuantShape shape{"act_quant_f32_n4", n, k, stride, 1};
    const RowsSequence seq = build_quant_sequence(d.design, shape);
    ASSERT_TRUE(seq.ok()) << seq.error;
    EXPECT_EQ(seq.traffic.steps, 2);
    const QuantRun s = run(f, n, k, stride, x, true, ctx);
    ASSERT_TRUE(s.st.ok) << s.st.message;
    const auto * tiles = reinterpret_cast<const float *>(s.tiles.data());
    for (int64_t kt = 0; kt < k_tiles; ++kt) {
        const float * tile = tiles + kt * (f.tile_bytes / 4);
        for (int t = 0; t < f.tile_n; ++t) {
            for (int kk = 0; kk < 64; ++kk) {
                const int g = t / 4, tg = t % 4, kc = kk / 8, i = kk % 8;
                const float got = tile[((g * (64 / 8) + kc) * 4 + tg) * 8 + i];
                const float want = t < n ? x[static_cast<size_t>(t * stride + kt * 64 + kk)] : 0.0f;
                ASSERT_EQ(0, std::memcmp(&got, &want, 4)) << "K tile " << kt << " token " << t << " value " << kk;
            }
        }
    }
}

// The stream moves x once, the zeros for the padding rows of the last token tile and every tile once;
// its tiles go to the columns in blocks, a core's calls are its tiles' groups.
TEST(ActQuantStream, TrafficAndCallsAreTheDesigns) {
    const DesignRead & d = built_in_design(kActQuantDesign);
    ASSERT_TRUE(d.ok()) << d.error;
    struct Want {
        int     family;
        int64_t n, k_tiles;
        int     columns, used;
        int64_t calls, steps;
    };
    const std::vector<Want> wants = {
        {1, 1, 16, 0, 8, 2 * 8, 1},   // a decode token, a8/32 at tile 32: 16 tiles over 8 columns, 8 groups each
        {0, 1, 16, 0, 8, 2, 1},       // the same at tile 4: one group per tile
        {4, 40, 16, 3, 3, 11 * 4, 2}, // bfp16: 2 token tiles x 16 = 32 tiles over 3 columns; column 1 spans both
        {12, 5, 130, 1, 1, 260, 6},   // f32 tile 4: 2 token tiles x 130 K tiles on one column: 64 + 64 + 2 each
    };
    for (const Want & w : wants) {
        const Family & f = families()[static_cast<size_t>(w.family)];
        SCOPED_TRACE(f.name);
        const int64_t k = w.k_tiles * f.tile_k;
        QuantShape s{std::string("act_quant_") + f.name, w.n, k, k, w.columns};
        const RowsSequence seq = build_quant_sequence(d.design, s);
        ASSERT_TRUE(seq.ok()) << seq.error;
        EXPECT_EQ(seq.tile, f.tile_n);
        EXPECT_EQ(seq.traffic.columns_used, w.used);
        EXPECT_EQ(seq.traffic.calls_per_core, w.calls);
        EXPECT_EQ(seq.traffic.steps, w.steps);
        const int64_t n_tiles = (w.n + f.tile_n - 1) / f.tile_n;
        const uint64_t pad_rows = static_cast<uint64_t>(n_tiles * f.tile_n - w.n);
        EXPECT_EQ(seq.traffic.of("x"), static_cast<uint64_t>(w.n * k) * 4);
        EXPECT_EQ(seq.traffic.of("zeros"), pad_rows * static_cast<uint64_t>(k) * 4);
        EXPECT_EQ(seq.traffic.of("tiles"), static_cast<uint64_t>(n_tiles * w.k_tiles * f.tile_bytes));
    }
}

// The description's objects are the ABI header's tile formats and the kernels' groups; its zeros cover
// the longest padding; the host's zero block is its size.
TEST(ActQuantStream, TheDescriptionsObjectsAreTheTileFormats) {
    const DesignRead & d = built_in_design(kActQuantDesign);
    ASSERT_TRUE(d.ok()) << d.error;
    EXPECT_EQ(d.design.zeros_bytes, kActQuantZeroBytes);
    EXPECT_EQ(d.design.family_objects.size(), families().size());
    for (const Family & f : families()) {
        SCOPED_TRACE(f.name);
        const DesignDescription::FamilyObjects * o = d.design.objects_of(f.name);
        ASSERT_NE(o, nullptr);
        EXPECT_EQ(o->tokens, f.tile_n);
        EXPECT_EQ(o->tile_k, f.tile_k);
        EXPECT_EQ(o->group_tokens, f.group_tokens);
        EXPECT_EQ(d.design.unit_bytes(f.name, "tile", f.tile_n), static_cast<size_t>(f.tile_bytes));
        EXPECT_EQ(d.design.unit_bytes(f.name, "group", f.tile_n), static_cast<size_t>(f.group_tokens * f.tile_k * 4));
        EXPECT_LE(static_cast<size_t>((f.tile_n - 1) * f.tile_k * 4), d.design.zeros_bytes);
        ActivationLayout L;
        L.format = f.format;
        L.tile_n = f.tile_n;
        L.tile_k = f.tile_k;
        L.k = L.k_pad = f.tile_k;
        EXPECT_STREQ(act_quant_key(L).variant, (std::string("act_quant_") + f.name).c_str());
        EXPECT_NE(d.design.kernel_stack(f.name, f.tile_n), nullptr);
    }
}

// Without the zeros operand the design cannot make its padding rows: refused before anything runs. A
// core program that skips a group's call leaves other bytes: the test sees the kernels the role calls.
namespace {
void only_group_0(const float * x, uint8_t * tile, int32_t group) {
    if (group == 0) act_quant_f32_n4(x, tile, group);
}
}  // namespace

TEST(ActQuantStream, WhatTheDesignCannotTakeIsRefusedAndABrokenCoreProgramIsSeen) {
    StreamContexts ctx;
    const Family & f32 = families()[13];  // f32_n32: 8 groups per tile
    ASSERT_STREQ(f32.name, "f32_n32");
    const std::vector<float> x = xdna_test::random_floats(static_cast<size_t>(20 * 128), 2.0f);
    const QuantRun none = run(f32, 20, 128, 128, x, true, ctx, false);
    EXPECT_FALSE(none.st.ok);
    EXPECT_TRUE(none.refused);
    for (uint8_t b : none.tiles) ASSERT_EQ(b, 0xA5);
    const QuantRun good = run(f32, 20, 128, 128, x, true, ctx);
    ASSERT_TRUE(good.st.ok) << good.st.message;
    const QuantRun bad = run(f32, 20, 128, 128, x, true, ctx, true, only_group_0);
    ASSERT_TRUE(bad.st.ok) << bad.st.message;
    EXPECT_NE(good.tiles, bad.tiles);
}
