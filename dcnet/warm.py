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
import hashlib
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
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=60).stdout or ""
    except (OSError, subprocess.SubprocessError):
        return []
    return re.findall(r"(/\S+) \(0x", out) + re.findall(r"^\s*(/\S+)", out, re.M)


def prewarm(extra=(), verbose=True):
    """Read TOOLS + extra (names or paths), their libraries and EXTRA_GLOBS
    into the page cache; returns (files, bytes, seconds)."""
    t0 = time.monotonic()
    files = set()
    names = list(TOOLS) + list(extra)
    for var in ("DCNET_TC", "DCNET_SS"):
        if os.environ.get(var):
            names.append(os.environ[var])
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


# ----------------------------------------------------------------- toolbox
#
# The page cache is not enough: opening a file on 9p sends a request to
# the host even when its pages are cached (each exec opens the binary and
# every library), and negative lookups (a PATH search) are never cached.
# Measured in the release guest in virtual time after prewarm(): 75-630 ms
# of guest time per exec, varying run to run.  install() copies the tools
# with their libraries and the dynamic loader into the guest's tmpfs and
# points their ELF interpreter and rpath there (patchelf), and puts the
# copies first in PATH: an exec then touches no 9p at all.

BOX_BASE = "/tmp/dcnet-tools"
BOX = BOX_BASE
LDSO = "ld-linux-x86-64.so.2"
MPTCP_WRAP_GLOB = "/usr/lib/x86_64-linux-gnu/mptcpize/libmptcpwrap.so*"
BOX_TOOLS = TOOLS + ["env", "true", "dltraffic"]


def _copy(src, dst):
    with open(src, "rb") as f, open(dst, "wb") as g:
        g.write(f.read())
    os.chmod(dst, os.stat(src).st_mode & 0o777)


def _box():
    """BOX, for the project's tc and ss of this run (DCNET_TC, DCNET_SS):
    guests can see the host's /tmp, and a box another run filled with
    another tc (the system's) must not be reused (install() never
    overwrites a tool)"""
    key = ""
    for var in ("DCNET_TC", "DCNET_SS"):
        p = os.environ.get(var)
        if p and os.path.isabs(p) and os.path.exists(p):
            key += f"{os.path.realpath(p)}:{os.path.getsize(p)};"
    return BOX_BASE + "-" + hashlib.sha1(key.encode()).hexdigest()[:8] if key else BOX_BASE


def install(extra=(), verbose=True):
    """Copy TOOLS + extra into BOX (bin/, lib/), patched to load only from
    BOX, and put BOX/bin first in this process's PATH (children inherit
    it).  Returns {name: path in BOX}.  Idempotent."""
    global BOX
    BOX = _box()
    t0 = time.monotonic()
    patchelf = shutil.which("patchelf")
    if not patchelf:
        raise RuntimeError("patchelf not found (make deps installs it)")
    bindir, libdir = os.path.join(BOX, "bin"), os.path.join(BOX, "lib")
    os.makedirs(bindir, exist_ok=True)
    os.makedirs(libdir, exist_ok=True)
    tools = {}
    names = list(extra) + list(BOX_TOOLS)
    for var in ("DCNET_TC", "DCNET_SS"):
        tool = os.environ.get(var)
        if tool and os.path.isabs(tool):
            names.insert(0, tool)   # the project's tc (ss) is the box's "tc" ("ss")
    libs = set()
    for n in names:
        path = n if os.path.isabs(n) else shutil.which(n, path=os.environ.get("PATH", "").replace(bindir + ":", ""))
        if not path or not os.path.exists(path):
            continue
        name = os.path.basename(path)
        dst = os.path.join(bindir, name)
        if not os.path.exists(dst):
            _copy(os.path.realpath(path), dst)
            tools[name] = dst
        else:
            tools[name] = dst
        libs.update(p for p in _libs(path) if os.path.exists(p))
    for p in glob.glob(MPTCP_WRAP_GLOB):
        libs.add(p)
        libs.update(q for q in _libs(p) if os.path.exists(q))
    for p in libs:
        dst = os.path.join(libdir, os.path.basename(p))
        if not os.path.exists(dst):
            _copy(os.path.realpath(p), dst)
    ldso = os.path.join(libdir, LDSO)
    for name, dst in tools.items():
        with open(dst, "rb") as f:
            if f.read(4) != b"\x7fELF":
                continue            # a script: its interpreter is boxed too
        subprocess.run([patchelf, "--set-interpreter", ldso, "--force-rpath", "--set-rpath", libdir, dst],
                       capture_output=True)
    for p in os.listdir(libdir):
        if p != LDSO:
            subprocess.run([patchelf, "--force-rpath", "--set-rpath", libdir, os.path.join(libdir, p)],
                           capture_output=True)
    # the C locale: setlocale(LC_ALL, "") under another one opens locale
    # files over 9p (util-linux and coreutils call it at every start)
    os.environ["LC_ALL"] = "C"
    os.environ.pop("LANGUAGE", None)
    if not os.environ.get("PATH", "").startswith(bindir + ":"):
        os.environ["PATH"] = bindir + ":" + os.environ.get("PATH", "")
    if os.environ.get("DCNET_TC") and "tc" in tools:
        os.environ["DCNET_TC"] = tools["tc"]
    if os.environ.get("DCNET_SS") and "ss" in tools:
        os.environ["DCNET_SS"] = tools["ss"]
    if verbose:
        print(f"toolbox: {len(tools)} tools, {len(os.listdir(libdir))} libraries in {BOX} "
              f"({time.monotonic() - t0:.1f} s)", flush=True)
    return tools


def mptcp_preload():
    """LD_PRELOAD for MPTCP (what mptcpize sets), from the toolbox"""
    found = sorted(glob.glob(os.path.join(BOX, "lib", "libmptcpwrap.so*")))
    return found[0] if found else None


def install_for_guest():
    """install() with the project's traffic tool, and the testbed's helpers
    pointed at the boxed copy"""
    import netlab
    tools = install([netlab.DLTRAFFIC])
    netlab.DLTRAFFIC = tools.get("dltraffic", netlab.DLTRAFFIC)
    return tools
