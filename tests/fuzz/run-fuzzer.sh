#!/usr/bin/env bash
# Run one libFuzzer fuzzer: replay its committed corpus, then fuzz for a bounded time.
# New interesting inputs go to a scratch corpus (the committed one is never written); a crash leaves its
# input in the scratch directory and is printed: add it to the committed corpus once fixed.
# A dictionary next to the fuzzer's source, <name>.dict, is used when present.
# usage: run-fuzzer.sh <fuzzer> <committed corpus dir> <seconds>
set -euo pipefail
fuzzer=$1 corpus=$2 seconds=$3
dict=()
name=$(basename "$fuzzer")
[ -f "$(dirname "$0")/$name.dict" ] && dict=(-dict="$(dirname "$0")/$name.dict")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/crashes"
# Replay first: every committed input, once (regression inputs included).
"$fuzzer" -runs=0 "$corpus"
if [ "$seconds" -gt 0 ]; then
    if ! "$fuzzer" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$work/crashes/" "$work/corpus" "$corpus"; then
        for f in "$work/crashes"/*; do
            [ -f "$f" ] && { echo "crashing input $(basename "$f") (base64):"; base64 -w0 "$f"; echo; }
        done
        exit 1
    fi
fi
