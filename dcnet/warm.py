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

from dcnet import config

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
        if config.is_set(var):
            names.append(config.get(var))
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


def _names(extra):
    names = list(extra) + list(BOX_TOOLS)
    for var in ("DCNET_TC", "DCNET_SS"):
        tool = config.get(var)
        if os.path.isabs(tool):
            names.insert(0, tool)   # the project's tc (ss) is the box's "tc" ("ss")
    return names


def _fill(root, names):
    """copy names (tool names or paths) and their libraries into root/bin
    and root/lib, patched to load from BOX; returns ({name: path under
    root}, {path under root: [source, size, mtime_ns]}).  Idempotent."""
    patchelf = shutil.which("patchelf")
    if not patchelf:
        raise RuntimeError("patchelf not found (make deps installs it)")
    bindir, libdir = os.path.join(root, "bin"), os.path.join(root, "lib")
    os.makedirs(bindir, exist_ok=True)
    os.makedirs(libdir, exist_ok=True)
    tools = {}
    stamp_file = os.path.join(root, ".stamps.json")
    try:
        with open(stamp_file) as f:
            stamps = json.load(f)
    except (OSError, ValueError):
        stamps = {}
    box_lib = os.path.join(BOX, "lib")
    ldso = os.path.join(box_lib, LDSO)
    bin_patch = [patchelf, "--set-interpreter", ldso, "--force-rpath", "--set-rpath", box_lib]
    lib_patch = [patchelf, "--force-rpath", "--set-rpath", box_lib]
    libs = set()
    search = os.environ.get("PATH", "").replace(os.path.join(BOX, "bin") + ":", "")
    for n in names:
        path = n if os.path.isabs(n) else shutil.which(n, path=search)
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
    return tools, stamps


# ----------------------------------------------------------- staged box
#
# Filling the box in the debug guest costs an ldd and a patchelf per file,
# each an exec from 9p, and even copying the files over 9p takes minutes
# under TCG on a slow host.  The host, which sees the same files, fills a
# staged copy before the boot (stage()), packs it into a tar file
# (stage_disk()), and scripts/vmrun.py attaches that as a disk and passes
# its path as DCNET_TOOLBOX_DISK; the guest unpacks it into BOX.  The
# staged copy is used only if it holds every tool asked for and each of
# its files is still a copy of its source (path, size, mtime): otherwise
# the guest fills the box itself.

MANIFEST = "manifest.json"


