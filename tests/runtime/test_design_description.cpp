// The dataflow description (aie/matmul/dataflow.json) as the runtime reads it, and the runtime sequence
// the builder makes from it, checked against numbers that do not come from that code: the buffer table
// design.py prints (aie/matmul/README.md, "Tile and FIFO bytes") and the shim BD register layout decoded
// field by field.
#include "control/control-ops.h"
#include "control/shim-bd.h"
#include "runtime/design-description.h"
#include "runtime/design-registry.h"
#include "runtime/matmul-sequence.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using namespace xdna;

std::string file_text(const char * path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(DesignDescription, BuiltInEqualsTheFileDesignPyReads) {
    const DesignRead & built = matmul_design();
    ASSERT_TRUE(built.ok()) << built.error;
    const DesignRead file = read_design_description_file(XDNA_DATAFLOW_JSON);
    ASSERT_TRUE(file.ok()) << file.error;
    EXPECT_EQ(built.design.fifos.size(), file.design.fifos.size());
    EXPECT_EQ(built.design.rtp_core_address, file.design.rtp_core_address);
    EXPECT_EQ(built.design.families, file.design.families);
    const DesignDescription & d = built.design;
    EXPECT_EQ(d.max_columns, 8);
    EXPECT_EQ(d.core_rows, 4);
    EXPECT_EQ(d.contract_index("kquant", "mm_q6_K_a8"), 2);
    EXPECT_EQ(d.family_of("mm_q8_0_a8"), "legacy");
    EXPECT_EQ(d.family_of("mm_nothing"), "");
    ASSERT_NE(d.shim_fifo_of("weights"), nullptr);
    EXPECT_TRUE(d.shim_fifo_of("weights")->shim_mm2s);
    EXPECT_FALSE(d.shim_fifo_of("out")->shim_mm2s);
}

// Designs are found by the name a kernel key or a manifest entry gives: the matmul design is the one
// compiled from aie/matmul/dataflow.json, and a name no aie/ folder has is no design.
TEST(DesignRegistry, FindsDesignsByName) {
    const DesignRead * d = find_design("matmul");
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(d->ok()) << d->error;
    EXPECT_EQ(d, &matmul_design());
    EXPECT_EQ(d->design.design, "matmul");
    EXPECT_EQ(find_design("rmsnorm_nothing"), nullptr);
    EXPECT_EQ(find_design(""), nullptr);
    const std::vector<std::string> names = design_names();
    EXPECT_NE(std::find(names.begin(), names.end(), "matmul"), names.end());
    // Every built-in description parses and names its own folder.
    for (const std::string & n : names) {
        SCOPED_TRACE(n);
        ASSERT_NE(find_design(n), nullptr);
        EXPECT_TRUE(find_design(n)->ok()) << find_design(n)->error;
    }
}

// The buffer table of aie/matmul/README.md (printed by design.py --print-plan from its own ABI mirror).
TEST(DesignDescription, FamilyBuffersMatchDesignPysTable) {
    const DesignDescription & d = matmul_design().design;
    // core: the table's core memory column; kquant at TN = 32 gets one C buffer because its kernel keeps
    // 3968 bytes of scratch and frames on the stack (mm_kquant.cc budget), not a flat 1.5 KB reserve.
    struct Row { const char * family; int tn; size_t w, a, c; int c_depth; size_t core; };
    for (const Row & r : {Row{"kquant", 4, 13440, 1216, 1024, 2, 35216}, Row{"kquant", 32, 13440, 9344, 8192, 1, 57744},
                          Row{"legacy", 4, 17408, 1280, 1024, 2, 40976}, Row{"legacy", 32, 17408, 10240, 8192, 1, 65040},
                          Row{"kquant_low", 4, 7040, 1216, 1024, 2, 20112},
                          Row{"kquant_low", 32, 7040, 9344, 8192, 2, 50704},
                          Row{"float", 4, 16384, 1024, 1024, 2, 38928}, Row{"float", 32, 16384, 8192, 8192, 1, 57872},
                          // TN 64 (A in K halves): sized over Q4_K and Q5_K only (Q6_K has no 64-token
                          // program); A objects of one K half (64 x 128 as bfp16 blocks + flags).
                          Row{"kquant_bfp16", 64, 11264, 9280, 16384, 1, 63056},
                          Row{"kquant_bfp16", 32, 13440, 9280, 8192, 1, 61520}}) {
        FamilyBuffers b;
        std::string err;
        ASSERT_TRUE(family_buffers(d, r.family, r.tn, b, err)) << err;
        EXPECT_EQ(b.w_obj, r.w) << r.family << " n" << r.tn;
        EXPECT_EQ(b.a_obj, r.a) << r.family << " n" << r.tn;
        EXPECT_EQ(b.c_obj, r.c) << r.family << " n" << r.tn;
        EXPECT_EQ(b.c_depth, r.c_depth) << r.family << " n" << r.tn;
        EXPECT_EQ(b.core_bytes, r.core) << r.family << " n" << r.tn;
    }
}

// Exact xclbins (design.py --exact --print-plan): W objects of the contract's own tile, and with them
// the core's memory (Q4_K at TN 32 then has room for a second C buffer); a contract outside the family
// is refused.
TEST(DesignDescription, ExactFamilyBuffersMatchDesignPysExactPlans) {
    const DesignDescription & d = matmul_design().design;
    struct Row { const char * family; const char * contract; int tn; size_t w, a; int c_depth; size_t core; };
    for (const Row & r : {Row{"kquant", "mm_q4_K_a8", 4, 9216, 1216, 2, 26768}, Row{"kquant", "mm_q4_K_a8", 32, 9216, 9344, 2, 57488},
                          Row{"legacy", "mm_q4_0_a8", 4, 9216, 1280, 2, 24592}, Row{"legacy", "mm_q8_0_a8", 32, 17408, 10240, 1, 65040},
                          Row{"kquant_bfp16", "mm_q4_K_bfp16", 64, 9216, 9280, 1, 58960}}) {
        FamilyBuffers b;
        std::string err;
        ASSERT_TRUE(family_buffers(d, r.family, r.tn, b, err, r.contract)) << err;
        EXPECT_EQ(b.w_obj, r.w) << r.contract << " n" << r.tn;
        EXPECT_EQ(b.a_obj, r.a) << r.contract << " n" << r.tn;
        EXPECT_EQ(b.c_depth, r.c_depth) << r.contract << " n" << r.tn;
        EXPECT_EQ(b.core_bytes, r.core) << r.contract << " n" << r.tn;
    }
    FamilyBuffers b;
    std::string err;
    EXPECT_FALSE(family_buffers(d, "kquant", 4, b, err, "mm_q4_0_a8"));
    EXPECT_NE(err.find("no contract"), std::string::npos) << err;
    // Q6_K's W tile does not fit beside 64-token A halves and C: it has no such xclbin.
    EXPECT_FALSE(family_buffers(d, "kquant_bfp16", 64, b, err, "mm_q6_K_bfp16"));
    EXPECT_NE(err.find("token tile 64"), std::string::npos) << err;
}

// The committed dataflow description with its first `from` replaced by `to`.
std::string with(const std::string & from, const std::string & to) {
    std::string t = file_text(XDNA_DATAFLOW_JSON);
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
}

TEST(DesignDescription, BrokenDescriptionsNameTheField) {
    EXPECT_NE(parse_design_description("{").error.find("dataflow description"), std::string::npos);
    EXPECT_NE(parse_design_description(with("\"core_rows\": 4", "\"core_rows\": \"4\"")).error.find("core_rows"),
              std::string::npos);
    EXPECT_NE(parse_design_description(with("\"link\": \"split\"", "\"link\": \"scatter\"")).error.find("scatter"),
              std::string::npos);
    EXPECT_NE(parse_design_description(with("\"c\": 14", "\"c\": 6")).error.find("used twice"), std::string::npos);
    EXPECT_NE(parse_design_description(with("\"source\": \"w_l3l2\"", "\"source\": \"nowhere\"")).error.find("nowhere"),
              std::string::npos);
    EXPECT_NE(parse_design_description(with("\"wrap_max\": 1023,", "")).error.find("wrap_max"), std::string::npos);
    // Limits wider than a shim BD's fields: a plan checked against them would build BDs no NPU encodes.
    EXPECT_NE(parse_design_description(with("\"wrap_max\": 1023", "\"wrap_max\": 2047")).error.find("wrap_max"), std::string::npos);
    EXPECT_NE(parse_design_description(with("\"iteration_max\": 64", "\"iteration_max\": 65")).error.find("iteration_max"),
              std::string::npos);
    EXPECT_NE(parse_design_description(with("\"32\": 3968", "\"32\": \"3968\"")).error.find("kernel_stack.kquant.32"),
              std::string::npos);
}

// The core program's barrier as dataflow.json describes it (the values design.py emits into the core
// program and the sequence; aie/matmul/README.md, "The runtime-parameter barrier"), and what a
// description may not say about it.
TEST(DesignDescription, CoreProgramBarrier) {
    const DesignDescription & d = matmul_design().design;
    EXPECT_EQ(d.barrier_lock, 15u);
    EXPECT_EQ(d.barrier_value, 1u);          // barrier.set(1)
    EXPECT_FALSE(d.barrier_acquire_ge);      // wait_for_value: aie.use_lock(Acquire) = acquire_equal
    EXPECT_EQ(d.barrier_acquire_value, 1u);
    EXPECT_EQ(d.barrier_release_value, 1u);  // release_with_value(1) after the RTP reads
    EXPECT_EQ(d.lock_max_value, 63u);
    EXPECT_EQ(d.rtp_word_max, 2147483647u);  // the core reads int32 words
    // A core program without the release is a description of the old design: read, not refused (the
    // simulator shows what it does; design.py's plan fails it).
    const DesignRead old = parse_design_description(with("\"release\": {\"value\": 1}", "\"release\": {\"value\": 0}"));
    ASSERT_TRUE(old.ok()) << old.error;
    EXPECT_EQ(old.design.barrier_release_value, 0u);
    const DesignRead ge = parse_design_description(with("\"mode\": \"equal\"", "\"mode\": \"greater_equal\""));
    ASSERT_TRUE(ge.ok()) << ge.error;
    EXPECT_TRUE(ge.design.barrier_acquire_ge);
    EXPECT_NE(parse_design_description(with("\"mode\": \"equal\"", "\"mode\": \"less\"")).error.find("'less' is neither"),
              std::string::npos);
    EXPECT_NE(parse_design_description(with("\"set_value\": 1", "\"set_value\": 64")).error.find("set_value"),
              std::string::npos);
    EXPECT_NE(parse_design_description(with("\"release\": {\"value\": 1}", "\"release\": {}")).error.find("release"),
              std::string::npos);
    EXPECT_NE(parse_design_description(with("\"lock\": 15", "\"lock\": 16")).error.find("barrier"), std::string::npos);
}

// Packed weights carry the tail room of the contract table's families in whole groups of
// kWeightRowTileGroup row tiles (contracts/weight-layout.h). A design that groups contracts otherwise,
// or whose columns are not a divisor of that group tall, would read past them: refused with the reason.
TEST(DesignDescription, DesignsThePackedTailRoomDoesNotCoverAreRefused) {
    // Q4_K moved into the legacy family: its tail room is for a Q6_K window, legacy W objects are Q8_0 tiles.
    std::string t2 = with("\"legacy\": [\"mm_q4_0_a8\"", "\"legacy\": [\"mm_q4_K_a8\", \"mm_q4_0_a8\"");
    t2 = t2.replace(t2.find("\"kquant\": [\"mm_q4_K_a8\", "), std::string("\"kquant\": [\"mm_q4_K_a8\", ").size(), "\"kquant\": [");
    const DesignRead regrouped = parse_design_description(t2);
    ASSERT_TRUE(regrouped.ok()) << regrouped.error;
    FamilyBuffers b;
    std::string err;
    EXPECT_FALSE(family_buffers(regrouped.design, "legacy", 4, b, err));
    EXPECT_NE(err.find("family legacy names contract 'mm_q4_K_a8', which the contract table puts in family kquant"),
              std::string::npos) << err;

    MatmulSequenceShape s;
    s.contract = "mm_q4_K_a8";
    s.tile_n = 4;
    s.m_tiles = 6;
    s.n_tiles = 1;
    s.k_tiles = 2;
    s.out_row_stride = 8 * 64;
    s.weight_tile_bytes = 9216;
    s.act_tile_bytes = 1216;
    // Three core rows, and every split or joined object in three parts (the FIFO graph is checked
    // against the core rows when parsed).
    std::string three_text = with("\"core_rows\": 4", "\"core_rows\": 3");
    for (size_t at = three_text.find("\"count\": 4}"); at != std::string::npos; at = three_text.find("\"count\": 4}", at)) {
        three_text.replace(at, std::string("\"count\": 4}").size(), "\"count\": 3}");
    }
    const DesignRead three = parse_design_description(three_text);
    ASSERT_TRUE(three.ok()) << three.error;
    const MatmulSequence seq = build_matmul_sequence(three.design, s);
    ASSERT_FALSE(seq.ok());
    EXPECT_NE(seq.error.find("3 core rows per column; packed weights come in groups of 4 row tiles"), std::string::npos)
        << seq.error;
    std::string two_text = with("\"core_rows\": 4", "\"core_rows\": 2");
    for (size_t at = two_text.find("\"count\": 4}"); at != std::string::npos; at = two_text.find("\"count\": 4}", at)) {
        two_text.replace(at, std::string("\"count\": 4}").size(), "\"count\": 2}");
    }
    const DesignRead two = parse_design_description(two_text);
    ASSERT_TRUE(two.ok()) << two.error;
    EXPECT_TRUE(build_matmul_sequence(two.design, s).ok()) << build_matmul_sequence(two.design, s).error;
}

TEST(MatmulSequence, WordsDecodeToTheBdsOfTheDesign) {
    const DesignDescription & d = matmul_design().design;
    MatmulSequenceShape s;
    s.contract = "mm_q4_K_a8";
    s.tile_n = 4;
    s.m_tiles = 40;  // 10 groups: 2 rounds over 8 columns, 2 columns in the second
    s.n_tiles = 2;
    s.k_tiles = 2;
    s.out_row_stride = 40 * 64;
    s.weight_tile_bytes = 9216;
    s.act_tile_bytes = 1216;
    const MatmulSequence seq = build_matmul_sequence(d, s);
    ASSERT_TRUE(seq.ok()) << seq.error;
    EXPECT_EQ(seq.steps, 4);
    const control::Decoded dec = control::decode(seq.words.data(), seq.words.size());
    ASSERT_TRUE(dec.ok()) << dec.error;
    ASSERT_EQ(dec.stream.ops.size(), seq.stream.ops.size());

    int rtp = 0, barriers = 0, pushes = 0, syncs = 0, w_bds = 0;
    size_t first_sync = 0, pushes_before_first_sync = 0;
    for (size_t i = 0; i < dec.stream.ops.size(); ++i) {
        const auto & op = dec.stream.ops[i];
        if (const auto * b = std::get_if<control::BlockWrite>(&op)) {
            const uint32_t row = (b->address >> 20) & 0x1F, off = b->address & 0xFFFFF;
            if (row >= 2) {
                ++rtp;
                ASSERT_EQ(b->words.size(), 4u);
                EXPECT_EQ(b->words[0], 0u);  // mm_q4_K_a8 is the family's contract 0
                EXPECT_EQ(b->words[2], 2u);  // K tiles
                EXPECT_EQ(b->words[3], 1u);  // layout version
                const uint32_t col = b->address >> 25;
                EXPECT_EQ(b->words[1], col < 2 ? 4u : 2u) << "column " << col;  // rounds x token tiles
            } else if (off == 0x1D000 + 0x20 * d.bd_slots[0].w[0]) {
                // W fill: the family's 13440-byte window (3360 words) as d0 840 x d1 4, the 4 cores' row
                // tiles 2 x 9216 bytes apart (d2), 2 K tiles 9216 bytes apart (iterations).
                std::array<uint32_t, 8> w{};
                std::copy(b->words.begin(), b->words.end(), w.begin());
                const control::ShimBd bd = control::decode_shim_bd(w);
                EXPECT_EQ(bd.buffer_length, 4u * 3360);
                EXPECT_EQ(bd.d0_wrap, 840u);
                EXPECT_EQ(bd.d1_wrap, 4u);
                EXPECT_EQ(bd.d1_stepsize + 1, 840u);
                EXPECT_EQ(bd.d2_stepsize + 1, 2u * 9216 / 4);
                EXPECT_EQ(bd.iteration_wrap + 1, 2u);
                EXPECT_EQ(bd.iteration_stepsize + 1, 9216u / 4);
                EXPECT_TRUE(bd.valid_bd);
                ++w_bds;
            }
        } else if (const auto * w = std::get_if<control::Write32>(&op)) {
            if (((w->address >> 20) & 0x1F) >= 2) {
                ++barriers;
            } else {
                ++pushes;
            }
        } else if (std::holds_alternative<control::Sync>(op)) {
            if (syncs++ == 0) {
                first_sync = i;
                pushes_before_first_sync = pushes;
            }
        }
    }
    EXPECT_EQ(rtp, 32);
    EXPECT_EQ(barriers, 32);
    // Steps (round 0: 8 columns, round 1: 2), 3 pushes per column and step; a sync per column and step.
    EXPECT_EQ(pushes, 3 * (8 + 8 + 2 + 2));
    EXPECT_EQ(syncs, 8 + 8 + 2 + 2);
    EXPECT_EQ(w_bds, 8 + 2);  // slot 0 serves steps 0 (8 columns) and 2 (2 columns)
    // Two steps in flight: step 1 is pushed before step 0 is awaited.
    EXPECT_EQ(pushes_before_first_sync, 3u * 16);
    EXPECT_GT(first_sync, 0u);
}

// The layouts (each an xclbin of a family and token tile): the default m_split splits W over the core
// rows and broadcasts A, n_split, n_shared and n_rows the reverse (n_shared with A shared by the
// columns, n_rows with one A FIFO per core row); a layout that splits both, neither, or names a layout
// twice is refused with the reason.
TEST(DesignDescription, LayoutsSplitExactlyOneOperandOverTheCores) {
    const DesignDescription & d = matmul_design().design;
    ASSERT_EQ(d.layouts.size(), 4u);
    ASSERT_NE(d.layout("n_shared"), nullptr);
    EXPECT_EQ(d.layout("n_shared")->w_parts, 1);
    EXPECT_EQ(d.layout("n_shared")->a_parts, 4);
    EXPECT_TRUE(d.layout("n_shared")->a_shared);
    EXPECT_FALSE(d.layout("n_shared")->a_rows);
    ASSERT_NE(d.layout("n_rows"), nullptr);
    EXPECT_EQ(d.layout("n_rows")->w_parts, 1);
    EXPECT_EQ(d.layout("n_rows")->a_parts, 4);  // 4 token tiles per step, one per core row's FIFO
    EXPECT_TRUE(d.layout("n_rows")->a_shared);
    EXPECT_TRUE(d.layout("n_rows")->a_rows);
    EXPECT_EQ(d.layout("n_rows")->fifo("a_l2l1")->link, FifoLink::broadcast);
    EXPECT_FALSE(d.layout("n_split")->a_shared);
    EXPECT_FALSE(d.layout("m_split")->a_shared);
    EXPECT_EQ(d.layout("")->name, "m_split");
    ASSERT_NE(d.layout("n_split"), nullptr);
    EXPECT_EQ(d.layout("m_split")->w_parts, 4);
    EXPECT_EQ(d.layout("m_split")->a_parts, 1);
    EXPECT_EQ(d.layout("n_split")->w_parts, 1);
    EXPECT_EQ(d.layout("n_split")->a_parts, 4);
    EXPECT_EQ(d.layout("k_split"), nullptr);
    EXPECT_EQ(d.layout("n_split")->fifo("a_l2l1")->link, FifoLink::split);
    EXPECT_EQ(d.layout("n_split")->fifo("w_l2l1")->link, FifoLink::broadcast);
    EXPECT_EQ(d.fifos.size(), d.layout("")->fifos.size());
    // m_split's A made a split too (a 4-part object): both operands split.
    std::string both = with("\"object\": {\"tile\": \"a\", \"count\": 1}, \"depth\": \"l2\"",
                            "\"object\": {\"tile\": \"a\", \"count\": 4}, \"depth\": \"l2\"");
    both = both.replace(both.find("\"link\": \"broadcast\""), std::string("\"link\": \"broadcast\"").size(), "\"link\": \"split\"");
    EXPECT_NE(parse_design_description(both).error.find("exactly one of W and A"), std::string::npos)
        << parse_design_description(both).error;
    // A broadcast of a 4-part object.
    EXPECT_NE(parse_design_description(with("\"link\": \"broadcast\"", "\"link\": \"split\"")).error.find("a_l2l1"),
              std::string::npos);
    EXPECT_NE(parse_design_description(with("\"name\": \"n_split\"", "\"name\": \"m_split\"")).error.find("listed twice"),
              std::string::npos);
    EXPECT_NE(parse_design_description(with("\"name\": \"a_l3l2\"", "\"name\": \"a_in\"")).error.find("a_l3l2"),
              std::string::npos);
}

// Sharing by the columns is A's, on both of its FIFOs, split over the core rows: a W FIFO shared, one
// A FIFO without the other, or a shared A that is not split are refused with the reason.
TEST(DesignDescription, OnlyTheSplitActivationsCanBeSharedByTheColumns) {
    const std::string ok = with("", "");
    ASSERT_TRUE(parse_design_description(ok).ok()) << parse_design_description(ok).error;
    const std::string shared = "\"shared_by_columns\": true";
    const size_t at = ok.find(shared);
    ASSERT_NE(at, std::string::npos);
    // The n_shared a_l3l2's flag dropped: its a_l2l1 alone is shared.
    std::string one = ok;
    one.replace(at, shared.size(), "\"shared_by_columns\": false");
    EXPECT_NE(parse_design_description(one).error.find("both be shared"), std::string::npos) << parse_design_description(one).error;
    // A W FIFO shared.
    std::string w = ok;
    const std::string w_obj = "\"object\": {\"tile\": \"w\", \"count\": 1}, \"depth\": 2,";
    const size_t wat = w.rfind(w_obj);
    ASSERT_NE(wat, std::string::npos);
    w.insert(wat + w_obj.size(), " \"shared_by_columns\": true,");
    EXPECT_NE(parse_design_description(w).error.find("only a_l3l2 and a_l2l1"), std::string::npos) << parse_design_description(w).error;
    std::string bad = ok;
    bad.replace(at, shared.size(), "\"shared_by_columns\": 1");
    EXPECT_NE(parse_design_description(bad).error.find("not true, false or \"rows\""), std::string::npos)
        << parse_design_description(bad).error;
    // n_rows: one FIFO per row only, one unit per object broadcast along the row: its a_l3l2 made a
    // 4-part object, or only one of its FIFOs per row, is refused.
    const std::string rows = "\"shared_by_columns\": \"rows\"";
    const size_t rat = ok.find(rows);
    ASSERT_NE(rat, std::string::npos);
    std::string half = ok;
    half.replace(rat, rows.size(), "\"shared_by_columns\": true");
    EXPECT_NE(parse_design_description(half).error.find("shared per core row"), std::string::npos)
        << parse_design_description(half).error;
    std::string four = ok;
    const std::string one_a = "\"object\": {\"tile\": \"a\", \"count\": 1}, \"depth\": \"l2\",\n       \"operand\": \"activations\", "
                              "\"shim_channel\": {\"direction\": \"mm2s\", \"channel\": 1}, \"shared_by_columns\": \"rows\"";
    const size_t fat = four.find(one_a);
    ASSERT_NE(fat, std::string::npos);
    four.replace(fat, std::string("\"object\": {\"tile\": \"a\", \"count\": 1}").size(), "\"object\": {\"tile\": \"a\", \"count\": 4}");
    EXPECT_NE(parse_design_description(four).error.find("a_l3l2 holds 4 units, not the 1 it broadcasts"), std::string::npos)
        << parse_design_description(four).error;
}

}  // namespace

