#!/usr/bin/env bash
# Optional NPU build: compiles the core programs of the NPU designs for AIE2P with Peano (llvm-aie), turns
# each design's IRON script into MLIR and, with mlir-aie's aiecc, into xclbins, and writes the kernel
# manifest (format 2, docs/xrt.md) the backend reads into the output directory: one entry per xclbin,
# listing what it serves. No instruction streams are shipped: the backend builds each problem shape's
# stream on the host (src/runtime/matmul-sequence.h, src/runtime/rows-sequence.h, for a gather or a scatter,
# from the ids at submission, src/runtime/gather-sequence.h and src/runtime/scatter-sequence.h, and
# src/runtime/quant-sequence.h).
#
# The designs (--design, repeatable; default all of them):
#   matmul  aie/matmul/design.py: per family, Peano compiles kernels/mm_<family>.cc and zero.cc into one
#           object; one xclbin per family and token tile (mm_<family>_n<TN>.xclbin) serving every
#           contract of the family (with --exact: one per contract, <contract>_n<TN>.xclbin).
#   the rows designs: every aie/<design>/dataflow.json with "movement": "rows" (today add, glu, scale,
#           hadamard and row_scale), all built by aie/add/design.py --dataflow <that file>, and with "movement":
#           "norm" (rms_norm), built by its own folder's design.py (the same options; --cols for the
#           sample row length). Per family of the description, the kernel files its contracts are defined
#           in (design.py --list-contracts: add.cc and mul.cc for add's "binary", swiglu.cc for glu's
#           "swiglu", scale.cc for scale's "scale", fwht.cc for hadamard's "hadamard", row_scale.cc for
#           row_scale's "row_scale"), compiled by Peano, are linked into one object,
#           xdna_<design>_<family>.o (design.py's --kernel-object: xdna_add_binary.o, xdna_glu_swiglu.o,
#           xdna_scale_scale.o, xdna_hadamard_hadamard.o, xdna_row_scale_row_scale.o); one xclbin per tile
#           (values per chunk: the numeric keys of the family's core_budget.kernel_stack, design.py
#           --list-tiles; hadamard's tile is its transform length, 64, 128 or 256; row_scale's 64 to 1024),
#           <design>_<family>_t<tile>.xclbin (scale_scale_t1024.xclbin, hadamard_hadamard_t128.xclbin,
#           row_scale_row_scale_t1024.xclbin: the design and its one family have the same name), serving
#           every contract of the family (the RTP word "contract" selects the kernel). Its manifest entry
#           names the tile, and the kernel's buffers bo<i> by the description's operand whose "arg" is i:
#           a, b, y (bo0..bo2) for add and glu, x, y (bo0, bo1) for scale's and hadamard's one input, x, w,
#           y (bo0..bo2) for row_scale (w its one value per row).
#   the gather designs: every aie/<design>/dataflow.json with "movement": "gather" (today get_rows), built
#           by its own folder's design.py. A gather is DMAs only (array.core_rows 0): no kernel file
#           (design.py --list-contracts prints '-' for its source), so nothing is compiled by Peano and
#           design.py gets no --kernel-object. One xclbin per tile of the family's xclbin_tiles (design.py
#           --list-tiles), <design>_<family>_t<tile>.xclbin (get_rows_gather_t1024.xclbin), spanning
#           array.max_columns columns; its manifest entry has the rows form: src, y (bo0, bo1). The ids
#           are no argument of the program: the host reads them and builds each run's stream from them.
#   the quant designs: every aie/<design>/dataflow.json with "movement": "quant" (today act_quant), built
#           by its own folder's design.py. A family is one core program (act_quant_<family>) at one token
#           tile (the one numeric key of its kernel_stack, design.py --list-tiles) with objects of its own
#           (.objects), so one xclbin per family: <design>_<family>_t<tile>.xclbin
#           (act_quant_a8_b256_n4_t4.xclbin). Its programs all live in kernels/act_quant.cc: Peano compiles
#           each kernel file once for the whole design, and each family links the compiled files into its
#           own xdna_<design>_<family>.o (design.py's --kernel-object), a relocatable link, no recompile.
#           The manifest entry has the rows form, its tile the token tile (the backend keys the program by
#           it and the family's K tile, .objects.<family>.tile_k): x, zeros, tiles (bo0..bo2).
#   the scatter designs: every aie/<design>/dataflow.json with "movement": "scatter" (today set_rows), built
#           by its own folder's design.py. A family is one output format with one program (set_rows: f16,
#           f32_to_f16; q8_0, f32_to_q8_0), its kernel file the family's core_budget.kernel_stack "source"
#           (design.py --list-contracts: f32_to_f16.cc, f32_to_q8_0.cc), compiled by Peano into
#           xdna_<design>_<family>.o (design.py's --kernel-object); one xclbin per family and tile (values per
#           chunk: the numeric keys of the family's kernel_stack, design.py --list-tiles),
#           <design>_<family>_t<tile>.xclbin (set_rows_q8_0_t1024.xclbin), spanning array.max_columns columns.
#           Its manifest entry has the rows form: x, y (bo0, bo1). The ids are no argument of the program:
#           the host reads them and builds each run's stream from them.
#   the rope designs: every aie/<design>/dataflow.json with "movement": "rope" (today rope), built by its
#           own folder's design.py. A family is one rotation with one program (norm: rope_norm_f32; neox:
#           rope_neox_f32), both defined in the family's kernel_stack "source" (design.py --list-contracts:
#           rope.cc): Peano compiles rope.cc once for the design and each family links it into its own
#           xdna_<design>_<family>.o (design.py's --kernel-object). One xclbin per family and head row length
#           (the tile: values per head row, the numeric keys of the family's kernel_stack, design.py
#           --list-tiles: 32 to 512), <design>_<family>_t<tile>.xclbin (rope_neox_t128.xclbin), spanning
#           array.max_columns columns; n_dims is an RTP word, so one xclbin serves every rotation its row
#           length takes. Its manifest entry has the rows form: x, cs, y (bo0..bo2); cs, the angle rows of
#           the positions, is written by the host at submission (.host_written) but is still a buffer
#           argument of the kernel.
#   the attention designs: every aie/<design>/dataflow.json with "movement": "attention" (today flash_attn),
#           built by its own folder's design.py. A family is one KV cache type (f16, q8_0) with two block
#           programs (fa_block_<family>_bfp16 and fa_block_<family>, the RTP word "contract" picks one) and
#           the helpers every core calls, all in the family's kernel_stack "source" (design.py
#           --list-contracts: flash_attn.cc, which needs no define: both families' programs are in it).
#           Peano compiles it once for the design and each family links it into its own
#           xdna_<design>_<family>.o (design.py's --kernel-object). One xclbin per family, head dim (the
#           tile: the numeric keys of the family's kernel_stack, design.py --list-tiles: f16 32 64 128,
#           q8_0 64 128) and layout (the description's .layouts, design.py --layout: attention, whose tasks
#           hold up to 16 tokens, and decode, tasks of one token with smaller mask objects),
#           <design>_<family>_t<tile>_<layout>.xclbin (flash_attn_q8_0_t128_decode.xclbin), spanning
#           array.max_columns columns. Both layouts are built and, by default, both listed in the manifest
#           (--attention-layout both): the backend runs each invocation on the entry of the layout its
#           stream takes, decode for a decoded token (less traffic per token), attention for the others;
#           attention serves every shape, decode only tasks of one token. --attention-layout attention or
#           decode lists that layout's xclbins only (the other stays in the output directory). Its manifest
#           entry has the rows form with its "layout", and its kernel's buffers bo0..bo4 as 5 "placed"
#           arguments (groups 3..7): the firmware translates 5 buffer arguments and the host places the 7
#           operands into them at each submission (src/runtime/argument-places.h).
#
# How --design, --family and --tile-n combine: --design picks the designs; --family keeps, of each picked
# design, only the families listed (a design left with none is skipped with a note); --tile-n keeps, of
# each family, only the tiles listed: a token tile for a matmul or a quant family, values per chunk for a
# rows, gather or scatter family (all of them the manifest's tile n), a family without a listed tile
# getting a note. Defaults: every family; token tiles 4 32 64 for matmul families (each at those it has a
# program for), every tile for rows, gather, scatter and quant families (a quant family has one). A
# --family that no picked design has, or a --tile-n that no kept family has, is an error (exit 2) before anything is compiled; an
# unknown --design is one before the toolchain is looked for.
# --cols, --m-tiles, --n-tiles, --k and --exact concern the matmul design only: a rows, gather, scatter or
# quant, rope or attention xclbin always spans the description's array.max_columns columns, as the host's
# stream builders deal the work (RowsShape::columns 0: the design's; an attention stream takes the columns
# its tasks fill, at most those).
# --attention-layout concerns the attention designs only: which layouts' xclbins the manifest lists.
#
# Needs mlir-aie >= 1.4 (python package 'aie', aiecc), llvm-aie (Peano clang for aie2p) and XRT >= 2.18
# (aiecc packages the xclbin with XRT's xclbinutil), whichever designs are picked (a gather alone compiles
# no kernel, but the toolchain is checked as one). When one of them is missing it says which and how
# to point at it, prints "NPU kernels not built" and exits 0 (1 with --require) before anything else, so
# the rest of the build goes on.
#
# Contract names in the manifest are the v2 names: mm_<w>_a8 for quantized weights (int8 activations),
# e.g. mm_q4_K_a8; the float contracts keep mm_f16_f16, mm_bf16_bf16, mm_f32_f32. A rows entry serves
# its family's contracts (add_f32, mul_f32; swiglu_f32; scale_f32; fwht_f32; row_scale_f32; get_rows_f32; a quant family's one
# program, act_quant_a8_b256_n4; a scatter family's one program, f32_to_f16 or f32_to_q8_0; an attention
# family's two block programs, fa_block_<family>_bfp16 and fa_block_<family>) by the description's family
# name.
#
# The IRON scripts still need a problem shape to emit their MLIR: matmul's --m-tiles, --n-tiles, --k; the
# rows designs' 64 rows of design.py's sample row (4096 values in whole groups of array.core_rows chunks;
# a row transform's, hadamard's, one transform: the tile) and rms_norm's 64 rows of 4096 values (rounded
# up to whole groups of array.core_rows chunks), the fp32 words at design.py's defaults (scale's s and b,
# 1 and 0; hadamard's scale, 1 / sqrtf(tile): runtime words, not part of the xclbin), row_scale's w one
# value per row (design.py's --w-stride default, 1); the gather
# designs' one id (--ids 0) of a 4096-value row (rounded up to whole chunks of the tile); the quant
# designs' one token row (--rows 1) of array.max_columns K tiles (--k: the family's tile_k x max_columns),
# so that the sample's one short token tile reads its padding rows from the zeros operand and every column
# gets a tile; the scatter designs' 64 rows of 4096 values (rounded up to whole chunks of the tile) with ids
# 0..63 (no --ids: a CPY), so that every column's core gets rows; the rope designs' 64 tokens of 8 packed
# heads of the tile (n_dims design.py's default, the most rotated dims the row takes), so that every
# column's core gets tokens; the attention designs' design.py defaults (32 query heads over 8 KV heads, 256
# KV rows, a mask) with 64 query tokens, or one for a layout whose tasks hold one token (decode: design.py
# refuses it a task of more). It only affects the runtime sequence
# aiecc compiles alongside, which the backend does not use.
#
# The manifest (the build's entries file and aiecc's kernel descriptions -> manifest.json) is written by
# scripts/write-kernel-manifest.py, checked without a toolchain by tests/aie/check_kernel_manifest_writer.sh.
# It lists what this run built only.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
design=$root/aie/matmul/design.py
kernels_dir=$root/aie/matmul/kernels
rows_design=$root/aie/add/design.py  # the IRON program of every rows description
python=${PYTHON:-python3}

