#include "runtime/kernel-manifest.h"

#include "control/control-ops.h"

#include "runtime/design-registry.h"

#include "runtime/design-description.h"
#include "runtime/kernel-files.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <set>
#include <sstream>

namespace xdna {

using json = nlohmann::json;

namespace {

// Argument kinds with their manifest spelling; the order matches ArgKind.
struct ArgKindName {
    ArgKind      kind;
    const char * name;
};
constexpr ArgKindName kArgKinds[] = {
    {ArgKind::opcode, "opcode"},
    {ArgKind::instructions, "instructions"},
    {ArgKind::instruction_count, "instruction_count"},
    {ArgKind::weights, "weights"},
    {ArgKind::activations, "activations"},
    {ArgKind::output, "output"},
    {ArgKind::params, "params"},
    {ArgKind::operand, "operand"},
    {ArgKind::placed, "placed"},
};

// Every kernel needs these; opcode and params are optional (a kernel may take its opcode implicitly
// or need no parameters beyond its fixed tile shape).
constexpr ArgKind kRequiredArgs[] = {ArgKind::instructions, ArgKind::instruction_count, ArgKind::weights,
                                     ArgKind::activations, ArgKind::output};

const char * json_type_name(const json & v) {
    switch (v.type()) {
        case json::value_t::null: return "null";
        case json::value_t::object: return "an object";
        case json::value_t::array: return "an array";
        case json::value_t::string: return "a string";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned: return "an integer";
        case json::value_t::number_float: return "a number with a fraction";
        default: return "an unsupported value";
    }
}

// Thrown inside one entry's validation and caught per entry, so one bad entry drops only itself.
struct EntryError {
    std::string field;
    std::string what;
};

[[noreturn]] void fail(const std::string & field, const std::string & what) {
    throw EntryError{field, what};
}

const json & require(const json & obj, const char * key, const std::string & field) {
    auto it = obj.find(key);
    if (it == obj.end()) {
        fail(field, "is missing");
    }
    return *it;
}

std::string require_string(const json & obj, const char * key, const std::string & field) {
    const json & v = require(obj, key, field);
    if (!v.is_string()) {
        fail(field, std::string("must be a string, got ") + json_type_name(v));
    }
    std::string s = v.get<std::string>();
    if (s.empty()) {
        fail(field, "must not be empty");
    }
    return s;
}

int64_t require_int(const json & obj, const char * key, const std::string & field, int64_t lo, int64_t hi) {
    const json & v = require(obj, key, field);
    if (!v.is_number_integer()) {
        fail(field, std::string("must be an integer, got ") + json_type_name(v));
    }
    // Unsigned values beyond int64 are out of every range we accept.
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
        fail(field, "is out of range");
    }
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) {
        fail(field, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(x));
    }
    return x;
}

void reject_unknown_keys(const json & obj, std::initializer_list<const char *> known, const std::string & where) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        bool ok = it.key() == "comment";  // free-form documentation is allowed everywhere
        for (const char * k : known) {
            ok = ok || it.key() == k;
        }
        if (!ok) {
            fail(where.empty() ? it.key() : where + "." + it.key(), "is not a known field");
        }
    }
}

std::string resolve(const std::string & dir, const std::string & file) {
    if (file.empty() || file[0] == '/' || dir.empty()) {
        return file;
    }
    return dir + "/" + file;
}

std::string dir_of(const std::string & path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) {
        return ".";
    }
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string tile_string(const TileShape & t) {
    return std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k);
}

std::string allowed_tiles(const MatmulContract & c) {
    std::string s;
    for (int n : c.tile_n) {
        s += (s.empty() ? "" : ", ") + tile_string(c.tile(n));
    }
    return s;
}

