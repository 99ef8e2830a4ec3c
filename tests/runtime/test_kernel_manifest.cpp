// Kernel manifest: parsing, validation (whole-manifest and per-entry), file checks and selection.
#include "runtime/design-description.h"
#include "runtime/installed-kernels.h"
#include "runtime/kernel-files.h"
#include "runtime/kernel-manifest.h"
#include "runtime/runtime-log.h"
#include "test-files.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>

using namespace xdna;
using xdna_test::TempDir;
using xdna_test::write_file;
using json = nlohmann::json;

namespace {

// The mlir-aie argument layout with a params buffer.
json mlir_aie_args() {
    return json::array({
        {{"kind", "opcode"}, {"value", 3}},
        {{"kind", "instructions"}, {"group_id", 1}},
        {{"kind", "instruction_count"}},
        {{"kind", "weights"}, {"group_id", 3}},
        {{"kind", "activations"}, {"group_id", 4}},
        {{"kind", "output"}, {"group_id", 5}},
        {{"kind", "params"}, {"group_id", 6}},
    });
}

// A design entry of the matmul design serving one contract at one tile shape; the family is the one the
// design description gives the contract (kquant for a name it does not know).
json entry(const std::string & contract, int m, int n, int k, const std::string & stem,
           json npu = json::array({"npu2"})) {
    std::string family = matmul_design().design.family_of(contract);
    if (family.empty()) family = "kquant";
    return {
        {"design", "matmul"},
        {"family", family},
        {"xclbin", stem + ".xclbin"},
        {"kernel", "MLIR_AIE"},
        {"npu", std::move(npu)},
        {"serves", json::array({{{"contract", contract}, {"tiles", json::array({{{"m", m}, {"n", n}, {"k", k}}})}}})},
        {"args", mlir_aie_args()},
    };
}

json manifest_of(json designs) {
    return {{"format_version", 2}, {"designs", std::move(designs)}};
}

// A kernels directory with the files for every entry's stem.
struct KernelsDir {
    TempDir dir;

    void add_files(const std::string & stem) {
        write_file(dir / (stem + ".xclbin"), xdna_test::fake_xclbin());
    }
    std::string write_manifest(const json & m) {
        const std::string p = dir / "manifest.json";
        write_file(p, m.dump(2));
        return p;
    }
};

// Parse without file checks; returns the manifest and requires the whole manifest to be accepted.
Manifest parse_ok(const json & m) {
    Manifest    out;
    std::string err;
    EXPECT_TRUE(parse_manifest(m.dump(), "/k/manifest.json", false, out, err)) << err;
    return out;
}

// The only entry error of a manifest with one entry that must be rejected.
std::string single_entry_error(const json & e) {
    Manifest out = parse_ok(manifest_of(json::array({e})));
    EXPECT_TRUE(out.kernels.empty());
    EXPECT_EQ(out.entry_errors.size(), 1u);
    return out.entry_errors.empty() ? std::string() : out.entry_errors.front();
}

}  // namespace

TEST(KernelManifest, ValidManifestParsesEveryField) {
    KernelsDir kd;
    kd.add_files("q4k_n4");
    kd.add_files("q4k_n32");
    const std::string path = kd.write_manifest(manifest_of(json::array({
        entry("mm_q4_K_a8", 64, 4, 256, "q4k_n4", json::array({"npu1", "npu2"})),
        entry("mm_q4_K_a8", 64, 32, 256, "q4k_n32"),
    })));

    Manifest    m;
    std::string err;
    ASSERT_TRUE(load_manifest(path, m, err)) << err;
    EXPECT_TRUE(m.entry_errors.empty()) << m.entry_errors.front();
    ASSERT_EQ(m.kernels.size(), 2u);
    const KernelEntry & k = m.kernels[0];
    EXPECT_STREQ(k.contract->name, "mm_q4_K_a8");
    EXPECT_EQ(k.contract->weight_type, GGML_TYPE_Q4_K);
    EXPECT_EQ(k.tile.m, 64);
    EXPECT_EQ(k.tile.n, 4);
    EXPECT_EQ(k.tile.k, 256);
    EXPECT_EQ(k.xclbin, kd.dir / "q4k_n4.xclbin");  // resolved against the manifest's directory
    EXPECT_EQ(k.design, "matmul");
    EXPECT_EQ(k.family, "kquant");
    EXPECT_EQ(k.kernel_name, "MLIR_AIE");
    EXPECT_TRUE(k.runs_on(NpuGeneration::npu1));
    EXPECT_TRUE(k.runs_on(NpuGeneration::npu2));
    EXPECT_FALSE(m.kernels[1].runs_on(NpuGeneration::npu1));
    ASSERT_EQ(k.args.size(), 7u);
    EXPECT_EQ(k.args[0].kind, ArgKind::opcode);
    EXPECT_EQ(k.args[0].value, 3u);
    EXPECT_EQ(k.args[1].group_id, 1);
    EXPECT_EQ(k.arg_index(ArgKind::weights), 3);
    EXPECT_EQ(k.arg_index(ArgKind::params), 6);
    EXPECT_EQ(k.label(), "designs[0] matmul/kquant (mm_q4_K_a8, tile 64x4x256)");
    EXPECT_EQ(m.designs, 2);
}

