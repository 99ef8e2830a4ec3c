// The DMA-interpreter fuzzer's seed corpus (tests/fuzz/corpus/dma-interpreter) is made of streams the
// matmul sequence builder makes today, in the fuzzer's input format (tests/fuzz/dma-fuzz-input.h): this
// test rebuilds each seed and checks the committed file holds exactly it (XDNA_WRITE_FUZZ_SEEDS=1 writes
// them instead), that it fits the fuzzer's fixed arguments and that it runs to its end on the real
// kernels there, so the fuzzer starts from whole runs of every family and both token tiles.
#include "dma-fuzz-input.h"
#include "fuzz-support.h"
#include "runtime/matmul-sequence.h"
#include "runtime/design-registry.h"
#include "runtime/gather-sequence.h"
#include "runtime/rope-sequence.h"
#include "runtime/scatter-sequence.h"
#include "runtime/quant-sequence.h"
#include "runtime/rows-sequence.h"
#include "sim/rows-stream.h"
#include "ops/add/sim-add.h"
#include "ops/rms_norm/sim-rms-norm.h"
#include "ops/scale/sim-scale.h"
#include "sim/dma-interpreter.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" void swiglu_f32(const float * a, const float * b, float * y, int32_t n, int32_t b_at);  // aie/glu/kernels/swiglu.cc

namespace {

using namespace xdna;

struct Seed {
    const char * file;
    const char * contract;
    int          tile_n;
    int64_t      m_tiles, n_tiles, k_tiles;
    size_t       keep_words;  // 0: the whole stream; else its first words (a truncated stream)
    const char * layout = "m_split";
};

const Seed kSeeds[] = {
    {"q4k-n4-m8-k2.bin", "mm_q4_K_a8", 4, 8, 1, 2, 0},
    {"q4k-truncated.bin", "mm_q4_K_a8", 4, 8, 1, 2, 100},
    {"q6k-n32-m6-k2-n2.bin", "mm_q6_K_a8", 32, 6, 2, 2, 0},           // a partial 4-row group, two token tiles
    {"q80-n4-m36-k1.bin", "mm_q8_0_a8", 4, 36, 1, 1, 0},              // 9 groups: two rounds over 8 columns
    {"q41-n4-m4-k70.bin", "mm_q4_1_a8", 4, 4, 1, 70, 0},              // two K chunks (64 + 6), one task each
    {"q2k-n32-m2-k1.bin", "mm_q2_K_a8", 32, 2, 1, 1, 0},
    {"f32-n32-m4-k2.bin", "mm_f32_f32", 32, 4, 1, 2, 0},
    {"bf16-n4-m5-k3-n3.bin", "mm_bf16_bf16", 4, 5, 3, 3, 0},
    // n_split: W broadcast down a column, A split over its cores; 9 row tiles (two rounds), two groups
    // of 4 token tiles; and two K chunks.
    {"q4k-n32-m9-k2-n8-nsplit.bin", "mm_q4_K_a8", 32, 9, 8, 2, 0, "n_split"},
    {"f16-n4-m2-k70-n4-nsplit.bin", "mm_f16_f16", 4, 2, 4, 70, 0, "n_split"},
};

const MatmulContract & contract_named(const std::string & name) {
    for (const MatmulContract & c : all_matmul_contracts()) {
        if (name == c.name) {
            return c;
        }
    }
    ADD_FAILURE() << "no contract " << name;
    return all_matmul_contracts().front();
}

// The fuzzer's input for a stream: the target index, then the words.
std::vector<uint8_t> seed_bytes(uint32_t target, const uint32_t * words, size_t n_words) {
    std::vector<uint8_t> bytes(4 + 4 * n_words);
    std::memcpy(bytes.data(), &target, 4);
    std::memcpy(bytes.data() + 4, words, 4 * n_words);
    return bytes;
}

// Buffers of the fuzzer's argument sizes, and the arguments over them.
struct FuzzArguments {
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<DmaArgument>          args;
    FuzzArguments() {
        for (uint64_t b : xdna_fuzz::kDmaFuzzArgBytes) {
            bufs.emplace_back(b);
        }
        for (auto & b : bufs) {
            args.push_back({b.data(), b.size()});
        }
    }
};

// The committed seed `file` holds exactly `bytes` (XDNA_WRITE_FUZZ_SEEDS=1 writes it first).
void expect_committed(const char * file, const std::vector<uint8_t> & bytes) {
    const std::string path = std::string(XDNA_DMA_FUZZ_CORPUS) + "/" + file;
    if (std::getenv("XDNA_WRITE_FUZZ_SEEDS") != nullptr) {
        std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    }
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in.good()) << path << " missing (XDNA_WRITE_FUZZ_SEEDS=1 writes it)";
    const std::vector<uint8_t> committed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(committed == bytes) << path << " is not the builder's stream today (XDNA_WRITE_FUZZ_SEEDS=1 rewrites it)";
}

