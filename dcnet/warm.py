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
import json
import os
import re
import shutil
import subprocess
import time

# what the testbed and the benches execute during their measurements
TOOLS = ["sh", "sleep", "nsenter", "ip", "tc", "ss", "nstat", "sysctl", "ethtool", "iperf3", "sockperf",
         "mptcpize", "tcpdump", "modprobe", "cat"]
# mptcpize's LD_PRELOAD library (Debian keeps it in a subdirectory)
MPTCP_WRAP_GLOB = "/usr/lib/x86_64-linux-gnu/mptcpize/libmptcpwrap.so*"
EXTRA_GLOBS = [MPTCP_WRAP_GLOB, "/usr/lib/x86_64-linux-gnu/libiperf.so*"]


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

BOX = "/tmp/dcnet-tools"
LDSO = "ld-linux-x86-64.so.2"
BOX_TOOLS = TOOLS + ["env", "true", "dltraffic"]


def _copy(src, dst, patch=None):
    """src to dst through a new file renamed over the old one (a process,
    or another VM sharing the host's /tmp, running the old copy keeps its
    inode), patchelf'd with `patch` before the rename when it is an ELF"""
    tmp = f"{dst}.{os.getpid()}.tmp"
    with open(src, "rb") as f, open(tmp, "wb") as g:
        data = f.read()
        g.write(data)
    os.chmod(tmp, os.stat(src).st_mode & 0o777)
    if patch and data[:4] == b"\x7fELF":
        subprocess.run(patch + [tmp], capture_output=True)
    os.replace(tmp, dst)


def _refresh(src, dst, stamps, patch=None):
    """copy src to dst unless dst is a copy of this very file (path, size,
    mtime): a box left by an earlier run (the host's /tmp, which the
    guests share) must not keep serving a binary rebuilt since (a stale
    dltraffic once made a benchmark die on an error the new one ignores)"""
    real = os.path.realpath(src)
    st = os.stat(real)
    key = [real, st.st_size, st.st_mtime_ns]
    if os.path.exists(dst) and stamps.get(dst) == key:
        return False
    _copy(real, dst, patch)
    stamps[dst] = key
    return True


def install(extra=(), verbose=True):
    """Copy TOOLS + extra into BOX (bin/, lib/), patched to load only from
    BOX, and put BOX/bin first in this process's PATH (children inherit
    it).  Returns {name: path in BOX}.  Idempotent."""
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
    stamp_file = os.path.join(BOX, ".stamps.json")
    try:
        with open(stamp_file) as f:
            stamps = json.load(f)
    except (OSError, ValueError):
        stamps = {}
    ldso = os.path.join(libdir, LDSO)
    bin_patch = [patchelf, "--set-interpreter", ldso, "--force-rpath", "--set-rpath", libdir]
    lib_patch = [patchelf, "--force-rpath", "--set-rpath", libdir]
    libs = set()
    for n in names:
        path = n if os.path.isabs(n) else shutil.which(n, path=os.environ.get("PATH", "").replace(bindir + ":", ""))
        if not path or not os.path.exists(path):
            continue
        name = os.path.basename(path)
        if name in tools:
            continue                # the first of a name wins (DCNET_TC before PATH's tc)
        dst = os.path.join(bindir, name)
        _refresh(path, dst, stamps, bin_patch)   # a script: its interpreter is boxed too
        tools[name] = dst
        libs.update(p for p in _libs(path) if os.path.exists(p))
    for p in glob.glob(MPTCP_WRAP_GLOB):
        libs.add(p)
        libs.update(q for q in _libs(p) if os.path.exists(q))
    for p in libs:
        name = os.path.basename(p)
        _refresh(p, os.path.join(libdir, name), stamps, None if name == LDSO else lib_patch)
    tmp = f"{stamp_file}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(stamps, f)
    os.replace(tmp, stamp_file)
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


def _own_tmpfs(path):
    """a tmpfs of this kernel's own at path.  virtme-ng's /tmp is an
    overlay whose lower layer is the host's /tmp over 9p: a box a host
    run left there would be served from 9p, inside measured intervals,
    and a stale one would run in place of the tool just built"""
    os.makedirs(path, exist_ok=True)
    with open("/proc/mounts") as f:
        if any(line.split()[1:3] == [path, "tmpfs"] for line in f):
            return
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "dcnet-tools", path], check=True)


def install_for_guest():
    """install() with the project's traffic tool, and the testbed's helpers
    pointed at the boxed copy"""
    import netlab
    _own_tmpfs(BOX)
    tools = install([netlab.DLTRAFFIC])
    netlab.DLTRAFFIC = tools.get("dltraffic", netlab.DLTRAFFIC)
    return tools