namespace {

// aie/get_rows/dataflow.json with one edit.
std::string gather_with(const std::string & from, const std::string & to) {
    std::string t = file_text(XDNA_GET_ROWS_DATAFLOW_JSON);
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
}

}  // namespace

// A design of DMAs only (the gather): no cores, no core program, its tiles from .xclbin_tiles, a memory
// tile forwarding the source's objects to the shim; and what such a description may not say.
TEST(DesignDescription, AGatherDesignHasNoCoresAndForwardsThroughTheMemoryTile) {
    const DesignRead r = read_design_description_file(XDNA_GET_ROWS_DATAFLOW_JSON);
    ASSERT_TRUE(r.ok()) << r.error;
    const DesignDescription & d = r.design;
    EXPECT_TRUE(d.gather_movement);
    EXPECT_FALSE(d.rows_stream());
    EXPECT_EQ(d.core_rows, 0);
    EXPECT_EQ(d.rtp_word_count, 0);
    ASSERT_NE(d.fifo("y_l2l3"), nullptr);
    EXPECT_EQ(d.fifo("y_l2l3")->link, FifoLink::forward);
    EXPECT_EQ(d.fifo("y_l2l3")->peer, "src_l3l2");
    ASSERT_NE(d.kernel_stack("gather", 1024), nullptr);
    EXPECT_EQ(d.kernel_stack("gather", 48), nullptr);
    EXPECT_EQ(d.operand_arg("src"), 0);
    EXPECT_EQ(d.operand_arg("y"), 1);
    // Cores where there are none, no cores where a design needs them, a core program without cores, a
    // forward that is not memory tile -> shim of the source's objects, no tiles.
    EXPECT_NE(parse_design_description(gather_with("\"core_rows\": 0", "\"core_rows\": 1")).error.find("core_rows"), std::string::npos);
    EXPECT_NE(parse_design_description(gather_with("\"movement\": \"gather\"", "\"movement\": \"rows\"")).error.find("core_rows"),
              std::string::npos);
    EXPECT_NE(parse_design_description(gather_with("\"units\": {", "\"core_program\": {}, \"units\": {")).error.find("core_program"),
              std::string::npos);
    EXPECT_NE(parse_design_description(gather_with("\"link\": \"forward\", \"source\": \"src_l3l2\",\n       \"object\": {\"unit\": \"chunk\", \"count\": 1}",
                                                   "\"link\": \"forward\", \"source\": \"src_l3l2\",\n       \"object\": {\"unit\": \"chunk\", \"count\": 2}"))
                  .error.find("forward"),
              std::string::npos);
    EXPECT_NE(parse_design_description(gather_with("\"gather\": [32, 64, 128, 256, 512, 1024]", "\"gather\": []")).error.find("xclbin_tiles"),
              std::string::npos);
}