// One entry per design: an xclbin serves every contract of its family, at every tile shape it lists.
TEST(KernelManifest, OneDesignEntryServesItsFamilysContractsAndTiles) {
    json e = entry("mm_q4_K_a8", 64, 4, 256, "kquant");
    e["serves"] = json::array({
        {{"contract", "mm_q4_K_a8"}, {"tiles", json::array({{{"m", 64}, {"n", 4}, {"k", 256}}, {{"m", 64}, {"n", 32}, {"k", 256}}})}},
        {{"contract", "mm_q6_K_a8"}, {"tiles", json::array({{{"m", 64}, {"n", 4}, {"k", 256}}})}},
    });
    Manifest m = parse_ok(manifest_of(json::array({e})));
    EXPECT_EQ(m.designs, 1);
    ASSERT_EQ(m.kernels.size(), 3u);
    for (const KernelEntry & k : m.kernels) {
        EXPECT_EQ(k.xclbin, "/k/kquant.xclbin");
        EXPECT_EQ(k.index, 0);
    }
    EXPECT_EQ(m.kernels[1].tile.n, 32);
    EXPECT_STREQ(m.kernels[2].contract->name, "mm_q6_K_a8");
    const MatmulContract * q6k = matmul_contract_for(GGML_TYPE_Q6_K);
    EXPECT_NE(find_kernel(m, "matmul", q6k->name, q6k->tile(4), NpuGeneration::npu2), nullptr);
    EXPECT_EQ(find_kernel(m, "matmul", q6k->name, q6k->tile(32), NpuGeneration::npu2), nullptr);  // not listed

    // A contract outside the design's family, an unknown design or family, a tile listed twice.
    json other = e;
    other["serves"][1]["contract"] = "mm_q4_0_a8";
    EXPECT_NE(single_entry_error(other).find("field 'serves[1].contract' 'mm_q4_0_a8' is not served by family kquant of design matmul"),
              std::string::npos) << single_entry_error(other);
    json design = e;
    design["design"] = "conv";
    EXPECT_NE(single_entry_error(design).find("field 'design' 'conv' is not a design of this backend (known: "), std::string::npos)
        << single_entry_error(design);
    EXPECT_NE(single_entry_error(design).find("matmul"), std::string::npos) << single_entry_error(design);
    json family = e;
    family["family"] = "int4";
    EXPECT_NE(single_entry_error(family).find("field 'family' 'int4' is not a family of design matmul (known: f32_bfp16, float, float_bfp16, kquant, kquant_bfp16, kquant_low, kquant_low_bfp16, legacy, legacy_bfp16)"),
              std::string::npos) << single_entry_error(family);
    json twice = e;
    twice["serves"][0]["tiles"].push_back({{"m", 64}, {"n", 4}, {"k", 256}});
    EXPECT_NE(single_entry_error(twice).find("mm_q4_K_a8 64x4x256 is listed twice"), std::string::npos) << single_entry_error(twice);
    json empty = e;
    empty["serves"] = json::array();
    EXPECT_NE(single_entry_error(empty).find("field 'serves' must be a non-empty array"), std::string::npos);
}

// "w_objects": "exact" (build-npu-kernels.sh --exact): the entry's xclbin has W objects of its one
// contract's tile, which the XRT device's streams must match; such an entry serving two contracts, or a
// sizing the backend does not know, drops the entry with the field named.
TEST(KernelManifest, ExactXclbinsServeOneContract) {
    json e = entry("mm_q4_K_a8", 64, 4, 256, "mm_q4_K_a8_n4");
    EXPECT_FALSE(parse_ok(manifest_of(json::array({e}))).kernels.at(0).exact);
    e["w_objects"] = "exact";
    const Manifest m = parse_ok(manifest_of(json::array({e})));
    ASSERT_EQ(m.kernels.size(), 1u);
    EXPECT_TRUE(m.kernels[0].exact);
    e["w_objects"] = "family";
    EXPECT_FALSE(parse_ok(manifest_of(json::array({e}))).kernels.at(0).exact);
    json two = e;
    two["w_objects"] = "exact";
    two["serves"].push_back({{"contract", "mm_q6_K_a8"}, {"tiles", json::array({{{"m", 64}, {"n", 4}, {"k", 256}}})}});
    EXPECT_NE(single_entry_error(two).find("field 'w_objects' an exact xclbin serves exactly one contract (2 listed)"), std::string::npos)
        << single_entry_error(two);
    json bad = e;
    bad["w_objects"] = "tight";
    EXPECT_NE(single_entry_error(bad).find("field 'w_objects' 'tight' is not a W object sizing"), std::string::npos)
        << single_entry_error(bad);
}

// Format 1 named an instruction file per contract and tile: refused as a whole, saying why and what to do.
TEST(KernelManifest, FormatOneIsRefusedWithTheReason) {
    const json v1 = {{"format_version", 1},
                     {"kernels", json::array({{{"contract", "mm_q4_K_a8"},
                                               {"tile", {{"m", 64}, {"n", 4}, {"k", 256}}},
                                               {"xclbin", "a.xclbin"},
                                               {"instructions", "a.insts.bin"},
                                               {"kernel", "MLIR_AIE"},
                                               {"npu", json::array({"npu2"})},
                                               {"args", mlir_aie_args()}}})}};
    Manifest    m;
    std::string err;
    EXPECT_FALSE(parse_manifest(v1.dump(), "/k/manifest.json", false, m, err));
    EXPECT_NE(err.find("kernel manifest /k/manifest.json: format_version 1"), std::string::npos) << err;
    EXPECT_NE(err.find("is no longer read: its instruction streams fix one problem size"), std::string::npos) << err;
    EXPECT_NE(err.find("rebuild the kernels with scripts/build-npu-kernels.sh"), std::string::npos) << err;
    EXPECT_TRUE(m.kernels.empty());
}

