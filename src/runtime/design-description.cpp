#include "runtime/design-description.h"

#include "contracts/activation-layout.h"
#include "contracts/weight-layout.h"
#include "control/shim-bd.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace xdna {

namespace {

using json = nlohmann::json;

// A missing or mistyped field throws with the field's path; parse_design_description turns that into
// its error (nothing escapes it).
struct FieldError {
    std::string what;
};

const json & at(const json & j, const char * key, const std::string & where) {
    if (!j.is_object() || !j.contains(key)) {
        throw FieldError{where + "." + key + " is missing"};
    }
    return j.at(key);
}

int64_t get_int(const json & j, const char * key, const std::string & where, int64_t lo, int64_t hi) {
    const json & v = at(j, key, where);
    if (!v.is_number_integer()) {
        throw FieldError{where + "." + key + " is not an integer"};
    }
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) {
        throw FieldError{where + "." + key + " = " + std::to_string(x) + " is outside [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "]"};
    }
    return x;
}

std::string get_str(const json & j, const char * key, const std::string & where) {
    const json & v = at(j, key, where);
    if (!v.is_string()) {
        throw FieldError{where + "." + key + " is not a string"};
    }
    return v.get<std::string>();
}

std::vector<uint32_t> get_ids(const json & j, const char * key, const std::string & where, int max_id) {
    const json & v = at(j, key, where);
    if (!v.is_array()) {
        throw FieldError{where + "." + key + " is not a list"};
    }
    std::vector<uint32_t> out;
    for (const json & e : v) {
        if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= max_id) {
            throw FieldError{where + "." + key + " holds a BD id outside 0.." + std::to_string(max_id - 1)};
        }
        out.push_back(e.get<uint32_t>());
    }
    return out;
}

FifoDesc parse_fifo(const json & f, size_t i) {
    const std::string where = "fifos[" + std::to_string(i) + "]";
    FifoDesc d;
    d.name = get_str(f, "name", where);
    d.from = get_str(f, "from", where);
    d.to = get_str(f, "to", where);
    for (const std::string * end : {&d.from, &d.to}) {
        if (*end != "shim" && *end != "memtile" && *end != "core") {
            throw FieldError{where + ": endpoint '" + *end + "' is not shim, memtile or core"};
        }
    }
    if (f.contains("link")) {
        const std::string link = get_str(f, "link", where);
        if (link == "split") {
            d.link = FifoLink::split;
        } else if (link == "broadcast") {
            d.link = FifoLink::broadcast;
        } else if (link == "join") {
            d.link = FifoLink::join;
        } else if (link == "forward") {
            d.link = FifoLink::forward;
        } else {
            throw FieldError{where + ".link '" + link + "' is not split, broadcast, join or forward"};
        }
        d.peer = get_str(f, d.link == FifoLink::join ? "sink" : "source", where);
    }
    const json & obj = at(f, "object", where);
    if (obj.is_object() && obj.contains("unit")) {
        // A unit of the design's "units" table (checked against it by the caller).
        d.unit = get_str(obj, "unit", where + ".object");
    } else {
        // The matmul's units: its family's W / A / C objects, sized per xclbin (family_buffers).
        const std::string tile = get_str(obj, "tile", where + ".object");
        if (tile != "w" && tile != "a" && tile != "c") {
            throw FieldError{where + ".object.tile '" + tile + "' is not w, a or c"};
        }
        d.tile = tile[0];
        d.unit = tile;
    }
    d.count = static_cast<int>(get_int(obj, "count", where + ".object", 1, 64));
    const json & depth = at(f, "depth", where);
    if (depth.is_string()) {
        const std::string s = depth.get<std::string>();
        if (s == "c") {
            d.depth_is_c = true;
        } else if (s != "l2") {
            throw FieldError{where + ".depth '" + s + "' is neither a number, \"l2\" nor \"c\""};
        }
        d.depth = -1;  // filled in below
    } else {
        d.depth = static_cast<int>(get_int(f, "depth", where, 1, 16));
    }
    if (f.contains("shim_channel")) {
        const json & ch = f.at("shim_channel");
        const std::string dir = get_str(ch, "direction", where + ".shim_channel");
        if (dir != "mm2s" && dir != "s2mm") {
            throw FieldError{where + ".shim_channel.direction '" + dir + "' is not mm2s or s2mm"};
        }
        d.shim_mm2s = dir == "mm2s";
        d.shim_channel = static_cast<int>(get_int(ch, "channel", where + ".shim_channel", 0, 1));
        d.operand = get_str(f, "operand", where);
    }
    if (f.contains("shared_by_columns")) {
        const json & sh = f.at("shared_by_columns");
        if (sh.is_string() && sh.get<std::string>() == "rows") {
            d.shared_by_columns = true;
            d.shared_per_row = true;
        } else if (sh.is_boolean()) {
            d.shared_by_columns = sh.get<bool>();
        } else {
            throw FieldError{where + ".shared_by_columns is not true, false or \"rows\""};
        }
    }
    return d;
}