def stage(dest, extra=()):
    """Fill a staged box at dest (on the host) with what install(extra)
    would put in BOX; returns the manifest written to dest/manifest.json."""
    names = _names(extra)
    tools, stamps = _fill(dest, names)
    manifest = {"names": names,
                "tools": {n: os.path.relpath(p, dest) for n, p in tools.items()},
                "files": {os.path.relpath(p, dest): key for p, key in stamps.items()
                          if os.path.exists(p)}}
    tmp = os.path.join(dest, f"{MANIFEST}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f)
    os.replace(tmp, os.path.join(dest, MANIFEST))
    return manifest


def stage_disk(dest, image):
    """the staged box at dest as a tar file at image, for a guest to read
    from a disk (vmrun.py attaches it with `vng --disk`, a virtio-blk
    device whose serial is the image's path): a read from 9p costs
    minutes for the box's 27 MB under TCG, a disk's seconds"""
    import tarfile
    tmp = f"{image}.{os.getpid()}.tmp"
    with tarfile.open(tmp, "w", format=tarfile.GNU_FORMAT) as tar:
        for name in sorted(os.listdir(dest)):
            if name != ".stamps.json" and not name.endswith(".tmp"):
                tar.add(os.path.join(dest, name), arcname=name)
    os.replace(tmp, image)
    return image


def _disk(image):
    """the guest's block device for the host file image, or None: the
    virtio-blk disk whose serial is image's path (its first 20 bytes, all
    virtio-blk keeps), else the only virtio-blk disk there is"""
    disks = sorted(glob.glob("/sys/block/vd*"))
    for dev in disks:
        try:
            with open(os.path.join(dev, "serial")) as f:
                if f.read().strip("\0\n ") == image[:20]:
                    return "/dev/" + os.path.basename(dev)
        except OSError:
            pass
    return "/dev/" + os.path.basename(disks[0]) if len(disks) == 1 else None


def _from_disk(image, names):
    """the staged box in the host's tar file image, attached as a disk,
    unpacked into BOX, or None if there is no such disk or it cannot stand
    for install(names)"""
    import tarfile
    dev = _disk(image)
    if not dev:
        return None
    try:
        with open(dev, "rb") as f, tarfile.open(fileobj=f, mode="r:") as tar:
            manifest = json.load(tar.extractfile(MANIFEST))
            if not _usable(manifest, names):
                return None
            stamps = {}
            for rel, key in manifest["files"].items():
                member = tar.getmember(rel)
                dst = os.path.join(BOX, rel)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                tmp = f"{dst}.{os.getpid()}.tmp"
                with open(tmp, "wb") as g:
                    g.write(tar.extractfile(member).read())
                os.chmod(tmp, member.mode & 0o777)
                os.replace(tmp, dst)
                stamps[dst] = key
    except (OSError, KeyError, ValueError, tarfile.TarError):
        return None
    with open(os.path.join(BOX, ".stamps.json"), "w") as f:
        json.dump(stamps, f)
    return {n: os.path.join(BOX, rel) for n, rel in manifest["tools"].items()}


def _usable(manifest, names):
    return manifest.get("names") == names and all(_fresh(k) for k in manifest["files"].values())


def _fresh(key):
    try:
        st = os.stat(key[0])
    except OSError:
        return False
    return [key[0], st.st_size, st.st_mtime_ns] == key


def stage_for_guest(dest, tc, ss, path):
    """stage() what install_for_guest() asks for in a guest whose DCNET_TC,
    DCNET_SS and PATH are tc, ss and path; returns dest, or None if
    staging failed (the guest then fills its box itself)"""
    from dcnet.testbed import netlab
    saved = {k: os.environ.get(k) for k in ("DCNET_TC", "DCNET_SS", "PATH")}
    try:
        os.environ.update({"DCNET_TC": tc, "DCNET_SS": ss, "PATH": path})
        stage(dest, [netlab.DLTRAFFIC])
        return dest
    except (OSError, RuntimeError, subprocess.SubprocessError):
        return None
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def install(extra=(), verbose=True):
    """Copy TOOLS + extra into BOX (bin/, lib/), patched to load only from
    BOX, and put BOX/bin first in this process's PATH (children inherit
    it).  Returns {name: path in BOX}.  Idempotent.  A staged box
    (DCNET_TOOLBOX_DISK, see stage()) that holds the same is unpacked
    instead."""
    t0 = time.monotonic()
    names = _names(extra)
    bindir, libdir = os.path.join(BOX, "bin"), os.path.join(BOX, "lib")
    tools, how = None, "filled"
    if config.get("DCNET_TOOLBOX_DISK"):
        tools = _from_disk(config.get("DCNET_TOOLBOX_DISK"), names)
        how = "unpacked from the staged box's disk"
    how = how if tools is not None else "filled"
    if tools is None:
        tools, _ = _fill(BOX, names)
    # the C locale: setlocale(LC_ALL, "") under another one opens locale
    # files over 9p (util-linux and coreutils call it at every start)
    os.environ["LC_ALL"] = "C"
    os.environ.pop("LANGUAGE", None)
    if not os.environ.get("PATH", "").startswith(bindir + ":"):
        os.environ["PATH"] = bindir + ":" + os.environ.get("PATH", "")
    if config.is_set("DCNET_TC") and "tc" in tools:
        os.environ["DCNET_TC"] = tools["tc"]
    if config.is_set("DCNET_SS") and "ss" in tools:
        os.environ["DCNET_SS"] = tools["ss"]
    if verbose:
        print(f"toolbox: {len(tools)} tools, {len(os.listdir(libdir))} libraries in {BOX}, {how} "
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
    from dcnet.testbed import netlab
    _own_tmpfs(BOX)
    tools = install([netlab.DLTRAFFIC])
    netlab.DLTRAFFIC = tools.get("dltraffic", netlab.DLTRAFFIC)
    return tools