KernelArg parse_arg(const json & a, const std::string & field) {
    if (!a.is_object()) {
        fail(field, std::string("must be an object, got ") + json_type_name(a));
    }
    const std::string kind_name = require_string(a, "kind", field + ".kind");
    KernelArg arg;
    if (!parse_arg_kind(kind_name, arg.kind)) {
        std::string known;
        for (const auto & k : kArgKinds) {
            known += (known.empty() ? "" : ", ") + std::string(k.name);
        }
        fail(field + ".kind", "'" + kind_name + "' is not an argument kind (known: " + known + ")");
    }
    if (arg.kind == ArgKind::operand) {
        reject_unknown_keys(a, {"kind", "name", "group_id"}, field);
        arg.operand = require_string(a, "name", field + ".name");
        arg.group_id = static_cast<int>(require_int(a, "group_id", field + ".group_id", 0, 0xffff));
    } else if (is_buffer_arg(arg.kind)) {
        reject_unknown_keys(a, {"kind", "group_id"}, field);
        arg.group_id = static_cast<int>(require_int(a, "group_id", field + ".group_id", 0, 0xffff));
    } else if (arg.kind == ArgKind::opcode) {
        reject_unknown_keys(a, {"kind", "value"}, field);
        arg.value = static_cast<uint64_t>(require_int(a, "value", field + ".value", 0, 0xffffffffLL));
    } else {
        reject_unknown_keys(a, {"kind"}, field);
    }
    return arg;
}

TileShape parse_tile(const json & tile, const std::string & field) {
    if (!tile.is_object()) {
        fail(field, std::string("must be an object {\"m\", \"n\", \"k\"}, got ") + json_type_name(tile));
    }
    reject_unknown_keys(tile, {"m", "n", "k"}, field);
    TileShape t;
    t.m = static_cast<int>(require_int(tile, "m", field + ".m", 1, 1 << 20));
    t.n = static_cast<int>(require_int(tile, "n", field + ".n", 1, 1 << 20));
    t.k = static_cast<int>(require_int(tile, "k", field + ".k", 1, 1 << 20));
    return t;
}