# The rows-form designs (their manifest entries have the rows form): every description of the rows
# movement (built by aie/add/design.py), of the norm, the gather, the quant, the scatter, the rope or the
# attention movement (each built by its own folder's design.py), read with grep: no Python is needed before the toolchain has been
# found.
movement_is() { grep -Eq "\"movement\"[[:space:]]*:[[:space:]]*\"($2)\"" "$root/aie/$1/dataflow.json"; }
rows_designs=""
for f in "$root"/aie/*/dataflow.json; do
    d=$(basename "$(dirname "$f")")
    if movement_is "$d" 'rows|norm|gather|quant|scatter|rope|attention'; then
        rows_designs="$rows_designs $d"
    fi
done
# The design script of a rows-form design, and its option for the row length of the sample invocation
# the emitted runtime sequence is written for (the host builds the real streams). A rows description's
# has none: aie/add/design.py's default row is the sample's (4096 values in whole groups of core_rows
# chunks; a row transform's, hadamard's, the tile: a row there is one transform).
design_script_of() {
    if movement_is "$1" norm; then
        echo "$root/aie/$1/design.py --cols"
    elif movement_is "$1" gather || movement_is "$1" scatter; then
        echo "$root/aie/$1/design.py --row-len"
    elif movement_is "$1" quant; then
        echo "$root/aie/$1/design.py --k"
    elif movement_is "$1" rope; then
        echo "$root/aie/$1/design.py --ne0"
    elif movement_is "$1" attention; then
        echo "$root/aie/$1/design.py"  # its sample invocation is query tokens, not a row length
    else
        echo "$rows_design"
    fi
}
rows_designs=${rows_designs# }
all_designs="matmul${rows_designs:+ $rows_designs}"

out_dir=$root/build/ggml-xdna-kernels
families="kquant legacy kquant_low float kquant_bfp16 legacy_bfp16 kquant_low_bfp16 float_bfp16 f32_bfp16"
tiles="4 32 64"
cols=8
m_tiles=64
n_tiles=1
k_elems=4096
rows_rows=64
rows_row_len=4096
exact=0
require=0
check_only=0
attention_layout=both  # the layouts whose attention xclbins the manifest lists (both are built)

usage() {
    cat <<EOF
usage: $(basename "$0") [options]
  --out DIR        output directory (default build/ggml-xdna-kernels)
  --design D       build only this design (repeatable): $all_designs (default all)
  --family F       build only this family (repeatable), of the designs built:
                     matmul: kquant legacy kquant_low float kquant_bfp16 legacy_bfp16 kquant_low_bfp16
                             float_bfp16 f32_bfp16
                     rows, gather, scatter, quant, rope and attention designs: their description's families
                     (add: binary; glu: swiglu; rms_norm: norm; scale: scale; hadamard: hadamard; row_scale:
                     row_scale; get_rows: gather; set_rows: f16 q8_0; rope: norm neox; flash_attn: f16
                     q8_0 (its KV cache type); act_quant: a8_b32_n4
                     a8_b32_n32 a8_b256_n4 a8_b256_n32 bfp16_n32 bfp16_k128_n32 bfp16_k64_n32
                     bfp16_k128_n64 f16_n4 f16_n32 bf16_n4 bf16_n32 f32_n4 f32_n32)
  --tile-n N       build only this tile (repeatable): a matmul family's token tile (4 32 64, default all
                   three), a rows, gather or scatter family's values per chunk, a rope family's
                   head row length or an attention family's head dim (flash_attn: f16 32 64 128, q8_0
                   64 128) (default all of its tiles: the numeric keys of its kernel_stack in the
                   description, a gather's xclbin_tiles) or a quant family's token tile (its one
                   kernel_stack key: 4, 32 or 64)
  --cols N         matmul: array columns (default 8; the other designs always use the whole array)
  --m-tiles N      matmul: weight row tiles of the instruction streams (default 64: M = 4096)
  --n-tiles N      matmul: token tiles of the instruction streams (default 1)
  --k K            matmul: reduction length of the instruction streams (default 4096)
  --exact          matmul: one xclbin per contract with exactly sized W buffers, instead of one per family
  --attention-layout L
                   attention designs: list in the manifest the xclbins of layout L: both (default: the
                   backend runs a decoded token on decode's and the others on attention's), attention
                   (tasks of up to 16 tokens, every shape) or decode (tasks of one token only, less
                   traffic per decoded token). Both layouts are built whatever L
  --check          only report which tools were found
  --require        exit 1 (not 0) when a tool is missing
A --family no selected design has, or a --tile-n no selected family has, is an error (exit 2).
Tools are found through MLIR_AIE_INSTALL_DIR, PEANO_INSTALL_DIR and XRT_ROOT when set (and only there),
otherwise through the Python packages mlir_aie / llvm-aie and /opt/xilinx/xrt.
EOF
}

user_designs="" user_families="" user_tiles=""
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out_dir=$2; shift 2 ;;
        --design) user_designs="$user_designs $2"; shift 2 ;;
        --family) user_families="$user_families $2"; shift 2 ;;
        --tile-n) user_tiles="$user_tiles $2"; shift 2 ;;
        --cols) cols=$2; shift 2 ;;
        --m-tiles) m_tiles=$2; shift 2 ;;
        --n-tiles) n_tiles=$2; shift 2 ;;
        --k) k_elems=$2; shift 2 ;;
        --exact) exact=1; shift ;;
        --attention-layout) attention_layout=$2; shift 2 ;;
        --check) check_only=1; shift ;;
        --require) require=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "build-npu-kernels: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
in_list() { case " $2 " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }  # in_list <word> <list>
designs=$all_designs
if [ -n "$user_designs" ]; then
    designs=""
    for d in $user_designs; do
        if ! in_list "$d" "$all_designs"; then
            echo "build-npu-kernels: --design $d: not a design this script builds ($all_designs)" >&2; exit 2
        fi
        in_list "$d" "$designs" || designs="$designs $d"
    done
    designs=${designs# }
fi
for t in $user_tiles; do
    case "$t" in ''|*[!0-9]*) echo "build-npu-kernels: --tile-n $t: not a number" >&2; exit 2 ;; esac
done
# The layouts of aie/flash_attn/dataflow.json (.layouts[].name); checked here, before the toolchain is
# looked for, like the other options.
case "$attention_layout" in
    both|attention|decode) ;;
    *) echo "build-npu-kernels: --attention-layout $attention_layout: not a layout of the attention designs" \
            "(attention or decode, or both)" >&2; exit 2 ;;
esac

say() { echo "build-npu-kernels: $*"; }
missing=()
hints=()
lack() { missing+=("$1"); hints+=("$2"); }  # lack <tool> <why>

# --- mlir-aie (>= 1.4): the 'aie' package with the callback Runtime and TaskGroup, aiecc, aie_api headers.
mlir_aie_dir="" aiecc=""
probe_aie='
import sys
try:
    from aie.iron import Buffer, Kernel, ObjectFifo, Program, Runtime, TaskGroup, Worker, WorkerRuntimeBarrier
    import aie, pathlib
except ImportError as e:
    print("import failed: %s" % e); sys.exit(1)
try:
    from importlib.metadata import version
    v = version("mlir_aie")
except Exception:
    v = "unknown"
print(pathlib.Path(aie.__file__).resolve().parents[2], v)
'
find_mlir_aie() {
    local probe dir ver
    if [ -n "${MLIR_AIE_INSTALL_DIR:-}" ]; then
        dir=$MLIR_AIE_INSTALL_DIR
        if [ ! -d "$dir/python/aie" ]; then
            lack "mlir-aie (>= 1.4)" "mlir-aie: MLIR_AIE_INSTALL_DIR=$dir has no python/aie package"
            return
        fi
        export PYTHONPATH="$dir/python${PYTHONPATH:+:$PYTHONPATH}"
    fi
    # From / so that this repository's aie/ folder cannot stand in for the package.
    if ! probe=$(cd / && "$python" -c "$probe_aie" 2>&1); then
        lack "mlir-aie (>= 1.4)" "mlir-aie: $python cannot load its IRON API (${probe##*$'\n'})"
        return
    fi
    dir=${probe% *} ver=${probe##* }
    mlir_aie_dir=${MLIR_AIE_INSTALL_DIR:-$dir}
    for c in "$mlir_aie_dir/bin/aiecc" "$mlir_aie_dir/bin/aiecc.py" "$(command -v aiecc || true)" \
             "$(command -v aiecc.py || true)"; do
        if [ -n "$c" ] && [ -x "$c" ]; then aiecc=$c; break; fi
    done
    if [ -z "$aiecc" ]; then
        lack "mlir-aie (>= 1.4)" "mlir-aie: no aiecc in $mlir_aie_dir/bin or on PATH"; return
    fi
    if [ ! -f "$mlir_aie_dir/include/aie_api/aie.hpp" ]; then
        lack "mlir-aie (>= 1.4)" "mlir-aie: no aie_api headers in $mlir_aie_dir/include"; return
    fi
    say "mlir-aie $ver at $mlir_aie_dir (aiecc: $aiecc)"
}

# --- llvm-aie (Peano): clang for aie2p and lld.
peano_dir=""
find_peano() {
    local dir=""
    if [ -n "${PEANO_INSTALL_DIR:-}" ]; then
        dir=$PEANO_INSTALL_DIR
    else
        dir=$("$python" -c 'from importlib.metadata import distribution
print(distribution("llvm-aie").locate_file("llvm-aie"))' 2>/dev/null || true)
    fi
    if [ -z "$dir" ]; then
        lack "llvm-aie (Peano)" "llvm-aie (Peano): PEANO_INSTALL_DIR is not set and $python has no llvm-aie package"
        return
    fi
    if [ ! -x "$dir/bin/clang++" ] || [ ! -x "$dir/bin/ld.lld" ]; then
        lack "llvm-aie (Peano)" "llvm-aie (Peano): $dir has no bin/clang++ and bin/ld.lld"
        return
    fi
    if ! "$dir/bin/clang++" --target=aie2p-none-unknown-elf -x c++ -E - </dev/null >/dev/null 2>&1; then
        lack "llvm-aie (Peano)" "llvm-aie (Peano): $dir/bin/clang++ does not know the aie2p target"
        return
    fi
    peano_dir=$dir
    say "llvm-aie (Peano) at $peano_dir"
}

# --- XRT >= 2.18: aiecc packages xclbins with its xclbinutil.
xrt_dir=""
find_xrt() {
    local dir=${XRT_ROOT:-/opt/xilinx/xrt} ver="" cfg
    if [ ! -x "$dir/bin/xclbinutil" ]; then
        lack "XRT (>= 2.18)" "XRT: no bin/xclbinutil under ${XRT_ROOT:+XRT_ROOT=}$dir"
        return
    fi
    cfg=$dir/share/cmake/XRT/xrt-config-version.cmake
    if [ -f "$cfg" ]; then
        ver=$(sed -n 's/.*set(PACKAGE_VERSION "\([0-9.]*\)").*/\1/p' "$cfg" | head -n 1)
    fi
    if [ -z "$ver" ]; then
        ver=$("$dir/bin/xclbinutil" --version 2>/dev/null |
              sed -n 's/.*Version[^0-9]*\([0-9][0-9]*\.[0-9][0-9]*\(\.[0-9]*\)*\).*/\1/p' | head -n 1)
    fi
    local major=${ver%%.*} rest=${ver#*.}
    local minor=${rest%%.*}
    if [ -z "$ver" ] || [ "${major:-0}" -lt 2 ] || { [ "$major" -eq 2 ] && [ "${minor:-0}" -lt 18 ]; }; then
        lack "XRT (>= 2.18)" "XRT: version '${ver:-unknown}' at $dir, need 2.18 or newer"
        return
    fi
    xrt_dir=$dir
    say "XRT $ver at $xrt_dir"
}