// The FIFO graph of one layout, whatever the design: shim FIFOs move a listed operand on a channel of
// their own; a core FIFO takes a split or broadcast of a shim -> memory tile FIFO or joins into a memory
// tile -> shim FIFO, in the same unit, with one part per core row where it splits or joins. What the
// stream builders, the DMA interpreter and the design scripts rely on; a design's own data movement adds
// its checks (the matmul's below).
void check_fifo_graph(const DesignDescription & d, const LayoutDesc & L, const std::string & lw) {
    auto has_unit = [&](const FifoDesc & f) {
        if (f.tile != 0) {
            return true;
        }
        // A family's own objects (.objects) name units too; every family must then give it (checked there).
        const bool family_unit = !d.family_objects.empty() &&
                                 std::all_of(d.family_objects.begin(), d.family_objects.end(), [&](const DesignDescription::FamilyObjects & o) {
                                     return std::any_of(o.bytes.begin(), o.bytes.end(), [&](const auto & b) { return b.first == f.unit; });
                                 });
        // The attention's objects (.attention.objects) name the units kv and state.
        const bool attention_unit = !d.attention_objects.empty() && (f.unit == "kv" || f.unit == "kv_decode" || f.unit == "state");
        return family_unit || attention_unit ||
               std::any_of(d.units.begin(), d.units.end(), [&](const DesignDescription::Unit & u) { return u.name == f.unit; });
    };
    std::vector<std::pair<bool, int>> channels;
    for (const FifoDesc & f : L.fifos) {
        const std::string fw = lw + ": fifo " + f.name;
        if (!has_unit(f)) {
            throw FieldError{fw + "'s object unit '" + f.unit + "' is not in .units"};
        }
        if (f.link != FifoLink::none && L.fifo(f.peer) == nullptr) {
            throw FieldError{fw + " links to unknown fifo '" + f.peer + "'"};
        }
        const bool shim_end = f.from == "shim" || f.to == "shim";
        if (shim_end) {
            if (f.shim_channel < 0 || (f.from == "shim") != f.shim_mm2s || (f.from == "shim" ? f.to : f.from) != "memtile") {
                throw FieldError{fw + " must run between the shim and the memory tile on a shim channel of its direction"};
            }
            if (std::none_of(d.operands.begin(), d.operands.end(), [&](const auto & o) { return o.first == f.operand; })) {
                throw FieldError{fw + " moves operand '" + f.operand + "', which .operands does not list"};
            }
            if (std::find(channels.begin(), channels.end(), std::make_pair(f.shim_mm2s, f.shim_channel)) != channels.end()) {
                throw FieldError{fw + " uses a shim channel another fifo uses"};
            }
            channels.emplace_back(f.shim_mm2s, f.shim_channel);
        }
        if (f.link == FifoLink::forward) {
            // The memory tile hands a shim FIFO's objects on to the shim unchanged (no core between).
            const FifoDesc * p = L.fifo(f.peer);
            if (f.from != "memtile" || f.to != "shim" || p->from != "shim" || p->to != "memtile" || p->unit != f.unit ||
                p->count != f.count) {
                throw FieldError{fw + " must forward a fifo from the shim to the memory tile of its own objects to the shim"};
            }
        }
        if (f.to == "core" || f.from == "core") {
            const bool in = f.to == "core";
            if (in ? (f.from != "memtile" || (f.link != FifoLink::split && f.link != FifoLink::broadcast))
                   : (f.to != "memtile" || f.link != FifoLink::join)) {
                throw FieldError{fw + (in ? " must split or broadcast a memory-tile fifo to the cores"
                                          : " must join the cores' objects into a memory-tile fifo")};
            }
            const FifoDesc * p = L.fifo(f.peer);
            if (p->unit != f.unit || (in ? p->from != "shim" || p->to != "memtile" : p->from != "memtile" || p->to != "shim")) {
                throw FieldError{fw + (in ? " must take" : " must join into") + " a fifo between the shim and the memory tile of its own unit"};
            }
            const bool per_part = f.link != FifoLink::broadcast;
            if (p->count != (per_part ? d.core_rows : 1) * f.count) {
                throw FieldError{fw + ": " + p->name + " holds " + std::to_string(p->count) + " units, not " +
                                 (per_part ? "one part of " + std::to_string(f.count) + " per core row"
                                           : "the " + std::to_string(f.count) + " it broadcasts")};
            }
        }
    }
}

// The attention movement's shape (aie/flash_attn/dataflow.json): what its design script and a stream
// builder rely on. Its objects per family and head dim, one for every tile the family has a stack for; the
// slopes written by the host and the partial states held by the device; per layout one input FIFO split
// over the cores of kv objects and one output FIFO joined from them of state objects (a core has two S2MM
// channels and its memory no room for a second input object, aie/flash_attn/README.md); the core program's
// words, the scale among them as fp32 bits and the counts not.
void check_attention(const DesignDescription & d) {
    if (d.attention_objects.empty() || d.attention_kv_block < 1) {
        throw FieldError{".movement \"attention\" needs .attention with its objects"};
    }
    if (d.attention_cores_per_column != d.core_rows) {
        throw FieldError{".attention.cores_per_column is not .array.core_rows: a column's cores split its tasks"};
    }
    for (const DesignDescription::KernelStack & k : d.kernel_stacks) {
        if (d.attention_objects_of(k.family, k.tile_n) == nullptr) {
            throw FieldError{".attention.objects." + k.family + " has no objects for head dim " + std::to_string(k.tile_n)};
        }
    }
    for (const DesignDescription::AttentionObjects & o : d.attention_objects) {
        if (d.kernel_stack(o.family, o.tile) == nullptr) {
            throw FieldError{".attention.objects." + o.family + "." + std::to_string(o.tile) + " is a head dim without a kernel_stack"};
        }
        if (o.kv < o.state) {
            throw FieldError{".attention.objects." + o.family + "." + std::to_string(o.tile) +
                             ": kv is smaller than state (a kv object carries the partial states back)"};
        }
    }
    if (!d.is_host_written("slopes")) {
        throw FieldError{".movement \"attention\" needs its slopes, operand slopes, in .host_written"};
    }
    if (std::find(d.device_scratch.begin(), d.device_scratch.end(), "partials") == d.device_scratch.end()) {
        throw FieldError{".movement \"attention\" needs its partial states, operand partials, in .device_scratch"};
    }
    for (const LayoutDesc & L : d.layouts) {
        int in = 0, out = 0;
        for (const FifoDesc & f : L.fifos) {
            if (f.to == "core") {
                ++in;
                if (f.link != FifoLink::split || (f.unit != "kv" && f.unit != "kv_decode") || f.count != 1) {
                    throw FieldError{"layout " + L.name + ": fifo " + f.name + " must split kv or kv_decode objects, one per core"};
                }
                if (f.unit == "kv_decode") {
                    // A kv_decode object carries one mask row: tasks of one token only.
                    if (L.task_tokens != 1) {
                        throw FieldError{"layout " + L.name + ": kv_decode objects carry one mask row, its task_tokens must be 1"};
                    }
                    for (const DesignDescription::AttentionObjects & o : d.attention_objects) {
                        if (o.kv_decode == 0 || o.kv_decode < o.state) {
                            throw FieldError{"layout " + L.name + ": .attention.objects." + o.family + "." + std::to_string(o.tile) +
                                             " has no kv_decode of at least its state's bytes"};
                        }
                    }
                } else if (L.task_tokens != 0 && L.task_tokens != d.attention_max_rows) {
                    throw FieldError{"layout " + L.name + ": kv objects carry a mask row per query row, its task_tokens must be " +
                                     std::to_string(d.attention_max_rows)};
                }
            }
            if (f.from == "core") {
                ++out;
                if (f.unit != "state" || f.count != 1) {
                    throw FieldError{"layout " + L.name + ": fifo " + f.name + " must join state objects, one per core"};
                }
            }
        }
        if (in != 1 || out != 1) {
            throw FieldError{"layout " + L.name + " must have one core input fifo and one core output fifo"};
        }
    }
    for (const char * w : {"rounds", "tasks", "first_chunk", "chunk_step", "chunks", "chunk_rows", "last_rows", "part", "parts",
                           "block0", "n_kv", "scale", "state_steps", "mask_ratio"}) {
        const int i = d.rtp_word(w);
        if (i < 0) {
            throw FieldError{std::string(".core_program.rtp_words lacks ") + w + ", a word the attention's core program reads"};
        }
        if (d.rtp_word_is_float(i) != (std::string(w) == "scale")) {
            throw FieldError{std::string(".core_program.rtp_float_words: ") + w +
                             (std::string(w) == "scale" ? " is fp32 bits" : " is a count, not fp32 bits")};
        }
    }
    // From layout 3 on, the core reads each round's block steps (its column's, its own) from its q step, which
    // the stream builds to that layout: an older core program would take a fixed count per round.
    if (d.rtp_layout_version < 3) {
        throw FieldError{".core_program.rtp_layout_version " + std::to_string(d.rtp_layout_version) +
                         ": the attention streams are built for layout 3 (each round's block steps in the q step)"};
    }
}

