#!/usr/bin/env python3
"""Split the guest suite (tests/guest/test_*.py) over N debug-kernel VMs.

    guest_shards.py --vms N                 N lines, each one VM's test files
    guest_shards.py --update OUT/check      rewrite tests/guest/durations.json
                                            from a check run's results

A TCG guest keeps about one host core busy, so `make check` runs the
functional suite in two guests at once on a 2-core host (scripts/check.sh,
DCNET_CHECK_VMS).  Whole files go to one VM (a file's tests share helpers
and run in their written order), assigned longest first to the VM with the
least work so far (LPT).  The work per file is what the last recorded
check measured (tests/guest/durations.json, seconds of test time); a file
not in it counts as DEFAULT_S.  VM 0 also runs the KUnit suites
(KUNIT_S).  The assignment depends only on the file names and the
durations file, so every check splits the same way.
"""
import argparse
import glob
import json
import os
import sys

from dcnet import ROOT
GUEST = os.path.join(ROOT, "tests", "guest")
DURATIONS = os.path.join(GUEST, "durations.json")
DEFAULT_S = 300.0
KUNIT_S = 60.0
# test_htb_ecn.py's rwnd tests failed (rwnd_rewrites 0) in the runs where
# test_fastlane_oob.py shared their guest.  They also failed after it in a
# subset run beside another guest and passed after it in the next: the
# sender, below the limiter's rate on a loaded host, never built a queue.
# The recorded durations still keep the two files in different guests.


def test_files(root=ROOT):
    return sorted(os.path.relpath(p, root)
                  for p in glob.glob(os.path.join(root, "tests", "guest", "test_*.py")))


def load_durations(path=DURATIONS):
    try:
        with open(path) as f:
            return {k: float(v) for k, v in json.load(f)["seconds"].items()}
    except (OSError, ValueError, KeyError):
        return {}


def shards(files, durations, n, kunit_s=KUNIT_S, default_s=DEFAULT_S):
    """LPT: files longest first, each to the VM with the least work so
    far (ties: the lower VM).  Returns n lists of files in suite order."""
    if n < 1:
        raise ValueError("need at least one VM")
    n = min(n, max(1, len(files)))      # no VM without a file
    load = [0.0] * n
    load[0] = kunit_s
    out = [[] for _ in range(n)]
    for f in sorted(files, key=lambda f: (-durations.get(f, default_s), f)):
        i = min(range(n), key=lambda k: (load[k], k))
        out[i].append(f)
        load[i] += durations.get(f, default_s)
    return [sorted(s) for s in out], load


def measured(check_out):
    """wall seconds per test file from a check's guest*/guest-results.jsonl:
    each test from its start to its last result (fixtures included)"""
    secs = {}
    for path in glob.glob(os.path.join(check_out, "guest*", "guest-results.jsonl")):
        start, last = {}, {}
        with open(path, errors="replace") as fh:
            for line in fh:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                test, t = ev.get("test"), ev.get("t")
                if test is None or t is None:
                    continue
                if ev.get("event") == "start":
                    start[test] = t
                elif test in start:
                    last[test] = t
        for test, t in last.items():
            f = test.split("::", 1)[0]
            secs[f] = secs.get(f, 0.0) + t - start[test]
    return secs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vms", type=int, default=2)
    ap.add_argument("--update", metavar="CHECK_OUT",
                    help="record a check run's durations in tests/guest/durations.json")
    ap.add_argument("--durations", default=DURATIONS)
    a = ap.parse_args(argv)
    if a.update:
        secs = measured(a.update)
        if not secs:
            sys.exit(f"guest_shards: no guest results under {a.update}")
        old = load_durations(a.durations)
        old.update({k: round(v, 1) for k, v in secs.items()})
        with open(a.durations, "w") as f:
            json.dump({"about": "seconds of test time per guest test file in the debug "
                       "guest, from the last recorded make check (scripts/guest_shards.py "
                       "--update); used only to split the suite over VMs",
                       "seconds": dict(sorted(old.items()))}, f, indent=1)
            f.write("\n")
        return 0
    if a.vms < 1:
        sys.exit("guest_shards: --vms wants 1 or more")
    parts, load = shards(test_files(), load_durations(a.durations), a.vms)
    for i, p in enumerate(parts):
        print(" ".join(p))
        print(f"guest_shards: vm{i}: {len(p)} files, ~{load[i]:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
