#!/usr/bin/env python3
"""Writes the kernel manifest (format 2, docs/xrt.md) of an NPU build from the build's entries file and the
aiecc project directories it names. scripts/build-npu-kernels.sh runs it once everything is compiled;
tests/aie/check_kernel_manifest_writer.sh runs it on fake project directories, without a toolchain.

    write-kernel-manifest.py ENTRIES MANIFEST

ENTRIES has one line per (xclbin, contract) built, fields separated by tabs (or, without a tab in the
line, by white space); blank lines and lines starting with '#' are skipped. The first field says which
kind of design the line is of:

    matmul     <family> <contract> <token tile n> <tile k> <xclbin> <aiecc project dir> <family|exact>
    rows       <family> <tile> <xclbin> <aiecc project dir> <dataflow.json>
    attention  <family> <tile> <layout> <xclbin> <aiecc project dir> <dataflow.json>

A matmul xclbin serves every contract of its lines (one line per contract; the project dir of its first
line is read), "exact" when it was built for one contract with W objects of its own tile (--exact). A rows
xclbin (aie/add/design.py's program for a "movement": "rows" description: add, glu, scale, hadamard and row_scale;
aie/rms_norm/design.py's for "norm", aie/get_rows/design.py's for "gather", aie/act_quant/design.py's for
"quant", aie/set_rows/design.py's for "scatter", or aie/rope/design.py's for "rope") serves every contract of its
family at one chunk size, the tile; its design name, families, tiles and operands are read from the
description given. The tiles are the numeric keys of the family's core_budget.kernel_stack (a scatter's
too: one xclbin per output format and tile; a rope's: one per rotation and head row length), or,
for a gather (DMAs only: no core program, so no kernel stack), the family's list in
xclbin_tiles; the backend's parser takes them from the same places (src/runtime/design-description.cpp).
A quant family is one program at one token tile, its kernel_stack key, which must be the tokens of the
family's own objects (.objects.<family>): the backend keys the program by that tile and the objects'
tile_k, so a family without them, or whose objects are of another token tile, would give an entry no
invocation asks for.

An attention xclbin (aie/flash_attn/design.py's program for an "movement": "attention" description) serves
both block programs of its family (KV cache type) at one head dim, the tile (a numeric key of the family's
kernel_stack), built in one of the description's layouts (design.py --layout), which its entry names.
A family and head dim may have a line per layout (the backend runs each invocation on the entry of the
layout its stream takes, docs/xrt.md); two lines of one family, head dim and layout are refused: the
parser would serve the key from one and drop the other.

The kernel's arguments are read back from the kernel description aiecc wrote into the project dir
(*kernels*.json: ps-kernels.kernels[0], its name and its arguments opcode, instr, ninstr, bo0..boN), so
the manifest's argument list always matches the xclbin: opcode -> {"kind": "opcode", "value": 3},
instr -> the instruction buffer in group 1, ninstr -> the word count, and bo<i> in group 3 + i:
  matmul: the runtime sequence's W, A, C and params (bo0..bo3: weights, activations, output, params);
  rows:   the description's operand whose "arg" is i, by name ({"kind": "operand", "name": ...}): a, b, y
          for add and glu, x, weight, y for rms_norm, x, y for scale and hadamard, x, w, y for row_scale (w
          its one value per row), src, y for get_rows, x,
          zeros, tiles for act_quant, x, y for set_rows (its ids are read by the host, no argument), x, cs,
          y for rope (cs, the angle rows, is written by the host at submission, .host_written, but is still
          a buffer argument of the kernel);
  attention: {"kind": "placed"} for each of bo0..bo4, exactly those 5: the firmware translates the
          addresses of 5 buffer arguments and the host places the design's 7 operands into them at each
          submission (src/runtime/argument-places.h, control::kFirmwareTranslatedArgs).
An argument of another name, a bo<i> with no such operand, or a required argument the kernel lacks is
refused (exit 1, no manifest written): the backend's parser (src/runtime/kernel-manifest.cpp) would drop
the entry.
"""

import glob
import json
import os
import sys

PROG = "write-kernel-manifest"
MATMUL_BO_KINDS = ["weights", "activations", "output", "params"]
MATMUL_REQUIRED = ["instructions", "instruction_count", "weights", "activations", "output"]
# The buffer arguments the firmware translates (control::kFirmwareTranslatedArgs, src/control/control-ops.h):
# an attention kernel takes exactly these as its "placed" arguments.
PLACED_ARGS = 5


class ManifestError(Exception):
    pass


