#!/bin/sh
# Runs inside the debug-kernel VM (scripts/check.sh): the KUnit suites of
# the patchset, then the pytest functional suite.  Results go to $DCNET_OUT.
out=${DCNET_OUT:?}
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
rc=0
# KUnit suites built as modules: tcp_d2tcp_kunit needs dctcp to compare with.
modprobe tcp_dctcp || rc=1
for m in tcp_d2tcp_kunit; do
	suite=$(echo "$m" | sed 's/_kunit$//')
	if ! modprobe "$m"; then
		echo "not ok 1 $suite # module $m did not load" > "$out/kunit-$suite.ktap"
		rc=1
		continue
	fi
	cat "/sys/kernel/debug/kunit/$suite/results" > "$out/kunit-$suite.ktap" 2>&1 || rc=1
	rmmod "$m"
done
modprobe -r tcp_dctcp 2>/dev/null
python -m pytest -p no:cacheprovider -v -rfEs tests/guest --junitxml="$out/guest-junit.xml" || rc=1
exit $rc
