#!/bin/sh
# Runs inside the debug-kernel VM (scripts/check.sh).  KUnit first (quick,
# and its results survive a later hang), then the pytest functional suite.
# The KUnit modules are unloaded again so that the autoload tests start
# from a kernel where nothing of ours is loaded.  Results go to $DCNET_OUT:
# kunit-SUITE.ktap per suite, guest-results.jsonl per test as it finishes,
# guest-junit.xml at the end.
#
# Arguments, when given, replace "tests/guest" as pytest's selection (a
# developer's shortcut: `-- sh tests/guest/run-in-guest.sh
# tests/guest/test_d2tcp.py -k share`); DCNET_KUNIT="mod ..." replaces the
# list of KUnit modules (empty: none).
out=${DCNET_OUT:?}
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
rc=0
# tcp_d2tcp_kunit compares D2TCP with DCTCP: both must be loadable.
modprobe tcp_dctcp || rc=1
kunit=${DCNET_KUNIT-$(grep -v -E '^[[:space:]]*(#|$)' tests/guest/kunit-modules)}
for m in $kunit; do
	suite=$(echo "$m" | sed 's/_kunit$//')
	if ! modprobe "$m"; then
		echo "not ok 1 $suite # module $m did not load" > "$out/kunit-$suite.ktap"
		rc=1
		continue
	fi
	cat "/sys/kernel/debug/kunit/$suite/results" > "$out/kunit-$suite.ktap" 2>&1 || rc=1
	echo "kunit: $suite: $(grep -c '^    ok ' "$out/kunit-$suite.ktap") ok, $(grep -c '^    not ok ' "$out/kunit-$suite.ktap") not ok"
done
for m in $kunit tcp_d2tcp tcp_dctcp sch_fastlane; do
	grep -q "^$m " /proc/modules && { rmmod "$m" || echo "run-in-guest: could not unload $m"; }
done
[ $# -gt 0 ] || set -- tests/guest
PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} DCNET_JSONL="$out/guest-results.jsonl" \
	python -m pytest -p no:cacheprovider -p dcnet.host.pytest_jsonl -v -rfEs --durations=40 \
	--timeout="${DCNET_TEST_TIMEOUT:-600}" --timeout-method=signal \
	"$@" --junitxml="$out/guest-junit.xml" || rc=1
exit $rc