namespace {

// aie/set_rows/dataflow.json with one edit.
std::string scatter_with(const std::string & from, const std::string & to) {
    std::string t = file_text(XDNA_SET_ROWS_DATAFLOW_JSON);
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
}

}  // namespace

// The scatter (aie/set_rows): one core per column, a layout per family named after it whose output
// objects are the family's format, a unit of so many bytes per so many values (Q8_0's 34 per 32); and
// what such a description may not say.
TEST(DesignDescription, AScatterDesignHasALayoutPerFamilyAndBlockUnits) {
    const DesignRead r = read_design_description_file(XDNA_SET_ROWS_DATAFLOW_JSON);
    ASSERT_TRUE(r.ok()) << r.error;
    const DesignDescription & d = r.design;
    EXPECT_TRUE(d.scatter_movement);
    EXPECT_TRUE(d.described_stream());
    EXPECT_FALSE(d.rows_stream());
    EXPECT_EQ(d.core_rows, 1);
    ASSERT_NE(d.layout("f16"), nullptr);
    ASSERT_NE(d.layout("q8_0"), nullptr);
    EXPECT_EQ(d.layout("q8_0")->fifo("y_l2l3")->unit, "q8_0");
    EXPECT_EQ(d.unit_bytes("chunk", 256), 1024u);
    EXPECT_EQ(d.unit_bytes("half", 256), 512u);
    EXPECT_EQ(d.unit_bytes("q8_0", 256), 272u);
    EXPECT_EQ(d.unit_bytes("q8_0", 1024), 1088u);
    EXPECT_EQ(d.unit_bytes("q8_0", 48), 0u);  // not whole blocks
    EXPECT_EQ(d.unit_bytes("q8_0", "q8_0", 128), 136u);
    // A family without its layout, a unit of 0 values, and a scatter whose family names a layout of
    // another family's units are refused or caught.
    EXPECT_NE(parse_design_description(scatter_with("{\"name\": \"q8_0\",", "{\"name\": \"q4_0\",")).error.find("layout named after each family"),
              std::string::npos);
    EXPECT_NE(parse_design_description(scatter_with("\"values\": 32", "\"values\": 0")).error.find(".units.q8_0"), std::string::npos);
    EXPECT_NE(parse_design_description(scatter_with("\"movement\": \"scatter\"", "\"movement\": \"scater\"")).error.find(".movement"),
              std::string::npos);
}

