#!/usr/bin/env bash
# llama-bench pp/tg of the XDNA backend (simulated NPU unless GGML_XDNA_DEVICE says otherwise) against
# the CPU backend, on the same model, in one run of this script; prints both and their ratio.
#
# usage: bench/llama-bench.sh <model.gguf> [extra llama-bench args, e.g. -p 512 -n 128 -r 3]
# env:   LLAMA_BIN (default: the pinned build's bin/), BUILD_DIR (default build)
#        OMP_WAIT_POLICY for both runs (default passive; set it empty for libgomp's own default).
#
# Why passive: both backends run their threads as one OpenMP team (runtime/thread-pool.h), and
# libgomp's default waits by spinning (up to 300000 rounds) at every barrier and between parallel
# regions. On a machine whose cores are shared with other work (and on virtual machines, where a
# spinning vCPU can be descheduled), that spinning costs both backends 10x or more and makes runs
# irreproducible: measured on a 2-vCPU VM with other builds running, tg of the 1b demo model went
# from 1-2 t/s (default) to 14-17 t/s (passive) on the CPU backend, and likewise on XDNA(sim).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
model=$1; shift
args=("$@"); [ ${#args[@]} -gt 0 ] || args=(-p 512 -n 128 -r 3)
bin=${LLAMA_BIN:-$("$root/scripts/llama-cpp.sh" | tail -n 1)/build/bin}
lib=${BUILD_DIR:-$root/build}/src/libggml-xdna.so
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

threads=$(nproc)
policy=${OMP_WAIT_POLICY-passive}
if [ -n "$policy" ]; then export OMP_WAIT_POLICY=$policy; else unset OMP_WAIT_POLICY; fi
echo "model: $model   threads: $threads   args: ${args[*]}   OMP_WAIT_POLICY: ${policy:-(libgomp default)}"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
env -u GGML_BACKEND_PATH "$bin/llama-bench" -m "$model" -t "$threads" "${args[@]}" -o json >"$out/cpu.json" 2>"$out/cpu.log"
GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=${GGML_XDNA_DEVICE:-sim} \
    "$bin/llama-bench" -m "$model" -t "$threads" "${args[@]}" -o json >"$out/xdna.json" 2>"$out/xdna.log"
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$out/cpu.json" "$out/xdna.json" <<'PY'
import json, sys
cpu, xdna = (json.load(open(p)) for p in sys.argv[1:3])
def name(r):
    return f"pp{r['n_prompt']}" if r['n_gen'] == 0 else f"tg{r['n_gen']}"
print(f"{'test':8} {'CPU t/s':>12} {'XDNA(sim) t/s':>15} {'XDNA/CPU':>9}   backends")
for c, x in zip(cpu, xdna):
    assert name(c) == name(x)
    print(f"{name(c):8} {c['avg_ts']:8.2f}±{c['stddev_ts']:<4.1f} {x['avg_ts']:10.2f}±{x['stddev_ts']:<4.1f} {x['avg_ts']/c['avg_ts']:8.2f}x   {c['backends']} / {x['backends']}")
PY