TEST(KernelManifest, AbsolutePathsAreKept) {
    json e = entry("mm_q8_0_a8", 64, 4, 256, "x");
    e["xclbin"] = "/opt/kernels/a.xclbin";
    Manifest m = parse_ok(manifest_of(json::array({e})));
    ASSERT_EQ(m.kernels.size(), 1u);
    EXPECT_EQ(m.kernels[0].xclbin, "/opt/kernels/a.xclbin");
}

TEST(KernelManifest, BadJsonRejectsTheWholeManifest) {
    Manifest    m;
    std::string err;
    EXPECT_FALSE(parse_manifest("{\"format_version\": 1, \"kernels\": [", "/k/manifest.json", false, m, err));
    EXPECT_NE(err.find("/k/manifest.json"), std::string::npos) << err;
    EXPECT_NE(err.find("not valid JSON"), std::string::npos) << err;
}

TEST(KernelManifest, NumberBeyondDoubleRangeIsAnErrorNotACrash) {
    // Found by fuzz_manifest: the JSON parser throws out_of_range (not parse_error) for 1e400, which
    // escaped parse_manifest and ended the process.
    Manifest    m;
    std::string err;
    EXPECT_FALSE(parse_manifest("{\"format_version\": 1, \"kernels\": 1e400}", "/k/manifest.json", false, m, err));
    EXPECT_NE(err.find("/k/manifest.json"), std::string::npos) << err;
    EXPECT_NE(err.find("not usable JSON"), std::string::npos) << err;
}

TEST(KernelManifest, TruncatedManifestFileIsReported) {
    KernelsDir        kd;
    const std::string full = manifest_of(json::array({entry("mm_q4_0_a8", 64, 4, 256, "a")})).dump(2);
    const std::string p = kd.dir / "manifest.json";
    write_file(p, full.substr(0, full.size() / 2));
    Manifest    m;
    std::string err;
    EXPECT_FALSE(load_manifest(p, m, err));
    EXPECT_NE(err.find("not valid JSON"), std::string::npos) << err;
}

TEST(KernelManifest, StructuralErrorsRejectTheWholeManifest) {
    struct Case {
        json        doc;
        const char * expect;
    };
    const Case cases[] = {
        {json::array(), "must be a JSON object"},
        {json{{"designs", json::array()}}, "'format_version' is missing"},
        {json{{"format_version", 3}, {"designs", json::array()}}, "'format_version' must be 2"},
        {json{{"format_version", "2"}, {"designs", json::array()}}, "'format_version' must be 2"},
        {json{{"format_version", 2}}, "'designs' is missing"},
        {json{{"format_version", 2}, {"designs", json::object()}}, "'designs' must be an array"},
        {json{{"format_version", 2}, {"designs", json::array()}, {"kernels", json::array()}}, "'kernels' is not a known field"},
    };
    for (const auto & c : cases) {
        Manifest    m;
        std::string err;
        EXPECT_FALSE(parse_manifest(c.doc.dump(), "/k/manifest.json", false, m, err)) << c.doc.dump();
        EXPECT_NE(err.find(c.expect), std::string::npos) << "got: " << err;
    }
}

TEST(KernelManifest, MissingFieldsDropOnlyThatEntry) {
    for (const char * field : {"design", "family", "xclbin", "kernel", "npu", "serves", "args"}) {
        json bad = entry("mm_q4_K_a8", 64, 4, 256, "a");
        bad.erase(field);
        Manifest m = parse_ok(manifest_of(json::array({bad, entry("mm_q6_K_a8", 64, 4, 256, "b")})));
        ASSERT_EQ(m.kernels.size(), 1u) << field;
        EXPECT_STREQ(m.kernels[0].contract->name, "mm_q6_K_a8");
        ASSERT_EQ(m.entry_errors.size(), 1u);
        const std::string & e = m.entry_errors[0];
        EXPECT_NE(e.find("designs[0]"), std::string::npos) << e;
        EXPECT_NE(e.find(std::string("field '") + field + "' is missing"), std::string::npos) << e;
        EXPECT_NE(e.find("entry ignored"), std::string::npos) << e;
    }
    json no_m = entry("mm_q4_K_a8", 64, 4, 256, "a");
    no_m["serves"][0]["tiles"][0].erase("m");
    EXPECT_NE(single_entry_error(no_m).find("field 'serves[0].tiles[0].m' is missing"), std::string::npos);
    json no_contract = entry("mm_q4_K_a8", 64, 4, 256, "a");
    no_contract["serves"][0].erase("contract");
    EXPECT_NE(single_entry_error(no_contract).find("field 'serves[0].contract' is missing"), std::string::npos);
    json no_group = entry("mm_q4_K_a8", 64, 4, 256, "a");
    no_group["args"][3].erase("group_id");
    EXPECT_NE(single_entry_error(no_group).find("field 'args[3].group_id' is missing"), std::string::npos);
    json no_opcode_value = entry("mm_q4_K_a8", 64, 4, 256, "a");
    no_opcode_value["args"][0].erase("value");
    EXPECT_NE(single_entry_error(no_opcode_value).find("field 'args[0].value' is missing"), std::string::npos);
}