TEST(DmaFuzzSeeds, CommittedSeedsAreTheBuildersStreamsAndRunOnTheFuzzersArguments) {
    const DesignDescription & d = matmul_design().design;
    for (const Seed & s : kSeeds) {
        SCOPED_TRACE(s.file);
        const MatmulContract & c = contract_named(s.contract);
        const MatmulSequenceShape shape = xdna_fuzz::contract_shape(d, c, s.tile_n, s.m_tiles, s.n_tiles, s.k_tiles, s.layout);
        const MatmulSequence seq = build_matmul_sequence(d, shape);
        ASSERT_TRUE(seq.ok()) << seq.error;

        uint32_t target = xdna_fuzz::kDmaFuzzTargetCount;
        for (uint32_t i = 0; i < xdna_fuzz::kDmaFuzzTargetCount; ++i) {
            if (seq.family == xdna_fuzz::kDmaFuzzTargets[i].family && s.tile_n == xdna_fuzz::kDmaFuzzTargets[i].tile_n &&
                seq.layout == xdna_fuzz::kDmaFuzzTargets[i].layout) {
                target = i;
            }
        }
        ASSERT_LT(target, xdna_fuzz::kDmaFuzzTargetCount) << seq.family << " TN " << s.tile_n;
        const size_t n_words = s.keep_words ? s.keep_words : seq.words.size();
        ASSERT_LE(n_words, seq.words.size());
        const std::vector<uint8_t> bytes = seed_bytes(target, seq.words.data(), n_words);

        // The stream fits the fuzzer's arguments and runs to its end there (or, truncated, is refused).
        const uint64_t need[3] = {seq.weights_bytes, seq.activations_bytes, seq.out_bytes};
        for (int i = 0; i < 3; ++i) {
            ASSERT_LE(need[i], xdna_fuzz::kDmaFuzzArgBytes[i]) << "argument " << i;
        }
        FuzzArguments fa;
        const DmaRun run = run_control_stream(d, seq.family, s.tile_n, seq.words.data(), n_words, fa.args, nullptr, seq.layout);
        if (s.keep_words == 0) {
            ASSERT_TRUE(run.ok()) << run.error;
            EXPECT_EQ(run.stats.kernel_calls,
                      static_cast<uint64_t>(xdna_fuzz::stream_m_rows(d, s.m_tiles, s.layout) * s.n_tiles * s.k_tiles));
        } else {
            EXPECT_FALSE(run.ok());
        }
        expect_committed(s.file, bytes);
    }
}

// The seeds of the designs the rows builder serves (runtime/rows-sequence.h): the rows movement's add
// and glu (two inputs) and scale (one), and the norm movement's rms_norm.
struct RowsSeed {
    const char *             file;
    const char *             design;
    const char *             contract;
    int64_t                  rows, cols;
    std::vector<RowsOperand> operands;
};

const RowsSeed kRowsSeeds[] = {
    // 8 columns, a one-row b (repeats)
    {"add-t256-r9-c1536-brow.bin", "add", "add_f32", 9, 1536, {{"a", 1600}, {"b", 0}, {"y", 1600}}},
    // 3 rows in segments over 8 columns, b broadcast to the 4 core rows
    {"glu-t64-r3-c1280.bin", "glu", "swiglu_f32", 3, 1280, {{"a", 1280}, {"b", 1280}, {"y", 1280}}},
    // 11 rows of 896 values (tile 128) over 8 columns, one weight row for all
    {"norm-t128-r11-c896-w.bin", "rms_norm", "rms_norm_mul_f32", 11, 896, {{"x", 896}, {"weight", 0}, {"y", 896}}},
    // 5 rows of 1536 values (tile 256) over 5 columns, one input
    {"scale-t256-r5-c1536.bin", "scale", "scale_f32", 5, 1536, {{"x", 1600}, {"y", 1536}}},
};

