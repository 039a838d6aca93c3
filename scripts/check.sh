#!/usr/bin/env bash
# make check: host-side tests, then KUnit and the functional suite in the
# debug kernel (KASAN, lockdep) under virtme-ng.  Ends with one line
# "N passed, N failed[, N skipped]" and fails on any failure.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/dcnet/build}
OUT=${RESULTS:-$ROOT/results}/check
PY=$ROOT/.venv/bin/python
rm -rf "$OUT"
mkdir -p "$OUT"
t0=$SECONDS

echo "check: host tests"
host_rc=0
"$PY" -m pytest -p no:cacheprovider -q -rfEs "$ROOT/tests/host" --junitxml="$OUT/host-junit.xml" || host_rc=$?

vm_ok=1
nvm=1
if [ "${1:-}" != "--host-only" ]; then
	# The functional suite is split over DCNET_CHECK_VMS guests that run
	# at once (scripts/guest_shards.py): a TCG guest keeps about one host
	# core busy.  VM 0 also runs KUnit and writes to $OUT/guest, VM N to
	# $OUT/guest-N.  Each has its own bound, DCNET_CHECK_TIMEOUT.
	mapfile -t shards < <("$PY" "$ROOT/scripts/guest_shards.py" --vms "${DCNET_CHECK_VMS:-2}")
	nvm=${#shards[@]}
	echo "check: KUnit and functional tests in the debug kernel ($(cat "$BUILD/obj-debug/include/config/kernel.release")), $nvm VMs at once"
	pids=()
	for i in "${!shards[@]}"; do
		gdir=$OUT/guest
		[ "$i" -eq 0 ] || gdir=$OUT/guest-$i
		kunit=()
		[ "$i" -eq 0 ] || kunit=(DCNET_KUNIT=)
		# shellcheck disable=SC2086 # the shard is a list of file names
		(env "${kunit[@]}" "$PY" "$ROOT/scripts/vmrun.py" --kernel "$BUILD/obj-debug" --out "$gdir" \
			--clock real --timeout "${DCNET_CHECK_TIMEOUT:-4800}" -- \
			sh tests/guest/run-in-guest.sh ${shards[$i]} 2>&1 | sed -u "s/^/  vm$i| /"
		 exit "${PIPESTATUS[0]}") &
		pids+=($!)
		sleep 5         # the VMs' boots a little apart
	done
	for i in "${!pids[@]}"; do
		if ! wait "${pids[$i]}"; then
			vm_ok=0
			echo "check: vm$i failed, hung or splatted (its log: $OUT/guest$([ "$i" -eq 0 ] || echo "-$i")/)"
		fi
	done
	for i in "${!shards[@]}"; do
		gdir=$OUT/guest
		[ "$i" -eq 0 ] || gdir=$OUT/guest-$i
		[ -f "$gdir/guest.log" ] && sed "s/^/  vm$i guest| /" "$gdir/guest.log" |
			grep -E 'PASSED|FAILED|ERROR|SKIPPED|passed|failed|guest\| (not )?ok|Error|assert' | head -80
	done
fi

guest_args=()
[ "${1:-}" = "--host-only" ] || guest_args=(--guest --vm-ok "$vm_ok" --vms "$nvm")
"$PY" "$ROOT/scripts/check_summary.py" "$OUT" --host-rc "$host_rc" "${guest_args[@]}"
rc=$?
echo "check: $((SECONDS - t0)) s, results in $OUT" >&2
exit $rc
