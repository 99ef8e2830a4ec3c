# Sourced by the end-to-end tests. A submission whose device run fails is recomputed on the CPU, so its
# numbers, its text and its perplexity stay right: a broken NPU path would pass every check of them. The
# backend logs what it did, and these functions read the log:
#   "xdna: device run failed: <why>; computing these matmuls on the CPU (logged once)"   (an error)
#   "xdna: XDNA0: <n> of <m> submissions fell back to the CPU after a device failure"    (one per backend
#    freed: a warning when n > 0, info otherwise, which some tools do not print)
#
# fallbacks_in <log>: the submissions the log says fell back (the sum over its backends), 0 when it
#   says none; "failed" when a device run failed but no count was printed (a process that was killed).
# no_fallback <log> <what>: prints the device failure and returns 1 when anything fell back.

fallbacks_in() {
    local n
    n=$(awk '/submissions fell back to the CPU/ { for (i = 2; i <= NF; ++i) if ($i == "of") s += $(i - 1) }
             END { print s + 0 }' "$1")
    if [ "$n" = 0 ] && grep -q "xdna: device run failed" "$1"; then n=failed; fi
    echo "$n"
}

no_fallback() {
    local log=$1 what=$2 n
    n=$(fallbacks_in "$log")
    [ "$n" = 0 ] && return 0
    grep -m 3 -E "xdna: device run failed| [1-9][0-9]* of [0-9]+ submissions fell back" "$log" | sed 's/^/  /'
    if [ "$n" = failed ]; then
        echo "FAIL: $what: a device run failed and the CPU computed its submission (see $log)"
    else
        echo "FAIL: $what: $n submission(s) fell back to the CPU after a device failure (see $log)"
    fi
    return 1
}
