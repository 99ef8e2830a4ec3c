#!/usr/bin/env bash
# Checks scripts/write-kernel-manifest.py, the last step of scripts/build-npu-kernels.sh, without a toolchain:
# fake aiecc project directories (a main_kernels.json whose ps-kernels.kernels[0] has a name and the
# arguments opcode, instr, ninstr, bo0..boN, as aiecc writes it) stand in for the compiled xclbins.
#   - a matmul family xclbin serving three contracts, an exact matmul xclbin, an add (binary), a glu
#     (swiglu), an rms_norm (norm) and a scale (scale: one input, so two buffers, x and y) xclbin, a
#     get_rows (gather: DMAs only, its tiles in xclbin_tiles, not a kernel_stack; buffers src and y)
#     xclbin, two act_quant (quant: one program per family at its one token tile, of two K tiles;
#     buffers x, zeros, tiles) xclbins, two set_rows (scatter: one program per output format, f16 and
#     q8_0, at a tile of its kernel_stack; buffers x and y, the ids read by the host) xclbins, two rope
#     (rope: one program per rotation, norm and neox, at a head row length of its kernel_stack; buffers
#     x, cs and y, the angle rows cs written by the host at submission but still a buffer) xclbins, a
#     hadamard (hadamard: a rows description of one input, built by aie/add/design.py; buffers x and y)
#     xclbin, a row_scale (row_scale: a rows description whose second input, w, is one value per row,
#     built by aie/add/design.py; buffers x, w and y) xclbin, and an add xclbin whose description lists
#     its operands out of "arg" order, and three flash_attn (attention: one xclbin per KV cache type, head
#     dim and layout, f16 at 128 in both layouts, q8_0 at 64 in the decode layout; its 5 buffers bo0..bo4
#     as "placed" arguments, its "layout" named) xclbins: the manifest holds exactly the fields the backend's parser
#     (src/runtime/kernel-manifest.cpp) accepts, with every value as expected, bo<i> in group 3 + i named
#     by the description's operand whose "arg" is i;
#   - an unknown argument name, a bo<i> without an operand (scale's bo2, hadamard's bo2, a gather's bo2, a
#     quant bo3, a scatter's bo2, a rope's bo3, a row_scale bo3), a missing operand (a gather without y, a quant
#     program without its tiles, a scatter without y, a rope without its angle rows cs, a row_scale without
#     its w), a matmul bo4, a tile or a family the description does not have (a gather tile outside its
#     xclbin_tiles, a quant family at another family's token tile, a scatter tile outside its kernel_stack,
#     a scatter family of a format it has no program for, a rope tile outside its kernel_stack, a rope
#     family it has no program for, a hadamard tile that is no transform length of its kernel_stack, a
#     row_scale tile below its kernel_stack's 64, a q8_0 attention head dim of 32), an attention kernel of 4
#     or of 6 buffer arguments, an attention layout the description lacks, an attention family, head dim
#     and layout listed twice (the backend loads one entry per family, head dim and layout), an attention
#     description given on a rows line, a
#     quant family whose objects are not of its token tile, a project
#     without a kernel description and an unknown line kind are refused, and no manifest is written;
#   - with XDNA_INFO set to a built tools/xdna-info, the backend's own parser reads the manifest (fake
#     xclbin headers beside it) and ignores no entry; without it the structure is checked in Python only.
# Usage: check_kernel_manifest_writer.sh <repo root>. Exits non-zero on a failure.
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
py=${PYTHON:-python3}
writer=$root/scripts/write-kernel-manifest.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# fake_prj <dir> <kernel name> <argument names...>: an aiecc project directory's kernel description.
fake_prj() {
    local dir=$1 name=$2
    shift 2
    mkdir -p "$dir"
    "$py" - "$dir/main_kernels.json" "$name" "$@" <<'PYEOF'
import json, sys
path, name, args = sys.argv[1], sys.argv[2], sys.argv[3:]
def arg(n, i):
    a = {"name": n, "address-qualifier": "SCALAR" if n in ("opcode", "ninstr") else "GLOBAL",
         "type": {"opcode": "uint64_t", "instr": "char *", "ninstr": "uint32_t"}.get(n, "void*"),
         "offset": hex(8 * i)}
    if n == "instr":
        a["memory-connection"] = "SRAM"
    elif n.startswith("bo"):
        a["memory-connection"] = "HOST"
    return a
desc = {"ps-kernels": {"kernels": [{"name": name, "type": "dpu", "extended-data": {"subtype": "DPU",
        "functional": "0", "dpu_kernel_id": "0x901"}, "arguments": [arg(n, i) for i, n in enumerate(args)],
        "instances": [{"name": "MLIRAIE"}]}]}}
json.dump(desc, open(path, "w"), indent=2)
PYEOF
}

