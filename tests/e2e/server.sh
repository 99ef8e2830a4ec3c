#!/usr/bin/env bash
# End to end: stock llama-server on loopback with its matmuls on XDNA (the simulator), driven through
# /v1/chat/completions by the `openai` npm client (tests/e2e/server/client.mjs): 4 slots, 4 requests in
# flight at a time, streamed and non-streamed, every answer checked. Then the server is stopped and its
# log must show that the XDNA device held the weights and ran the matmuls (the profile printed when its
# backend is freed), and that every slot served requests.
#
# usage: server.sh <llama.cpp bin dir> <libggml-xdna.so> <model.gguf> <work dir> [requests] [max tokens]
set -euo pipefail
. "$(dirname "$0")/no-fallback.sh"
bin=$1 lib=$2 model=$3 work=$4 requests=${5:-12} max_tokens=${6:-16}
here=$(cd "$(dirname "$0")" && pwd)
slots=4
mkdir -p "$work"
[ -f "$model" ] || { echo "missing model $model (scripts/make-demo-model.sh makes it)"; exit 1; }
command -v node >/dev/null || { echo "node is not installed (scripts/install-deps.sh installs it)"; exit 1; }

# The client library, at the version package-lock.json records (npm checks its integrity hash).
client=$work/client
mkdir -p "$client"
if ! cmp -s "$here/server/package-lock.json" "$client/package-lock.json" || [ ! -d "$client/node_modules/openai" ]; then
    cp "$here/server/package.json" "$here/server/package-lock.json" "$client/"
    (cd "$client" && npm ci --no-audit --no-fund --loglevel=error) || { echo "npm ci failed"; exit 1; }
fi
cp "$here/server/client.mjs" "$client/"

port=$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
log=$work/llama-server.log
# -c: 512 tokens of context per slot; -t 2: this project's CI machines have 2 cores.
GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim GGML_XDNA_PROFILE=1 \
    "$bin/llama-server" -m "$model" --host 127.0.0.1 --port "$port" -np "$slots" -c $((512 * slots)) -t 2 \
    --no-webui ${SERVER_EXTRA:-} >"$log" 2>&1 &
server=$!
stop_server() {
    if kill -0 "$server" 2>/dev/null; then
        kill -INT "$server" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$server" 2>/dev/null || true
    fi
    wait "$server" 2>/dev/null || true
}
trap stop_server EXIT

# Ready when /health answers 200 (it answers 503 while the model loads).
ready=0
for _ in $(seq 1 600); do
    if ! kill -0 "$server" 2>/dev/null; then
        echo "llama-server exited during start-up:"; tail -n 30 "$log"; exit 1
    fi
    if node -e 'fetch(process.argv[1]).then(r => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))' \
        "http://127.0.0.1:$port/health"; then
        ready=1; break
    fi
    sleep 0.5
done
[ "$ready" = 1 ] || { echo "llama-server not ready after 300 s, see $log"; exit 1; }

status=0
node "$client/client.mjs" "http://127.0.0.1:$port/v1" "$requests" "$slots" "$max_tokens" || status=1
stop_server
trap - EXIT

# What ran where, from the server's own log.
invocations=$(sed -n 's/^xdna profile.* \([0-9][0-9]*\) matmul invocations.*/\1/p' "$log" | head -n 1)
if [ -z "$invocations" ] || [ "$invocations" -eq 0 ]; then
    echo "FAIL: no matmul ran on XDNA0 (no profile in $log)"; status=1
else
    echo "XDNA0 ran $invocations matmul invocations"
fi
for s in $(seq 0 $((slots - 1))); do
    grep -aEq "slot +launch_slot_: id +$s \| task [0-9]+ \| processing task" "$log" \
        || { echo "FAIL: slot $s served no request, see $log"; status=1; }
done
no_fallback "$log" "llama-server" || status=1
if grep -aq "The model produced output that does not match" "$log"; then
    echo "FAIL: llama-server could not parse the model's output, see $log"; status=1
fi
exit $status