DesignDescription parse(const json & j) {
    DesignDescription d;
    if (get_str(j, "format", "") != "xdna-dataflow") {
        throw FieldError{".format is not \"xdna-dataflow\""};
    }
    get_int(j, "version", "", 1, 1);
    d.design = get_str(j, "design", "");
    d.device = get_str(j, "device", "");
    const json & arr = at(j, "array", "");
    d.max_columns = static_cast<int>(get_int(arr, "max_columns", ".array", 1, 8));
    d.core_rows = static_cast<int>(get_int(arr, "core_rows", ".array", 0, 8));
    d.shim_row = static_cast<int>(get_int(arr, "shim_row", ".array", 0, 31));
    d.memtile_row = static_cast<int>(get_int(arr, "memtile_row", ".array", 0, 31));
    d.first_core_row = static_cast<int>(get_int(arr, "first_core_row", ".array", 0, 31));

    for (const auto & [name, list] : at(j, "families", "").items()) {
        if (name == "about") {
            continue;
        }
        if (!list.is_array() || list.empty()) {
            throw FieldError{".families." + name + " is not a list of contracts"};
        }
        std::vector<std::string> names;
        for (const json & c : list) {
            if (!c.is_string()) {
                throw FieldError{".families." + name + " holds a non-string"};
            }
            names.push_back(c.get<std::string>());
        }
        d.families.emplace_back(name, std::move(names));
    }

    for (const json & o : at(j, "operands", "")) {
        const std::string name = get_str(o, "name", ".operands[]");
        const int arg = static_cast<int>(get_int(o, "arg", ".operands[]", 0, 15));
        for (const auto & [other, other_arg] : d.operands) {
            if (other == name || other_arg == arg) {
                throw FieldError{".operands: operand '" + name + "' or argument " + std::to_string(arg) + " is listed twice"};
            }
        }
        d.operands.emplace_back(name, arg);
    }
    if (j.contains("units")) {
        for (const auto & [name, bytes] : j.at("units").items()) {
            if (name == "about") {
                continue;
            }
            DesignDescription::Unit u;
            u.name = name;
            if (bytes.is_object() && bytes.contains("fixed_bytes")) {
                // {"fixed_bytes": B}: B bytes at any tile (one value per row, whatever the row's chunks).
                if (bytes.size() != 1) {
                    throw FieldError{".units." + name + ": a fixed_bytes unit has no other field"};
                }
                u.bytes = static_cast<size_t>(get_int(bytes, "fixed_bytes", ".units." + name, 1, 4096));
                u.fixed = true;
            } else if (bytes.is_object()) {
                // {"bytes": B, "values": V}: B bytes per V values (a block format's, such as Q8_0's 34 per 32).
                u.bytes = static_cast<size_t>(get_int(bytes, "bytes", ".units." + name, 1, 4096));
                u.values = static_cast<size_t>(get_int(bytes, "values", ".units." + name, 1, 1024));
            } else if (!bytes.is_number_integer() || bytes.get<int64_t>() < 1 || bytes.get<int64_t>() > 1024) {
                throw FieldError{".units." + name + " is not a byte count per value of the tile (1..1024), {\"bytes\", \"values\"} or {\"fixed_bytes\"}"};
            } else {
                u.bytes = bytes.get<size_t>();
            }
            d.units.push_back(std::move(u));
        }
    }

    if (j.contains("objects")) {
        const json & objects = j.at("objects");
        for (const auto & fam : d.families) {
            const std::string where = ".objects." + fam.first;
            const json & o = at(objects, fam.first.c_str(), ".objects");
            DesignDescription::FamilyObjects fo;
            fo.family = fam.first;
            for (const char * unit : {"group", "tile"}) {
                fo.bytes.emplace_back(unit, static_cast<size_t>(get_int(o, unit, where, 4, 1 << 20)));
                if (fo.bytes.back().second % 4 != 0) {
                    throw FieldError{where + "." + unit + ": a shim BD moves 32-bit words"};
                }
            }
            fo.tokens = static_cast<int>(get_int(o, "tokens", where, 1, 256));
            fo.tile_k = static_cast<int>(get_int(o, "tile_k", where, 1, 4096));
            fo.group_tokens = static_cast<int>(get_int(o, "group_tokens", where, 1, 256));
            if (fo.tokens % fo.group_tokens != 0 ||
                fo.bytes[0].second != static_cast<size_t>(fo.group_tokens) * static_cast<size_t>(fo.tile_k) * sizeof(float)) {
                throw FieldError{where + ": a group is group_tokens x tile_k fp32 values and tokens a whole number of groups"};
            }
            d.family_objects.push_back(std::move(fo));
        }
    }
    if (j.contains("host_written")) {
        for (const auto & item : j.at("host_written").items()) {
            const std::string name = item.key();  // a plain name: a lambda may not capture a structured binding (C++17)
            if (name == "about") {
                continue;
            }
            if (std::none_of(d.operands.begin(), d.operands.end(), [&](const auto & o) { return o.first == name; })) {
                throw FieldError{".host_written." + name + " is not an operand .operands lists"};
            }
            d.host_written.push_back(name);
        }
    }
    if (j.contains("device_scratch")) {
        for (const auto & item : j.at("device_scratch").items()) {
            const std::string name = item.key();
            if (name == "about") {
                continue;
            }
            if (std::none_of(d.operands.begin(), d.operands.end(), [&](const auto & o) { return o.first == name; }) ||
                d.is_host_written(name)) {
                throw FieldError{".device_scratch." + name + " is not an operand .operands lists, or the host writes it"};
            }
            d.device_scratch.push_back(name);
        }
    }
    if (j.contains("attention")) {
        // The attention's constants and its objects per family and head dim (checked with its movement).
        const json & a = j.at("attention");
        d.attention_kv_block = static_cast<int>(get_int(a, "kv_block", ".attention", 1, 1024));
        d.attention_max_rows = static_cast<int>(get_int(a, "max_rows", ".attention", 1, 64));
        d.attention_cores_per_column = static_cast<int>(get_int(a, "cores_per_column", ".attention", 1, 8));
        const json & objects = at(a, "objects", ".attention");
        for (const auto & fam : d.families) {
            const std::string where = ".attention.objects." + fam.first;
            const json & tiles = at(objects, fam.first.c_str(), ".attention.objects");
            for (const auto & [key, o] : tiles.items()) {
                if (key == "about") {
                    continue;
                }
                if (key.empty() || key.find_first_not_of("0123456789") != std::string::npos) {
                    throw FieldError{where + ": '" + key + "' is not a head dim"};
                }
                DesignDescription::AttentionObjects ao;
                ao.family = fam.first;
                ao.tile = std::atoi(key.c_str());
                ao.kv = static_cast<size_t>(get_int(o, "kv", where + "." + key, 4, 1 << 20));
                ao.state = static_cast<size_t>(get_int(o, "state", where + "." + key, 4, 1 << 20));
                if (o.contains("kv_decode")) {
                    ao.kv_decode = static_cast<size_t>(get_int(o, "kv_decode", where + "." + key, 4, 1 << 20));
                }
                if (ao.kv % 4 != 0 || ao.state % 4 != 0 || ao.kv_decode % 4 != 0) {
                    throw FieldError{where + "." + key + ": a DMA moves 32-bit words"};
                }
                d.attention_objects.push_back(std::move(ao));
            }
        }
    }
    if (j.contains("zeros_bytes")) {
        d.zeros_bytes = static_cast<size_t>(get_int(j, "zeros_bytes", "", 4, 1 << 24));
    }

    const json & depths = at(j, "depths", "");
    d.l2_depth = static_cast<int>(get_int(depths, "l2", ".depths", 1, 16));
    d.c_depth_max = depths.contains("c_max") ? static_cast<int>(get_int(depths, "c_max", ".depths", 1, 16)) : 1;
    const json & layouts = at(j, "layouts", "");
    if (!layouts.is_array() || layouts.empty()) {
        throw FieldError{".layouts is not a list of layouts"};
    }
    for (size_t li = 0; li < layouts.size(); ++li) {
        const std::string lw = ".layouts[" + std::to_string(li) + "]";
        LayoutDesc L;
        L.name = get_str(layouts[li], "name", lw);
        for (const LayoutDesc & other : d.layouts) {
            if (other.name == L.name) {
                throw FieldError{lw + ": layout '" + L.name + "' is listed twice"};
            }
        }
        if (layouts[li].contains("task_tokens")) {
            L.task_tokens = static_cast<int>(get_int(layouts[li], "task_tokens", lw, 1, 64));
        }
        const json & fifos = at(layouts[li], "fifos", lw);
        if (!fifos.is_array()) {
            throw FieldError{lw + ".fifos is not a list"};
        }
        for (size_t i = 0; i < fifos.size(); ++i) {
            FifoDesc f = parse_fifo(fifos[i], i);
            if (f.depth < 0 && !f.depth_is_c) {
                f.depth = d.l2_depth;
            }
            L.fifos.push_back(std::move(f));
        }
        check_fifo_graph(d, L, lw);
        d.layouts.push_back(std::move(L));
    }
    d.fifos = d.layouts.front().fifos;
    d.matmul_movement = d.layouts.front().fifo("w_l3l2") != nullptr;
    if (j.contains("movement")) {
        const std::string m = get_str(j, "movement", "");
        if (m != "rows" && m != "matmul" && m != "norm" && m != "gather" && m != "quant" && m != "scatter" && m != "rope" &&
            m != "attention") {
            throw FieldError{".movement '" + m +
                             "' is not \"matmul\", \"rows\", \"norm\", \"gather\", \"quant\", \"scatter\", \"rope\" or \"attention\""};
        }
        if ((m == "matmul") != d.matmul_movement) {
            throw FieldError{".movement is \"" + m + "\" but the FIFOs " + (d.matmul_movement ? "are" : "are not") + " the matmul's"};
        }
        d.rows_movement = m == "rows";
        d.norm_movement = m == "norm";
        d.gather_movement = m == "gather";
        d.quant_movement = m == "quant";
        d.scatter_movement = m == "scatter";
        d.rope_movement = m == "rope";
        d.attention_movement = m == "attention";
        if (d.rope_movement && !d.is_host_written("cs")) {
            throw FieldError{".movement \"rope\" needs its angle rows, operand cs, in .host_written"};
        }
        if (d.scatter_movement) {
            // One layout per family, named after it: the output object is the family's format.
            for (const auto & fam : d.families) {
                if (d.layout(fam.first) == nullptr) {
                    throw FieldError{".movement \"scatter\" needs a layout named after each family; '" + fam.first + "' has none"};
                }
            }
        }
        if (d.quant_movement && (d.family_objects.empty() || d.zeros_bytes == 0)) {
            throw FieldError{".movement \"quant\" needs every family's .objects and .zeros_bytes"};
        }
    }
    // Only a DMA-only design has no cores: every FIFO of its layouts runs between the shim and the
    // memory tile, and it has no core program to describe.
    const bool any_core_fifo = std::any_of(d.layouts.begin(), d.layouts.end(), [](const LayoutDesc & L) {
        return std::any_of(L.fifos.begin(), L.fifos.end(), [](const FifoDesc & f) { return f.from == "core" || f.to == "core"; });
    });
    if (d.gather_movement != (d.core_rows == 0) || (d.core_rows == 0 && any_core_fifo)) {
        throw FieldError{".array.core_rows: a gather design has no cores (0) and no core FIFOs; every other design has cores"};
    }
    for (const auto & [name, arg] : d.operands) {
        int * slot = name == "weights" ? &d.arg_weights
                     : name == "activations" ? &d.arg_activations
                     : name == "out" ? &d.arg_out
                     : name == "params" ? &d.arg_params : nullptr;
        if (slot != nullptr) {
            *slot = arg;
        }
    }
    if (d.matmul_movement && (d.arg_weights < 0 || d.arg_activations < 0 || d.arg_out < 0 || d.arg_params < 0)) {
        throw FieldError{".operands must name weights, activations, out and params"};
    }
    for (LayoutDesc & L : d.layouts) {
        if (!d.matmul_movement) {
            break;  // the checks below are the matmul's data movement's
        }
        // The matmul's data movement: W and A from the shim into the memory tile, one split over the
        // core rows and the other broadcast, C joined from the cores (the stream builder and the DMA
        // interpreter know no other).
        const FifoDesc * w3 = L.fifo("w_l3l2");
        const FifoDesc * a3 = L.fifo("a_l3l2");
        const FifoDesc * w1 = L.fifo("w_l2l1");
        const FifoDesc * a1 = L.fifo("a_l2l1");
        const FifoDesc * c1 = L.fifo("c_l1l2");
        const FifoDesc * c3 = L.fifo("c_l2l3");
        const std::string lw = "layout " + L.name;
        if (!w3 || !a3 || !w1 || !a1 || !c1 || !c3) {
            throw FieldError{lw + " lacks a fifo of the matmul data movement (w_l3l2, w_l2l1, a_l3l2, a_l2l1, c_l1l2, c_l2l3)"};
        }
        if (w1->peer != "w_l3l2" || a1->peer != "a_l3l2" || c1->link != FifoLink::join || c1->peer != "c_l2l3" ||
            w1->count != 1 || a1->count != 1 || c1->count != 1) {
            throw FieldError{lw + ": the core FIFOs must take one unit each from w_l3l2 / a_l3l2 and join into c_l2l3"};
        }
        // The split operand's object holds one part per core (the interpreter checks the count against the
        // core rows of the xclbin it runs); a broadcast object is one unit.
        auto parts = [&](const FifoDesc * l3, const FifoDesc * l1) {
            if (l1->link == FifoLink::split && l3->count > 1) {
                return l3->count;
            }
            if (l1->shared_per_row && l1->link == FifoLink::broadcast && l3->count == 1) {
                return d.core_rows;  // one FIFO per core row: the rows take different parts
            }
            if (l1->link == FifoLink::broadcast && l3->count == 1) {
                return 1;
            }
            throw FieldError{lw + ": " + l1->name + " must split a several-part object over the core rows or broadcast a "
                             "one-unit object"};
        };
        L.w_parts = parts(w3, w1);
        L.a_parts = parts(a3, a1);
        if ((L.w_parts > 1) == (L.a_parts > 1)) {
            throw FieldError{lw + ": exactly one of W and A must be split over the core rows"};
        }
        // Sharing by the columns: only A's two FIFOs, both of them, split over the core rows (the stream
        // builder and the DMA interpreter fan out a split part along a core row; nothing else).
        for (const FifoDesc & f : L.fifos) {
            if (f.shared_by_columns && &f != a3 && &f != a1) {
                throw FieldError{lw + ": fifo " + f.name + " is shared by the columns; only a_l3l2 and a_l2l1 can be"};
            }
        }
        if (a3->shared_by_columns != a1->shared_by_columns) {
            throw FieldError{lw + ": a_l3l2 and a_l2l1 must both be shared by the columns, or neither"};
        }
        if (a3->shared_per_row != a1->shared_per_row) {
            throw FieldError{lw + ": a_l3l2 and a_l2l1 must both be shared per core row, or neither"};
        }
        if (a3->shared_by_columns && !a3->shared_per_row && a1->link != FifoLink::split) {
            throw FieldError{lw + ": A shared by the columns must be split over the core rows"};
        }
        if (a3->shared_per_row && (a1->link != FifoLink::broadcast || a3->count != 1)) {
            throw FieldError{lw + ": A shared per core row must be one unit per object, broadcast along the row"};
        }
        L.a_shared = a3->shared_by_columns;
        L.a_rows = a3->shared_per_row;
    }
    if (d.core_rows == 0) {
        // A DMA-only design (the gather): no core program, no core memory; the tiles its family has
        // xclbins for come from .xclbin_tiles.
        if (j.contains("core_program")) {
            throw FieldError{".core_program: a design without cores has no core program"};
        }
        const json & budget = at(j, "core_budget", "");
        d.memtile_bytes = static_cast<size_t>(get_int(budget, "memtile_bytes", ".core_budget", 1, 1 << 26));
        const json & tiles = at(j, "xclbin_tiles", "");
        for (const auto & fam : d.families) {
            const json & list = at(tiles, fam.first.c_str(), ".xclbin_tiles");
            if (!list.is_array() || list.empty()) {
                throw FieldError{".xclbin_tiles." + fam.first + " is not a list of tiles"};
            }
            for (const json & t : list) {
                if (!t.is_number_integer() || t.get<int64_t>() < 1 || t.get<int64_t>() > 4096) {
                    throw FieldError{".xclbin_tiles." + fam.first + ": " + t.dump() + " is not a tile in [1, 4096]"};
                }
                d.kernel_stacks.push_back({fam.first, "", t.get<int>(), 0});
            }
        }
    } else {
        const json & prog = at(j, "core_program", "");
        d.rtp_core_address = static_cast<uint32_t>(get_int(prog, "rtp_core_address", ".core_program", 0, 65535));
        d.rtp_word_count = static_cast<int>(get_int(prog, "rtp_word_count", ".core_program", 1, 64));
        const json & words = at(prog, "rtp_words", ".core_program");
        const int hi = d.rtp_word_count - 1;
        d.rtp_names.assign(d.rtp_word_count, "");
        for (const auto & [name, index] : words.items()) {
            const int i = static_cast<int>(get_int(words, name.c_str(), ".core_program.rtp_words", 0, hi));
            if (!d.rtp_names[i].empty()) {
                throw FieldError{".core_program.rtp_words: words '" + d.rtp_names[i] + "' and '" + name + "' share index " + std::to_string(i)};
            }
            d.rtp_names[i] = name;
        }
        // Every core program selects its kernel by a contract word and checks the words' layout version;
        // the matmul's also counts output and K tiles.
        d.rtp_contract = static_cast<int>(get_int(words, "contract", ".core_program.rtp_words", 0, hi));
        d.rtp_version = static_cast<int>(get_int(words, "version", ".core_program.rtp_words", 0, hi));
        if (d.matmul_movement) {
            d.rtp_out_tiles = static_cast<int>(get_int(words, "out_tiles", ".core_program.rtp_words", 0, hi));
            d.rtp_k_tiles = static_cast<int>(get_int(words, "k_tiles", ".core_program.rtp_words", 0, hi));
        }
        d.rtp_float.assign(d.rtp_word_count, false);
        if (prog.contains("rtp_float_words")) {
            const json & floats = prog["rtp_float_words"];
            if (!floats.is_array()) {
                throw FieldError{".core_program.rtp_float_words is not a list of RTP word names"};
            }
            for (const json & f : floats) {
                const int w = f.is_string() ? d.rtp_word(f.get<std::string>()) : -1;
                // The words the stream computes are counts and selectors: never fp32 bits.
                if (w < 0 || w == d.rtp_contract || w == d.rtp_version || w == d.rtp_out_tiles || w == d.rtp_k_tiles) {
                    throw FieldError{".core_program.rtp_float_words: " + f.dump() + " is not one of the core program's parameter words"};
                }
                d.rtp_float[w] = true;
            }
        }
        d.rtp_layout_version = static_cast<uint32_t>(get_int(prog, "rtp_layout_version", ".core_program", 0, 1 << 30));
        d.rtp_word_max = static_cast<uint32_t>(get_int(prog, "rtp_word_max", ".core_program", 1, INT32_MAX));
        const json & bar = at(prog, "barrier", ".core_program");
        d.lock_max_value = static_cast<uint32_t>(get_int(bar, "max_value", ".core_program.barrier", 1, 127));
        const int64_t lock_max = d.lock_max_value;
        d.barrier_lock = static_cast<uint32_t>(get_int(bar, "lock", ".core_program.barrier", 0, 15));
        d.barrier_value = static_cast<uint32_t>(get_int(bar, "set_value", ".core_program.barrier", 1, lock_max));
        const json & acq = at(bar, "acquire", ".core_program.barrier");
        const std::string mode = get_str(acq, "mode", ".core_program.barrier.acquire");
        if (mode != "equal" && mode != "greater_equal") {
            throw FieldError{".core_program.barrier.acquire.mode: '" + mode + "' is neither 'equal' nor 'greater_equal'"};
        }
        d.barrier_acquire_ge = mode == "greater_equal";
        d.barrier_acquire_value = static_cast<uint32_t>(get_int(acq, "value", ".core_program.barrier.acquire", 1, lock_max));
        d.barrier_release_value = static_cast<uint32_t>(
            get_int(at(bar, "release", ".core_program.barrier"), "value", ".core_program.barrier.release", 0, lock_max));

        const json & budget = at(j, "core_budget", "");
        d.core_data_bytes = static_cast<size_t>(get_int(budget, "core_data_bytes", ".core_budget", 1, 1 << 24));
        d.memtile_bytes = static_cast<size_t>(get_int(budget, "memtile_bytes", ".core_budget", 1, 1 << 26));
        d.kernel_data_bytes = static_cast<size_t>(get_int(budget, "kernel_data_bytes", ".core_budget", 0, 1 << 20));
        const json & stacks = at(budget, "kernel_stack", ".core_budget");
        for (const auto & fam : d.families) {
            const std::string where = ".core_budget.kernel_stack." + fam.first;
            const json & k = at(stacks, fam.first.c_str(), ".core_budget.kernel_stack");
            const std::string source = get_str(k, "source", where);
            // A family gives the token tiles it has a program for (the bfp16 prefill families 32, and the
            // K-quant one 64 as well).
            bool any = false;
            for (const auto & [key, bytes] : k.items()) {
                if (key.empty() || key.find_first_not_of("0123456789") != std::string::npos) {
                    continue;  // "source", "about"
                }
                const int tn = std::atoi(key.c_str());
                if (tn < 1 || tn > 4096) {
                    throw FieldError{where + ": tile " + key + " is outside [1, 4096]"};
                }
                any = true;
                d.kernel_stacks.push_back({fam.first, source, tn,
                                           static_cast<size_t>(get_int(k, key.c_str(), where, 0, 1 << 20))});
            }
            if (!any) {
                throw FieldError{where + " gives no tile (a key such as \"32\")"};
            }
        }
    }

    const json & shim = at(j, "shim", "");
    d.shim_bds = static_cast<int>(get_int(shim, "bds", ".shim", 1, 64));
    d.steps_in_flight = static_cast<int>(get_int(shim, "steps_in_flight", ".shim", 1, 8));
    d.max_k_chunks = shim.contains("max_k_chunks") ? static_cast<int>(get_int(shim, "max_k_chunks", ".shim", 1, 16)) : 1;
    std::vector<bool> used(d.shim_bds, false);
    for (const json & s : at(shim, "bd_slots", ".shim")) {
        BdSlot slot;
        if (!s.is_object()) {
            throw FieldError{".shim.bd_slots[] is not an object"};
        }
        // Per operand: a BD id (one BD a step) or a list of them (chained).
        for (const auto & [operand, ids] : s.items()) {
            std::vector<uint32_t> list;
            if (ids.is_array()) {
                list = get_ids(s, operand.c_str(), ".shim.bd_slots[]", d.shim_bds);
            } else {
                list.push_back(static_cast<uint32_t>(get_int(s, operand.c_str(), ".shim.bd_slots[]", 0, d.shim_bds - 1)));
            }
            for (uint32_t id : list) {
                if (used[id]) {
                    throw FieldError{".shim.bd_slots: BD " + std::to_string(id) + " is used twice"};
                }
                used[id] = true;
            }
            slot.by_operand.emplace_back(operand, std::move(list));
        }
        if (d.matmul_movement) {
            slot.w = get_ids(s, "w", ".shim.bd_slots[]", d.shim_bds);
            slot.a = get_ids(s, "a", ".shim.bd_slots[]", d.shim_bds);
            slot.c = static_cast<uint32_t>(get_int(s, "c", ".shim.bd_slots[]", 0, d.shim_bds - 1));
            if (static_cast<int>(slot.w.size()) != d.max_k_chunks || static_cast<int>(slot.a.size()) != d.max_k_chunks) {
                throw FieldError{".shim.bd_slots: every slot needs max_k_chunks W and A BD ids"};
            }
        }
        d.bd_slots.push_back(std::move(slot));
    }
    if (static_cast<int>(d.bd_slots.size()) != d.steps_in_flight) {
        throw FieldError{".shim.bd_slots: one slot per step in flight"};
    }

    const json & lim = at(j, "limits", "");
    // No description may promise more than a shim BD's fields hold (control/shim-bd.h): a plan checked
    // against wider limits would build BDs the hardware cannot encode.
    d.wrap_max = static_cast<uint32_t>(get_int(lim, "wrap_max", ".limits", 1, control::ShimLimits::max_wrap));
    d.iteration_max = static_cast<uint32_t>(get_int(lim, "iteration_max", ".limits", 1, control::ShimLimits::max_iterations));
    d.stride_max = static_cast<uint32_t>(get_int(lim, "stride_max", ".limits", 1, control::ShimLimits::max_stride));
    if (lim.contains("repeat_max")) {
        d.repeat_max = static_cast<uint32_t>(get_int(lim, "repeat_max", ".limits", 0, 255));
    }
    if (d.matmul_movement || j.contains("params_words")) {
        d.params_words = static_cast<int>(get_int(j, "params_words", "", 1, 1024));
    }
    if (d.attention_movement) {
        check_attention(d);
    }
    return d;
}

