#!/usr/bin/env bash
# Stock llama-server with 4 parallel slots on the simulator, under a bounded load from a real HTTP
# client on loopback. Passes when:
#   - every request of every round is answered (HTTP 200 with content);
#   - greedy answers under load differ from the same request served alone no more often than they do
#     on the CPU backend under the same load (batch composition changes rounding on both backends);
#   - the server's RSS is stable across rounds (the last round grows it by at most 5 % over the second:
#     the first round allocates the compute buffers and caches, later rounds must reuse them).
# Exits 77 (CTest: skipped) with a message when llama-server is not built.
#
# usage: server-load.sh <llama.cpp bin dir> <libggml-xdna.so> <models dir> <work dir> [rounds] [requests]
set -euo pipefail
. "$(dirname "$0")/no-fallback.sh"
bin=$1 lib=$2 models=$3 work=$4 rounds=${5:-3} requests=${6:-12}
server=$bin/llama-server
if [ ! -x "$server" ]; then
    echo "SKIP: $server is not built (scripts/llama-cpp.sh builds it)"
    exit 77
fi
command -v python3 >/dev/null || { echo "SKIP: python3 (the HTTP client) not found"; exit 77; }
mkdir -p "$work"
model=$models/demo-tiny-Q4_K_M.gguf

# serve <name> [env...]: starts the server in the background, sets $pid and $port.
serve() {
    local name=$1
    shift
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    env "$@" "$server" -m "$model" --host 127.0.0.1 --port "$port" -np 4 -c 2048 -t 2 >"$work/$name-server.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 120); do
        python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=5)" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || { echo "$name: llama-server exited, see $work/$name-server.log"; exit 1; }
        sleep 1
    done
    echo "$name: llama-server did not become ready, see $work/$name-server.log"; kill "$pid"; exit 1
}

# load <name>: the client. Per round, all requests at once (4 are served in parallel, the rest queue),
# then each request alone; prints "<differences> <rss per round>" on its last line.
load() {
    python3 - "$port" "$pid" "$rounds" "$requests" <<'PY'
import json, sys, threading, urllib.request
port, pid, rounds, requests = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
prompts = [f"Request {i}: the quick brown fox number {i} jumps over" for i in range(requests)]
def ask(p):
    # The grammar keeps the random-weight model's answers to plain words: unconstrained it emits bytes
    # that are not valid UTF-8 and llama-server answers HTTP 500 on any backend (README, "Serving").
    body = json.dumps({"prompt": p, "n_predict": 24, "temperature": 0, "top_k": 1, "seed": 1, "cache_prompt": False,
                       "grammar": "root ::= [a-zA-Z ,.]+"}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        if r.status != 200:
            raise SystemExit(f"HTTP {r.status} for {p!r}")
        return json.load(r)["content"]
def rss():
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))
alone = [ask(p) for p in prompts]
diffs, rsses = 0, []
for _ in range(rounds):
    out = [None] * requests
    def worker(i):
        out[i] = ask(prompts[i])
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(requests)]
    for t in ts: t.start()
    for t in ts: t.join()
    if any(o is None for o in out):
        raise SystemExit("a request was not answered")
    diffs += sum(a != b for a, b in zip(alone, out))
    rsses.append(rss())
print(diffs, *rsses)
PY
}

status=0
declare -A diffs
for name in cpu xdna; do
    if [ $name = xdna ]; then
        serve $name GGML_BACKEND_PATH="$lib" GGML_XDNA_DEVICE=sim
    else
        serve $name -u GGML_BACKEND_PATH
    fi
    result=$(load | tail -n 1) || { kill "$pid"; echo "$name: the load failed"; exit 1; }
    kill "$pid"; wait "$pid" 2>/dev/null || true
    read -r d r1 r2 rest <<<"$result"
    last=${rest##* }; [ -n "$last" ] || last=$r2
    diffs[$name]=$d
    echo "$name: $((rounds * requests)) requests answered; answers differing from alone: $d; RSS per round (KB): ${result#* }"
    if [ -n "${r2:-}" ] && awk -v a="$r2" -v b="$last" 'BEGIN { exit !(b > a * 1.05) }'; then
        echo "FAIL: $name server RSS grew from $r2 KB to $last KB"; status=1
    fi
done
grep -qi "xdna" "$work/xdna-server.log" || { echo "FAIL: the XDNA device was not used, see $work/xdna-server.log"; status=1; }
no_fallback "$work/xdna-server.log" "llama-server under load" || status=1
if [ "${diffs[xdna]}" -gt "${diffs[cpu]}" ]; then
    echo "FAIL: XDNA answers under load differ more often (${diffs[xdna]}) than the CPU's (${diffs[cpu]})"; status=1
fi
exit $status