TEST(KernelManifest, WrongTypesNameTheField) {
    struct Case {
        const char * pointer;
        json         value;
        const char * expect;
    };
    const Case cases[] = {
        {"/serves/0/contract", 5, "field 'serves[0].contract' must be a string, got an integer"},
        {"/serves/0/tiles/0", json::array({64, 4, 256}), "field 'serves[0].tiles[0]' must be an object"},
        {"/serves/0/tiles/0/n", "4", "field 'serves[0].tiles[0].n' must be an integer, got a string"},
        {"/serves/0/tiles/0/k", 256.5, "field 'serves[0].tiles[0].k' must be an integer, got a number with a fraction"},
        {"/serves/0", "mm_q4_K_a8", "field 'serves[0]' must be an object"},
        {"/xclbin", json::array(), "field 'xclbin' must be a string, got an array"},
        {"/kernel", "", "field 'kernel' must not be empty"},
        {"/npu", "npu2", "field 'npu' must be a non-empty array"},
        {"/npu", json::array(), "field 'npu' must be a non-empty array"},
        {"/npu/0", 2, "field 'npu[0]' must be a string"},
        {"/npu/0", "npu3", "'npu3' is not an NPU generation"},
        {"/args", json::object(), "field 'args' must be an array, got an object"},
        {"/args/1", "instructions", "field 'args[1]' must be an object"},
        {"/args/1/group_id", "1", "field 'args[1].group_id' must be an integer"},
        {"/args/1/group_id", -1, "field 'args[1].group_id' must be in [0, 65535]"},
        {"/args/0/value", true, "field 'args[0].value' must be an integer, got a boolean"},
        {"/args/2/kind", "count", "'count' is not an argument kind"},
    };
    for (const auto & c : cases) {
        json e = entry("mm_q4_K_a8", 64, 4, 256, "a");
        e[json::json_pointer(c.pointer)] = c.value;
        const std::string err = single_entry_error(e);
        EXPECT_NE(err.find(c.expect), std::string::npos) << c.pointer << ": got " << err;
        EXPECT_NE(err.find("designs[0] (matmul/kquant)"), std::string::npos) << err;  // named whenever readable
    }
}

TEST(KernelManifest, ArgumentListMustBeComplete) {
    json e = entry("mm_q4_K_a8", 64, 4, 256, "a");
    e["args"].erase(5);  // output
    EXPECT_NE(single_entry_error(e).find("field 'args' has no 'output' argument"), std::string::npos);

    json twice = entry("mm_q4_K_a8", 64, 4, 256, "a");
    twice["args"].push_back({{"kind", "weights"}, {"group_id", 7}});
    EXPECT_NE(single_entry_error(twice).find("'weights' appears twice"), std::string::npos);

    json extra = entry("mm_q4_K_a8", 64, 4, 256, "a");
    extra["args"][2]["group_id"] = 2;  // instruction_count is a scalar
    EXPECT_NE(single_entry_error(extra).find("field 'args[2].group_id' is not a known field"), std::string::npos);

    // opcode and params are optional.
    json minimal = entry("mm_q4_K_a8", 64, 4, 256, "a");
    minimal["args"].erase(6);
    minimal["args"].erase(0);
    Manifest m = parse_ok(manifest_of(json::array({minimal})));
    ASSERT_EQ(m.kernels.size(), 1u);
    EXPECT_EQ(m.kernels[0].arg_index(ArgKind::opcode), -1);
    EXPECT_EQ(m.kernels[0].arg_index(ArgKind::instructions), 0);
}

TEST(KernelManifest, UnknownKernelContractIsRejected) {
    const std::string err = single_entry_error(entry("mm_q4_K_q4_K", 64, 4, 256, "a"));
    EXPECT_NE(err.find("'mm_q4_K_q4_K' is not a kernel contract"), std::string::npos) << err;
}

TEST(KernelManifest, TileShapeMustBeOneTheContractAllows) {
    // mm_q4_K_a8 tiles are 64 x {4, 32} x 256.
    for (auto [m, n, k] : {std::tuple{64, 8, 256}, std::tuple{32, 4, 256}, std::tuple{64, 4, 128}}) {
        const std::string err = single_entry_error(entry("mm_q4_K_a8", m, n, k, "a"));
        EXPECT_NE(err.find("is not a tile shape of mm_q4_K_a8 (allowed: 64x4x256, 64x32x256)"), std::string::npos)
            << err;
    }
    // A 16-bit contract has K = 128.
    EXPECT_EQ(parse_ok(manifest_of(json::array({entry("mm_f16_f16", 64, 32, 128, "a")}))).kernels.size(), 1u);
}

TEST(KernelManifest, UnknownEntryFieldIsRejectedButCommentIsAllowed) {
    json e = entry("mm_q4_K_a8", 64, 4, 256, "a");
    e["xclbn"] = "typo.xclbin";
    EXPECT_NE(single_entry_error(e).find("field 'xclbn' is not a known field"), std::string::npos);

    json c = entry("mm_q4_K_a8", 64, 4, 256, "a");
    c["comment"] = "decode kernel";
    c["args"][0]["comment"] = "mlir-aie opcode";
    EXPECT_EQ(parse_ok(manifest_of(json::array({c}))).kernels.size(), 1u);
}