const MatmulContract * contract_named(const std::string & name) {
    for (const MatmulContract & c : all_matmul_contracts()) {
        if (name == c.name) {
            return &c;
        }
    }
    return nullptr;
}

}  // namespace

const FifoDesc * LayoutDesc::fifo(const std::string & n) const {
    for (const FifoDesc & f : fifos) {
        if (f.name == n) {
            return &f;
        }
    }
    return nullptr;
}

const FifoDesc * LayoutDesc::shim_fifo_of(const std::string & operand) const {
    for (const FifoDesc & f : fifos) {
        if (f.shim_channel >= 0 && f.operand == operand) {
            return &f;
        }
    }
    return nullptr;
}

const LayoutDesc * DesignDescription::layout(const std::string & name) const {
    if (name.empty()) {
        return layouts.empty() ? nullptr : &layouts.front();
    }
    for (const LayoutDesc & L : layouts) {
        if (L.name == name) {
            return &L;
        }
    }
    return nullptr;
}

const FifoDesc * DesignDescription::fifo(const std::string & name) const {
    for (const FifoDesc & f : fifos) {
        if (f.name == name) {
            return &f;
        }
    }
    return nullptr;
}

const FifoDesc * DesignDescription::shim_fifo_of(const std::string & operand) const {
    for (const FifoDesc & f : fifos) {
        if (f.shim_channel >= 0 && f.operand == operand) {
            return &f;
        }
    }
    return nullptr;
}

