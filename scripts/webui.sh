#!/usr/bin/env bash
# Build llama-server's web UI from the pinned llama.cpp tree's own sources (tools/ui), with npm and the
# lockfile that tree ships (`npm ci`: exactly the versions it pins), once, into the llama.cpp cache.
#
# llama.cpp itself is built without its UI (scripts/llama-cpp.sh: LLAMA_BUILD_UI=OFF), because embedding
# the UI would make every cold build of llama.cpp run npm. Instead llama-server serves this build as a
# static directory: `llama-server --path <dir>` (scripts/serve.sh does it). It is the same page the
# embedded build serves, from the same sources.
#
# usage: scripts/webui.sh        prints the directory holding index.html on its last line of stdout
# env:   LLAMA_CPP_DIR           the pinned llama.cpp's cache directory (default: scripts/llama-cpp.sh's)
#        GGML_XDNA_CACHE         the cache root (as scripts/llama-cpp.sh)
#
# The build is keyed on the llama.cpp commit and the lockfile's sha256: a cached build with another key is
# rebuilt; node_modules is kept and reused while the lockfile is unchanged.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log() { echo "[webui] $*" >&2; }

command -v npm >/dev/null 2>&1 || { log "npm is missing: install Debian's nodejs and npm (scripts/install-deps.sh)"; exit 1; }
command -v node >/dev/null 2>&1 || { log "node is missing: install Debian's nodejs (scripts/install-deps.sh)"; exit 1; }
# The UI's build tool (vite 7, in the tree's lockfile) needs Node.js 20.19 or later (22.12 on 22).
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 12) || (a === 20 && b >= 19) ? 0 : 1)' \
    || { log "node $(node --version) is too old for the web UI's build (vite 7): install Node.js 20.19 or later"; exit 1; }

llama=${LLAMA_CPP_DIR:-$("$here/llama-cpp.sh" | tail -n 1)}
src=$llama/src/tools/ui
[ -f "$src/package-lock.json" ] || { log "missing $src/package-lock.json: the pinned tree has no UI sources"; exit 1; }
commit=$(git -C "$llama/src" rev-parse HEAD)
key="commit $commit, lockfile sha256 $(sha256sum "$src/package-lock.json" | cut -d' ' -f1), node $(node --version)"
work=$llama/ui
dist=$work/dist

exec 8>"$llama/.ui.lock"
flock 8   # two tests building it at once must not race on the directory

if [ -f "$dist/index.html" ] && [ "$(cat "$work/.ok" 2>/dev/null)" = "$key" ]; then
    log "have $dist"
    echo "$dist"
    exit 0
fi

t0=$(date +%s)
mkdir -p "$work/src"
# Stage the sources (never build inside the pinned tree); keep node_modules if the lockfile is the same.
if ! cmp -s "$src/package-lock.json" "$work/src/package-lock.json" 2>/dev/null; then
    rm -rf "$work/src/node_modules"
fi
find "$work/src" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
(cd "$src" && tar --exclude=./node_modules --exclude=./dist -cf - .) | tar -xf - -C "$work/src"
rm -f "$work/.ok"

if [ ! -f "$work/src/node_modules/.package-lock.json" ]; then
    log "npm ci in $work/src (the versions of the tree's package-lock.json; a few minutes, once)"
    (cd "$work/src" && npm ci --no-audit --no-fund --loglevel=error >&2) \
        || { log "npm ci failed: the npm registry must be reachable"; exit 1; }
fi
t1=$(date +%s)

log "npm run build -> $dist"
rm -rf "$dist.tmp"
mkdir -p "$dist.tmp"
# LLAMA_UI_OUT_DIR is where the tree's svelte.config.js writes the static build (as its CMake does).
(cd "$work/src" && LLAMA_UI_OUT_DIR="$dist.tmp" npm run build --silent >"$work/build.log" 2>&1) \
    || { tail -n 30 "$work/build.log" >&2; log "npm run build failed (log: $work/build.log)"; exit 1; }
[ -f "$dist.tmp/index.html" ] || { log "the build wrote no index.html (log: $work/build.log)"; exit 1; }
rm -rf "$dist"
mv "$dist.tmp" "$dist"
echo "$key" >"$work/.ok"
t2=$(date +%s)
log "built in $((t2 - t0)) s (npm ci $((t1 - t0)) s, build $((t2 - t1)) s): $(du -sh "$dist" | cut -f1)"
echo "$dist"
