#!/usr/bin/env bash
# GGML_XDNA_DEVICE=auto|xrt: exactly one outcome is right on a given machine, and this decides which
# before running: an NPU is present when a /dev/accel node is bound to the amdxdna driver (probed here
# from sysfs, not by the code under test), and usable when the build has XRT. With both, one device must
# be registered; otherwise none, with the one-line reason.
# usage: device-choice.sh <xdna-device-choice> <libggml-cpu.so> <xdna-info> auto|xrt
set -euo pipefail
exe=$1 cpu=$2 info=$3 choice=$4
npu=0
for d in /sys/class/accel/accel*; do
    [ -e "$d/device/driver" ] && [ "$(basename "$(readlink -f "$d/device/driver")")" = amdxdna ] && npu=1
done
xrt=0
"$info" | grep -q "built with XRT" && xrt=1
out=$(GGML_XDNA_DEVICE=$choice "$exe" "$cpu" 2>&1)
echo "$out"
if [ $npu = 1 ] && [ $xrt = 1 ]; then
    want="devices: 1"
    grep -q "^devices: 1$" <<<"$out" || { echo "FAIL: an NPU is present and XRT built, but no device was registered"; exit 1; }
else
    grep -q "^devices: 0$" <<<"$out" || { echo "FAIL: no usable NPU (npu=$npu, xrt=$xrt), but a device was registered"; exit 1; }
    want="xdna: no XDNA NPU"
    [ $npu = 1 ] && want="xdna:"  # an NPU without XRT: the reason names XRT
    grep -q "$want" <<<"$out" || { echo "FAIL: no one-line reason ('$want')"; exit 1; }
    if [ "$choice" = auto ] && [ $npu = 0 ]; then
        grep -q "GGML_XDNA_DEVICE=sim" <<<"$out" || { echo "FAIL: the reason does not point at GGML_XDNA_DEVICE=sim"; exit 1; }
    fi
fi
echo "ok: npu=$npu xrt=$xrt -> $want"