const std::vector<std::string> * DesignDescription::family_contracts(const std::string & family) const {
    for (const auto & [name, list] : families) {
        if (name == family) {
            return &list;
        }
    }
    return nullptr;
}

const DesignDescription::KernelStack * DesignDescription::kernel_stack(const std::string & family, int tile_n) const {
    for (const KernelStack & k : kernel_stacks) {
        if (k.family == family && k.tile_n == tile_n) {
            return &k;
        }
    }
    return nullptr;
}

int DesignDescription::rtp_word(const std::string & name) const {
    auto it = std::find(rtp_names.begin(), rtp_names.end(), name);
    return it == rtp_names.end() ? -1 : static_cast<int>(it - rtp_names.begin());
}

int DesignDescription::operand_arg(const std::string & operand) const {
    for (const auto & [name, arg] : operands) {
        if (name == operand) return arg;
    }
    return -1;
}

const DesignDescription::AttentionObjects * DesignDescription::attention_objects_of(const std::string & family, int tile) const {
    for (const AttentionObjects & o : attention_objects) {
        if (o.family == family && o.tile == tile) {
            return &o;
        }
    }
    return nullptr;
}

bool DesignDescription::is_host_written(const std::string & operand) const {
    return std::find(host_written.begin(), host_written.end(), operand) != host_written.end();
}