TEST(KernelManifest, DuplicateEntriesForAGenerationAreRejected) {
    Manifest m = parse_ok(manifest_of(json::array({
        entry("mm_q4_K_a8", 64, 4, 256, "a", json::array({"npu2"})),
        entry("mm_q4_K_a8", 64, 4, 256, "b", json::array({"npu1", "npu2"})),
        entry("mm_q4_K_a8", 64, 4, 256, "c", json::array({"npu1"})),  // other generation: fine
    })));
    ASSERT_EQ(m.kernels.size(), 2u);
    ASSERT_EQ(m.entry_errors.size(), 1u);
    EXPECT_NE(m.entry_errors[0].find("designs[1]"), std::string::npos);
    EXPECT_NE(m.entry_errors[0].find("serves mm_q4_K_a8 64x4x256 on npu2, already served by designs[0]"), std::string::npos)
        << m.entry_errors[0];
}

TEST(KernelManifest, MissingFilesDropTheEntry) {
    KernelsDir kd;
    kd.add_files("good");
    const std::string path = kd.write_manifest(manifest_of(json::array({
        entry("mm_q4_K_a8", 64, 4, 256, "good"),
        entry("mm_q6_K_a8", 64, 4, 256, "absent"),
    })));
    Manifest    m;
    std::string err;
    ASSERT_TRUE(load_manifest(path, m, err)) << err;
    ASSERT_EQ(m.kernels.size(), 1u);
    EXPECT_STREQ(m.kernels[0].contract->name, "mm_q4_K_a8");
    ASSERT_EQ(m.entry_errors.size(), 1u);
    EXPECT_NE(m.entry_errors[0].find("designs[1] (matmul/kquant): field 'xclbin' file '" + kd.dir / "absent.xclbin" +
                                     "' does not exist"),
              std::string::npos)
        << m.entry_errors[0];

    // Without file checks the same manifest keeps both.
    Manifest unchecked;
    std::ifstream f(path);
    std::string   text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    ASSERT_TRUE(parse_manifest(text, path, false, unchecked, err));
    EXPECT_EQ(unchecked.kernels.size(), 2u);
}

TEST(KernelManifest, TruncatedOrCorruptFilesDropTheEntry) {
    KernelsDir kd;
    write_file(kd.dir / "b.xclbin", xdna_test::fake_xclbin(2048, 8192));  // header says 8192
    std::string not_xclbin = xdna_test::fake_xclbin();
    not_xclbin[0] = 'X';
    write_file(kd.dir / "c.xclbin", not_xclbin);
    write_file(kd.dir / "e.xclbin", "xclbin2");  // a few bytes only
    const std::string path = kd.write_manifest(manifest_of(json::array({
        entry("mm_q4_1_a8", 64, 4, 256, "b"),
        entry("mm_q5_0_a8", 64, 4, 256, "c"),
        entry("mm_q8_0_a8", 64, 4, 256, "e"),
    })));
    Manifest    m;
    std::string err;
    ASSERT_TRUE(load_manifest(path, m, err)) << err;
    EXPECT_TRUE(m.kernels.empty());
    ASSERT_EQ(m.entry_errors.size(), 3u);
    EXPECT_NE(m.entry_errors[0].find("is truncated: 2048 bytes, its header says 8192"), std::string::npos)
        << m.entry_errors[0];
    EXPECT_NE(m.entry_errors[1].find("is not an xclbin"), std::string::npos) << m.entry_errors[1];
    EXPECT_NE(m.entry_errors[2].find("is truncated or not an xclbin: 7 bytes"), std::string::npos)
        << m.entry_errors[2];
}

TEST(KernelFiles, InstructionFileIsReadAsWords) {
    TempDir d;
    write_file(d / "i.bin", xdna_test::fake_instructions(5));
    std::vector<uint32_t> words;
    std::string           err;
    ASSERT_TRUE(read_instruction_file(d / "i.bin", words, err)) << err;
    ASSERT_EQ(words.size(), 5u);
    EXPECT_EQ(words[0], 0x06030100u);
    EXPECT_EQ(words[4], 0x06030104u);
    EXPECT_FALSE(read_instruction_file(d / "none.bin", words, err));
    EXPECT_EQ(err, "does not exist");
    EXPECT_EQ(check_instruction_file(d.path()), "is not a regular file");
}

