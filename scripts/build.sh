#!/usr/bin/env bash
# Build everything from a fresh Debian 12 machine: packages, the pinned llama.cpp (cached), this project.
# Prints the llama.cpp cache directory on its last line of stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build_dir=${BUILD_DIR:-$root/build}

"$here/install-deps.sh"
llama=$("$here/llama-cpp.sh" | tail -n 1)
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CPP_DIR="$llama" >&2
cmake --build "$build_dir" -j "${JOBS:-$(nproc)}" >&2
echo "$llama"