// One design entry: its xclbin, kernel, generations and arguments, expanded into a KernelEntry per
// (contract, tile shape) it serves.
// A rows design's entry: one xclbin of its family at one chunk size ("tile": values per chunk) serving
// every program of the family, with an operand argument per operand of the design (its stream patches
// them as sequence arguments by the description's order).
std::vector<KernelEntry> parse_rows_entry(const json & e, KernelEntry base, const DesignDescription & d, const std::string & dir) {
    reject_unknown_keys(e, {"design", "family", "xclbin", "kernel", "npu", "tile", "args", "layout"}, "");
    base.family = require_string(e, "family", "family");
    const std::vector<std::string> * programs = d.family_contracts(base.family);
    if (programs == nullptr) {
        fail("family", "'" + base.family + "' is not a family of design " + base.design);
    }
    if (e.contains("layout")) {
        // The layout the xclbin was built in (design.py --layout): its streams must move that layout's objects.
        base.layout = require_string(e, "layout", "layout");
        if (!d.attention_movement || std::none_of(d.layouts.begin(), d.layouts.end(), [&](const LayoutDesc & L) { return L.name == base.layout; })) {
            fail("layout", "'" + base.layout + "' is not a layout of design " + base.design + " an entry can choose");
        }
    }
    base.xclbin = resolve(dir, require_string(e, "xclbin", "xclbin"));
    base.kernel_name = require_string(e, "kernel", "kernel");
    const json & npu = require(e, "npu", "npu");
    if (!npu.is_array() || npu.empty()) {
        fail("npu", "must be a non-empty array of generations (\"npu1\", \"npu2\")");
    }
    for (size_t i = 0; i < npu.size(); ++i) {
        NpuGeneration g;
        if (!npu[i].is_string() || !parse_npu_generation(npu[i].get<std::string>(), g)) {
            fail("npu[" + std::to_string(i) + "]", "is not an NPU generation (known: npu1, npu2)");
        }
        base.npu.push_back(g);
    }
    const int tile = static_cast<int>(require_int(e, "tile", "tile", 1, 1 << 20));
    if (d.kernel_stack(base.family, tile) == nullptr) {
        std::vector<int> have;
        for (const auto & k : d.kernel_stacks) {
            if (k.family == base.family) have.push_back(k.tile_n);
        }
        std::sort(have.begin(), have.end());
        std::string tiles;
        for (int t : have) {
            tiles += (tiles.empty() ? "" : ", ") + std::to_string(t);
        }
        fail("tile", std::to_string(tile) + " is not a chunk size of family " + base.family + " (" + tiles + ")");
    }
    base.tile = TileShape{0, tile, 0};
    if (const DesignDescription::FamilyObjects * o = d.objects_of(base.family)) {
        base.tile.k = o->tile_k;  // a quant program's key carries its K tile too (act_quant_key)
    }
    const json & args = require(e, "args", "args");
    if (!args.is_array()) {
        fail("args", std::string("must be an array, got ") + json_type_name(args));
    }
    std::set<std::string> operands;
    std::set<ArgKind> seen;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string field = "args[" + std::to_string(i) + "]";
        KernelArg a = parse_arg(args[i], field);
        if (a.kind == ArgKind::weights || a.kind == ArgKind::activations || a.kind == ArgKind::output || a.kind == ArgKind::params) {
            fail(field + ".kind", std::string("'") + to_string(a.kind) + "' is a matmul argument; design " + base.design +
                                      " takes its operands by name ('operand')");
        }
        if (a.kind == ArgKind::placed && !d.attention_movement) {
            fail(field + ".kind", "'placed' arguments are the attention design's; design " + base.design + " takes its operands by name");
        }
        if (a.kind == ArgKind::operand && d.attention_movement) {
            fail(field + ".kind", "design " + base.design + " places its operands by buffer at submission: its kernel takes 'placed' arguments");
        }
        if (a.kind == ArgKind::operand) {
            if (d.operand_arg(a.operand) < 0) {
                fail(field + ".name", "'" + a.operand + "' is not an operand of design " + base.design);
            }
            if (!operands.insert(a.operand).second) {
                fail(field + ".name", "'" + a.operand + "' appears twice");
            }
        } else if (a.kind != ArgKind::placed && !seen.insert(a.kind).second) {
            fail(field + ".kind", std::string("'") + to_string(a.kind) + "' appears twice");
        }
        base.args.push_back(a);
    }
    if (d.attention_movement) {
        // Its operands in as many buffer arguments as the firmware translates, each invocation placing
        // them by the buffers they live in (aiecc's default kernel JSON: bo0 to bo4).
        const auto placed = std::count_if(base.args.begin(), base.args.end(), [](const KernelArg & a) { return a.kind == ArgKind::placed; });
        if (placed != static_cast<long>(control::kFirmwareTranslatedArgs)) {
            fail("args", "has " + std::to_string(placed) + " 'placed' arguments; design " + base.design + " takes " +
                             std::to_string(control::kFirmwareTranslatedArgs) + ", the buffer arguments the firmware translates");
        }
    }
    for (ArgKind r : {ArgKind::instructions, ArgKind::instruction_count}) {
        if (seen.count(r) == 0) {
            fail("args", std::string("has no '") + to_string(r) + "' argument");
        }
    }
    for (const auto & [name, arg] : d.operands) {
        if (operands.count(name) == 0 && !d.attention_movement) {
            fail("args", "has no operand argument '" + name + "' (design " + base.design + ")");
        }
    }
    std::vector<KernelEntry> out;
    for (const std::string & p : *programs) {
        KernelEntry k = base;
        k.variant = p;
        out.push_back(k);
    }
    return out;
}