TEST(KernelSelection, PerContractTileAndGeneration) {
    Manifest m = parse_ok(manifest_of(json::array({
        entry("mm_q4_K_a8", 64, 4, 256, "q4k4", json::array({"npu2"})),
        entry("mm_q4_K_a8", 64, 32, 256, "q4k32", json::array({"npu2"})),
        entry("mm_q4_K_a8", 64, 4, 256, "q4k4_npu1", json::array({"npu1"})),
        entry("mm_f16_f16", 64, 32, 128, "f16", json::array({"npu1", "npu2"})),
    })));
    ASSERT_EQ(m.kernels.size(), 4u);

    const MatmulContract * q4k = matmul_contract_for(GGML_TYPE_Q4_K);
    ASSERT_NE(q4k, nullptr);
    // The planner's choice of token tile decides which kernel runs.
    const KernelEntry * decode = find_kernel(m, "matmul", q4k->name, q4k->tile(choose_tile_n(*q4k, 1)), NpuGeneration::npu2);
    const KernelEntry * prefill = find_kernel(m, "matmul", q4k->name, q4k->tile(choose_tile_n(*q4k, 512)), NpuGeneration::npu2);
    ASSERT_NE(decode, nullptr);
    ASSERT_NE(prefill, nullptr);
    EXPECT_EQ(decode->xclbin, "/k/q4k4.xclbin");
    EXPECT_EQ(prefill->xclbin, "/k/q4k32.xclbin");
    EXPECT_EQ(find_kernel(m, "matmul", q4k->name, q4k->tile(4), NpuGeneration::npu1)->xclbin, "/k/q4k4_npu1.xclbin");
    EXPECT_EQ(find_kernel(m, "matmul", q4k->name, q4k->tile(32), NpuGeneration::npu1), nullptr);
    EXPECT_EQ(find_kernel(m, "matmul", q4k->name, q4k->tile(4), NpuGeneration::unknown), nullptr);

    const MatmulContract * f16 = matmul_contract_for(GGML_TYPE_F16);
    EXPECT_NE(find_kernel(m, "matmul", f16->name, f16->tile(32), NpuGeneration::npu1), nullptr);
    EXPECT_EQ(find_kernel(m, "matmul", f16->name, f16->tile(4), NpuGeneration::npu2), nullptr);
    // A type with a contract but no kernel, and a tile shape the contract does not have.
    const MatmulContract * q6k = matmul_contract_for(GGML_TYPE_Q6_K);
    EXPECT_EQ(find_kernel(m, "matmul", q6k->name, q6k->tile(4), NpuGeneration::npu2), nullptr);
    EXPECT_EQ(find_kernel(m, "matmul", q4k->name, TileShape{64, 4, 128}, NpuGeneration::npu2), nullptr);
}

namespace {

// Sets an environment variable for one scope.
class ScopedEnv {
public:
    ScopedEnv(const char * name, const std::string & value) : name_(name) {
        if (const char * old = std::getenv(name)) {
            old_ = old;
            had_ = true;
        }
        ::setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (had_) {
            ::setenv(name_, old_.c_str(), 1);
        } else {
            ::unsetenv(name_);
        }
    }

private:
    const char * name_;
    std::string  old_;
    bool         had_ = false;
};

}  // namespace

TEST(InstalledKernels, EnvironmentNamesTheDirectoryOrTheFile) {
    KernelsDir kd;
    {
        ScopedEnv env(kKernelsEnv, kd.dir.path());
        const ManifestLocation loc = locate_kernel_manifest();
        EXPECT_TRUE(loc.from_env);
        EXPECT_EQ(loc.path, kd.dir / "manifest.json");
    }
    {
        ScopedEnv env(kKernelsEnv, kd.dir / "other.json");
        EXPECT_EQ(locate_kernel_manifest().path, kd.dir / "other.json");
    }
    ::unsetenv(kKernelsEnv);
    const ManifestLocation def = locate_kernel_manifest();
    EXPECT_FALSE(def.from_env);
    EXPECT_NE(def.path.find("/ggml-xdna-kernels/manifest.json"), std::string::npos) << def.path;
}

TEST(InstalledKernels, LoadForGenerationExplainsFailures) {
    KernelsDir  kd;
    Manifest    m;
    std::string why;
    ManifestLocation loc{kd.dir / "manifest.json", true};
    EXPECT_FALSE(load_installed_kernels(loc, NpuGeneration::npu2, m, why));
    EXPECT_NE(why.find("no kernel manifest at " + loc.path), std::string::npos) << why;

    write_file(loc.path, "not json");
    EXPECT_FALSE(load_installed_kernels(loc, NpuGeneration::npu2, m, why));
    EXPECT_NE(why.find("not valid JSON"), std::string::npos) << why;

    kd.add_files("a");
    kd.write_manifest(manifest_of(json::array({entry("mm_q4_K_a8", 64, 4, 256, "a", json::array({"npu1"})),
                                               entry("mm_q6_K_a8", 64, 4, 256, "missing")})));
    EXPECT_FALSE(load_installed_kernels(loc, NpuGeneration::npu2, m, why));
    EXPECT_NE(why.find("has no usable kernel for npu2 (1 valid entries for other generations, 1 invalid)"),
              std::string::npos)
        << why;

    ASSERT_TRUE(load_installed_kernels(loc, NpuGeneration::npu1, m, why)) << why;
    ASSERT_EQ(m.kernels.size(), 1u);
    EXPECT_STREQ(m.kernels[0].contract->name, "mm_q4_K_a8");
}

TEST(InstalledKernels, EntryForAnotherGenerationIsDroppedWithOneLogLine) {
    KernelsDir kd;
    kd.add_files("a");
    kd.add_files("b");
    kd.write_manifest(manifest_of(json::array({entry("mm_q4_K_a8", 64, 4, 256, "a", json::array({"npu1"})),
                                               entry("mm_q6_K_a8", 64, 4, 256, "b", json::array({"npu2"}))})));
    std::vector<std::string> lines;
    set_runtime_log_sink([&](LogLevel, const std::string & msg) { lines.push_back(msg); });
    Manifest    m;
    std::string why;
    const bool ok = load_installed_kernels({kd.dir / "manifest.json", true}, NpuGeneration::npu2, m, why);
    set_runtime_log_sink(nullptr);
    ASSERT_TRUE(ok) << why;
    ASSERT_EQ(m.kernels.size(), 1u);
    EXPECT_STREQ(m.kernels[0].contract->name, "mm_q6_K_a8");
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("designs[0] matmul/kquant (mm_q4_K_a8, tile 64x4x256) is compiled for other NPU generations, not npu2: dropped"),
              std::string::npos)
        << lines[0];
}

