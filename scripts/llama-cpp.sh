#!/usr/bin/env bash
# Obtain the pinned llama.cpp release and build it once into a cache that later builds reuse.
#
# The release arrives as a git bundle inside the node-llama-cpp npm package; both the package and the
# bundle are checked against recorded sha256 sums so a changed upstream artefact cannot slip in.
#
# Prints the cache directory (holding src/ and build/) on its last line of stdout.
set -euo pipefail

NLC_VERSION=3.21.1
NLC_TGZ_SHA256=7a231d6bafa14142a1cbed9893d4ec5bc6041b2a5f5939a623accaab4203c11f
BUNDLE_SHA256=9336d8aab8f8e6a8919380f3641fe92e57b02fb55df1b6bd083b82491a6293b8
LLAMA_COMMIT=80fb11ac73e66d89eae2c6a91d8a77428fa733ed   # tag v0.4.0 (ggml 0.23.0)
TARGETS=(llama-bench llama-completion llama-perplexity llama-quantize test-backend-ops)

cache_root=${GGML_XDNA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna}
dir=$cache_root/llama.cpp-${LLAMA_COMMIT:0:12}
jobs=${JOBS:-$(nproc)}
log() { echo "[llama.cpp] $*" >&2; }

mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
flock 9   # two builds at once (tests and demo in parallel) must not race on the cache

if [ ! -f "$dir/src/.ok" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    log "fetching node-llama-cpp@$NLC_VERSION from the npm registry"
    (cd "$tmp" && npm pack --silent "node-llama-cpp@$NLC_VERSION" >/dev/null)
    tgz=$tmp/node-llama-cpp-$NLC_VERSION.tgz
    echo "$NLC_TGZ_SHA256  $tgz" | sha256sum -c --quiet - || { log "package checksum mismatch"; exit 1; }
    tar -xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle
    echo "$BUNDLE_SHA256  $tmp/package/llama/gitRelease.bundle" | sha256sum -c --quiet - \
        || { log "bundle checksum mismatch"; exit 1; }
    rm -rf "$dir/src"
    git -c advice.detachedHead=false clone -q "$tmp/package/llama/gitRelease.bundle" "$dir/src"
    [ "$(git -C "$dir/src" rev-parse HEAD)" = "$LLAMA_COMMIT" ] || { log "unexpected commit"; exit 1; }
    touch "$dir/src/.ok"
fi

if [ ! -f "$dir/build/.ok" ]; then
    log "building llama.cpp (shared libraries, $jobs jobs; a few minutes, once)"
    # GGML_NATIVE stays on: the CPU backend is our reference and our benchmark baseline, so it should be
    # as fast as this machine allows. No network features: models are local files.
    cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
        -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DGGML_CCACHE=OFF >&2
    cmake --build "$dir/build" -j "$jobs" --target "${TARGETS[@]}" >&2
    touch "$dir/build/.ok"
fi
echo "$dir"