std::vector<KernelEntry> parse_design_entry(const json & e, int index, const std::string & dir) {
    if (!e.is_object()) {
        fail("", std::string("must be an object, got ") + json_type_name(e));
    }
    KernelEntry base;
    base.index = index;
    base.design = require_string(e, "design", "design");
    const DesignRead * found = find_design(base.design);
    if (found == nullptr) {
        std::string names;
        for (const std::string & n : design_names()) {
            names += (names.empty() ? "" : ", ") + n;
        }
        fail("design", "'" + base.design + "' is not a design of this backend (known: " + names + ")");
    }
    const DesignRead & known = *found;
    if (!known.ok()) {
        fail("design", "cannot be checked: the built-in design description is broken: " + known.error);
    }
    if (!known.design.matmul_movement && !known.design.described_stream()) {
        // Only designs with a stream builder can be run (docs/xrt.md).
        fail("design", "'" + base.design + "' has no instruction-stream builder on the host: its xclbins cannot be run");
    }
    if (known.design.described_stream()) {
        return parse_rows_entry(e, base, known.design, dir);
    }
    reject_unknown_keys(e, {"design", "family", "xclbin", "kernel", "npu", "serves", "args", "w_objects"}, "");
    base.family = require_string(e, "family", "family");
    if (known.design.family_contracts(base.family) == nullptr) {
        std::string fams;
        for (const auto & f : known.design.families) {
            fams += (fams.empty() ? "" : ", ") + f.first;
        }
        fail("family", "'" + base.family + "' is not a family of design " + base.design + " (known: " + fams + ")");
    }
    base.xclbin = resolve(dir, require_string(e, "xclbin", "xclbin"));
    base.kernel_name = require_string(e, "kernel", "kernel");

    const json & npu = require(e, "npu", "npu");
    if (!npu.is_array() || npu.empty()) {
        fail("npu", "must be a non-empty array of generations (\"npu1\", \"npu2\")");
    }
    for (size_t i = 0; i < npu.size(); ++i) {
        const std::string field = "npu[" + std::to_string(i) + "]";
        if (!npu[i].is_string()) {
            fail(field, std::string("must be a string, got ") + json_type_name(npu[i]));
        }
        NpuGeneration g;
        if (!parse_npu_generation(npu[i].get<std::string>(), g)) {
            fail(field, "'" + npu[i].get<std::string>() + "' is not an NPU generation (known: npu1, npu2)");
        }
        base.npu.push_back(g);
    }

    const json & args = require(e, "args", "args");
    if (!args.is_array()) {
        fail("args", std::string("must be an array, got ") + json_type_name(args));
    }
    std::set<ArgKind> seen;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string field = "args[" + std::to_string(i) + "]";
        KernelArg a = parse_arg(args[i], field);
        if (!seen.insert(a.kind).second) {
            fail(field + ".kind", std::string("'") + to_string(a.kind) + "' appears twice");
        }
        base.args.push_back(a);
    }
    for (ArgKind r : kRequiredArgs) {
        if (seen.count(r) == 0) {
            fail("args", std::string("has no '") + to_string(r) + "' argument");
        }
    }

    const json & serves = require(e, "serves", "serves");
    if (!serves.is_array() || serves.empty()) {
        fail("serves", "must be a non-empty array of {\"contract\", \"tiles\"}");
    }
    if (e.contains("w_objects")) {
        const std::string w = require_string(e, "w_objects", "w_objects");
        if (w != "family" && w != "exact") {
            fail("w_objects", "'" + w + "' is not a W object sizing (family, exact)");
        }
        base.exact = w == "exact";
        // An exact xclbin is built for one contract: its W objects fit no other.
        if (base.exact && (serves.size() != 1 || !serves[0].is_object() || !serves[0].contains("contract"))) {
            fail("w_objects", "an exact xclbin serves exactly one contract (" + std::to_string(serves.size()) + " listed)");
        }
    }
    std::vector<KernelEntry> out;
    for (size_t i = 0; i < serves.size(); ++i) {
        const std::string field = "serves[" + std::to_string(i) + "]";
        const json & s = serves[i];
        if (!s.is_object()) {
            fail(field, std::string("must be an object, got ") + json_type_name(s));
        }
        reject_unknown_keys(s, {"contract", "tiles"}, field);
        const std::string contract = require_string(s, "contract", field + ".contract");
        KernelEntry k = base;
        for (const auto & c : all_matmul_contracts()) {
            if (contract == c.name) {
                k.contract = &c;
            }
        }
        if (k.contract == nullptr) {
            fail(field + ".contract", "'" + contract + "' is not a kernel contract of this backend (see docs/kernels.md)");
        }
        k.variant = k.contract->name;
        if (known.design.family_of(contract) != base.family) {
            fail(field + ".contract", "'" + contract + "' is not served by family " + base.family + " of design " +
                                          base.design + " (aie/matmul/dataflow.json)");
        }
        const json & tiles = require(s, "tiles", field + ".tiles");
        if (!tiles.is_array() || tiles.empty()) {
            fail(field + ".tiles", "must be a non-empty array of tile shapes");
        }
        for (size_t t = 0; t < tiles.size(); ++t) {
            const std::string tf = field + ".tiles[" + std::to_string(t) + "]";
            k.tile = parse_tile(tiles[t], tf);
            if (!contract_allows_tile(*k.contract, k.tile)) {
                fail(tf, tile_string(k.tile) + " is not a tile shape of " + contract + " (allowed: " +
                             allowed_tiles(*k.contract) + ")");
            }
            for (const KernelEntry & o : out) {
                if (o.contract == k.contract && o.tile.m == k.tile.m && o.tile.n == k.tile.n && o.tile.k == k.tile.k) {
                    fail(tf, contract + " " + tile_string(k.tile) + " is listed twice");
                }
            }
            out.push_back(k);
        }
    }
    return out;
}

