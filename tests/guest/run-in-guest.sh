#!/bin/sh
# Runs inside the debug-kernel VM (scripts/check.sh): the pytest functional
# suite first (its autoload tests want a kernel where nothing of ours is
# loaded yet), then the KUnit suites of the patchset, loaded last and never
# unloaded.  Results go to $DCNET_OUT.
out=${DCNET_OUT:?}
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
rc=0
python -m pytest -p no:cacheprovider -v -rfEs --durations=40 tests/guest --junitxml="$out/guest-junit.xml" || rc=1
# tcp_d2tcp_kunit compares D2TCP with DCTCP: both must be loadable.
modprobe tcp_dctcp || rc=1
for m in tcp_d2tcp_kunit sch_htb_ecn_kunit sch_fastlane_kunit tcp_fastlane_kunit; do
	suite=$(echo "$m" | sed 's/_kunit$//')
	if ! modprobe "$m"; then
		echo "not ok 1 $suite # module $m did not load" > "$out/kunit-$suite.ktap"
		rc=1
		continue
	fi
	cat "/sys/kernel/debug/kunit/$suite/results" > "$out/kunit-$suite.ktap" 2>&1 || rc=1
done
exit $rc