mm_args=(opcode instr ninstr bo0 bo1 bo2 bo3)
rows_args=(opcode instr ninstr bo0 bo1 bo2)
fake_prj "$tmp/prj/mm_kquant_n4" MLIR_AIE_mm "${mm_args[@]}"
fake_prj "$tmp/prj/mm_f32_exact" MLIR_AIE_exact "${mm_args[@]}"
fake_prj "$tmp/prj/add_t512" MLIR_AIE_add "${rows_args[@]}"
fake_prj "$tmp/prj/glu_t128" MLIR_AIE_glu "${rows_args[@]}"
fake_prj "$tmp/prj/add_t256" MLIR_AIE_add256 "${rows_args[@]}"
fake_prj "$tmp/prj/norm_t1024" MLIR_AIE_norm "${rows_args[@]}"
fake_prj "$tmp/prj/scale_t1024" MLIR_AIE_scale opcode instr ninstr bo0 bo1
# The gather's runtime sequence takes src and y (its ids are read by the host, no argument).
fake_prj "$tmp/prj/get_rows_t1024" MLIR_AIE_get_rows opcode instr ninstr bo0 bo1
# The quant runtime sequence takes x, the zeros block and the tiles.
fake_prj "$tmp/prj/act_quant_a8_b256_n4" MLIR_AIE_act_quant opcode instr ninstr bo0 bo1 bo2
fake_prj "$tmp/prj/act_quant_bfp16_k128_n64" MLIR_AIE_act_quant64 opcode instr ninstr bo0 bo1 bo2
# The scatter runtime sequence takes x and y (its ids are read by the host, no argument).
fake_prj "$tmp/prj/set_rows_f16_t1024" MLIR_AIE_set_rows opcode instr ninstr bo0 bo1
fake_prj "$tmp/prj/set_rows_q8_0_t128" MLIR_AIE_set_rows_q8 opcode instr ninstr bo0 bo1
# The rope runtime sequence takes x, the angle rows cs (written by the host at submission, still a buffer
# argument of the kernel) and y.
fake_prj "$tmp/prj/rope_norm_t128" MLIR_AIE_rope opcode instr ninstr bo0 bo1 bo2
fake_prj "$tmp/prj/rope_neox_t80" MLIR_AIE_rope_neox80 opcode instr ninstr bo0 bo1 bo2
# The hadamard runtime sequence takes x and y (aie/add/design.py's program of one input).
fake_prj "$tmp/prj/hadamard_t128" MLIR_AIE_hadamard opcode instr ninstr bo0 bo1
# The row_scale runtime sequence takes x, w (one value per row) and y (aie/add/design.py's program of two inputs).
fake_prj "$tmp/prj/row_scale_t1024" MLIR_AIE_row_scale opcode instr ninstr bo0 bo1 bo2
# The attention kernel: aiecc's default kernel JSON, bo0..bo4, the buffer arguments the firmware translates
# (the host places the design's 7 operands into them).
fa_args=(opcode instr ninstr bo0 bo1 bo2 bo3 bo4)
fake_prj "$tmp/prj/flash_attn_f16_t128" MLIR_AIE_fa "${fa_args[@]}"
fake_prj "$tmp/prj/flash_attn_q8_0_t64" MLIR_AIE_fa_q8 "${fa_args[@]}"
fa_json=$root/aie/flash_attn/dataflow.json
# The add description with its operands listed y, b, a: bo<i> must follow "arg", not the list's order.
"$py" - "$root/aie/add/dataflow.json" "$tmp/permuted.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["operands"] = sorted(d["operands"], key=lambda o: -o["arg"])
json.dump(d, open(sys.argv[2], "w"), indent=1)
PYEOF

entries=$tmp/entries.txt
{
    printf 'matmul\tkquant\tmm_q4_K_a8\t4\t256\tmm_kquant_n4.xclbin\t%s\tfamily\n' "$tmp/prj/mm_kquant_n4"
    printf 'matmul\tkquant\tmm_q5_K_a8\t4\t256\tmm_kquant_n4.xclbin\t%s\tfamily\n' "$tmp/prj/mm_kquant_n4"
    printf 'matmul\tkquant\tmm_q6_K_a8\t4\t256\tmm_kquant_n4.xclbin\t%s\tfamily\n' "$tmp/prj/mm_kquant_n4"
    printf 'matmul\tfloat\tmm_f32_f32\t32\t64\tmm_f32_f32_n32.xclbin\t%s\texact\n' "$tmp/prj/mm_f32_exact"
    printf 'rows\tbinary\t512\tadd_binary_t512.xclbin\t%s\t%s\n' "$tmp/prj/add_t512" "$root/aie/add/dataflow.json"
    printf 'rows\tswiglu\t128\tglu_swiglu_t128.xclbin\t%s\t%s\n' "$tmp/prj/glu_t128" "$root/aie/glu/dataflow.json"
    printf 'rows\tbinary\t256\tadd_binary_t256.xclbin\t%s\t%s\n' "$tmp/prj/add_t256" "$tmp/permuted.json"
    printf 'rows\tnorm\t1024\trms_norm_norm_t1024.xclbin\t%s\t%s\n' "$tmp/prj/norm_t1024" "$root/aie/rms_norm/dataflow.json"
    printf 'rows\tscale\t1024\tscale_scale_t1024.xclbin\t%s\t%s\n' "$tmp/prj/scale_t1024" "$root/aie/scale/dataflow.json"
    printf 'rows\tgather\t1024\tget_rows_gather_t1024.xclbin\t%s\t%s\n' "$tmp/prj/get_rows_t1024" "$root/aie/get_rows/dataflow.json"
    printf 'rows\ta8_b256_n4\t4\tact_quant_a8_b256_n4_t4.xclbin\t%s\t%s\n' "$tmp/prj/act_quant_a8_b256_n4" \
        "$root/aie/act_quant/dataflow.json"
    printf 'rows\tbfp16_k128_n64\t64\tact_quant_bfp16_k128_n64_t64.xclbin\t%s\t%s\n' \
        "$tmp/prj/act_quant_bfp16_k128_n64" "$root/aie/act_quant/dataflow.json"
    printf 'rows\tf16\t1024\tset_rows_f16_t1024.xclbin\t%s\t%s\n' "$tmp/prj/set_rows_f16_t1024" \
        "$root/aie/set_rows/dataflow.json"
    printf 'rows\tq8_0\t128\tset_rows_q8_0_t128.xclbin\t%s\t%s\n' "$tmp/prj/set_rows_q8_0_t128" \
        "$root/aie/set_rows/dataflow.json"
    printf 'rows\tnorm\t128\trope_norm_t128.xclbin\t%s\t%s\n' "$tmp/prj/rope_norm_t128" "$root/aie/rope/dataflow.json"
    printf 'rows\tneox\t80\trope_neox_t80.xclbin\t%s\t%s\n' "$tmp/prj/rope_neox_t80" "$root/aie/rope/dataflow.json"
    printf 'rows\thadamard\t128\thadamard_hadamard_t128.xclbin\t%s\t%s\n' "$tmp/prj/hadamard_t128" \
        "$root/aie/hadamard/dataflow.json"
    printf 'rows\trow_scale\t1024\trow_scale_row_scale_t1024.xclbin\t%s\t%s\n' "$tmp/prj/row_scale_t1024" \
        "$root/aie/row_scale/dataflow.json"
    printf 'attention\tf16\t128\tattention\tflash_attn_f16_t128_attention.xclbin\t%s\t%s\n' \
        "$tmp/prj/flash_attn_f16_t128" "$fa_json"
    printf 'attention\tf16\t128\tdecode\tflash_attn_f16_t128_decode.xclbin\t%s\t%s\n' \
        "$tmp/prj/flash_attn_f16_t128" "$fa_json"
    printf 'attention\tq8_0\t64\tdecode\tflash_attn_q8_0_t64_decode.xclbin\t%s\t%s\n' \
        "$tmp/prj/flash_attn_q8_0_t64" "$fa_json"
} >"$entries"