namespace {

// The text of the built-in flash_attn description with `from` replaced by `to`.
std::string attention_with(const std::string & from, const std::string & to) {
    std::string t;
    for (int i = 0; i < kBuiltInDesignCount; ++i) {
        if (std::string(kBuiltInDesigns[i].folder) == "flash_attn") t = kBuiltInDesigns[i].json;
    }
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
}

}  // namespace

// The attention design (aie/flash_attn/dataflow.json) parses built in, with its movement, its objects per
// family and head dim, the host-written slopes and the device-held partial states; its streams are built
// by a described movement's builder (ops/flash_attn/flash-attn-sequence.h).
TEST(DesignDescription, TheAttentionDesignParsesWithItsMovement) {
    const DesignRead * r = find_design("flash_attn");
    ASSERT_NE(r, nullptr);
    ASSERT_TRUE(r->ok()) << r->error;
    const DesignDescription & d = r->design;
    EXPECT_TRUE(d.attention_movement);
    EXPECT_TRUE(d.described_stream());
    EXPECT_FALSE(d.matmul_movement);
    EXPECT_EQ(d.core_rows, 4);
    EXPECT_EQ(d.attention_kv_block, 32);
    EXPECT_EQ(d.attention_max_rows, 16);
    EXPECT_EQ(d.contract_index("f16", "fa_block_f16_bfp16"), 0);
    EXPECT_EQ(d.contract_index("q8_0", "fa_block_q8_0"), 1);
    EXPECT_TRUE(d.is_host_written("slopes"));
    EXPECT_FALSE(d.is_host_written("partials"));
    EXPECT_EQ(d.device_scratch, std::vector<std::string>{"partials"});
    EXPECT_EQ(d.unit_bytes("f16", "kv", 128), 17408u);   // 32 K + 32 V rows of 256 bytes, 16 x 32 mask halves
    EXPECT_EQ(d.unit_bytes("f16", "state", 128), 8320u); // (32 + 16 x 128) fp32
    EXPECT_EQ(d.unit_bytes("q8_0", "kv", 64), 5376u);    // 64 rows of 68 bytes, the mask
    EXPECT_EQ(d.unit_bytes("q8_0", "kv", 32), 0u);       // no Q8_0 xclbin at head dim 32
    EXPECT_TRUE(d.rtp_word_is_float(d.rtp_word("scale")));
    EXPECT_FALSE(d.rtp_word_is_float(d.rtp_word("n_kv")));
    ASSERT_NE(d.shim_fifo_of("k"), nullptr);
    EXPECT_TRUE(d.shim_fifo_of("k")->shim_mm2s);
    EXPECT_FALSE(d.shim_fifo_of("out")->shim_mm2s);
}