// The design's own core program at `tile`, and the kernel calls it makes on the seed's rows.
CoreRoleFactory real_roles(const RowsSeed & s, const DesignDescription & d, int tile, uint64_t & calls) {
    const std::string design = s.design;
    if (design == "rms_norm") {
        calls = static_cast<uint64_t>(s.rows * (2 * s.cols / tile + 1));  // per row: sumsq and apply per chunk, a scale
        return rms_norm_core_roles(d, tile);
    }
    calls = static_cast<uint64_t>(s.rows * s.cols / tile);
    if (design == "scale") {
        return scale_core_roles(d, tile);
    }
    return design == "add" ? add_core_roles(d, tile) : binary_chunk_roles_at(d, tile, {swiglu_f32}, "a_l2l1", "b_l2l1", "y_l1l2");
}

TEST(DmaFuzzSeeds, RowsSeedsAreTheBuildersStreamsAndRunOnTheFuzzersArguments) {
    for (const RowsSeed & s : kRowsSeeds) {
        SCOPED_TRACE(s.file);
        const DesignDescription & d = find_design(s.design)->design;
        RowsShape shape;
        shape.contract = s.contract;
        shape.rows = s.rows;
        shape.cols = s.cols;
        shape.operands = s.operands;
        if (d.norm_movement) {
            const float inv_cols = 1.0f / static_cast<float>(s.cols), eps = 1e-6f;
            uint32_t inv_bits = 0, eps_bits = 0;
            std::memcpy(&inv_bits, &inv_cols, 4);
            std::memcpy(&eps_bits, &eps, 4);
            shape.words = {{"inv_cols", inv_bits}, {"eps", eps_bits}};
        } else if (std::string(s.design) == "scale") {
            const float scale = -0.5f, bias = 0.25f;
            uint32_t s_bits = 0, b_bits = 0;
            std::memcpy(&s_bits, &scale, 4);
            std::memcpy(&b_bits, &bias, 4);
            shape.words = {{"s", s_bits}, {"b", b_bits}};
        }
        const RowsSequence seq = build_rows_sequence(d, shape);
        ASSERT_TRUE(seq.ok()) << seq.error;
        uint32_t target = xdna_fuzz::kDmaFuzzTargetCount;
        for (uint32_t i = 0; i < xdna_fuzz::kDmaFuzzTargetCount; ++i) {
            const xdna_fuzz::DmaFuzzTarget & t = xdna_fuzz::kDmaFuzzTargets[i];
            if (std::string(t.design) == s.design && seq.family == t.family && seq.tile == t.tile_n && seq.layout == t.layout) {
                target = i;
            }
        }
        ASSERT_LT(target, xdna_fuzz::kDmaFuzzTargetCount) << s.design << " tile " << seq.tile;
        // It fits the fuzzer's arguments (the design's operands in the first three) and runs to its end
        // there, on the design's own core program and on the fuzzer's stand-ins.
        FuzzArguments fa;
        fa.args.resize(d.operands.size());
        uint64_t calls = 0;
        const CoreRoleFactory real = real_roles(s, d, seq.tile, calls);
        LoadedDesign loaded;
        const DmaRun run = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""}, real, seq.words.data(),
                                             seq.words.size(), fa.args, nullptr, loaded);
        ASSERT_TRUE(run.ok()) << run.error;
        EXPECT_EQ(run.stats.kernel_calls, calls);
        LoadedDesign stand_in_loaded;
        const DmaRun stand_in = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""}, xdna_fuzz::stand_in_roles(d, seq.tile),
                                                  seq.words.data(), seq.words.size(), fa.args, nullptr, stand_in_loaded);
        ASSERT_TRUE(stand_in.ok()) << stand_in.error;
        expect_committed(s.file, seed_bytes(target, seq.words.data(), seq.words.size()));
    }
}