out=$tmp/out
mkdir -p "$out"
if ! "$py" "$writer" "$entries" "$out/manifest.json" >"$tmp/writer.log" 2>&1; then
    cat "$tmp/writer.log"
    fail "the writer refused valid entries"
fi
[ ! -e "$out/manifest.json.tmp" ] || fail "the writer left manifest.json.tmp behind"

cat >"$tmp/verify.py" <<'PYEOF'
import json, sys

manifest, add_json, glu_json, permuted_json, norm_json, scale_json, gather_json, quant_json, scatter_json, rope_json, \
    hadamard_json, row_scale_json, fa_json = sys.argv[1:14]
errors = []
def check(ok, what):
    if not ok:
        errors.append(what)

def operands(path):
    return {o["arg"]: o["name"] for o in json.load(open(path))["operands"]}

def rows_args(path):
    names = operands(path)
    return ([{"kind": "opcode", "value": 3}, {"kind": "instructions", "group_id": 1}, {"kind": "instruction_count"}] +
            [{"kind": "operand", "name": names[i], "group_id": 3 + i} for i in range(len(names))])

mm_args = [{"kind": "opcode", "value": 3}, {"kind": "instructions", "group_id": 1}, {"kind": "instruction_count"},
           {"kind": "weights", "group_id": 3}, {"kind": "activations", "group_id": 4},
           {"kind": "output", "group_id": 5}, {"kind": "params", "group_id": 6}]
