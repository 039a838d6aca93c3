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
if [ "${1:-}" != "--host-only" ]; then
	echo "check: KUnit and functional tests in the debug kernel ($(cat "$BUILD/obj-debug/include/config/kernel.release"))"
	if ! "$PY" "$ROOT/scripts/vmrun.py" --kernel "$BUILD/obj-debug" --out "$OUT/guest" --clock real \
		--timeout "${DCNET_CHECK_TIMEOUT:-5200}" -- sh tests/guest/run-in-guest.sh; then
		vm_ok=0
	fi
	[ -f "$OUT/guest/guest.log" ] && sed 's/^/  guest| /' "$OUT/guest/guest.log" | grep -E 'PASSED|FAILED|ERROR|SKIPPED|passed|failed|^  guest\| (not )?ok|Error|assert' | head -80
fi

guest_args=()
[ "${1:-}" = "--host-only" ] || guest_args=(--guest --vm-ok "$vm_ok")
"$PY" "$ROOT/scripts/check_summary.py" "$OUT" --host-rc "$host_rc" "${guest_args[@]}"
rc=$?
echo "check: $((SECONDS - t0)) s, results in $OUT" >&2
exit $rc