def read_kernel(prj, xclbin):
    """(name, arguments) of ps-kernels.kernels[0] of the kernel description aiecc wrote into prj."""
    descs = sorted(glob.glob(os.path.join(glob.escape(prj), "*kernels*.json")))
    if not descs:
        raise ManifestError(f"no kernel description (*kernels*.json) in {prj} (the aiecc project of {xclbin})")
    try:
        with open(descs[0], encoding="utf-8") as f:
            kernel = json.load(f)["ps-kernels"]["kernels"][0]
        name, args = kernel["name"], [a["name"] for a in kernel["arguments"]]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        raise ManifestError(f"{descs[0]}: not an aiecc kernel description with ps-kernels.kernels[0] "
                            f"{{name, arguments[].name}} ({type(e).__name__}: {e})")
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{descs[0]}: kernel name {name!r}")
    return name, args, descs[0]


def bo_index(name):
    if name.startswith("bo") and name[2:].isdigit():
        return int(name[2:])
    return None


def kernel_args(arg_names, bo_arg, where):
    """The manifest's args for aiecc's argument names; bo_arg(i) gives the buffer argument of bo<i> (without
    its group), or None when the design has none."""
    args = []
    for name in arg_names:
        i = bo_index(name)
        if name == "opcode":
            args.append({"kind": "opcode", "value": 3})
        elif name == "instr":
            args.append({"kind": "instructions", "group_id": 1})
        elif name == "ninstr":
            args.append({"kind": "instruction_count"})
        elif i is not None and bo_arg(i) is not None:
            args.append(dict(bo_arg(i), group_id=3 + i))
        else:
            raise ManifestError(f"{where}: kernel argument '{name}' has no manifest kind")
    return args


def require_args(args, where, kinds, operands=()):
    have = [a["kind"] for a in args]
    for k in kinds:
        if have.count(k) != 1:
            raise ManifestError(f"{where}: the kernel has {have.count(k)} '{k}' argument(s), the manifest needs one")
    names = [a["name"] for a in args if a["kind"] == "operand"]
    for op in operands:
        if names.count(op) != 1:
            raise ManifestError(f"{where}: the kernel has {names.count(op)} buffer argument(s) for operand '{op}', "
                                "the manifest needs one")


def as_int(text, what, where):
    try:
        v = int(text)
    except ValueError:
        raise ManifestError(f"{where}: {what} '{text}' is not a number")
    if v < 1:
        raise ManifestError(f"{where}: {what} {v}")
    return v


MOVEMENTS = ("rows", "norm", "gather", "quant", "scatter", "rope")


def read_description(path, where):
    """(design, movement, families, tiles, tiles_from, operands, objects) of a rows-form description: tiles
    maps each family to its chunk sizes (a quant family's token tile), tiles_from says where in the
    description they are listed (for messages), objects is the description's .objects (a quant family's own
    objects; empty for the others)."""
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        movement = d.get("movement")
        if movement not in MOVEMENTS:
            raise ManifestError(f"{where}: {path} is not a rows, norm, gather, quant, scatter or rope description "
                                "(\"movement\": " + " or ".join(json.dumps(m) for m in MOVEMENTS) + ")")
        design = d["design"]
        families = {k: v for k, v in d["families"].items() if k != "about"}
        if movement == "gather":
            # No cores, so no kernel stack: the tiles built are listed on their own.
            listed = d["xclbin_tiles"]
            tiles = {f: sorted(t for t in listed.get(f, []) if isinstance(t, int) and not isinstance(t, bool))
                     for f in families}
            tiles_from = "its xclbin_tiles"
        else:
            stacks = d["core_budget"]["kernel_stack"]
            tiles = {f: sorted(int(t) for t in stacks.get(f, {}) if str(t).isdigit()) for f in families}
            tiles_from = "the numeric keys of its kernel_stack"
        operands = {int(o["arg"]): o["name"] for o in d["operands"]}
        objects = d.get("objects", {}) if movement == "quant" else {}
        if not isinstance(objects, dict):
            raise TypeError(f"objects is a {type(objects).__name__}")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ManifestError(f"{where}: description {path}: {type(e).__name__}: {e}")
    if len(operands) != len(d["operands"]):
        raise ManifestError(f"{where}: description {path}: two operands with the same \"arg\"")
    return design, movement, families, tiles, tiles_from, operands, objects