tile = lambda n, k: [{"m": 64, "n": n, "k": k}]
want = [
    {"design": "matmul", "family": "kquant", "xclbin": "mm_kquant_n4.xclbin", "kernel": "MLIR_AIE_mm", "npu": ["npu2"],
     "serves": [{"contract": c, "tiles": tile(4, 256)} for c in ("mm_q4_K_a8", "mm_q5_K_a8", "mm_q6_K_a8")],
     "args": mm_args},
    {"design": "matmul", "family": "float", "xclbin": "mm_f32_f32_n32.xclbin", "kernel": "MLIR_AIE_exact",
     "npu": ["npu2"], "serves": [{"contract": "mm_f32_f32", "tiles": tile(32, 64)}], "args": mm_args,
     "w_objects": "exact"},
    {"design": "add", "family": "binary", "tile": 512, "xclbin": "add_binary_t512.xclbin", "kernel": "MLIR_AIE_add",
     "npu": ["npu2"], "args": rows_args(add_json)},
    {"design": "glu", "family": "swiglu", "tile": 128, "xclbin": "glu_swiglu_t128.xclbin", "kernel": "MLIR_AIE_glu",
     "npu": ["npu2"], "args": rows_args(glu_json)},
    {"design": "add", "family": "binary", "tile": 256, "xclbin": "add_binary_t256.xclbin", "kernel": "MLIR_AIE_add256",
     "npu": ["npu2"], "args": rows_args(permuted_json)},
    {"design": "rms_norm", "family": "norm", "tile": 1024, "xclbin": "rms_norm_norm_t1024.xclbin", "kernel": "MLIR_AIE_norm",
     "npu": ["npu2"], "args": rows_args(norm_json)},
    {"design": "scale", "family": "scale", "tile": 1024, "xclbin": "scale_scale_t1024.xclbin", "kernel": "MLIR_AIE_scale",
     "npu": ["npu2"], "args": rows_args(scale_json)},
    # Spelled out rather than derived: the entry docs/xrt.md gives for the gather.
    {"design": "get_rows", "family": "gather", "tile": 1024, "xclbin": "get_rows_gather_t1024.xclbin",
     "kernel": "MLIR_AIE_get_rows", "npu": ["npu2"],
     "args": [{"kind": "opcode", "value": 3}, {"kind": "instructions", "group_id": 1}, {"kind": "instruction_count"},
              {"kind": "operand", "name": "src", "group_id": 3}, {"kind": "operand", "name": "y", "group_id": 4}]},
    # Spelled out too: the quant entry docs/xrt.md gives.
    {"design": "act_quant", "family": "a8_b256_n4", "tile": 4, "xclbin": "act_quant_a8_b256_n4_t4.xclbin",
     "kernel": "MLIR_AIE_act_quant", "npu": ["npu2"],
     "args": [{"kind": "opcode", "value": 3}, {"kind": "instructions", "group_id": 1}, {"kind": "instruction_count"},
              {"kind": "operand", "name": "x", "group_id": 3}, {"kind": "operand", "name": "zeros", "group_id": 4},
              {"kind": "operand", "name": "tiles", "group_id": 5}]},
    {"design": "act_quant", "family": "bfp16_k128_n64", "tile": 64, "xclbin": "act_quant_bfp16_k128_n64_t64.xclbin",
     "kernel": "MLIR_AIE_act_quant64", "npu": ["npu2"], "args": rows_args(quant_json)},
    # Spelled out: the scatter's two operands, x (fp32 rows) and y (the cache); the ids are no argument.
    {"design": "set_rows", "family": "f16", "tile": 1024, "xclbin": "set_rows_f16_t1024.xclbin",
     "kernel": "MLIR_AIE_set_rows", "npu": ["npu2"],
     "args": [{"kind": "opcode", "value": 3}, {"kind": "instructions", "group_id": 1}, {"kind": "instruction_count"},
              {"kind": "operand", "name": "x", "group_id": 3}, {"kind": "operand", "name": "y", "group_id": 4}]},
    {"design": "set_rows", "family": "q8_0", "tile": 128, "xclbin": "set_rows_q8_0_t128.xclbin",
     "kernel": "MLIR_AIE_set_rows_q8", "npu": ["npu2"], "args": rows_args(scatter_json)},
    # Spelled out: the rope's x, its angle rows cs (host-written, still a buffer argument) and y.
    {"design": "rope", "family": "norm", "tile": 128, "xclbin": "rope_norm_t128.xclbin", "kernel": "MLIR_AIE_rope",
     "npu": ["npu2"],
     "args": [{"kind": "opcode", "value": 3}, {"kind": "instructions", "group_id": 1}, {"kind": "instruction_count"},
              {"kind": "operand", "name": "x", "group_id": 3}, {"kind": "operand", "name": "cs", "group_id": 4},
              {"kind": "operand", "name": "y", "group_id": 5}]},
    {"design": "rope", "family": "neox", "tile": 80, "xclbin": "rope_neox_t80.xclbin", "kernel": "MLIR_AIE_rope_neox80",
     "npu": ["npu2"], "args": rows_args(rope_json)},
    # Spelled out: hadamard's x and y, its tile the transform length.
    {"design": "hadamard", "family": "hadamard", "tile": 128, "xclbin": "hadamard_hadamard_t128.xclbin",
     "kernel": "MLIR_AIE_hadamard", "npu": ["npu2"],
     "args": [{"kind": "opcode", "value": 3}, {"kind": "instructions", "group_id": 1}, {"kind": "instruction_count"},
              {"kind": "operand", "name": "x", "group_id": 3}, {"kind": "operand", "name": "y", "group_id": 4}]},
    # Spelled out: row_scale's x, w (one value per row) and y, bo0..bo2.
    {"design": "row_scale", "family": "row_scale", "tile": 1024, "xclbin": "row_scale_row_scale_t1024.xclbin",
     "kernel": "MLIR_AIE_row_scale", "npu": ["npu2"],
     "args": [{"kind": "opcode", "value": 3}, {"kind": "instructions", "group_id": 1}, {"kind": "instruction_count"},
              {"kind": "operand", "name": "x", "group_id": 3}, {"kind": "operand", "name": "w", "group_id": 4},
              {"kind": "operand", "name": "y", "group_id": 5}]},
    # Spelled out: the attention entry (tests/runtime/test_kernel_manifest.cpp's
    # KernelManifest.AttentionEntriesTakeFivePlacedArguments), 5 placed arguments in groups 3..7, its layout.
    {"design": "flash_attn", "family": "f16", "tile": 128, "layout": "attention",
     "xclbin": "flash_attn_f16_t128_attention.xclbin", "kernel": "MLIR_AIE_fa", "npu": ["npu2"],
     "args": [{"kind": "opcode", "value": 3}, {"kind": "instructions", "group_id": 1}, {"kind": "instruction_count"}] +
             [{"kind": "placed", "group_id": g} for g in range(3, 8)]},
    # The same family and head dim in the other layout: an entry of its own (the device picks by layout).
    {"design": "flash_attn", "family": "f16", "tile": 128, "layout": "decode",
     "xclbin": "flash_attn_f16_t128_decode.xclbin", "kernel": "MLIR_AIE_fa", "npu": ["npu2"],
     "args": [{"kind": "opcode", "value": 3}, {"kind": "instructions", "group_id": 1}, {"kind": "instruction_count"}] +
             [{"kind": "placed", "group_id": g} for g in range(3, 8)]},
    {"design": "flash_attn", "family": "q8_0", "tile": 64, "layout": "decode",
     "xclbin": "flash_attn_q8_0_t64_decode.xclbin", "kernel": "MLIR_AIE_fa_q8", "npu": ["npu2"],
     "args": [{"kind": "opcode", "value": 3}, {"kind": "instructions", "group_id": 1}, {"kind": "instruction_count"}] +
             [{"kind": "placed", "group_id": g} for g in range(3, 8)]},
]
# The operands by bo index, as the descriptions give them (not by the order they are listed in).
check([a["name"] for a in want[2]["args"][3:]] == ["a", "b", "y"], f"add's operands by arg: {operands(add_json)}")
check([a["name"] for a in want[3]["args"][3:]] == ["a", "b", "y"], f"glu's operands by arg: {operands(glu_json)}")
check(list(operands(permuted_json).values()) == ["y", "b", "a"], "the permuted description is not permuted")
check([a["name"] for a in want[5]["args"][3:]] == ["x", "weight", "y"], f"the norm's operands by arg: {operands(norm_json)}")
check([a["name"] for a in want[6]["args"][3:]] == ["x", "y"], f"scale's operands by arg: {operands(scale_json)}")
check(want[7]["args"] == rows_args(gather_json), f"the gather's operands by arg: {operands(gather_json)}")
check(want[8]["args"] == rows_args(quant_json), f"the quant design's operands by arg: {operands(quant_json)}")
check(want[10]["args"] == rows_args(scatter_json), f"the scatter's operands by arg: {operands(scatter_json)}")
check(want[12]["args"] == rows_args(rope_json), f"the rope's operands by arg: {operands(rope_json)}")
check(want[14]["args"] == rows_args(hadamard_json), f"hadamard's operands by arg: {operands(hadamard_json)}")
check(want[15]["args"] == rows_args(row_scale_json), f"row_scale's operands by arg: {operands(row_scale_json)}")

doc = json.load(open(manifest))
check(set(doc) <= {"format_version", "designs", "comment"}, f"top-level keys {sorted(doc)}")
check(doc.get("format_version") == 2, f"format_version {doc.get('format_version')!r}")
got = doc.get("designs", [])
check(len(got) == len(want), f"{len(got)} designs, expected {len(want)}")