std::string first_layout(const std::string & design) {
    const DesignRead * d = find_design(design);
    return d != nullptr && d->ok() && !d->design.layouts.empty() ? d->design.layouts.front().name : std::string();
}

bool same_key(const KernelEntry & k, const std::string & design, const std::string & variant, const TileShape & tile) {
    return design == k.design && variant == k.variant && k.tile.m == tile.m && k.tile.n == tile.n && k.tile.k == tile.k;
}

// Two entries serving the same contract, tile and a shared generation would make selection ambiguous;
// entries built in different layouts (the attention's) are not: the device picks by the stream's layout.
const KernelEntry * find_duplicate(const std::vector<KernelEntry> & kept, const KernelEntry & e, NpuGeneration & on) {
    for (const auto & k : kept) {
        if (!same_key(k, e.design, e.variant, e.tile) || layout_of(k) != layout_of(e)) {
            continue;
        }
        for (NpuGeneration g : e.npu) {
            if (k.runs_on(g)) {
                on = g;
                return &k;
            }
        }
    }
    return nullptr;
}

}  // namespace

const char * to_string(ArgKind kind) {
    for (const auto & k : kArgKinds) {
        if (k.kind == kind) {
            return k.name;
        }
    }
    return "?";
}

bool parse_arg_kind(const std::string & s, ArgKind & out) {
    for (const auto & k : kArgKinds) {
        if (s == k.name) {
            out = k.kind;
            return true;
        }
    }
    return false;
}

bool is_buffer_arg(ArgKind kind) {
    return kind != ArgKind::opcode && kind != ArgKind::instruction_count;
}

bool KernelEntry::runs_on(NpuGeneration g) const {
    for (NpuGeneration x : npu) {
        if (x == g) {
            return true;
        }
    }
    return false;
}

int KernelEntry::arg_index(ArgKind kind) const {
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].kind == kind) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

std::string KernelEntry::label() const {
    if (contract == nullptr) {
        return "designs[" + std::to_string(index) + "] " + design + "/" + family + " (" + variant + ", " + std::to_string(tile.n) +
               " values per chunk)";
    }
    return "designs[" + std::to_string(index) + "] " + design + "/" + family + " (" + contract->name + ", tile " + tile_string(tile) + ")";
}

