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
"$PY" -m pytest -p no:cacheprovider -q -rfEs "$ROOT/tests/host" --junitxml="$OUT/host-junit.xml"

vm_ok=1
if [ "${1:-}" != "--host-only" ]; then
	echo "check: KUnit and functional tests in the debug kernel ($(cat "$BUILD/obj-debug/include/config/kernel.release"))"
	if ! "$PY" "$ROOT/scripts/vmrun.py" --kernel "$BUILD/obj-debug" --out "$OUT/guest" \
		--timeout "${DCNET_CHECK_TIMEOUT:-5000}" -- sh tests/guest/run-in-guest.sh; then
		vm_ok=0
	fi
	[ -f "$OUT/guest/guest.log" ] && sed 's/^/  guest| /' "$OUT/guest/guest.log" | grep -E 'PASSED|FAILED|ERROR|SKIPPED|passed|failed|^  guest\| (not )?ok|Error|assert' | head -80
fi

"$PY" - "$OUT" "$vm_ok" "${1:-}" <<'PYEOF'
import glob, os, re, sys
import xml.etree.ElementTree as ET
out, vm_ok, mode = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
passed = failed = skipped = 0
fails = []
for x in glob.glob(os.path.join(out, "**", "*-junit.xml"), recursive=True):
    for tc in ET.parse(x).getroot().iter("testcase"):
        name = f"{tc.get('classname')}::{tc.get('name')}"
        if tc.find("failure") is not None or tc.find("error") is not None:
            failed += 1; fails.append(name)
        elif tc.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
kunit_cases = 0
for k in glob.glob(os.path.join(out, "guest", "kunit-*.ktap")):
    suite = os.path.basename(k)[6:-5]
    for line in open(k, errors="replace"):
        m = re.match(r"^\s{4}(not ok|ok) \d+ (\S+)(.*)$", line)
        m0 = re.match(r"^(not ok) \d+ (\S+)(.*)$", line)
        if m:
            kunit_cases += 1
            if "# SKIP" in m.group(3):
                skipped += 1
            elif m.group(1) == "ok":
                passed += 1
            else:
                failed += 1; fails.append(f"kunit:{suite}.{m.group(2)}")
        elif m0 and not kunit_cases:
            failed += 1; fails.append(f"kunit:{suite}{m0.group(3)}")
if mode != "--host-only":
    if not glob.glob(os.path.join(out, "guest", "kunit-*.ktap")):
        failed += 1; fails.append("kunit: no results")
    if not os.path.exists(os.path.join(out, "guest", "guest-junit.xml")):
        failed += 1; fails.append("guest pytest: no results")
    if not vm_ok:
        failed += 1; fails.append("vm: guest failed, hung or the kernel splatted (see above)")
for f in fails:
    print(f"FAILED {f}")
line = f"{passed} passed, {failed} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
sys.exit(1 if failed or passed == 0 else 0)
PYEOF
rc=$?
echo "check: $((SECONDS - t0)) s, results in $OUT" >&2
exit $rc