# The parser's rules (src/runtime/kernel-manifest.cpp parse_arg, parse_rows_entry, parse_design_entry),
# checked on their own so that a difference from `want` is named.
ARG_KEYS = {"opcode": {"kind", "value"}, "instructions": {"kind", "group_id"}, "instruction_count": {"kind"},
            "weights": {"kind", "group_id"}, "activations": {"kind", "group_id"}, "output": {"kind", "group_id"},
            "params": {"kind", "group_id"}, "operand": {"kind", "name", "group_id"}, "placed": {"kind", "group_id"}}
descriptions = {"add": json.load(open(add_json)), "glu": json.load(open(glu_json)), "rms_norm": json.load(open(norm_json)),
                "scale": json.load(open(scale_json)), "get_rows": json.load(open(gather_json)),
                "act_quant": json.load(open(quant_json)), "set_rows": json.load(open(scatter_json)),
                "rope": json.load(open(rope_json)), "hadamard": json.load(open(hadamard_json)),
                "row_scale": json.load(open(row_scale_json)), "flash_attn": json.load(open(fa_json))}
def family_tiles(d, family):
    # As the parser reads them: a gather (no cores) lists its tiles, the others key their kernel stacks by them.
    if d.get("movement") == "gather":
        return [str(t) for t in d["xclbin_tiles"].get(family, [])]
    return list(d["core_budget"]["kernel_stack"].get(family, {}))
for i, e in enumerate(got):
    where = f"designs[{i}] ({e.get('design')}/{e.get('family')})"
    rows = e.get("design") in descriptions
    attention = rows and descriptions[e["design"]].get("movement") == "attention"
    keys = ({"design", "family", "tile", "xclbin", "kernel", "npu", "args"} | ({"layout"} if attention else set()) if rows else
            {"design", "family", "xclbin", "kernel", "npu", "serves", "args", "w_objects"})
    check(set(e) <= keys | {"comment"}, f"{where}: keys the parser refuses: {sorted(set(e) - keys)}")
    for k in ("design", "family", "xclbin", "kernel"):
        check(isinstance(e.get(k), str) and e.get(k), f"{where}: {k} {e.get(k)!r}")
    check(e.get("npu") == ["npu2"], f"{where}: npu {e.get('npu')!r}")
    kinds = []
    for j, a in enumerate(e.get("args", [])):
        k = a.get("kind")
        kinds.append(k)
        check(k in ARG_KEYS and set(a) == ARG_KEYS[k], f"{where}: args[{j}] {a}")
        if "group_id" in a:
            check(isinstance(a["group_id"], int) and 0 <= a["group_id"] <= 0xffff, f"{where}: args[{j}] group")
    for k in ("instructions", "instruction_count"):
        check(kinds.count(k) == 1, f"{where}: {kinds.count(k)} '{k}' arguments")
    if rows:
        d = descriptions[e["design"]]
        check(e["family"] in d["families"] and e["family"] != "about", f"{where}: family not in the description")
        check(isinstance(e.get("tile"), int) and str(e.get("tile")) in family_tiles(d, e["family"]),
              f"{where}: tile {e.get('tile')!r}")
        if d.get("movement") == "quant":
            # One program at one token tile, the tokens of the family's own objects (their tile_k is the
            # rest of the key the backend gives the program).
            stack = [t for t in d["core_budget"]["kernel_stack"][e["family"]] if t.isdigit()]
            check(stack == [str(e.get("tile"))] and d["objects"][e["family"]]["tokens"] == e.get("tile"),
                  f"{where}: tile {e.get('tile')!r}, kernel_stack keys {stack}, objects {d['objects'][e['family']]}")
        names = [a.get("name") for a in e["args"] if a.get("kind") == "operand"]
        if attention:
            # Its operands are placed by buffer at submission: exactly 5 placed arguments, bo0..bo4 in groups
            # 3..7 (control::kFirmwareTranslatedArgs), none by name; a layout of the description.
            check(not names, f"{where}: operands by name {names}")
            check(sorted(a["group_id"] for a in e["args"] if a.get("kind") == "placed") == list(range(3, 8)),
                  f"{where}: placed arguments {e['args']}")
            check(e.get("layout") in [L["name"] for L in d["layouts"]], f"{where}: layout {e.get('layout')!r}")
        else:
            check(sorted(names) == sorted(o["name"] for o in d["operands"]), f"{where}: operands {names}")
            check("placed" not in kinds, f"{where}: placed arguments on a design of operands by name")
        check(not {"weights", "activations", "output", "params"} & set(kinds), f"{where}: matmul argument kinds")
        for a in e["args"]:
            if a.get("kind") == "operand":
                arg = {o["name"]: o["arg"] for o in d["operands"]}[a["name"]]
                check(a["group_id"] == 3 + arg, f"{where}: operand {a['name']} (arg {arg}) in group {a['group_id']}")
    else:
        for k in ("weights", "activations", "output"):
            check(kinds.count(k) == 1, f"{where}: {kinds.count(k)} '{k}' arguments")
        check(isinstance(e.get("serves"), list) and e["serves"], f"{where}: serves {e.get('serves')!r}")
        for s in e.get("serves", []):
            check(set(s) == {"contract", "tiles"} and all(set(t) == {"m", "n", "k"} for t in s["tiles"]),
                  f"{where}: serves {s}")
        check(e.get("w_objects", "family") in ("family", "exact"), f"{where}: w_objects {e.get('w_objects')!r}")
    if i < len(want) and e != want[i]:
        errors.append(f"{where}:\n  got  {json.dumps(e)}\n  want {json.dumps(want[i])}")
for e in errors:
    print(f"FAIL: {e}")
sys.exit(1 if errors else 0)
PYEOF
if [ -f "$out/manifest.json" ]; then
    "$py" "$tmp/verify.py" "$out/manifest.json" "$root/aie/add/dataflow.json" "$root/aie/glu/dataflow.json" \
        "$tmp/permuted.json" "$root/aie/rms_norm/dataflow.json" "$root/aie/scale/dataflow.json" \
        "$root/aie/get_rows/dataflow.json" "$root/aie/act_quant/dataflow.json" "$root/aie/set_rows/dataflow.json" \
        "$root/aie/rope/dataflow.json" "$root/aie/hadamard/dataflow.json" "$root/aie/row_scale/dataflow.json" "$fa_json" ||
        fail "the manifest written is not the one expected"
