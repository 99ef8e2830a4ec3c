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
# llama-server: the OpenAI-compatible HTTP server most users reach a model through (its web UI is not
# built: LLAMA_BUILD_UI is off, so no node build runs). ggml-rpc / ggml-rpc-server: llama.cpp's RPC
# backend and its server, for a device on another machine.
TARGETS=(llama-bench llama-completion llama-perplexity llama-quantize test-backend-ops
         llama-server ggml-rpc ggml-rpc-server)

cache_root=${GGML_XDNA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna}
dir=$cache_root/llama.cpp-${LLAMA_COMMIT:0:12}-dl
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

# The CPU backend is built for this machine's instruction set extensions. GGML_NATIVE cannot be
# combined with GGML_BACKEND_DL, so the extensions /proc/cpuinfo reports are passed one by one.
cpu_flags() {
    local have f
    have=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
    for f in "avx:AVX" "avx2:AVX2" "fma:FMA" "f16c:F16C" "bmi2:BMI2" "avx_vnni:AVX_VNNI" "avx512f:AVX512" \
             "avx512_vbmi:AVX512_VBMI" "avx512_vnni:AVX512_VNNI" "avx512_bf16:AVX512_BF16"; do
        if grep -qw "${f%%:*}" <<<"$have"; then echo "-DGGML_${f#*:}=ON"; else echo "-DGGML_${f#*:}=OFF"; fi
    done
}

# GGML_BACKEND_DL, as llama.cpp's release builds have it: every backend, the CPU one included, is
# a module loaded at start-up, which is what makes stock tools call ggml_backend_load_all() and so
# load an out-of-tree backend named by GGML_BACKEND_PATH.
config=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF $(cpu_flags)
        -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_BUILD_TESTS=ON
        -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=ON -DGGML_RPC=ON -DLLAMA_BUILD_APP=OFF -DGGML_CCACHE=OFF)
if [ ! -f "$dir/build/.ok" ] || [ "$(cat "$dir/build/.ok")" != "${config[*]}" ]; then
    log "building llama.cpp (shared libraries, dynamic backends, $jobs jobs; a few minutes, once)"
    cmake -S "$dir/src" -B "$dir/build" "${config[@]}" >&2
    cmake --build "$dir/build" -j "$jobs" --target "${TARGETS[@]}" ggml-cpu >&2
    echo "${config[*]}" > "$dir/build/.ok"
fi
echo "$dir"