// The gather's seed (runtime/gather-sequence.h): 9 ids with runs, a repeat and a reversal, rows of 2048
// values (tile 1024) over 3 columns; the interpreter's forward route, no cores.
TEST(DmaFuzzSeeds, TheGatherSeedIsTheBuildersStreamAndRunsOnTheFuzzersArguments) {
    const DesignDescription & d = find_design("get_rows")->design;
    GatherShape shape;
    shape.contract = "get_rows_f32";
    shape.ids = {5, 6, 7, 2, 3, 9, 9, 39, 38};
    shape.rows = static_cast<int64_t>(shape.ids.size());
    shape.cols = 2048;
    shape.src_rows = 40;
    shape.src_stride = 2048;
    shape.y_stride = 2048;
    shape.columns = 3;
    const RowsSequence seq = build_gather_sequence(d, shape);
    ASSERT_TRUE(seq.ok()) << seq.error;
    uint32_t target = xdna_fuzz::kDmaFuzzTargetCount;
    for (uint32_t i = 0; i < xdna_fuzz::kDmaFuzzTargetCount; ++i) {
        const xdna_fuzz::DmaFuzzTarget & t = xdna_fuzz::kDmaFuzzTargets[i];
        if (std::string(t.design) == "get_rows" && seq.family == t.family && seq.tile == t.tile_n && seq.layout == t.layout) {
            target = i;
        }
    }
    ASSERT_LT(target, xdna_fuzz::kDmaFuzzTargetCount);
    FuzzArguments fa;
    fa.args.resize(d.operands.size());
    LoadedDesign loaded;
    const DmaRun run = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""}, xdna_fuzz::stand_in_roles(d, seq.tile),
                                         seq.words.data(), seq.words.size(), fa.args, nullptr, loaded);
    ASSERT_TRUE(run.ok()) << run.error;
    EXPECT_EQ(run.stats.mm2s_bytes, 9u * 2048 * 4);
    EXPECT_EQ(run.stats.s2mm_bytes, 9u * 2048 * 4);
    EXPECT_EQ(run.stats.kernel_calls, 0u);
    expect_committed("gather-t1024-r9-c2048.bin", seed_bytes(target, seq.words.data(), seq.words.size()));
}

// The quant design's seed (runtime/quant-sequence.h): 3 tokens of 1024 values into a8 tiles of 4
// tokens (one padding row read from the zeros) over 3 columns; the stand-in of its core program.
TEST(DmaFuzzSeeds, TheQuantSeedIsTheBuildersStreamAndRunsOnTheFuzzersArguments) {
    const DesignDescription & d = find_design("act_quant")->design;
    const QuantShape shape{"act_quant_a8_b256_n4", 3, 1024, 1030, 3};
    const RowsSequence seq = build_quant_sequence(d, shape);
    ASSERT_TRUE(seq.ok()) << seq.error;
    uint32_t target = xdna_fuzz::kDmaFuzzTargetCount;
    for (uint32_t i = 0; i < xdna_fuzz::kDmaFuzzTargetCount; ++i) {
        const xdna_fuzz::DmaFuzzTarget & t = xdna_fuzz::kDmaFuzzTargets[i];
        if (std::string(t.design) == "act_quant" && seq.family == t.family && seq.tile == t.tile_n && seq.layout == t.layout) {
            target = i;
        }
    }
    ASSERT_LT(target, xdna_fuzz::kDmaFuzzTargetCount);
    FuzzArguments fa;
    fa.args.resize(d.operands.size());
    LoadedDesign loaded;
    const DmaRun run = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""},
                                         xdna_fuzz::stand_in_roles(d, seq.tile, seq.family), seq.words.data(), seq.words.size(), fa.args,
                                         nullptr, loaded);
    ASSERT_TRUE(run.ok()) << run.error;
    EXPECT_EQ(run.stats.mm2s_bytes, 4u * 1024 * 4);  // 3 rows of x and one of zeros
    EXPECT_EQ(run.stats.s2mm_bytes, 4u * 1216);       // 4 tiles
    EXPECT_EQ(run.stats.kernel_calls, 4u);            // one group per tile
    expect_committed("quant-a8b256n4-r3-k1024.bin", seed_bytes(target, seq.words.data(), seq.words.size()));
}

