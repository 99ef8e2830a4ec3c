#!/usr/bin/env bash
# Optional NPU build: compiles each core program of aie/matmul/ for AIE2P with Peano (llvm-aie), turns
# aie/matmul/design.py into MLIR and, with mlir-aie's aiecc, into an xclbin per family and token tile,
# and writes the kernel manifest (format 2, docs/xrt.md) the backend reads into the output directory: one
# entry per xclbin, listing the contracts and tile shape it serves. No instruction streams are shipped:
# the backend builds each problem shape's stream on the host (src/runtime/matmul-sequence.h).
#
# Needs mlir-aie >= 1.4 (python package 'aie', aiecc), llvm-aie (Peano clang for aie2p) and XRT >= 2.18
# (aiecc packages the xclbin with XRT's xclbinutil). When one of them is missing it says which and how
# to point at it, prints "NPU kernels not built" and exits 0, so the rest of the build goes on.
#
# Contract names in the manifest are the v2 names: mm_<w>_a8 for quantized weights (int8 activations),
# e.g. mm_q4_K_a8; the float contracts keep mm_f16_f16, mm_bf16_bf16, mm_f32_f32.
#
# design.py still needs a problem shape (--m-tiles, --n-tiles, --k) to emit its MLIR; it only affects the
# runtime sequence aiecc compiles alongside, which the backend does not use.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
design=$root/aie/matmul/design.py
kernels_dir=$root/aie/matmul/kernels
python=${PYTHON:-python3}

out_dir=$root/build/ggml-xdna-kernels
families="kquant legacy kquant_low float kquant_bfp16 legacy_bfp16 kquant_low_bfp16 float_bfp16 f32_bfp16"
tiles="4 32 64"
cols=8
m_tiles=64
n_tiles=1
k_elems=4096
exact=0
require=0
check_only=0

usage() {
    cat <<EOF
usage: $(basename "$0") [options]
  --out DIR        output directory (default build/ggml-xdna-kernels)
  --family F       build only this family (repeatable): kquant legacy kquant_low float kquant_bfp16
                          legacy_bfp16 kquant_low_bfp16 float_bfp16 f32_bfp16
  --tile-n N       build only this token tile (repeatable): 4 32 64
  --cols N         array columns (default 8)
  --m-tiles N      weight row tiles of the instruction streams (default 64: M = 4096)
  --n-tiles N      token tiles of the instruction streams (default 1)
  --k K            reduction length of the instruction streams (default 4096)
  --exact          one xclbin per contract with exactly sized W buffers, instead of one per family
  --check          only report which tools were found
  --require        exit 1 (not 0) when a tool is missing
Tools are found through MLIR_AIE_INSTALL_DIR, PEANO_INSTALL_DIR and XRT_ROOT when set (and only there),
otherwise through the Python packages mlir_aie / llvm-aie and /opt/xilinx/xrt.
EOF
}

user_families="" user_tiles=""
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out_dir=$2; shift 2 ;;
        --family) user_families="$user_families $2"; shift 2 ;;
        --tile-n) user_tiles="$user_tiles $2"; shift 2 ;;
        --cols) cols=$2; shift 2 ;;
        --m-tiles) m_tiles=$2; shift 2 ;;
        --n-tiles) n_tiles=$2; shift 2 ;;
        --k) k_elems=$2; shift 2 ;;
        --exact) exact=1; shift ;;
        --check) check_only=1; shift ;;
        --require) require=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "build-npu-kernels: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
[ -n "$user_families" ] && families=$user_families
[ -n "$user_tiles" ] && tiles=$user_tiles

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

mkdir -p "$out_dir"
work=$out_dir/.work
rm -rf "$work"
mkdir -p "$work"
entries=$work/entries.txt
: >"$entries"

