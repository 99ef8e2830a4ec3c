#!/usr/bin/env bash
# Debian 12 packages the build, the tests and the benchmarks need. Safe to run again.
set -euo pipefail

packages=(
    build-essential cmake git ca-certificates
    nodejs npm                 # npm pack fetches the pinned llama.cpp release
    libgtest-dev libgmock-dev  # unit tests
    nlohmann-json3-dev         # kernel manifest parsing
    python3 python3-matplotlib # benchmark plots
    time                       # peak RSS in bench/rss.sh
    clang libclang-rt-dev      # libFuzzer for the fuzzers (scripts/sanitize.sh fuzz)
    fortunes-min               # the text the trained demo model learns (scripts/make-demo-model.sh trained)
    chromium                   # the browser the web UI test drives, headless (tests/e2e/webui.sh)
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A machine that already has node and npm (e.g. from another source) does not need Debian's.
if command -v npm >/dev/null 2>&1; then
    missing=("${missing[@]/nodejs/}"); missing=("${missing[@]/npm/}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -gt 0 ]; then
    echo "[deps] installing: ${missing[*]}" >&2
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