else
    fail "no manifest written"
fi

# The backend's own parser, when a built xdna-info is given (it also checks each xclbin's header).
if [ -n "${XDNA_INFO:-}" ] && [ -x "$XDNA_INFO" ] && [ -f "$out/manifest.json" ]; then
    for x in mm_kquant_n4 mm_f32_f32_n32 add_binary_t512 glu_swiglu_t128 add_binary_t256 rms_norm_norm_t1024 scale_scale_t1024 \
             get_rows_gather_t1024 act_quant_a8_b256_n4_t4 act_quant_bfp16_k128_n64_t64 set_rows_f16_t1024 \
             set_rows_q8_0_t128 rope_norm_t128 rope_neox_t80 hadamard_hadamard_t128 row_scale_row_scale_t1024 \
             flash_attn_f16_t128_attention flash_attn_f16_t128_decode flash_attn_q8_0_t64_decode; do
        "$py" -c 'import struct, sys
h = bytearray(512); h[0:8] = b"xclbin2\0"; h[304:312] = struct.pack("<Q", 512)
open(sys.argv[1], "wb").write(h)' "$out/$x.xclbin"
    done
    GGML_XDNA_KERNELS=$out/manifest.json "$XDNA_INFO" >"$tmp/info.txt" 2>&1 || true
    # 3 + 1 matmul kernels, add_f32 and mul_f32 twice, swiglu_f32 once, rms_norm_mul_f32 and rms_norm_f32, scale_f32,
    # get_rows_f32, the two quant families' one program each, the two scatter families' (f32_to_f16, f32_to_q8_0),
    # the two rope families' (rope_norm_f32, rope_neox_f32), fwht_f32 and row_scale_f32, and the three attention
    # xclbins' two block programs each (fa_block_f16_bfp16, fa_block_f16 in both layouts, kept apart by their
    # layouts; fa_block_q8_0_bfp16, fa_block_q8_0). The parser drops a quant entry whose tile is
    # not its family's kernel_stack key; it keys the program by the family's objects' K tile too, which
    # xdna-info does not print (XrtDeviceTest.RunsTheActQuantDesignsStreamWithItsZeros looks up that key).
    grep -q "19 design xclbins serving 27 usable kernels (contract x tile), 0 entries ignored" "$tmp/info.txt" ||
        { sed -n '/^Kernels/,/^Simulator/p' "$tmp/info.txt"; fail "xdna-info does not read every entry"; }
    for want in "add_f32 +add +chunk 512 " "mul_f32 +add +chunk 256 " "swiglu_f32 +glu +chunk 128 " "rms_norm_f32 +rms_norm +chunk 1024 " \
                "scale_f32 +scale +chunk 1024 " "get_rows_f32 +get_rows +chunk 1024 " \
                "act_quant_a8_b256_n4 +act_quant +chunk 4 " "act_quant_bfp16_k128_n64 +act_quant +chunk 64 " \
                "f32_to_f16 +set_rows +chunk 1024 " "f32_to_q8_0 +set_rows +chunk 128 " \
                "rope_norm_f32 +rope +chunk 128 " "rope_neox_f32 +rope +chunk 80 " "fwht_f32 +hadamard +chunk 128 " \
                "row_scale_f32 +row_scale +chunk 1024 " "fa_block_f16_bfp16 +flash_attn +chunk 128 " \
                "fa_block_q8_0 +flash_attn +chunk 64 "; do
        grep -Eq "$want" "$tmp/info.txt" || fail "xdna-info lists no '$want'"
    done
    echo "check_kernel_manifest_writer: the backend's parser ($XDNA_INFO) reads every entry"
else
    echo "check_kernel_manifest_writer: XDNA_INFO not set to a built xdna-info: the manifest is checked in Python only"
fi

# Refusals: each case changes one thing of a valid entries file; the writer must exit non-zero, name the
# problem and write no manifest.
refused() {  # refused <what> <message part> <entries lines...>
    local what=$1 msg=$2 rc=0
    shift 2
    printf '%s\n' "$@" >"$tmp/bad.txt"
    rm -f "$tmp/bad.json"
    "$py" "$writer" "$tmp/bad.txt" "$tmp/bad.json" >"$tmp/bad.log" 2>&1 || rc=$?
    if [ "$rc" = 0 ]; then
        fail "$what: accepted"
    elif ! grep -qF -- "$msg" "$tmp/bad.log"; then
        fail "$what: message lacks '$msg': $(cat "$tmp/bad.log")"
    fi
    [ ! -e "$tmp/bad.json" ] && [ ! -e "$tmp/bad.json.tmp" ] || fail "$what: a manifest was written"
}
tab=$'\t'
add_json=$root/aie/add/dataflow.json
fake_prj "$tmp/prj/unknown" MLIR_AIE opcode instr ninstr bo0 bo1 bo2 scratch
refused "an unknown argument name" "kernel argument 'scratch' has no manifest kind" \
    "rows${tab}binary${tab}512${tab}x.xclbin${tab}$tmp/prj/unknown${tab}$add_json"
fake_prj "$tmp/prj/bo3" MLIR_AIE opcode instr ninstr bo0 bo1 bo2 bo3
refused "a rows bo3 (no operand of arg 3)" "kernel argument 'bo3' has no manifest kind" \
    "rows${tab}binary${tab}512${tab}x.xclbin${tab}$tmp/prj/bo3${tab}$add_json"
fake_prj "$tmp/prj/no_y" MLIR_AIE opcode instr ninstr bo0 bo1
refused "a scale bo2 (one input: no operand of arg 2)" "kernel argument 'bo2' has no manifest kind" \
    "rows${tab}scale${tab}1024${tab}x.xclbin${tab}$tmp/prj/add_t512${tab}$root/aie/scale/dataflow.json"