for family in $families; do
    fdir=$work/$family
    mkdir -p "$fdir"
    mapfile -t contracts < <("$python" "$design" --family "$family" --list-contracts)
    source=$(awk 'NR == 1 { print $4 }' <<<"${contracts[0]}")
    obj=xdna_mm_$family.o
    say "$family: compiling $source and $(basename "$kernels_dir")/zero.cc for aie2p"
    "$peano_dir/bin/clang++" "${peano_flags[@]}" -c "$kernels_dir/$source" -o "$fdir/mm.o"
    "$peano_dir/bin/clang++" "${peano_flags[@]}" -c "$kernels_dir/zero.cc" -o "$fdir/zero.o"
    # One relocatable object per core program: IRON links one object file into every core.
    "$peano_dir/bin/ld.lld" -r -o "$fdir/$obj" "$fdir/zero.o" "$fdir/mm.o"

    family_tiles=$("$python" "$design" --family "$family" --list-tiles)
    for tn in $tiles; do
        case " $family_tiles " in *" $tn "*) ;; *) say "$family: no core program for token tile $tn"; continue ;; esac
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
            insts=$fdir/${contract}_n$tn.insts.bin  # aiecc's own stream: kept in the work directory only
            if [ "$exact" = 1 ]; then xclbin=${contract}_n$tn.xclbin; else xclbin=mm_${family}_n$tn.xclbin; fi
            if has_opt "--tmpdir"; then
                prj=$fdir/${contract}_n$tn.prj
                tmpdir=(--tmpdir="$prj")
            else
                prj=$mlir.prj  # aiecc's default work directory
                tmpdir=()
            fi
            # In family mode every contract's MLIR has the same array configuration (buffers sized to the
            # family): the first one gives the xclbin, which then serves them all.
            if [ "$exact" = 1 ] || [ "$first" = 1 ]; then
                say "$family n$tn: $contract -> $xclbin"
                (cd "$fdir" && "$aiecc" "${aiecc_common[@]}" "${aiecc_xclbin[@]}" --xclbin-name="$out_dir/$xclbin" \
                    --npu-insts-name="$insts" "${tmpdir[@]}" "$mlir")
                xclbin_prj=$prj
            else
                say "$family n$tn: $contract -> served by $xclbin"
            fi
            echo "$family $contract $tn $tile_k $xclbin $xclbin_prj" >>"$entries"
            first=0
        done
    done
done

# The manifest: argument kinds follow the runtime sequence (W, A, C, params) and mlir-aie's kernel
# signature (opcode, instruction BO in group 1, word count, bo<i> in group 3 + i), read back from the
# kernel description aiecc generated so the argument count always matches the xclbin.
"$python" - "$entries" "$out_dir/manifest.json" "$exact" <<'EOF'
import glob, json, os, sys

entries, manifest = sys.argv[1], sys.argv[2]
exact = sys.argv[3] == "1"  # --exact: one xclbin per contract, W objects of its own tile
bo_kinds = ["weights", "activations", "output", "params"]
designs = {}  # xclbin -> its manifest entry
for line in open(entries):
    family, contract, tn, tile_k, xclbin, prj = line.split()
    tile = {"m": 64, "n": int(tn), "k": int(tile_k)}
    if xclbin in designs:
        designs[xclbin]["serves"].append({"contract": contract, "tiles": [tile]})
        continue
    descs = glob.glob(os.path.join(prj, "*kernels*.json"))
    if not descs:
        sys.exit(f"build-npu-kernels: no kernel description (*kernels*.json) in {prj}")
    desc = json.load(open(descs[0]))
    kernel = desc["ps-kernels"]["kernels"][0]
    args = []
    for a in kernel["arguments"]:
        name = a["name"]
        if name == "opcode":
            args.append({"kind": "opcode", "value": 3})
        elif name == "instr":
            args.append({"kind": "instructions", "group_id": 1})
        elif name == "ninstr":
            args.append({"kind": "instruction_count"})
        elif name.startswith("bo") and int(name[2:]) < len(bo_kinds):
            args.append({"kind": bo_kinds[int(name[2:])], "group_id": 3 + int(name[2:])})
        else:
            sys.exit(f"build-npu-kernels: kernel argument '{name}' of {xclbin} has no manifest kind "
                     f"(format 2 knows {', '.join(bo_kinds)} as buffers)")
    designs[xclbin] = {
        "design": "matmul",
        "family": family,
        "xclbin": xclbin,
        "kernel": kernel["name"],
        "npu": ["npu2"],
        "serves": [{"contract": contract, "tiles": [tile]}],
        "args": args,
    }
    if exact:
        designs[xclbin]["w_objects"] = "exact"
doc = {"comment": "Built by scripts/build-npu-kernels.sh from aie/matmul (never run on an NPU by this project). "
                  "The backend builds each problem shape's instruction stream on the host.",
       "format_version": 2, "designs": list(designs.values())}
with open(manifest, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print(f"build-npu-kernels: wrote {manifest} ({len(designs)} design xclbins)")
EOF