// The scatter's seed (runtime/scatter-sequence.h): 9 rows of 768 values (tile 256) into Q8_0 rows at ids
// with runs, a reversal and jumps, over 3 columns; the stand-in of its core program.
TEST(DmaFuzzSeeds, TheScatterSeedIsTheBuildersStreamAndRunsOnTheFuzzersArguments) {
    const DesignDescription & d = find_design("set_rows")->design;
    ScatterShape shape;
    shape.contract = "f32_to_q8_0";
    shape.ids = {5, 6, 7, 2, 3, 9, 39, 38, 20};
    shape.rows = static_cast<int64_t>(shape.ids.size());
    shape.cols = 768;
    shape.x_stride = 768;
    shape.y_rows = 40;
    shape.y_row_bytes = 768 / 32 * 34;
    shape.y_stride = shape.y_row_bytes;
    shape.columns = 3;
    const RowsSequence seq = build_scatter_sequence(d, shape);
    ASSERT_TRUE(seq.ok()) << seq.error;
    uint32_t target = xdna_fuzz::kDmaFuzzTargetCount;
    for (uint32_t i = 0; i < xdna_fuzz::kDmaFuzzTargetCount; ++i) {
        const xdna_fuzz::DmaFuzzTarget & t = xdna_fuzz::kDmaFuzzTargets[i];
        if (std::string(t.design) == "set_rows" && seq.family == t.family && seq.tile == t.tile_n && seq.layout == t.layout) {
            target = i;
        }
    }
    ASSERT_LT(target, xdna_fuzz::kDmaFuzzTargetCount);
    FuzzArguments fa;
    fa.args.resize(d.operands.size());
    LoadedDesign loaded;
    const DmaRun run = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""},
                                         xdna_fuzz::stand_in_roles(d, seq.tile, seq.family), seq.words.data(), seq.words.size(), fa.args,
                                         nullptr, loaded);
    ASSERT_TRUE(run.ok()) << run.error;
    EXPECT_EQ(run.stats.mm2s_bytes, 9u * 768 * 4);
    EXPECT_EQ(run.stats.s2mm_bytes, 9u * 768 / 32 * 34);
    EXPECT_EQ(run.stats.kernel_calls, 9u * 3);  // three chunks of 256 per row
    expect_committed("scatter-q8-t256-r9-c768.bin", seed_bytes(target, seq.words.data(), seq.words.size()));
}

// The rope's seed (runtime/rope-sequence.h): 3 tokens x 8 heads of 128 (partial rotation, 64 of 128)
// over 6 columns, heads 256 floats apart; the stand-in of its core program.
TEST(DmaFuzzSeeds, TheRopeSeedIsTheBuildersStreamAndRunsOnTheFuzzersArguments) {
    const DesignDescription & d = find_design("rope")->design;
    RopeShape shape;
    shape.contract = "rope_norm_f32";
    shape.tokens = 3;
    shape.heads = 8;
    shape.ne0 = 128;
    shape.n_dims = 64;
    shape.x_head_stride = shape.y_head_stride = 256;
    shape.x_token_stride = shape.y_token_stride = 2048;
    shape.columns = 6;
    const RowsSequence seq = build_rope_sequence(d, shape);
    ASSERT_TRUE(seq.ok()) << seq.error;
    uint32_t target = xdna_fuzz::kDmaFuzzTargetCount;
    for (uint32_t i = 0; i < xdna_fuzz::kDmaFuzzTargetCount; ++i) {
        const xdna_fuzz::DmaFuzzTarget & t = xdna_fuzz::kDmaFuzzTargets[i];
        if (std::string(t.design) == "rope" && seq.family == t.family && seq.tile == t.tile_n && seq.layout == t.layout) {
            target = i;
        }
    }
    ASSERT_LT(target, xdna_fuzz::kDmaFuzzTargetCount);
    FuzzArguments fa;
    fa.args.resize(d.operands.size());
    LoadedDesign loaded;
    const DmaRun run = run_design_stream(d, XclbinId{seq.family, seq.tile, seq.layout, ""},
                                         xdna_fuzz::stand_in_roles(d, seq.tile, seq.family), seq.words.data(), seq.words.size(), fa.args,
                                         nullptr, loaded);
    ASSERT_TRUE(run.ok()) << run.error;
    EXPECT_EQ(run.stats.mm2s_bytes, 24u * 128 * 4 + 6u * 128 * 4);  // the head rows, an angle row per column
    EXPECT_EQ(run.stats.s2mm_bytes, 24u * 128 * 4);
    EXPECT_EQ(run.stats.kernel_calls, 24u);
    expect_committed("rope-norm-t128-r3x8.bin", seed_bytes(target, seq.words.data(), seq.words.size()));
}

}  // namespace
