#!/usr/bin/env bash
# Write the one header XRT's build generates (its version) for an XRT source checkout into <out dir>,
# at every path some release includes it from, so XRT's public headers can be used without building XRT.
#
# Usage: scripts/xrt-generated-headers.sh <XRT source checkout> <out dir>
# Prints "<major>.<minor>" of the checkout. Fails for releases older than 2.18.
set -euo pipefail

xrt=${1:?usage: $0 <XRT source checkout> <out dir>}
out=${2:?usage: $0 <XRT source checkout> <out dir>}
cfg=$xrt/src/CMake/config
settings=$xrt/src/CMake/settings.cmake
[ -f "$settings" ] || { echo "$settings not found: not an XRT source checkout" >&2; exit 2; }

# The checkout's version, from the settings XRT's own build reads.
version_field() {
    sed -n -E "s/^[[:space:]]*[Ss][Ee][Tt][[:space:]]*\\([[:space:]]*XRT_VERSION_$1[[:space:]]+([0-9]+).*/\\1/p" "$settings" | head -1
}
major=$(version_field MAJOR)
minor=$(version_field MINOR)
[ -n "$major" ] && [ -n "$minor" ] || { echo "cannot read the XRT version from $settings" >&2; exit 2; }
if [ "$major" -lt 2 ] || { [ "$major" -eq 2 ] && [ "$minor" -lt 18 ]; }; then
    echo "XRT $major.$minor is older than 2.18, which this backend needs" >&2
    exit 1
fi

# Fill a template: the version fields, then any other @VAR@ (git metadata) as "" or 0.
fill() {
    sed -e "s/@XRT_VERSION_MAJOR@/$major/g" -e "s/@XRT_VERSION_MINOR@/$minor/g" \
        -e "s/@XRT_VERSION_PATCH@/0/g" -e "s/@XRT_VERSION_STRING@/$major.$minor.0/g" \
        -e 's/"@[A-Z_]*@"/""/g' -e 's/@[A-Z_]*@/0/g' "$1"
}
mkdir -p "$out/xrt/detail"
# 2.18 includes "version.h", 2.19 "xrt/detail/version.h" (both from version.h.in), later releases
# "xrt/detail/version-slim.h" (from version-slim.h.in).
if [ -f "$cfg/version-slim.h.in" ]; then
    fill "$cfg/version-slim.h.in" > "$out/xrt/detail/version-slim.h"
fi
if [ -f "$cfg/version.h.in" ]; then
    fill "$cfg/version.h.in" > "$out/version.h"
    cp "$out/version.h" "$out/xrt/detail/version.h"
fi
echo "$major.$minor"