find_mlir_aie
find_peano
find_xrt

if [ ${#missing[@]} -gt 0 ]; then
    list=$(printf '%s, ' "${missing[@]}")
    say "NPU kernels not built: missing ${list%, }."
    for h in "${hints[@]}"; do say "  $h"; done
    say "  Point at them with:"
    say "    MLIR_AIE_INSTALL_DIR=<mlir-aie install dir: python/aie, bin/aiecc, include/aie_api>"
    say "      (or install the mlir_aie wheel into $python, or set PYTHON to an interpreter that has it)"
    say "    PEANO_INSTALL_DIR=<llvm-aie install dir: bin/clang++, bin/ld.lld> (or the llvm-aie wheel)"
    say "    XRT_ROOT=<XRT >= 2.18 prefix, holding bin/xclbinutil> (default /opt/xilinx/xrt)"
    say "  The rest of the build is unaffected: the simulator runs the same kernel sources on the host."
    [ "$require" = 1 ] && exit 1
    exit 0
fi
if [ "$check_only" = 1 ]; then
    say "toolchain complete"
    exit 0
fi

export PEANO_INSTALL_DIR=$peano_dir XRT_ROOT=$xrt_dir
export PATH="$xrt_dir/bin:$mlir_aie_dir/bin:$PATH"

# aiecc's options changed around 1.4: ask it which spelling it understands.
aiecc_help=$("$aiecc" --help 2>&1 || true)
has_opt() { grep -q -- "$1" <<<"$aiecc_help"; }
aiecc_common=()
has_opt "--dynamic-objFifos" && aiecc_common+=(--dynamic-objFifos)  # RTP trip counts need it on 1.4.0
has_opt "--peano" && aiecc_common+=(--peano "$peano_dir")
if has_opt "--get-xclbin"; then
    aiecc_xclbin=(--get-xclbin --get-npu-insts)
else
    has_opt "--no-xchesscc" && aiecc_common+=(--no-xchesscc --no-xbridge)
    aiecc_xclbin=(--aie-generate-xclbin --aie-generate-npu-insts --no-compile-host)
fi

peano_flags=(-O2 -std=c++20 --target=aie2p-none-unknown-elf -DNDEBUG -Wno-parentheses -Wno-attributes
             -Wno-macro-redefined -I "$root/aie/include" -I "$mlir_aie_dir/include")

# What to build, settled before anything is compiled: per design and family, its tiles. A job is
# "matmul <family> <token tiles...>" or "<rows, gather, scatter, quant, rope or attention design> <family>
# <tiles...>".
jobs=()
matched_families="" matched_tiles=""
plan_family() {  # plan_family <design> <family> <default tiles> <the family's tiles>; adds a job
    local d=$1 f=$2 want=$3 have=$4 t keep=""
    matched_families="$matched_families $f"
    for t in ${user_tiles:-$want}; do
        if in_list "$t" "$have"; then
            keep="$keep $t"
            matched_tiles="$matched_tiles $t"
        elif [ "$d" = matmul ]; then
            say "$f: no core program for token tile $t"
        else
            say "$d/$f: no xclbin at tile $t (its tiles: $have)"
        fi
    done
    [ -n "$keep" ] && jobs+=("$d $f$keep")
    return 0
}
for d in $designs; do
    if [ "$d" = matmul ]; then
        fams=$families
    else
        # The description's families (aie/add/design.py has no option listing them).
        fams=$("$python" -c 'import json, sys
print(" ".join(k for k in json.load(open(sys.argv[1]))["families"] if k != "about"))' "$root/aie/$d/dataflow.json")
    fi
    kept=0
    for f in $fams; do
        if [ -n "$user_families" ] && ! in_list "$f" "$user_families"; then continue; fi
        kept=1
        if [ "$d" = matmul ]; then
            have=$("$python" "$design" --family "$f" --list-tiles)
            plan_family matmul "$f" "$tiles" "$have"
        else
            read -r script _ <<<"$(design_script_of "$d")"
            have=$("$python" "$script" --dataflow "$root/aie/$d/dataflow.json" --family "$f" --list-tiles)
            plan_family "$d" "$f" "$have" "$have"
        fi
    done
    [ "$kept" = 1 ] || say "$d: none of its families ($fams) is selected by --family: not built"
done
for f in $user_families; do
    if ! in_list "$f" "$matched_families"; then
        say "--family $f: not a family of the designs selected ($designs)" >&2; exit 2
    fi
done
for t in $user_tiles; do
    if ! in_list "$t" "$matched_tiles"; then
        say "--tile-n $t: none of the selected families has a program at this tile" >&2; exit 2
    fi
done
if [ ${#jobs[@]} -eq 0 ]; then
    say "nothing to build" >&2; exit 2
fi

mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)  # aiecc runs in the work directories: every path it is given is absolute
work=$out_dir/.work
rm -rf "$work"
mkdir -p "$work"
entries=$work/entries.txt
: >"$entries"

# aiecc_build <dir> <mlir> <xclbin file name>: the xclbin into the output directory; sets prj to aiecc's
# project directory (where it writes the kernel description the manifest is read from).
aiecc_build() {
    local dir=$1 mlir=$2 xclbin=$3 base=${2%.mlir} tmpdir=()
    if has_opt "--tmpdir"; then
        prj=$base.prj
        tmpdir=(--tmpdir="$prj")
    else
        prj=$mlir.prj  # aiecc's default work directory
    fi
    # aiecc's own instruction stream stays in the work directory.
    (cd "$dir" && "$aiecc" "${aiecc_common[@]}" "${aiecc_xclbin[@]}" --xclbin-name="$out_dir/$xclbin" \
        --npu-insts-name="$base.insts.bin" "${tmpdir[@]}" "$mlir")
}

build_matmul() {  # build_matmul <family> <token tiles...>
    local family=$1 fdir=$work/matmul/$1 source obj tn first line contract tile_k contract_tiles k_tiles mlir xclbin
    local xclbin_prj="" w_objects=family
    shift
    [ "$exact" = 1 ] && w_objects=exact
    mkdir -p "$fdir"
    line=$("$python" "$design" --family "$family" --list-contracts)
    mapfile -t contracts <<<"$line"
    source=$(awk 'NR == 1 { print $4 }' <<<"${contracts[0]}")
    obj=xdna_mm_$family.o
    say "$family: compiling $source and $(basename "$kernels_dir")/zero.cc for aie2p"
    "$peano_dir/bin/clang++" "${peano_flags[@]}" -c "$kernels_dir/$source" -o "$fdir/mm.o"
    "$peano_dir/bin/clang++" "${peano_flags[@]}" -c "$kernels_dir/zero.cc" -o "$fdir/zero.o"
    # One relocatable object per core program: IRON links one object file into every core.
    "$peano_dir/bin/ld.lld" -r -o "$fdir/$obj" "$fdir/zero.o" "$fdir/mm.o"

    for tn in "$@"; do
        first=1
        for line in "${contracts[@]}"; do
            read -r contract _symbol tile_k _source contract_tiles <<<"$line"
            # A contract without a program at this token tile is not in its xclbin (Q6_K at 64 tokens).
            case ",$contract_tiles," in *",$tn,"*) ;; *) say "$contract: no program for token tile $tn"; continue ;; esac
            if [ $((k_elems % tile_k)) -ne 0 ]; then
                say "$contract: --k $k_elems is not a multiple of its K tile $tile_k"; exit 1
            fi
            k_tiles=$((k_elems / tile_k))
            mlir=$fdir/${contract}_n$tn.mlir
            design_args=(--family "$family" --tile-n "$tn" --cols "$cols" --dev npu2 --contract "$contract"
                         --m-tiles "$m_tiles" --n-tiles "$n_tiles" --k-tiles "$k_tiles" --kernel-object "$obj")
            [ "$exact" = 1 ] && design_args+=(--exact)
            "$python" "$design" "${design_args[@]}" -o "$mlir"
            if [ "$exact" = 1 ]; then xclbin=${contract}_n$tn.xclbin; else xclbin=mm_${family}_n$tn.xclbin; fi
            # In family mode every contract's MLIR has the same array configuration (buffers sized to the
            # family): the first one gives the xclbin, which then serves them all.
            if [ "$exact" = 1 ] || [ "$first" = 1 ]; then
                say "$family n$tn: $contract -> $xclbin"
                aiecc_build "$fdir" "$mlir" "$xclbin"
                xclbin_prj=$prj
            else
                say "$family n$tn: $contract -> served by $xclbin"
            fi
            printf 'matmul\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$family" "$contract" "$tn" "$tile_k" "$xclbin" \
                "$xclbin_prj" "$w_objects" >>"$entries"
            first=0
        done
    done
}

# family_object <design> <family> <object>: the family's core-program object, in the family's work folder
# where aiecc (run there) finds it by the name design.py's --kernel-object gives. Its kernel files are
# those defining the family's contracts (the family's kernel_stack "source" and the other .cc files of
# kernels/, as design.py looks them up). Peano compiles each file once per design, as a quant design's
# families all live in one file; each family's object is then a relocatable link of its files.
# Sets contracts to the family's 'contract source' lines (design.py --list-contracts).
family_object() {
    local d=$1 family=$2 obj=$3 dataflow=$root/aie/$1/dataflow.json kdir=$root/aie/$1/kernels
    local fdir=$work/$1/$2 cdir=$work/$1/.peano script line contract src sources="" objs=()
    read -r script _ <<<"$(design_script_of "$d")"
    line=$("$python" "$script" --dataflow "$dataflow" --family "$family" --list-contracts)
    mapfile -t contracts <<<"$line"
    for line in "${contracts[@]}"; do
        read -r contract src <<<"$line"
        if [ "$src" = "?" ] || [ ! -f "$kdir/$src" ]; then
            say "$d/$family: no kernel file in $kdir defines $contract"; exit 1
        fi
        in_list "$src" "$sources" || sources="$sources $src"
    done
    mkdir -p "$fdir" "$cdir"
    for src in $sources; do
        if [ ! -f "$cdir/${src%.cc}.o" ]; then
            say "$d: compiling $src for aie2p"
            "$peano_dir/bin/clang++" "${peano_flags[@]}" -c "$kdir/$src" -o "$cdir/${src%.cc}.o"
        fi
        objs+=("$cdir/${src%.cc}.o")
    done
    say "$d/$family: linking$sources into $obj"
    "$peano_dir/bin/ld.lld" -r -o "$fdir/$obj" "${objs[@]}"
}

build_rows() {  # build_rows <design> <family> <tiles...>
    local d=$1 family=$2 dataflow=$root/aie/$1/dataflow.json fdir=$work/$1/$2
    local name core_rows obj line tile group mlir xclbin script len_opt sample
    shift 2
    read -r script len_opt <<<"$(design_script_of "$d")"
    line=$("$python" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["design"], d["array"]["core_rows"])' "$dataflow")
    read -r name core_rows <<<"$line"
    obj=xdna_${name}_$family.o  # the object design.py's program links into every core
    family_object "$d" "$family" "$obj"

    for tile in "$@"; do
        sample=(--rows "$rows_rows")
        if [ -n "$len_opt" ]; then
            group=$((core_rows * tile))
            sample+=("$len_opt" $(( (rows_row_len + group - 1) / group * group )))  # whole groups of core_rows chunks
        fi
        xclbin=${name}_${family}_t$tile.xclbin
        mlir=$fdir/${xclbin%.xclbin}.mlir
        say "$d/$family tile $tile: ${contracts[*]%% *} -> $xclbin"
        "$python" "$script" --dataflow "$dataflow" --family "$family" --tile "$tile" \
            "${sample[@]}" --kernel-object "$obj" -o "$mlir"
        aiecc_build "$fdir" "$mlir" "$xclbin"
        printf 'rows\t%s\t%s\t%s\t%s\t%s\n' "$family" "$tile" "$xclbin" "$prj" "$dataflow" >>"$entries"
    done
}

# A gather has no core: no kernel object, and the sample invocation is one id, not rows of operands.
build_gather() {  # build_gather <design> <family> <tiles...>
    local d=$1 family=$2 dataflow=$root/aie/$1/dataflow.json fdir=$work/$1/$2 name line contract src
    local tile row_len mlir xclbin script len_opt
    shift 2
    read -r script len_opt <<<"$(design_script_of "$d")"
    mkdir -p "$fdir"
    name=$("$python" -c 'import json, sys
print(json.load(open(sys.argv[1]))["design"])' "$dataflow")
    line=$("$python" "$script" --dataflow "$dataflow" --family "$family" --list-contracts)
    mapfile -t contracts <<<"$line"
    # A kernel file named here would be a core program this build does not compile.
    for line in "${contracts[@]}"; do
        read -r contract src <<<"$line"
        if [ "$src" != "-" ]; then
            say "$d/$family: $contract names kernel file '$src', but a gather design has no core program"; exit 1
        fi
    done
    say "$d/$family: DMAs only, nothing to compile for the cores"

    for tile in "$@"; do
        row_len=$(( (rows_row_len + tile - 1) / tile * tile ))  # whole chunks of the tile
        xclbin=${name}_${family}_t$tile.xclbin
        mlir=$fdir/${xclbin%.xclbin}.mlir
        say "$d/$family tile $tile: ${contracts[*]%% *} -> $xclbin"
        "$python" "$script" --dataflow "$dataflow" --family "$family" --tile "$tile" \
            --ids 0 "$len_opt" "$row_len" -o "$mlir"
        aiecc_build "$fdir" "$mlir" "$xclbin"
        # The manifest entry has the rows form: the same line kind.
        printf 'rows\t%s\t%s\t%s\t%s\t%s\n' "$family" "$tile" "$xclbin" "$prj" "$dataflow" >>"$entries"
    done
}

# A quant family is one program at one token tile: one xclbin. Its sample invocation is one token row of
# max_columns K tiles: every column gets one tile, a short token tile whose padding rows the fill reads
# from the zeros operand, so the emitted sequence moves all three operands.
build_quant() {  # build_quant <design> <family> <tiles...>
    local d=$1 family=$2 dataflow=$root/aie/$1/dataflow.json fdir=$work/$1/$2
    local name max_cols tile_k obj line tile mlir xclbin script k_opt
    shift 2
    read -r script k_opt <<<"$(design_script_of "$d")"
    line=$("$python" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["design"], d["array"]["max_columns"], d["objects"][sys.argv[2]]["tile_k"])' "$dataflow" "$family")
    read -r name max_cols tile_k <<<"$line"
    obj=xdna_${name}_$family.o  # design.py's default name: the program's own object
    family_object "$d" "$family" "$obj"

    for tile in "$@"; do
        xclbin=${name}_${family}_t$tile.xclbin
        mlir=$fdir/${xclbin%.xclbin}.mlir
        say "$d/$family tile $tile: ${contracts[*]%% *} -> $xclbin"
        "$python" "$script" --dataflow "$dataflow" --family "$family" --tile "$tile" \
            --rows 1 "$k_opt" $((max_cols * tile_k)) --kernel-object "$obj" -o "$mlir"
        aiecc_build "$fdir" "$mlir" "$xclbin"
        # The manifest entry has the rows form (its tile the token tile): the same line kind.
        printf 'rows\t%s\t%s\t%s\t%s\t%s\n' "$family" "$tile" "$xclbin" "$prj" "$dataflow" >>"$entries"
    done
}

# A scatter family is one output format with one program (its kernel_stack "source"); its sample invocation
# is rows_rows rows in order (no --ids: a CPY), so that every column's core gets rows.
build_scatter() {  # build_scatter <design> <family> <tiles...>
    local d=$1 family=$2 dataflow=$root/aie/$1/dataflow.json fdir=$work/$1/$2
    local name obj tile row_len mlir xclbin script len_opt
    shift 2
    read -r script len_opt <<<"$(design_script_of "$d")"
    name=$("$python" -c 'import json, sys
print(json.load(open(sys.argv[1]))["design"])' "$dataflow")
    obj=xdna_${name}_$family.o  # design.py's default name: the family's program's own object
    family_object "$d" "$family" "$obj"

    for tile in "$@"; do
        row_len=$(( (rows_row_len + tile - 1) / tile * tile ))  # whole chunks of the tile
        xclbin=${name}_${family}_t$tile.xclbin
        mlir=$fdir/${xclbin%.xclbin}.mlir
        say "$d/$family tile $tile: ${contracts[*]%% *} -> $xclbin"
        "$python" "$script" --dataflow "$dataflow" --family "$family" --tile "$tile" \
            --rows "$rows_rows" "$len_opt" "$row_len" --kernel-object "$obj" -o "$mlir"
        aiecc_build "$fdir" "$mlir" "$xclbin"
        # The manifest entry has the rows form: the same line kind.
        printf 'rows\t%s\t%s\t%s\t%s\t%s\n' "$family" "$tile" "$xclbin" "$prj" "$dataflow" >>"$entries"
    done
}

# A rope family is one rotation with one program (its kernel_stack "source", rope.cc); one xclbin per head row
# length. Its sample invocation is rows_rows tokens of 8 packed heads of the tile, so that every column's core
# gets tokens; n_dims is design.py's default (the most rotated dims the row takes: an RTP word, no part of the
# xclbin). The angle rows cs are a kernel buffer argument like x and y, though the host writes them.
build_rope() {  # build_rope <design> <family> <tiles...>
    local d=$1 family=$2 dataflow=$root/aie/$1/dataflow.json fdir=$work/$1/$2
    local name obj tile mlir xclbin script ne0_opt
    shift 2
    read -r script ne0_opt <<<"$(design_script_of "$d")"
    name=$("$python" -c 'import json, sys
print(json.load(open(sys.argv[1]))["design"])' "$dataflow")
    obj=xdna_${name}_$family.o  # design.py's default name: the family's program's own object
    family_object "$d" "$family" "$obj"

    for tile in "$@"; do
        xclbin=${name}_${family}_t$tile.xclbin
        mlir=$fdir/${xclbin%.xclbin}.mlir
        say "$d/$family tile $tile: ${contracts[*]%% *} -> $xclbin"
        "$python" "$script" --dataflow "$dataflow" --family "$family" "$ne0_opt" "$tile" \
            --tokens "$rows_rows" --heads 8 --kernel-object "$obj" -o "$mlir"
        aiecc_build "$fdir" "$mlir" "$xclbin"
        # The manifest entry has the rows form: the same line kind.
        printf 'rows\t%s\t%s\t%s\t%s\t%s\n' "$family" "$tile" "$xclbin" "$prj" "$dataflow" >>"$entries"
    done
}

# An attention family: one object of its kernel file (flash_attn.cc), then per head dim one xclbin per
# layout of the description. The --attention-layout ones are written to the entries (by default every
# layout: the backend picks per invocation the entry of its stream's layout); an xclbin not listed stays
# in the output directory.
build_attention() {  # build_attention <design> <family> <tiles...>
    local d=$1 family=$2 dataflow=$root/aie/$1/dataflow.json fdir=$work/$1/$2
    local name max_cols layouts obj line tile layout task_tokens tokens mlir xclbin script _unused listed
    shift 2
    read -r script _unused <<<"$(design_script_of "$d")"
    line=$("$python" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["design"], d["array"]["max_columns"], " ".join("%s:%d" % (L["name"], L["task_tokens"]) for L in d["layouts"]))' "$dataflow")
    read -r name max_cols layouts <<<"$line"
    case "$attention_layout: $layouts " in
        both:*|*" $attention_layout:"*) ;;
        *) say "$d: --attention-layout $attention_layout is not one of its layouts ($layouts)"; exit 1 ;;
    esac
    obj=xdna_${name}_$family.o  # design.py's default name: the family's programs' own object
    family_object "$d" "$family" "$obj"

    for tile in "$@"; do
        listed=""
        for layout in $layouts; do
            task_tokens=${layout#*:} layout=${layout%%:*}
            # A layout of one-token tasks (decode) takes no more in its sample invocation.
            tokens=$rows_rows
            [ "$task_tokens" = 1 ] && tokens=1
            xclbin=${name}_${family}_t${tile}_$layout.xclbin
            mlir=$fdir/${xclbin%.xclbin}.mlir
            say "$d/$family head dim $tile, layout $layout: ${contracts[*]%% *} -> $xclbin"
            "$python" "$script" --dataflow "$dataflow" --family "$family" --tile "$tile" --layout "$layout" \
                --tokens "$tokens" --cols "$max_cols" --kernel-object "$obj" -o "$mlir"
            aiecc_build "$fdir" "$mlir" "$xclbin"
            if [ "$attention_layout" = both ] || [ "$layout" = "$attention_layout" ]; then
                printf 'attention\t%s\t%s\t%s\t%s\t%s\t%s\n' "$family" "$tile" "$layout" "$xclbin" "$prj" \
                    "$dataflow" >>"$entries"
                listed=$xclbin
            else
                say "$d/$family head dim $tile: $xclbin built, not in the manifest (--attention-layout $layout lists it)"
            fi
        done
        [ -n "$listed" ] || { say "$d/$family head dim $tile: no xclbin of layout $attention_layout"; exit 1; }
    done
}

for job in "${jobs[@]}"; do
    read -r -a j <<<"$job"
    if [ "${j[0]}" = matmul ]; then
        build_matmul "${j[@]:1}"
    elif movement_is "${j[0]}" gather; then
        build_gather "${j[@]}"
    elif movement_is "${j[0]}" scatter; then
        build_scatter "${j[@]}"
    elif movement_is "${j[0]}" quant; then
        build_quant "${j[@]}"
    elif movement_is "${j[0]}" rope; then
        build_rope "${j[@]}"
    elif movement_is "${j[0]}" attention; then
        build_attention "${j[@]}"
    else
        build_rows "${j[@]}"
    fi
done

# The manifest: argument kinds follow mlir-aie's kernel signature (opcode, instruction BO in group 1, word
# count, bo<i> in group 3 + i: a matmul's W, A, C, params; a rows, gather, scatter or quant design's
# operand whose "arg" is i; an attention design's bo0..bo4 as 5 "placed" arguments), read back from the
# kernel description aiecc generated so the argument count always matches the xclbin.
"$python" "$here/write-kernel-manifest.py" "$entries" "$out_dir/manifest.json"