// Variants of it that break what its design script relies on are refused, naming the field.
TEST(DesignDescription, MalformedAttentionDescriptionsNameTheField) {
    ASSERT_TRUE(parse_design_description(attention_with("\"movement\": \"attention\"", "\"movement\": \"attention\"")).ok());
    auto error = [](const std::string & from, const std::string & to) { return parse_design_description(attention_with(from, to)).error; };
    EXPECT_NE(error("\"host_written\": {", "\"host_written_not\": {").find("slopes"), std::string::npos);
    EXPECT_NE(error("\"device_scratch\": {", "\"device_scratch_not\": {").find("partials"), std::string::npos);
    EXPECT_NE(error("\"rtp_float_words\": [\"scale\"]", "\"rtp_float_words\": [\"scale\", \"n_kv\"]").find("n_kv"), std::string::npos);
    EXPECT_NE(error("\"n_kv\": 11,", "\"n_kv_not\": 11,").find("n_kv"), std::string::npos);
    // Layout 3's core reads each round's block steps from its q step; an older one takes a fixed count.
    EXPECT_NE(error("\"rtp_layout_version\": 3", "\"rtp_layout_version\": 2").find("layout 3"), std::string::npos);
    EXPECT_NE(error("\"128\": {\"kv\": 17408", "\"256\": {\"kv\": 17408").find(".attention.objects.f16"), std::string::npos);
    EXPECT_NE(error("{\"kv\": 9216, \"state\": 4224, \"kv_decode\": 8448}", "{\"kv\": 4220, \"state\": 4224, \"kv_decode\": 8448}").find("kv is smaller"),
              std::string::npos);
    // The decode layout: kv_decode objects for tasks of one token, at least a state's bytes.
    EXPECT_NE(error("\"kv_decode\": 8448}", "\"kv_decode\": 4220}").find("no kv_decode of at least its state"), std::string::npos);
    EXPECT_NE(error("\"task_tokens\": 1,", "\"task_tokens\": 2,").find("its task_tokens must be 1"), std::string::npos);
    EXPECT_NE(error("\"task_tokens\": 16,", "\"task_tokens\": 8,").find("its task_tokens must be 16"), std::string::npos);
    EXPECT_NE(error("\"cores_per_column\": 4", "\"cores_per_column\": 2").find("cores_per_column"), std::string::npos);
    EXPECT_NE(error("\"movement\": \"attention\"", "\"movement\": \"atention\"").find(".movement"), std::string::npos);
}
