#!/usr/bin/env bash
# End to end: llama-server's web UI in a real browser, the model's matmuls on XDNA (the simulator).
#
# The UI is built from the pinned llama.cpp tree's own sources with npm (scripts/webui.sh: `npm ci` from the
# tree's package-lock.json, then its build script; cached) and served by stock llama-server as a static
# directory (--path), as scripts/serve.sh does. Debian's Chromium, headless, driven by puppeteer-core (the
# version in tests/e2e/webui/package-lock.json, installed here with `npm ci`), opens the page, types a
# prompt into the chat box, sends it and waits for the streamed answer (tests/e2e/webui/chat.mjs). The
# server samples greedily (--temp 0, which the page takes as its default). Checks: the answer is text of
# the demo model's corpus (at least 3 words, 90% of them words of the fortune files, as
# tests/e2e/trained-model.sh checks) and word for word what the API answers to the same question; the
# server's slot served it and the XDNA profile shows the matmuls; the screenshot is saved in the work dir. A missing browser, node or npm fails the test, naming what to install.
#
# usage: webui.sh <llama.cpp dir> <libggml-xdna.so> <models dir> <corpus dir> <work dir>
# env:   CHROMIUM  the browser (default /usr/bin/chromium)
set -euo pipefail
. "$(dirname "$0")/no-fallback.sh"
llama=$1 lib=$2 models=$3 corpus=$4 work=$5
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$llama/build/bin
chromium=${CHROMIUM:-/usr/bin/chromium}
model=$models/demo-trained-Q4_K_M.gguf
prompt="Say something wise."

command -v node >/dev/null 2>&1 || { echo "FAIL: node is missing: install Debian's nodejs and npm (scripts/install-deps.sh)"; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "FAIL: npm is missing: install Debian's npm (scripts/install-deps.sh)"; exit 1; }
[ -x "$chromium" ] || { echo "FAIL: no browser at $chromium: install Debian's chromium (scripts/install-deps.sh), or set CHROMIUM"; exit 1; }
[ -f "$model" ] || { echo "FAIL: missing $model (scripts/make-demo-model.sh trained makes it)"; exit 1; }
mkdir -p "$work"

# The UI, from the pinned tree's sources (a no-op when the cached build has this lockfile's key).
t0=$(date +%s)
ui=$(LLAMA_CPP_DIR=$llama "$root/scripts/webui.sh" | tail -n 1) || { echo "FAIL: the web UI did not build (above)"; exit 1; }
[ -f "$ui/index.html" ] || { echo "FAIL: no index.html in $ui"; exit 1; }
echo "web UI: $ui ($(( $(date +%s) - t0 )) s to build or find)"

# The browser driver, at the version package-lock.json records (npm checks its integrity hash).
client=$work/client
mkdir -p "$client"
if ! cmp -s "$here/webui/package-lock.json" "$client/package-lock.json" || [ ! -d "$client/node_modules/puppeteer-core" ]; then
    cp "$here/webui/package.json" "$here/webui/package-lock.json" "$client/"
    (cd "$client" && npm ci --no-audit --no-fund --loglevel=error) || { echo "FAIL: npm ci of puppeteer-core failed"; exit 1; }
fi
cp "$here/webui/chat.mjs" "$client/"
echo "browser: $("$chromium" --version 2>/dev/null | head -n 1)"

. "$here/speculative/server-lib.sh"
trap stop_server EXIT
log=$work/llama-server.log
port=$(free_port)
# The web UI on (not --no-webui), served from the UI build; one slot, the trained demo model on XDNA.
GGML_BACKEND_PATH=$lib GGML_XDNA_DEVICE=sim GGML_XDNA_PROFILE=1 \
    "$bin/llama-server" -m "$model" --host 127.0.0.1 --port "$port" -np 1 -c 1024 -t 2 --temp 0 --path "$ui" >"$log" 2>&1 &
server_pid=$!
ready=0
for _ in $(seq 1 600); do
    kill -0 "$server_pid" 2>/dev/null || { echo "FAIL: llama-server exited during start-up:"; tail -n 30 "$log"; exit 1; }
    if node -e 'fetch(process.argv[1]).then(r => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))' \
        "http://127.0.0.1:$port/health"; then
        ready=1; break
    fi
    sleep 0.3
done
[ "$ready" = 1 ] || { echo "FAIL: llama-server not ready after 180 s, see $log"; exit 1; }

status=0
shot=$work/webui-screenshot.png
rm -f "$shot" "$work/answer.txt"
t1=$(date +%s)
node "$client/chat.mjs" "$chromium" "http://127.0.0.1:$port/" "$prompt" "$work/answer.txt" "$shot" || status=1
echo "browser session: $(( $(date +%s) - t1 )) s"
# The reference: the same question through the API, greedy as the server's --temp 0 makes the page's.
node -e '
    fetch(process.argv[1], { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ messages: [{ role: "user", content: process.argv[2] }], temperature: 0 }) })
        .then(r => r.json()).then(j => { console.log(j.choices[0].message.content); }, e => { console.error(String(e)); process.exit(1); })
' "http://127.0.0.1:$port/v1/chat/completions" "$prompt" >"$work/api-answer.txt" || { echo "FAIL: the API request failed"; status=1; }
stop_server
trap - EXIT
[ "$status" = 0 ] || { echo "FAIL: the browser session failed (server log: $log)"; exit 1; }

# The answer: words of the corpus (the reference: the corpus's own word list, built here with awk).
words() { tr 'A-Z' 'a-z' | tr -c 'a-z' '\n' | grep -v '^$'; }
cat "$corpus/fortunes" "$corpus/literature" "$corpus/riddles" | grep -v '^%$' | words | sort -u >"$work/corpus-words.txt"
words <"$work/answer.txt" >"$work/answer-words.txt" || true
total=$(wc -l <"$work/answer-words.txt")
known=$(grep -cxFf "$work/corpus-words.txt" "$work/answer-words.txt" || true)
echo "answer in the page: $(tr '\n\t' '  ' <"$work/answer.txt")"
echo "$known of $total words of the answer are words of the corpus"
[ "$total" -ge 3 ] || { echo "FAIL: fewer than 3 words in the answer"; status=1; }
[ $((known * 100)) -ge $((total * 90)) ] || { echo "FAIL: under 90% of the answer's words are words of the corpus"; status=1; }
# The page shows the model's answer: word for word what the API answers (the page renders markdown, so
# punctuation and spacing may differ).
words <"$work/api-answer.txt" >"$work/api-words.txt" || true
if cmp -s "$work/api-words.txt" "$work/answer-words.txt"; then
    echo "the page's answer is the API's greedy answer, word for word"
else
    echo "FAIL: the page's answer differs from the API's: $(tr '\n\t' '  ' <"$work/api-answer.txt")"; status=1
fi

# The page's request reached the server, and the matmuls ran on XDNA0.
grep -aEq "slot +launch_slot_: id +0 \| task [0-9]+ \| processing task" "$log" \
    || { echo "FAIL: the server's log shows no request served by its slot ($log)"; status=1; }
grep -aq "^xdna profile" "$log" || { echo "FAIL: no XDNA profile in $log: the matmuls did not run on XDNA0"; status=1; }
no_fallback "$log" "llama-server behind the web UI" || status=1
# The screenshot: a PNG.
if [ -s "$shot" ] && [ "$(head -c 8 "$shot" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
    echo "screenshot: $shot ($(du -h "$shot" | cut -f1))"
else
    echo "FAIL: no PNG screenshot at $shot"; status=1
fi
exit $status