def read_attention_description(path, where):
    """(design, families, tiles, layouts) of an attention description: tiles maps each family to its head
    dims (the numeric keys of its kernel_stack), layouts lists the names of .layouts."""
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        if d.get("movement") != "attention":
            raise ManifestError(f"{where}: {path} is not an attention description (\"movement\": \"attention\")")
        design = d["design"]
        families = {k: v for k, v in d["families"].items() if k != "about"}
        stacks = d["core_budget"]["kernel_stack"]
        tiles = {f: sorted(int(t) for t in stacks.get(f, {}) if str(t).isdigit()) for f in families}
        layouts = [L["name"] for L in d["layouts"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ManifestError(f"{where}: description {path}: {type(e).__name__}: {e}")
    return design, families, tiles, layouts


def positive_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def build(entries_path):
    matmul = {}   # xclbin -> its manifest entry
    rows = {}     # xclbin -> its manifest entry (an attention entry too: the parser reads it as the rows form)
    order = []    # (kind, xclbin) in the order first seen
    with open(entries_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        where = f"{entries_path}:{n}"
        kind = fields[0]
        if kind == "matmul":
            if len(fields) != 8:
                raise ManifestError(f"{where}: a matmul line has 8 fields (matmul family contract tile_n tile_k "
                                    f"xclbin project w_objects), not {len(fields)}")
            _, family, contract, tn, tile_k, xclbin, prj, w_objects = fields
            if w_objects not in ("family", "exact"):
                raise ManifestError(f"{where}: W objects '{w_objects}' (family or exact)")
            tile = {"m": 64, "n": as_int(tn, "token tile", where), "k": as_int(tile_k, "K tile", where)}
            where = f"{where} ({xclbin})"
            if xclbin in rows:
                raise ManifestError(f"{where}: {xclbin} is a rows design's xclbin too")
            e = matmul.get(xclbin)
            if e is not None:
                if e["family"] != family or ("w_objects" in e) != (w_objects == "exact"):
                    raise ManifestError(f"{where}: {xclbin} listed before for family {e['family']}, "
                                        f"W objects {e.get('w_objects', 'family')}")
                if w_objects == "exact":
                    raise ManifestError(f"{where}: an exact xclbin serves one contract; {xclbin} has two lines")
                if any(s["contract"] == contract and s["tiles"] == [tile] for s in e["serves"]):
                    raise ManifestError(f"{where}: {contract} at {tile} listed twice")
                e["serves"].append({"contract": contract, "tiles": [tile]})
                continue
            name, arg_names, desc = read_kernel(prj, xclbin)
            bo = lambda i: {"kind": MATMUL_BO_KINDS[i]} if i < len(MATMUL_BO_KINDS) else None
            try:
                args = kernel_args(arg_names, bo, desc)
            except ManifestError as err:
                raise ManifestError(f"{err} of {xclbin} (format 2 knows {', '.join(MATMUL_BO_KINDS)} as "
                                    "a matmul's buffers bo0..bo3)")
            require_args(args, f"{desc} ({xclbin})", MATMUL_REQUIRED)
            matmul[xclbin] = {"design": "matmul", "family": family, "xclbin": xclbin, "kernel": name,
                              "npu": ["npu2"], "serves": [{"contract": contract, "tiles": [tile]}], "args": args}
            if w_objects == "exact":
                matmul[xclbin]["w_objects"] = "exact"
            order.append(("matmul", xclbin))
        elif kind == "rows":
            if len(fields) != 6:
                raise ManifestError(f"{where}: a rows line has 6 fields (rows family tile xclbin project "
                                    f"dataflow.json), not {len(fields)}")
            _, family, tile, xclbin, prj, dataflow = fields
            tile = as_int(tile, "tile", where)
            where = f"{where} ({xclbin})"
            if xclbin in rows or xclbin in matmul:
                raise ManifestError(f"{where}: {xclbin} listed twice (a rows xclbin serves its whole family: "
                                    "one line)")
            design, movement, families, tiles, tiles_from, operands, objects = read_description(dataflow, where)
            if family not in families:
                raise ManifestError(f"{where}: '{family}' is not a family of {dataflow} ({', '.join(families)})")
            what = "token tile" if movement == "quant" else "chunk size"
            if tile not in tiles[family]:
                raise ManifestError(f"{where}: tile {tile} is not a {what} of family {family} "
                                    f"({', '.join(map(str, tiles[family]))}: {tiles_from})")
            if movement == "quant":
                objs = objects.get(family)
                if not isinstance(objs, dict) or not positive_int(objs.get("tile_k")):
                    raise ManifestError(f"{where}: quant family {family} has no objects with a tile_k in {dataflow} "
                                        "(.objects): the backend keys its program by that K tile")
                if objs.get("tokens") != tile:
                    raise ManifestError(f"{where}: quant family {family}'s objects are of {objs.get('tokens')!r} "
                                        f"tokens, not its token tile {tile} ({tiles_from})")
            for (d, fam, t) in ((e["design"], e["family"], e["tile"]) for e in rows.values()):
                if (d, fam, t) == (design, family, tile):
                    raise ManifestError(f"{where}: {design}/{family} at tile {tile} has an xclbin already")
            name, arg_names, desc = read_kernel(prj, xclbin)
            bo = lambda i: {"kind": "operand", "name": operands[i]} if i in operands else None
            try:
                args = kernel_args(arg_names, bo, desc)
            except ManifestError as err:
                raise ManifestError(f"{err} of {xclbin} (design {design}'s operands: " +
                                    ", ".join(f"bo{i} {operands[i]}" for i in sorted(operands)) + ")")
            require_args(args, f"{desc} ({xclbin})", ["instructions", "instruction_count"], operands.values())
            rows[xclbin] = {"design": design, "family": family, "tile": tile, "xclbin": xclbin, "kernel": name,
                            "npu": ["npu2"], "args": args}
            order.append(("rows", xclbin))
        elif kind == "attention":
            if len(fields) != 7:
                raise ManifestError(f"{where}: an attention line has 7 fields (attention family tile layout xclbin "
                                    f"project dataflow.json), not {len(fields)}")
            _, family, tile, layout, xclbin, prj, dataflow = fields
            tile = as_int(tile, "head dim", where)
            where = f"{where} ({xclbin})"
            if xclbin in rows or xclbin in matmul:
                raise ManifestError(f"{where}: {xclbin} listed twice (an attention xclbin serves its family at one "
                                    "head dim: one line)")
            design, families, tiles, layouts = read_attention_description(dataflow, where)
            if family not in families:
                raise ManifestError(f"{where}: '{family}' is not a family of {dataflow} ({', '.join(families)})")
            if tile not in tiles[family]:
                raise ManifestError(f"{where}: head dim {tile} is not a tile of family {family} "
                                    f"({', '.join(map(str, tiles[family]))}: the numeric keys of its kernel_stack)")
            if layout not in layouts:
                raise ManifestError(f"{where}: '{layout}' is not a layout of {dataflow} ({', '.join(layouts)})")
            for e in rows.values():
                if (e["design"], e["family"], e["tile"], e.get("layout")) == (design, family, tile, layout):
                    raise ManifestError(f"{where}: {design}/{family} at head dim {tile} has an xclbin of layout "
                                        f"{layout} already ({e['xclbin']}): the backend loads one entry per family, "
                                        "head dim and layout")
            name, arg_names, desc = read_kernel(prj, xclbin)
            bo = lambda i: {"kind": "placed"} if i < PLACED_ARGS else None
            try:
                args = kernel_args(arg_names, bo, desc)
            except ManifestError as err:
                raise ManifestError(f"{err} of {xclbin} (design {design} takes bo0..bo{PLACED_ARGS - 1}, the buffer "
                                    "arguments the firmware translates, as 'placed' arguments)")
            require_args(args, f"{desc} ({xclbin})", ["instructions", "instruction_count"])
            placed = sorted(a["group_id"] - 3 for a in args if a["kind"] == "placed")
            if placed != list(range(PLACED_ARGS)):
                raise ManifestError(f"{desc} ({xclbin}): the kernel has {len(placed)} buffer argument(s) "
                                    f"({', '.join(f'bo{i}' for i in placed) or 'none'}), design {design} takes "
                                    f"{PLACED_ARGS}, bo0..bo{PLACED_ARGS - 1} ('placed')")
            rows[xclbin] = {"design": design, "family": family, "tile": tile, "layout": layout, "xclbin": xclbin,
                            "kernel": name, "npu": ["npu2"], "args": args}
            order.append(("rows", xclbin))
        else:
            raise ManifestError(f"{where}: unknown kind '{kind}' (matmul, rows or attention)")
    return [(matmul if k == "matmul" else rows)[x] for k, x in order]


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) != 3:
        print(f"usage: {os.path.basename(argv[0])} ENTRIES MANIFEST (--help: the entries' format)", file=sys.stderr)
        return 2
    entries, manifest = argv[1], argv[2]
    try:
        designs = build(entries)
    except (ManifestError, OSError) as e:
        print(f"{PROG}: {e}; no manifest written", file=sys.stderr)
        return 1
    built = sorted({"aie/" + d["design"] for d in designs})
    doc = {"comment": f"Built by scripts/build-npu-kernels.sh from {', '.join(built) or 'nothing'} (never run on an "
                      "NPU by this project). The backend builds each problem shape's instruction stream on the host.",
           "format_version": 2, "designs": designs}
    tmp = manifest + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, manifest)
    print(f"{PROG}: wrote {manifest} ({len(designs)} design xclbins)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