TEST(KernelManifest, ShippedExampleIsValidButNamesNoFiles) {
    std::ifstream f(XDNA_MANIFEST_EXAMPLE);
    ASSERT_TRUE(f) << XDNA_MANIFEST_EXAMPLE;
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    Manifest    m;
    std::string err;
    ASSERT_TRUE(parse_manifest(text, XDNA_MANIFEST_EXAMPLE, false, m, err)) << err;
    EXPECT_TRUE(m.entry_errors.empty()) << m.entry_errors.front();
    EXPECT_EQ(m.designs, 3);
    EXPECT_EQ(m.kernels.size(), 8u);
    // It documents the format only: with file checks every entry is dropped, so it can never claim a kernel.
    ASSERT_TRUE(load_manifest(XDNA_MANIFEST_EXAMPLE, m, err)) << err;
    EXPECT_TRUE(m.kernels.empty());
    EXPECT_EQ(m.entry_errors.size(), 3u);
}

// The attention design's entry (aie/flash_attn): its 7 operands are placed by buffer at submission into
// the 5 buffer arguments the firmware translates, so its kernel takes exactly 5 'placed' arguments; an
// xclbin per cache type and head dim serving both block programs. Operands by name are refused, and
// 'placed' arguments of another design.
TEST(KernelManifest, AttentionEntriesTakeFivePlacedArguments) {
    json args = json::array({{{"kind", "opcode"}, {"value", 3}}, {{"kind", "instructions"}, {"group_id", 1}}, {{"kind", "instruction_count"}}});
    for (int g = 3; g < 8; ++g) args.push_back({{"kind", "placed"}, {"group_id", g}});
    const json ok = {{"design", "flash_attn"}, {"family", "q8_0"}, {"tile", 64}, {"xclbin", "fa.xclbin"}, {"kernel", "MLIR_AIE"},
                     {"npu", {"npu2"}}, {"args", args}};
    const Manifest m = parse_ok(manifest_of(json::array({ok})));
    ASSERT_EQ(m.kernels.size(), 2u);
    EXPECT_EQ(m.kernels[0].variant, "fa_block_q8_0_bfp16");
    EXPECT_EQ(m.kernels[1].variant, "fa_block_q8_0");
    EXPECT_NE(find_kernel(m, "flash_attn", "fa_block_q8_0", TileShape{0, 64, 0}, NpuGeneration::npu2), nullptr);
    EXPECT_EQ(find_kernel(m, "flash_attn", "fa_block_q8_0", TileShape{0, 128, 0}, NpuGeneration::npu2), nullptr);

    json four = ok;
    four["args"].erase(7);
    EXPECT_NE(single_entry_error(four).find("has 4 'placed' arguments"), std::string::npos) << single_entry_error(four);
    json by_name = ok;
    by_name["args"][3] = {{"kind", "operand"}, {"name", "q"}, {"group_id", 3}};
    EXPECT_NE(single_entry_error(by_name).find("places its operands by buffer"), std::string::npos) << single_entry_error(by_name);
    json rows = {{"design", "add"}, {"family", "binary"}, {"tile", 512}, {"xclbin", "add512.xclbin"}, {"kernel", "MLIR_AIE"},
                 {"npu", {"npu2"}},
                 {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                       {{"kind", "instructions"}, {"group_id", 1}},
                                       {{"kind", "instruction_count"}},
                                       {{"kind", "placed"}, {"group_id", 3}}})}};
    EXPECT_NE(single_entry_error(rows).find("are the attention design's"), std::string::npos) << single_entry_error(rows);

    // The layout its xclbin was built in: absent, the design's first; a layout the design lacks, or one
    // on a design of one layout's movement, refused.
    EXPECT_EQ(m.kernels[0].layout, "");
    json decode = ok;
    decode["layout"] = "decode";
    const Manifest md = parse_ok(manifest_of(json::array({decode})));
    ASSERT_EQ(md.kernels.size(), 2u);
    EXPECT_EQ(md.kernels[0].layout, "decode");
    json unknown = ok;
    unknown["layout"] = "prefill";
    EXPECT_NE(single_entry_error(unknown).find("'prefill' is not a layout of design flash_attn"), std::string::npos) << single_entry_error(unknown);
    // One entry per layout of a key: both kept, each found by its layout ("" the design's first), the
    // first listed by the lookup that does not ask; the same layout twice (absent and named alike) keeps
    // the first and drops the second with the reason, naming the program, not a matmul contract.
    {
        std::string err;
        Manifest both;
        ASSERT_TRUE(parse_manifest(manifest_of(json::array({ok, decode})).dump(), "/k/manifest.json", false, both, err)) << err;
        EXPECT_TRUE(both.entry_errors.empty()) << both.entry_errors[0];
        ASSERT_EQ(both.kernels.size(), 4u);
        const TileShape t64{0, 64, 0};
        const KernelEntry * att = find_kernel(both, "flash_attn", "fa_block_q8_0", t64, NpuGeneration::npu2, "attention");
        const KernelEntry * dec = find_kernel(both, "flash_attn", "fa_block_q8_0", t64, NpuGeneration::npu2, "decode");
        ASSERT_NE(att, nullptr);
        ASSERT_NE(dec, nullptr);
        EXPECT_EQ(att->index, 0);
        EXPECT_EQ(dec->index, 1);
        EXPECT_EQ(layout_of(*att), "attention");
        EXPECT_EQ(find_kernel(both, "flash_attn", "fa_block_q8_0", t64, NpuGeneration::npu2, ""), att);
        EXPECT_EQ(find_kernel(both, "flash_attn", "fa_block_q8_0", t64, NpuGeneration::npu2), att);
        EXPECT_EQ(find_kernel(both, "flash_attn", "fa_block_q8_0", t64, NpuGeneration::npu1, "decode"), nullptr);
        // Only the decode entry: found without a layout, not as the attention layout's.
        EXPECT_EQ(find_kernel(md, "flash_attn", "fa_block_q8_0", t64, NpuGeneration::npu2)->layout, "decode");
        EXPECT_EQ(find_kernel(md, "flash_attn", "fa_block_q8_0", t64, NpuGeneration::npu2, "attention"), nullptr);
    }
    for (const json & again : {decode, json(ok)}) {
        json named = ok;
        named["layout"] = "attention";
        const json first = again == decode ? decode : named;  // "decode" twice; absent, then "attention"
        std::string err;
        Manifest twice;
        ASSERT_TRUE(parse_manifest(manifest_of(json::array({first, again})).dump(), "/k/manifest.json", false, twice, err)) << err;
        EXPECT_EQ(twice.kernels.size(), 2u);
        ASSERT_EQ(twice.entry_errors.size(), 1u);
        const std::string & why = twice.entry_errors[0];
        EXPECT_NE(why.find("serves fa_block_q8_0_bfp16"), std::string::npos) << why;
        EXPECT_NE(why.find(std::string("in layout ") + (again == decode ? "decode" : "attention")), std::string::npos) << why;
        EXPECT_NE(why.find("already served by designs[0]"), std::string::npos) << why;
    }
    json rows_layout = rows;
    rows_layout["args"][3] = {{"kind", "operand"}, {"name", "a"}, {"group_id", 3}};
    rows_layout["layout"] = "rows";
    EXPECT_NE(single_entry_error(rows_layout).find("is not a layout of design add"), std::string::npos) << single_entry_error(rows_layout);
}

