#!/usr/bin/env bash
# The documents name every weight type of the contract table (xdna-info --list-types): README.md's
# "Weight types" section and docs/kernels.md. A new contract row fails here until it is documented.
# usage: docs-weight-types.sh <xdna-info> <source dir>
set -euo pipefail
info=$1 root=$2
readme_types=$(sed -n '/^## Weight types/,/^## /p' "$root/README.md")
status=0
n=0
for t in $("$info" --list-types); do
    n=$((n + 1))
    # Whole words, any case ("q4_K" in the table, "Q4_K" in the text).
    grep -qiwF -- "$t" <<<"$readme_types" || { echo "README.md, Weight types: $t missing"; status=1; }
    grep -qiwF -- "$t" "$root/docs/kernels.md" || { echo "docs/kernels.md: $t missing"; status=1; }
done
[ "$n" -gt 0 ] || { echo "xdna-info --list-types printed nothing"; exit 1; }
[ $status -eq 0 ] && echo "README.md and docs/kernels.md name all $n contract weight types"
exit $status