const DesignDescription::FamilyObjects * DesignDescription::objects_of(const std::string & family) const {
    for (const FamilyObjects & o : family_objects) {
        if (o.family == family) return &o;
    }
    return nullptr;
}

size_t DesignDescription::unit_bytes(const std::string & family, const std::string & unit, int tile_n) const {
    if (const AttentionObjects * a = attention_objects_of(family, tile_n)) {
        if (unit == "kv") return a->kv;
        if (unit == "kv_decode") return a->kv_decode;
        if (unit == "state") return a->state;
    }
    if (const FamilyObjects * o = objects_of(family)) {
        for (const auto & [name, bytes] : o->bytes) {
            if (name == unit) return bytes;
        }
    }
    return unit_bytes(unit, tile_n);
}

size_t DesignDescription::unit_bytes(const std::string & unit, int tile_n) const {
    for (const Unit & u : units) {
        if (u.name == unit) {
            if (u.fixed) {
                return tile_n > 0 ? u.bytes : 0;
            }
            return tile_n > 0 && static_cast<size_t>(tile_n) % u.values == 0 ? u.bytes * (static_cast<size_t>(tile_n) / u.values) : 0;
        }
    }
    return 0;
}

std::string DesignDescription::family_of(const std::string & contract) const {
    for (const auto & [name, list] : families) {
        if (std::find(list.begin(), list.end(), contract) != list.end()) {
            return name;
        }
    }
    return {};
}