bool parse_manifest(const std::string & text, const std::string & path, bool check_files, Manifest & out,
                    std::string & err) {
    out = Manifest{};
    out.path = path;
    out.dir = dir_of(path);
    const std::string where = "kernel manifest " + path;

    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::parse_error & e) {
        // e.byte is where the parser stopped; a truncated file stops at its end.
        err = where + ": not valid JSON at byte " + std::to_string(e.byte) + ": " + e.what();
        return false;
    } catch (const json::exception & e) {
        // Well-formed JSON the parser still refuses, e.g. a number beyond double's range (1e400): found by
        // fuzzing (tests/fuzz/corpus/fuzz_manifest/number-overflow.json); it used to end the process.
        err = where + ": not usable JSON: " + e.what();
        return false;
    }
    if (!doc.is_object()) {
        err = where + ": must be a JSON object with \"format_version\" and \"designs\", got " + json_type_name(doc);
        return false;
    }
    auto fv = doc.find("format_version");
    if (fv == doc.end()) {
        err = where + ": field 'format_version' is missing";
        return false;
    }
    if (fv->is_number_integer() && fv->get<int64_t>() == 1) {
        err = where + ": format_version 1 (an xclbin and an instruction file per contract and tile shape) is no "
                      "longer read: its instruction streams fix one problem size, which the runtime can neither "
                      "check nor change. The backend now builds each shape's instruction stream itself; rebuild "
                      "the kernels with scripts/build-npu-kernels.sh, which writes format_version 2 (one entry "
                      "per design, docs/xrt.md)";
        return false;
    }
    if (!fv->is_number_integer() || fv->get<int64_t>() != kManifestFormatVersion) {
        err = where + ": field 'format_version' must be " + std::to_string(kManifestFormatVersion) + ", got " +
              fv->dump();
        return false;
    }
    for (auto it = doc.begin(); it != doc.end(); ++it) {
        if (it.key() != "format_version" && it.key() != "designs" && it.key() != "comment") {
            err = where + ": field '" + it.key() + "' is not a known field (known: format_version, designs, comment)";
            return false;
        }
    }
    auto designs = doc.find("designs");
    if (designs == doc.end()) {
        err = where + ": field 'designs' is missing";
        return false;
    }
    if (!designs->is_array()) {
        err = where + ": field 'designs' must be an array, got " + json_type_name(*designs);
        return false;
    }

    for (size_t i = 0; i < designs->size(); ++i) {
        const json & e = (*designs)[i];
        const std::string prefix = where + ": designs[" + std::to_string(i) + "]";
        // Name the design and family in every message when readable, so the user can tell which ops went
        // back to the CPU.
        std::string named = prefix;
        if (e.is_object() && e.contains("design") && e["design"].is_string() && e.contains("family") &&
            e["family"].is_string()) {
            named += " (" + e["design"].get<std::string>() + "/" + e["family"].get<std::string>() + ")";
        }
        try {
            std::vector<KernelEntry> served = parse_design_entry(e, static_cast<int>(i), out.dir);
            for (const KernelEntry & k : served) {
                NpuGeneration dup_on = NpuGeneration::unknown;
                if (const KernelEntry * d = find_duplicate(out.kernels, k, dup_on)) {
                    // The program's name: a rows or attention entry has no matmul contract.
                    const DesignRead * dr = find_design(k.design);
                    const bool layouts = dr != nullptr && dr->ok() && dr->design.attention_movement;
                    fail("serves", std::string("serves ") + k.variant + " " + tile_string(k.tile) + " on " + to_string(dup_on) +
                                       (layouts ? " in layout " + layout_of(k) : std::string()) + ", already served by designs[" +
                                       std::to_string(d->index) + "]");
                }
            }
            if (check_files) {
                const std::string why = check_xclbin_file(served.front().xclbin);
                if (!why.empty()) {
                    fail("xclbin", "file '" + served.front().xclbin + "' " + why);
                }
            }
            ++out.designs;
            for (KernelEntry & k : served) {
                out.kernels.push_back(std::move(k));
            }
        } catch (const EntryError & x) {
            out.entry_errors.push_back(named + (x.field.empty() ? "" : ": field '" + x.field + "'") + " " + x.what +
                                       "; entry ignored");
        } catch (const json::exception & x) {
            // Validation checks types before reading values; this only guards against a missed case.
            out.entry_errors.push_back(named + ": " + x.what() + "; entry ignored");
        }
    }
    return true;
}

bool load_manifest(const std::string & path, Manifest & out, std::string & err) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        err = "kernel manifest " + path + " cannot be opened: " + std::strerror(errno);
        return false;
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) {
        err = "kernel manifest " + path + " cannot be read";
        return false;
    }
    return parse_manifest(ss.str(), path, /*check_files=*/true, out, err);
}

std::string layout_of(const KernelEntry & k) {
    return k.layout.empty() ? first_layout(k.design) : k.layout;
}

const KernelEntry * find_kernel(const Manifest & m, const std::string & design, const std::string & variant,
                                const TileShape & tile, NpuGeneration gen) {
    for (const auto & k : m.kernels) {
        if (same_key(k, design, variant, tile) && k.runs_on(gen)) {
            return &k;
        }
    }
    return nullptr;
}

const KernelEntry * find_kernel(const Manifest & m, const std::string & design, const std::string & variant,
                                const TileShape & tile, NpuGeneration gen, const std::string & layout) {
    const std::string want = layout.empty() ? first_layout(design) : layout;
    for (const auto & k : m.kernels) {
        if (same_key(k, design, variant, tile) && k.runs_on(gen) && layout_of(k) == want) {
            return &k;
        }
    }
    return nullptr;
}

}  // namespace xdna
