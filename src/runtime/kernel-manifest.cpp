#include "runtime/kernel-manifest.h"

#include "runtime/kernel-files.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
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
    if (is_buffer_arg(arg.kind)) {
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

KernelEntry parse_entry(const json & e, int index, const std::string & dir) {
    if (!e.is_object()) {
        fail("", std::string("must be an object, got ") + json_type_name(e));
    }
    reject_unknown_keys(e, {"contract", "tile", "xclbin", "instructions", "kernel", "npu", "args"}, "");

    KernelEntry k;
    k.index = index;
    const std::string contract = require_string(e, "contract", "contract");
    for (const auto & c : all_matmul_contracts()) {
        if (contract == c.name) {
            k.contract = &c;
        }
    }
    if (k.contract == nullptr) {
        fail("contract", "'" + contract + "' is not a kernel contract of this backend (see docs/kernels.md)");
    }

    const json & tile = require(e, "tile", "tile");
    if (!tile.is_object()) {
        fail("tile", std::string("must be an object {\"m\", \"n\", \"k\"}, got ") + json_type_name(tile));
    }
    reject_unknown_keys(tile, {"m", "n", "k"}, "tile");
    k.tile.m = static_cast<int>(require_int(tile, "m", "tile.m", 1, 1 << 20));
    k.tile.n = static_cast<int>(require_int(tile, "n", "tile.n", 1, 1 << 20));
    k.tile.k = static_cast<int>(require_int(tile, "k", "tile.k", 1, 1 << 20));
    if (!contract_allows_tile(*k.contract, k.tile)) {
        fail("tile", tile_string(k.tile) + " is not a tile shape of " + contract + " (allowed: " +
                         allowed_tiles(*k.contract) + ")");
    }

    k.xclbin = resolve(dir, require_string(e, "xclbin", "xclbin"));
    k.instructions = resolve(dir, require_string(e, "instructions", "instructions"));
    k.kernel_name = require_string(e, "kernel", "kernel");

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
        k.npu.push_back(g);
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
        k.args.push_back(a);
    }
    for (ArgKind r : kRequiredArgs) {
        if (seen.count(r) == 0) {
            fail("args", std::string("has no '") + to_string(r) + "' argument");
        }
    }
    return k;
}

// Two entries for the same contract, tile and a shared generation would make selection ambiguous.
const KernelEntry * find_duplicate(const std::vector<KernelEntry> & kept, const KernelEntry & e, NpuGeneration & on) {
    for (const auto & k : kept) {
        if (k.contract != e.contract || k.tile.m != e.tile.m || k.tile.n != e.tile.n || k.tile.k != e.tile.k) {
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
    return "kernels[" + std::to_string(index) + "] (" + (contract ? contract->name : "?") + ", tile " +
           tile_string(tile) + ")";
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
        err = where + ": must be a JSON object with \"format_version\" and \"kernels\", got " + json_type_name(doc);
        return false;
    }
    for (auto it = doc.begin(); it != doc.end(); ++it) {
        if (it.key() != "format_version" && it.key() != "kernels" && it.key() != "comment") {
            err = where + ": field '" + it.key() + "' is not a known field (known: format_version, kernels, comment)";
            return false;
        }
    }
    auto fv = doc.find("format_version");
    if (fv == doc.end()) {
        err = where + ": field 'format_version' is missing";
        return false;
    }
    if (!fv->is_number_integer() || fv->get<int64_t>() != kManifestFormatVersion) {
        err = where + ": field 'format_version' must be " + std::to_string(kManifestFormatVersion) + ", got " +
              fv->dump();
        return false;
    }
    auto kernels = doc.find("kernels");
    if (kernels == doc.end()) {
        err = where + ": field 'kernels' is missing";
        return false;
    }
    if (!kernels->is_array()) {
        err = where + ": field 'kernels' must be an array, got " + json_type_name(*kernels);
        return false;
    }

    for (size_t i = 0; i < kernels->size(); ++i) {
        const json & e = (*kernels)[i];
        const std::string prefix = where + ": kernels[" + std::to_string(i) + "]";
        // Name the contract in every message when the entry has a readable one, so the user can tell which
        // ops went back to the CPU.
        std::string named = prefix;
        if (e.is_object() && e.contains("contract") && e["contract"].is_string()) {
            named += " (" + e["contract"].get<std::string>() + ")";
        }
        try {
            KernelEntry k = parse_entry(e, static_cast<int>(i), out.dir);
            NpuGeneration dup_on = NpuGeneration::unknown;
            if (const KernelEntry * d = find_duplicate(out.kernels, k, dup_on)) {
                fail("", std::string("duplicates kernels[") + std::to_string(d->index) + "] for " + to_string(dup_on));
            }
            if (check_files) {
                std::string why = check_xclbin_file(k.xclbin);
                if (!why.empty()) {
                    fail("xclbin", "file '" + k.xclbin + "' " + why);
                }
                why = check_instruction_file(k.instructions);
                if (!why.empty()) {
                    fail("instructions", "file '" + k.instructions + "' " + why);
                }
            }
            out.kernels.push_back(std::move(k));
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

const KernelEntry * find_kernel(const Manifest & m, const std::string & contract_name, const TileShape & tile,
                                NpuGeneration gen) {
    for (const auto & k : m.kernels) {
        if (contract_name == k.contract->name && k.tile.m == tile.m && k.tile.n == tile.n && k.tile.k == tile.k &&
            k.runs_on(gen)) {
            return &k;
        }
    }
    return nullptr;
}

}  // namespace xdna
