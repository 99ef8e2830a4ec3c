#!/usr/bin/env bash
# End to end over llama.cpp's RPC backend, on loopback: stock ggml-rpc-server exposes the XDNA device
# (the simulator), and stock llama-perplexity, llama-completion and llama-bench, run WITHOUT the XDNA
# backend loaded (as on a machine without an NPU), use it with --rpc. The RPC client gives the remote
# device whole layers; the XDNA backend computes their matmuls and hands the rest to the host CPU
# backend on the server side (GGML_XDNA_HOST_OPS=cpu, the default).
#
# Checked: the KL divergence of the RPC run against the CPU backend alone stays within the bounds
# tests/e2e/kld.sh derives for XDNA (the same arithmetic: XDNA's matmuls, the CPU's other ops); the server
# says its XDNA device computed matmuls of those graphs; llama-completion and llama-bench finish.
#
# usage: rpc.sh <llama.cpp bin dir> <libggml-xdna.so> <model.gguf> <text file> <work dir>
# (the model: demo-tiny-Q4_K_M.gguf, whose XDNA-vs-CPU bounds tests/e2e/kld.sh derives)
set -euo pipefail
. "$(dirname "$0")/no-fallback.sh"
bin=$1 lib=$2 model=$3 text=$4 work=$5
mkdir -p "$work"
[ -f "$model" ] || { echo "missing model $model (scripts/make-demo-model.sh makes it)"; exit 1; }

port=$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })' 2>/dev/null \
       || echo $((20000 + RANDOM % 20000)))
slog=$work/rpc-server.log
GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim "$bin/ggml-rpc-server" -H 127.0.0.1 -p "$port" -t 2 >"$slog" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    grep -q "Starting RPC server\|endpoint" "$slog" 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || { echo "ggml-rpc-server exited:"; cat "$slog"; exit 1; }
    sleep 0.1
done
sleep 0.5
grep -q "XDNA0" "$slog" || { echo "FAIL: ggml-rpc-server does not expose XDNA0:"; cat "$slog"; exit 1; }

status=0
rpc=(--rpc "127.0.0.1:$port" -ngl 99)
common=(-m "$model" -f "$text" -c 128 --chunks 4 -b 128 -t 2)

# The CPU alone, no RPC: the reference.
env -u GGML_BACKEND_PATH "$bin/llama-perplexity" "${common[@]}" --kl-divergence-base "$work/cpu.kld" \
    >"$work/cpu.log" 2>&1 || { echo "CPU run failed, see $work/cpu.log"; exit 1; }
env -u GGML_BACKEND_PATH "$bin/llama-perplexity" "${common[@]}" "${rpc[@]}" --kl-divergence-base "$work/cpu.kld" \
    --kl-divergence >"$work/rpc-kld.log" 2>&1 || { echo "FAIL: RPC run failed, see $work/rpc-kld.log"; tail -n 5 "$slog"; exit 1; }
kld=$(sed -n 's/.*Mean *KLD: *\([-0-9.e+]*\).*/\1/p' "$work/rpc-kld.log" | tail -n 1)
same=$(sed -n 's/.*Same top p: *\([-0-9.e+]*\).*/\1/p' "$work/rpc-kld.log" | tail -n 1)
[ -n "$kld" ] && [ -n "$same" ] || { echo "FAIL: no KLD statistics in $work/rpc-kld.log"; exit 1; }
# Bounds: tests/e2e/kld.sh's for prefill Q4_K_M (why they are what they are is written there).
verdict=ok
awk -v k="$kld" 'BEGIN { exit !(k <= 0.01) }' || verdict=FAIL
awk -v s="$same" 'BEGIN { exit !(s >= 90) }' || verdict=FAIL
echo "rpc prefill: mean KLD $kld, same top p $same %   (bounds: KLD <= 0.01, same top >= 90 %)  $verdict"
[ "$verdict" = ok ] || status=1

# The server side: its XDNA device computed the graphs' matmuls, the host the rest.
if grep -q "first graph with host ops" "$slog"; then
    grep "first graph with host ops" "$slog" | head -n 1
    matmuls=$(sed -n 's/.*host ops: [0-9]* nodes, \([0-9]*\) matmuls.*/\1/p' "$slog" | head -n 1)
    [ "${matmuls:-0}" -gt 0 ] || { echo "FAIL: no matmul computed by XDNA0 on the server"; status=1; }
else
    echo "FAIL: the server's XDNA backend computed no graph, see $slog"; status=1
fi

# Generation and the benchmark tool over RPC.
env -u GGML_BACKEND_PATH "$bin/llama-completion" -m "$model" "${rpc[@]}" -p "The wise man said" -n 12 -no-cnv \
    --temp 0 -t 2 >"$work/completion.out" 2>"$work/completion.log" \
    || { echo "FAIL: llama-completion over RPC failed, see $work/completion.log"; status=1; }
echo "completion over RPC: $(tr '\n' ' ' <"$work/completion.out" | cut -c1-120)"
env -u GGML_BACKEND_PATH "$bin/llama-bench" -m "$model" "${rpc[@]}" -p 32 -n 8 -r 1 -t 2 \
    >"$work/bench.out" 2>"$work/bench.log" || { echo "FAIL: llama-bench over RPC failed, see $work/bench.log"; status=1; }
# Its backend column names the device the layers ran on.
grep -E "\| RPC .*(pp32|tg8)" "$work/bench.out" || { echo "FAIL: llama-bench printed no RPC results"; status=1; }
kill -0 "$server" 2>/dev/null || { echo "FAIL: ggml-rpc-server died, see $slog"; status=1; }
no_fallback "$slog" "ggml-rpc-server" || status=1
exit $status