int DesignDescription::contract_index(const std::string & family, const std::string & contract) const {
    const std::vector<std::string> * list = family_contracts(family);
    if (list == nullptr) {
        return -1;
    }
    auto it = std::find(list->begin(), list->end(), contract);
    return it == list->end() ? -1 : static_cast<int>(it - list->begin());
}

DesignRead parse_design_description(const std::string & json_text) {
    DesignRead r;
    try {
        r.design = parse(json::parse(json_text));
    } catch (const FieldError & e) {
        r.error = "dataflow description: " + e.what;
    } catch (const std::exception & e) {
        r.error = std::string("dataflow description: ") + e.what();
    }
    return r;
}

DesignRead read_design_description_file(const std::string & path) {
    std::ifstream in(path);
    if (!in) {
        DesignRead r;
        r.error = "dataflow description: cannot read " + path;
        return r;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_design_description(ss.str());
}

bool family_buffers(const DesignDescription & d, const std::string & family, int tile_n, FamilyBuffers & out,
                    std::string & err, const std::string & exact) {
    const std::vector<std::string> * list = d.family_contracts(family);
    if (list == nullptr) {
        err = "design " + d.design + " has no family '" + family + "'";
        return false;
    }
    if (!exact.empty() && std::find(list->begin(), list->end(), exact) == list->end()) {
        err = "family " + family + " has no contract '" + exact + "' for an exact xclbin";
        return false;
    }
    out = {};
    out.a_k_parts = 0;
    for (const std::string & name : *list) {
        if (!exact.empty() && name != exact) {
            continue;  // an exact xclbin sizes its buffers to its one contract
        }
        const MatmulContract * c = contract_named(name);
        if (c == nullptr) {
            err = "family " + family + " names contract '" + name + "' which the runtime does not know";
            return false;
        }
        if (family != c->family) {
            // Packed weights carry the tail room of their contract table family's W window (weight-layout.h).
            err = "family " + family + " names contract '" + name + "', which the contract table puts in family " + c->family;
            return false;
        }
        // The xclbin of a token tile serves the family's contracts that take it: a Q4_K/Q5_K xclbin at 64
        // tokens is not sized to Q6_K's W tile, which has no 64-token form.
        if (!contract_allows_tile(*c, c->tile(tile_n))) {
            continue;
        }
        const int64_t ne[4] = {c->tile_k, c->tile_m, 1, 1};
        WeightLayout L;
        if (!make_weight_layout(c->weight_type, ne, L)) {
            err = "no weight layout for " + name;
            return false;
        }
        const int parts = act_k_parts(*c, tile_n);
        if (out.a_k_parts != 0 && parts != out.a_k_parts) {
            err = "family " + family + " at TN " + std::to_string(tile_n) + " mixes contracts taking A in " +
                  std::to_string(out.a_k_parts) + " and " + std::to_string(parts) + " K parts: one core program cannot";
            return false;
        }
        out.a_k_parts = parts;
        out.w_obj = std::max(out.w_obj, L.tile_bytes);
        out.a_obj = std::max(out.a_obj, activation_object_bytes(*c, tile_n));
    }
    if (out.a_k_parts == 0) {
        err = "no contract of family " + family + (exact.empty() ? std::string() : " (exact: " + exact + ")") +
              " takes token tile " + std::to_string(tile_n);
        return false;
    }
    out.c_obj = static_cast<size_t>(tile_n) * 64 * sizeof(float);
    const DesignDescription::KernelStack * stack = d.kernel_stack(family, tile_n);
    if (stack == nullptr) {
        err = "design " + d.design + " gives no kernel stack for family " + family + " at TN " + std::to_string(tile_n);
        return false;
    }
    out.stack = stack->bytes;
    // Core data memory: 2 W + 2 A + C x depth + RTP words + the kernel's stack + static data (as design.py).
    const size_t fixed = 2 * out.w_obj + 2 * out.a_obj + 4 * static_cast<size_t>(d.rtp_word_count) + out.stack +
                         d.kernel_data_bytes;
    out.c_depth = fixed + d.c_depth_max * out.c_obj <= d.core_data_bytes ? d.c_depth_max : 1;
    out.core_bytes = fixed + out.c_depth * out.c_obj;
    if (fixed + out.c_obj > d.core_data_bytes) {
        err = "family " + family + " at TN " + std::to_string(tile_n) + " does not fit a core";
        return false;
    }
    return true;
}

}  // namespace xdna
