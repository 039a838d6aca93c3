"""Guest side: load what a measurement executes into the page cache before
its measured intervals.

The guest's root is the host's over 9p (mounted cache=loose by
scripts/vmrun.py).  A binary's first exec reads it and its libraries over
9p, which waits on the host; in virtual time (QEMU icount, sleep=off) an
idle guest then jumps its clock to the next timer, so a first exec inside a
measured interval adds host-dependent time to it.  prewarm() reads every
named binary, its shared libraries and the dynamic loader once, at the
start of a run; later execs hit the guest's page cache.
"""
import glob
import os
import re
import shutil
import subprocess
import time

# what the testbed and the benches execute during their measurements
TOOLS = ["sh", "sleep", "nsenter", "ip", "tc", "ss", "nstat", "sysctl", "ethtool", "iperf3", "sockperf",
         "mptcpize", "tcpdump", "modprobe", "cat"]
EXTRA_GLOBS = ["/usr/lib/*/libmptcpwrap.so*", "/usr/lib/x86_64-linux-gnu/libiperf.so*"]


def _libs(path):
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return re.findall(r"(/\S+) \(0x", out) + re.findall(r"^\s*(/\S+)", out, re.M)


def prewarm(extra=(), verbose=True):
    """Read TOOLS + extra (names or paths), their libraries and EXTRA_GLOBS
    into the page cache; returns (files, bytes, seconds)."""
    t0 = time.monotonic()
    files = set()
    names = list(TOOLS) + list(extra)
    tc = os.environ.get("DCNET_TC")
    if tc:
        names.append(tc)
    for n in names:
        path = n if os.path.isabs(n) else shutil.which(n)
        if not path or not os.path.exists(path):
            continue
        files.add(os.path.realpath(path))
        files.update(os.path.realpath(p) for p in _libs(path) if os.path.exists(p))
    for g in EXTRA_GLOBS:
        for p in glob.glob(g):
            files.add(os.path.realpath(p))
            files.update(os.path.realpath(q) for q in _libs(p) if os.path.exists(q))
    total = 0
    for f in sorted(files):
        try:
            with open(f, "rb") as fh:
                while True:
                    b = fh.read(1 << 20)
                    if not b:
                        break
                    total += len(b)
        except OSError:
            pass
    dt = time.monotonic() - t0
    if verbose:
        print(f"prewarm: {len(files)} files, {total / 1e6:.1f} MB in the page cache ({dt:.1f} s)", flush=True)
    return len(files), total, dt