// A rows design's entry (aie/add): the family at one chunk size, serving every program of the family,
// its operands as arguments by name. What is not the design's is refused with the field that says so.
TEST(KernelManifest, RowsDesignEntriesServeTheirFamilyAtOneChunkSize) {
    const json ok = {{"design", "add"}, {"family", "binary"}, {"tile", 512}, {"xclbin", "add512.xclbin"}, {"kernel", "MLIR_AIE"},
                     {"npu", {"npu2"}},
                     {"args", json::array({{{"kind", "opcode"}, {"value", 3}},
                                           {{"kind", "instructions"}, {"group_id", 1}},
                                           {{"kind", "instruction_count"}},
                                           {{"kind", "operand"}, {"name", "a"}, {"group_id", 3}},
                                           {{"kind", "operand"}, {"name", "b"}, {"group_id", 4}},
                                           {{"kind", "operand"}, {"name", "y"}, {"group_id", 5}}})}};
    const Manifest m = parse_ok(manifest_of(json::array({ok})));
    ASSERT_EQ(m.kernels.size(), 2u);  // add_f32 and mul_f32
    EXPECT_EQ(m.kernels[0].variant, "add_f32");
    EXPECT_EQ(m.kernels[1].variant, "mul_f32");
    EXPECT_EQ(m.kernels[0].contract, nullptr);
    EXPECT_EQ(m.kernels[0].args[3].operand, "a");
    EXPECT_NE(find_kernel(m, "add", "mul_f32", TileShape{0, 512, 0}, NpuGeneration::npu2), nullptr);
    EXPECT_EQ(find_kernel(m, "add", "mul_f32", TileShape{0, 256, 0}, NpuGeneration::npu2), nullptr);
    EXPECT_EQ(find_kernel(m, "matmul", "mul_f32", TileShape{0, 512, 0}, NpuGeneration::npu2), nullptr);

    json tile = ok;
    tile["tile"] = 32;
    EXPECT_NE(single_entry_error(tile).find("32 is not a chunk size of family binary (64, 128, 256, 512)"), std::string::npos)
        << single_entry_error(tile);
    json missing = ok;
    missing["args"].erase(5);
    EXPECT_NE(single_entry_error(missing).find("has no operand argument 'y'"), std::string::npos) << single_entry_error(missing);
    json foreign = ok;
    foreign["args"][3] = {{"kind", "weights"}, {"group_id", 3}};
    EXPECT_NE(single_entry_error(foreign).find("is a matmul argument"), std::string::npos) << single_entry_error(foreign);
    json unknown = ok;
    unknown["args"][4]["name"] = "c";
    EXPECT_NE(single_entry_error(unknown).find("'c' is not an operand of design add"), std::string::npos) << single_entry_error(unknown);
    json serves = ok;
    serves["serves"] = json::array();
    EXPECT_NE(single_entry_error(serves).find("serves"), std::string::npos) << single_entry_error(serves);
}