refused "a kernel without operand y" "for operand 'y'" \
    "rows${tab}binary${tab}512${tab}x.xclbin${tab}$tmp/prj/no_y${tab}$add_json"
gather_json=$root/aie/get_rows/dataflow.json
refused "a gather bo2 (src and y only: no operand of arg 2)" "kernel argument 'bo2' has no manifest kind" \
    "rows${tab}gather${tab}1024${tab}x.xclbin${tab}$tmp/prj/add_t512${tab}$gather_json"
fake_prj "$tmp/prj/gather_no_y" MLIR_AIE opcode instr ninstr bo0
refused "a gather kernel without operand y" "for operand 'y'" \
    "rows${tab}gather${tab}1024${tab}x.xclbin${tab}$tmp/prj/gather_no_y${tab}$gather_json"
# 2048 is a power of two like the others, but the description lists no xclbin for it.
refused "a gather tile outside its xclbin_tiles" "tile 2048 is not a chunk size of family gather" \
    "rows${tab}gather${tab}2048${tab}x.xclbin${tab}$tmp/prj/get_rows_t1024${tab}$gather_json"
quant_json=$root/aie/act_quant/dataflow.json
# 32 is a token tile of the description (a8_b256_n32's), but not a8_b256_n4's: one program, one tile.
refused "a quant family at another family's token tile" "tile 32 is not a token tile of family a8_b256_n4 (4:" \
    "rows${tab}a8_b256_n4${tab}32${tab}x.xclbin${tab}$tmp/prj/act_quant_a8_b256_n4${tab}$quant_json"
fake_prj "$tmp/prj/quant_no_tiles" MLIR_AIE opcode instr ninstr bo0 bo1
refused "a quant kernel without its tiles buffer" "for operand 'tiles'" \
    "rows${tab}a8_b256_n4${tab}4${tab}x.xclbin${tab}$tmp/prj/quant_no_tiles${tab}$quant_json"
refused "a quant bo3 (x, zeros, tiles only: no operand of arg 3)" "kernel argument 'bo3' has no manifest kind" \
    "rows${tab}a8_b256_n4${tab}4${tab}x.xclbin${tab}$tmp/prj/bo3${tab}$quant_json"
# The family's objects of another token tile than its kernel_stack key, or none: the backend keys the
# program by its token tile and its objects' K tile, so the entry would serve no invocation.
"$py" - "$quant_json" "$tmp/quant_tokens.json" "$tmp/quant_no_objects.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["objects"]["a8_b256_n4"]["tokens"] = 8
json.dump(d, open(sys.argv[2], "w"), indent=1)
del d["objects"]["a8_b256_n4"]
json.dump(d, open(sys.argv[3], "w"), indent=1)
PYEOF
refused "a quant family whose objects are not of its token tile" \
    "a8_b256_n4's objects are of 8 tokens, not its token tile 4" \
    "rows${tab}a8_b256_n4${tab}4${tab}x.xclbin${tab}$tmp/prj/act_quant_a8_b256_n4${tab}$tmp/quant_tokens.json"
refused "a quant family without objects (no K tile to key its program by)" "quant family a8_b256_n4 has no objects" \
    "rows${tab}a8_b256_n4${tab}4${tab}x.xclbin${tab}$tmp/prj/act_quant_a8_b256_n4${tab}$tmp/quant_no_objects.json"
scatter_json=$root/aie/set_rows/dataflow.json
refused "a scatter bo2 (x and y only: no operand of arg 2)" "kernel argument 'bo2' has no manifest kind" \
    "rows${tab}f16${tab}1024${tab}x.xclbin${tab}$tmp/prj/add_t512${tab}$scatter_json"
refused "a scatter kernel without operand y" "for operand 'y'" \
    "rows${tab}q8_0${tab}1024${tab}x.xclbin${tab}$tmp/prj/gather_no_y${tab}$scatter_json"
# 64 is a power of two, but the kernels' loops promise 4 trips of 32 values: no xclbin below 128.
refused "a scatter tile outside its kernel_stack" "tile 64 is not a chunk size of family f16" \
    "rows${tab}f16${tab}64${tab}x.xclbin${tab}$tmp/prj/set_rows_f16_t1024${tab}$scatter_json"
refused "a scatter family the description does not have" "'bf16' is not a family of" \
    "rows${tab}bf16${tab}1024${tab}x.xclbin${tab}$tmp/prj/set_rows_f16_t1024${tab}$scatter_json"
rope_json=$root/aie/rope/dataflow.json
fake_prj "$tmp/prj/rope_no_cs" MLIR_AIE opcode instr ninstr bo0 bo2
refused "a rope kernel without its angle rows (host-written, still a buffer argument)" "for operand 'cs'" \
    "rows${tab}norm${tab}128${tab}x.xclbin${tab}$tmp/prj/rope_no_cs${tab}$rope_json"
refused "a rope bo3 (x, cs, y only: no operand of arg 3)" "kernel argument 'bo3' has no manifest kind" \
    "rows${tab}norm${tab}128${tab}x.xclbin${tab}$tmp/prj/bo3${tab}$rope_json"
# 48 takes a rotation (32 dims rotated, 16 copied), but the description has no xclbin for it.
refused "a rope tile outside its kernel_stack" "tile 48 is not a chunk size of family norm" \
    "rows${tab}norm${tab}48${tab}x.xclbin${tab}$tmp/prj/rope_norm_t128${tab}$rope_json"
refused "a rope family the description does not have" "'vision' is not a family of" \
    "rows${tab}vision${tab}128${tab}x.xclbin${tab}$tmp/prj/rope_norm_t128${tab}$rope_json"
hadamard_json=$root/aie/hadamard/dataflow.json
refused "a hadamard bo2 (x and y only: no operand of arg 2)" "kernel argument 'bo2' has no manifest kind" \
    "rows${tab}hadamard${tab}128${tab}x.xclbin${tab}$tmp/prj/add_t512${tab}$hadamard_json"
