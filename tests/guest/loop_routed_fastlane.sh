#!/bin/sh
# A developer's loop, run in the debug guest through scripts/vmrun.py:
# the routed FastLane port tests up to and including the two hand-off
# tests, N times (default 3) in one boot; logs and dmesg in $DCNET_OUT.
# K, when given, is pytest's -k selection instead.
#   .venv/bin/python scripts/vmrun.py --kernel $BUILD/obj-debug --out OUT \
#       --clock real -- sh tests/guest/loop_routed_fastlane.sh [N [K]]
out=${DCNET_OUT:?}
rc=0
i=1
while [ "$i" -le "${1:-3}" ]; do
	PYTHONPATH=$PWD python -m pytest -p no:cacheprovider -v -s -rfEs --timeout=600 \
		tests/guest/test_fastlane.py \
		-k "${2:-configuration or each_drop or not_tcp or no_drop or caps_hold or hand_off}" \
		>"$out/loop-$i.log" 2>&1 || rc=1
	tail -1 "$out/loop-$i.log"
	i=$((i + 1))
done
dmesg >"$out/dmesg.txt"
exit $rc