# 512 is a power of two, but the kernel holds at most 256 values of a row in its registers: no xclbin for it.
refused "a hadamard tile outside its kernel_stack" "tile 512 is not a chunk size of family hadamard" \
    "rows${tab}hadamard${tab}512${tab}x.xclbin${tab}$tmp/prj/hadamard_t128${tab}$hadamard_json"
row_scale_json=$root/aie/row_scale/dataflow.json
refused "a row_scale bo3 (x, w, y only: no operand of arg 3)" "kernel argument 'bo3' has no manifest kind" \
    "rows${tab}row_scale${tab}1024${tab}x.xclbin${tab}$tmp/prj/bo3${tab}$row_scale_json"
fake_prj "$tmp/prj/row_scale_no_w" MLIR_AIE opcode instr ninstr bo0 bo2
refused "a row_scale kernel without its w (one value per row, still a buffer argument)" "for operand 'w'" \
    "rows${tab}row_scale${tab}1024${tab}x.xclbin${tab}$tmp/prj/row_scale_no_w${tab}$row_scale_json"
# 32 is a power of two, but the kernel's loop promises 2 trips of 32 lanes: no xclbin below 64.
refused "a row_scale tile outside its kernel_stack" "tile 32 is not a chunk size of family row_scale" \
    "rows${tab}row_scale${tab}32${tab}x.xclbin${tab}$tmp/prj/row_scale_t1024${tab}$row_scale_json"
fake_prj "$tmp/prj/fa_bo3" MLIR_AIE opcode instr ninstr bo0 bo1 bo2 bo3
refused "an attention kernel of 4 buffer arguments" "design flash_attn takes 5, bo0..bo4 ('placed')" \
    "attention${tab}f16${tab}128${tab}attention${tab}x.xclbin${tab}$tmp/prj/fa_bo3${tab}$fa_json"
fake_prj "$tmp/prj/fa_bo5" MLIR_AIE opcode instr ninstr bo0 bo1 bo2 bo3 bo4 bo5
refused "an attention bo5 (the firmware translates 5 buffer arguments)" "kernel argument 'bo5' has no manifest kind" \
    "attention${tab}f16${tab}128${tab}attention${tab}x.xclbin${tab}$tmp/prj/fa_bo5${tab}$fa_json"
# Q8_0 has no program at head dim 32 (fa_q8_0_head_fits: 64 and 128).
refused "an attention head dim outside its family's kernel_stack" "head dim 32 is not a tile of family q8_0" \
    "attention${tab}q8_0${tab}32${tab}attention${tab}x.xclbin${tab}$tmp/prj/flash_attn_q8_0_t64${tab}$fa_json"
refused "an attention layout the description lacks" "'prefill' is not a layout of" \
    "attention${tab}f16${tab}128${tab}prefill${tab}x.xclbin${tab}$tmp/prj/flash_attn_f16_t128${tab}$fa_json"
refused "an attention family the description does not have" "'bf16' is not a family of" \
    "attention${tab}bf16${tab}128${tab}attention${tab}x.xclbin${tab}$tmp/prj/flash_attn_f16_t128${tab}$fa_json"
# Two xclbins of one family, head dim and layout: the backend would serve the key from one and drop the
# other (both layouts of one family and head dim are the valid file's).
refused "an attention family, head dim and layout listed twice" \
    "flash_attn/f16 at head dim 128 has an xclbin of layout decode already (d.xclbin)" \
    "attention${tab}f16${tab}128${tab}attention${tab}a.xclbin${tab}$tmp/prj/flash_attn_f16_t128${tab}$fa_json" \
    "attention${tab}f16${tab}128${tab}decode${tab}d.xclbin${tab}$tmp/prj/flash_attn_f16_t128${tab}$fa_json" \
    "attention${tab}f16${tab}128${tab}decode${tab}e.xclbin${tab}$tmp/prj/flash_attn_f16_t128${tab}$fa_json"
refused "an attention description on a rows line" "is not a rows, norm, gather, quant, scatter or rope description" \
    "rows${tab}f16${tab}128${tab}x.xclbin${tab}$tmp/prj/flash_attn_f16_t128${tab}$fa_json"
refused "a rows description on an attention line" "is not an attention description" \
    "attention${tab}binary${tab}512${tab}attention${tab}x.xclbin${tab}$tmp/prj/add_t512${tab}$add_json"
fake_prj "$tmp/prj/mm_bo4" MLIR_AIE opcode instr ninstr bo0 bo1 bo2 bo3 bo4
refused "a matmul bo4" "kernel argument 'bo4' has no manifest kind" \
    "matmul${tab}kquant${tab}mm_q4_K_a8${tab}4${tab}256${tab}x.xclbin${tab}$tmp/prj/mm_bo4${tab}family"
refused "a tile the family does not have" "tile 100 is not a chunk size of family binary" \
    "rows${tab}binary${tab}100${tab}x.xclbin${tab}$tmp/prj/add_t512${tab}$add_json"
refused "a family the description does not have" "'binary' is not a family of" \
    "rows${tab}binary${tab}512${tab}x.xclbin${tab}$tmp/prj/add_t512${tab}$root/aie/glu/dataflow.json"
mkdir -p "$tmp/prj/empty"
refused "a project without a kernel description" "no kernel description (*kernels*.json)" \
    "rows${tab}binary${tab}512${tab}x.xclbin${tab}$tmp/prj/empty${tab}$add_json"
refused "an unknown line kind" "unknown kind 'conv'" "conv${tab}x"
# A valid line before a bad one: still no manifest.
refused "a bad line after a good one" "kernel argument 'scratch'" \
    "rows${tab}binary${tab}512${tab}x.xclbin${tab}$tmp/prj/add_t512${tab}$add_json" \
    "rows${tab}binary${tab}256${tab}y.xclbin${tab}$tmp/prj/unknown${tab}$add_json"

if [ "$failures" -ne 0 ]; then
    echo "check_kernel_manifest_writer: $failures failure(s)"
    exit 1
fi
echo "check_kernel_manifest_writer: all checks passed"
