#!/usr/bin/env python3
"""A sealed guest: everything a run needs in its initramfs, nothing read
from the host while it runs, so that the host's timing does not reach a
run in virtual time.

Why: under QEMU icount a guest's clock counts instructions, but what
waits on the host does not: virtme-ng's root is the host's file system
over 9p, and every 9p reply arrives at a host-dependent point of the
guest's instruction stream.  The kernel mixes such interrupt timings into
its RNG, and TCP's dynamics amplify the smallest timing difference (two
boots of the same bench differed by up to 82%).  A guest that reads
nothing from the host, with one vCPU (TCG interleaves vCPUs on host
events), QEMU's -seed (RDRAND) and a fixed virtual RTC, executes the same
instructions in every boot: bench/determinism.py's probe printed
byte-identical output (boot_id, getrandom, every TCP counter) in two
boots on a loaded host.  The last source, a race in QEMU's clock warp
when the guest halts, is closed by QEMU's record mode (icount_opts()).

The initramfs mirrors the host's paths for what the benches run: the
tools of dcnet/warm.py and their libraries, the project's tc and ss, the
Python interpreter with its standard library and the few packages the
guest side imports, this repository's tracked files and built tools, the
kernel's modules and Open vSwitch's install when built.  /init runs
scripts/vmrun.py's guest script; when it ends, the results directory goes
to the host as a base64 tar on the serial console, then the guest powers
off.  No other device at all: with a 9p share in the machine (unused
until the end) boots diverged within 1-6 s of guest time in 2 of 3
boots, with a second serial port in 1 of 4; with the console alone,
seven boots printed the same 62 lines over 6 s of traffic.
"""
import glob
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

from dcnet import config
from dcnet import ROOT
from dcnet.warm import EXTRA_GLOBS, TOOLS

# more than dcnet/warm.py's tools: what the guest scripts call besides
MORE_TOOLS = ["bash", "dash", "patchelf", "depmod", "timeout", "env", "taskset", "ping", "sort",
              "head", "tail", "grep", "sed", "awk", "mkdir", "cp", "rm", "ls", "uname", "date",
              "dmesg", "mount", "id", "find", "xz", "gzip", "python3", "ldd", "bridge"]
ETC = ["/etc/passwd", "/etc/group", "/etc/hosts", "/etc/nsswitch.conf", "/etc/protocols",
       "/etc/services", "/etc/iproute2", "/etc/ethertypes"]
# Python's standard library without what no guest imports
PY_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data",
           "site-packages", "distutils"}
# the venv's packages the guest side imports (testbed/experiment.py's schema check)
PY_PACKAGES = ["jsonschema", "jsonschema_specifications", "referencing", "rpds", "attrs", "attr",
               "typing_extensions.py"]
SEED = 1
GUEST_OUT = "/dcnet/out"
MTIME = 1767225600      # 2026-01-01, every file's in the image
BEGIN, END = "DCNET-RESULTS-BEGIN", "DCNET-RESULTS-END"
RTC_BASE = "2026-01-01T00:00:00"

INIT = """#!/busybox/busybox sh
/busybox/busybox mkdir -p /busybox/bin
/busybox/busybox --install -s /busybox/bin
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/busybox/bin
export HOME=/root
mkdir -p /proc /sys /dev /tmp /run /root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
# /tmp stays the initramfs's own (already in memory): files a command
# names there are in the image
chmod 1777 /tmp
mount -t tmpfs run /run
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mkdir -p /run/netns /dev/pts /dev/shm {out}
mount -t devpts devpts /dev/pts
mount -t tmpfs shm /dev/shm
mkdir -p /var
[ -e /var/run ] || ln -s /run /var/run
ip link set lo up
hostname dcnet
echo "sealed: booted at $(cat /proc/uptime)" > /dev/console
/usr/bin/sh /sealed/guest.sh < /dev/null > /dev/console 2>&1
# the results leave over the console, base64 between two markers, with
# the kernel's messages off it: a virtio device (9p) or a second serial
# port in the machine, unused until this point, made boots diverge
dmesg -n 1
{{ echo; echo {begin}; tar -C {out} -czf - . | base64; echo {end}; }} > /dev/console
poweroff -f
"""


class Tree:
    """Files to put in the image at their host paths (symlinks kept)."""

    def __init__(self, root):
        self.root = root
        self.seen = set()

    def _dst(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def add(self, path, skip=(), walk=True):
        """path (a file, a symlink and what it points to, or a directory:
        its contents too when walk) at the same place in the image"""
        path = os.path.normpath(path)
        key = (path, walk)
        if key in self.seen or (path, True) in self.seen or not os.path.lexists(path):
            return
        self.seen.add(key)
        parent = os.path.dirname(path)
        if parent != "/":
            self.add(parent, walk=False)
            real = os.path.realpath(parent)
            if real != parent:
                # a symlinked directory on the way (a build directory's
                # iproute2 linked to the shared cache, a worktree's .venv):
                # the link is in the image now, and the file goes where
                # it points; through the link, the copy would land on the
                # host's own file
                return self.add(os.path.join(real, os.path.basename(path)), skip, walk)
        dst = self._dst(path)
        if os.path.islink(path):
            target = os.readlink(path)
            if not os.path.lexists(dst):
                os.symlink(target, dst)
            full = target if target.startswith("/") else os.path.join(os.path.dirname(path), target)
            # a link to a directory brings the directory, not its contents
            self.add(full, skip, walk=walk and not os.path.isdir(full))
        elif os.path.isdir(path):
            os.makedirs(dst, exist_ok=True)
            if walk:
                for name in sorted(os.listdir(path)):
                    if name not in skip:
                        self.add(os.path.join(path, name), skip)
        elif os.path.isfile(path):
            shutil.copy2(path, dst)

    def add_program(self, name):
        path = name if os.path.isabs(name) else shutil.which(name)
        if not path or not os.path.exists(path):
            return False
        self.add(path)
        for lib in libs_of(path):
            self.add(lib)
        return True


def libs_of(path):
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    out = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if "=>" in parts:
            i = parts.index("=>")
            if i + 1 < len(parts) and parts[i + 1].startswith("/"):
                out.append(parts[i + 1])
        elif parts and parts[0].startswith("/"):
            out.append(parts[0])
    return out


def add_python(t):
    """the venv's interpreter, its standard library, the few packages the
    guest imports"""
    venv = os.path.join(ROOT, ".venv")
    py = os.path.realpath(os.path.join(venv, "bin", "python"))
    t.add_program(os.path.join(venv, "bin", "python"))
    t.add(os.path.join(venv, "bin", "python3"))
    t.add(os.path.join(venv, "pyvenv.cfg"))
    prefix = os.path.dirname(os.path.dirname(py))
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    t.add(os.path.join(prefix, "lib", ver), skip=PY_SKIP | {f"config-{sys.version_info.major}."
                                                           f"{sys.version_info.minor}-x86_64-linux-gnu"})
    for so in glob.glob(os.path.join(prefix, "lib", "libpython*.so*")):
        t.add(so)
    for lib in glob.glob(os.path.join(prefix, "lib", ver, "lib-dynload", "*.so")):
        for dep in libs_of(lib):
            t.add(dep)
    site = os.path.join(venv, "lib", ver, "site-packages")
    for p in PY_PACKAGES:
        for q in glob.glob(os.path.join(site, p)) + glob.glob(os.path.join(site, p + "-*.dist-info")):
            t.add(q, skip={"__pycache__"})


def add_repo(t):
    """this repository's tracked files and the tools built in it"""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for f in files.decode().split("\0"):
        if f and not f.startswith("docs/"):
            t.add(os.path.join(ROOT, f))
    for f in glob.glob(os.path.join(ROOT, "testbed", "tools", "*")):
        if os.access(f, os.X_OK) and os.path.isfile(f):
            t.add_program(f)


def add_modules(t, kdir, release):
    """the kernel's modules, installed and depmod'ed into the image"""
    if not os.path.exists(os.path.join(kdir, "modules.order")):
        return
    # not a parent make's jobserver: its descriptors do not reach us
    # (make -j3 bench-presto), and make would warn that they are gone
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")}
    subprocess.run(["make", "-s", "-C", kdir, "modules_install", f"INSTALL_MOD_PATH={t.root}",
                    "INSTALL_MOD_STRIP=1", "DEPMOD=/usr/sbin/depmod"],
                   check=True, stdout=subprocess.DEVNULL, env=env)
    # no links back into the build tree
    for name in ("build", "source"):
        p = os.path.join(t.root, "lib", "modules", release, name)
        if os.path.islink(p):
            os.unlink(p)


def build(image, kdir, release, script, out, build_dir, extra_files=()):
    """Write the initramfs for one run to image; extra_files (the files
    the command names, an experiment outside the tree say) go in too."""
    with tempfile.TemporaryDirectory(prefix="dcnet-sealed-") as root:
        t = Tree(root)
        for top in ("/bin", "/sbin", "/lib", "/lib64"):
            t.add(top, walk=False)
        os.makedirs(os.path.join(root, "busybox"), exist_ok=True)
        shutil.copy2("/bin/busybox", os.path.join(root, "busybox", "busybox"))
        for name in TOOLS + MORE_TOOLS:
            t.add_program(name)
        for g in EXTRA_GLOBS:
            for p in glob.glob(g):
                t.add(p)
                for lib in libs_of(p):
                    t.add(lib)
        for prog in ("iproute2/tc/tc", "iproute2/misc/ss", "iproute2/misc/nstat", "iproute2/ip/ip"):
            t.add_program(os.path.join(build_dir, prog))
        for d in ("/usr/lib/x86_64-linux-gnu/tc", "/usr/lib/tc"):
            t.add(d)
        ovs = os.path.join(build_dir, "ovs-install")
        if os.path.isdir(ovs):
            # the programs and the schemas; no static libraries, no debug info
            t.add(ovs, skip={"include", "lib"})
            for p in glob.glob(os.path.join(ovs, "*bin", "*")):
                for lib in libs_of(p):
                    t.add(lib)
                subprocess.run(["strip", "-g", t._dst(p)], stderr=subprocess.DEVNULL)
        for e in ETC:
            t.add(e)
        add_python(t)
        add_repo(t)
        add_modules(t, kdir, release)
        for f in extra_files:
            t.add(os.path.abspath(f))
        # its own place: OUT may be under /tmp, which /init mounts over
        os.makedirs(os.path.join(root, "sealed"))
        shutil.copy2(script, os.path.join(root, "sealed", "guest.sh"))
        with open(os.path.join(root, "init"), "w") as f:
            f.write(INIT.format(out=out, begin=BEGIN, end=END))
        os.chmod(os.path.join(root, "init"), 0o755)
        # the same bytes for the same inputs: sorted names, one mtime, no
        # inode or device numbers
        names = sorted(subprocess.run(["find", ".", "-print0"], cwd=root, capture_output=True,
                                      check=True).stdout.split(b"\0"))
        names = [n for n in names if n]
        for n in names:
            os.utime(os.path.join(root, n.decode()), (MTIME, MTIME), follow_symlinks=False)
        cpio = subprocess.run(["cpio", "-o", "-0", "-H", "newc", "--quiet", "--reproducible"], cwd=root,
                              input=b"\0".join(names) + b"\0", capture_output=True, check=True).stdout
    with open(image, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as f:
        f.write(cpio)
    return len(cpio)


def icount_opts(shift=0):
    """-icount's value for a sealed run.

    QEMU's record mode is on (its event log discarded) unless
    DCNET_VM_RR is "off".  Not for the log: record mode makes the main
    loop and the vCPU take one mutex (the replay mutex) around each
    execution slice.  Without it, QEMU 7.2's main loop can see the vCPU
    halted (HLT sets cpu->halted during the slice) before the vCPU has
    accounted the slice's instructions (icount_process_data() runs after
    the slice, outside the BQL), and icount_start_warp_timer() then warps
    the clock from a stale count: the timer fires late by a host-timing
    dependent number of nanoseconds, and boots part.  Measured: two boots
    of the same FastLane cells differed in 2939 of 4381 flows without it
    and in none with it (raw.json byte-identical); docs/architecture.md.
    """
    rr = config.get("DCNET_VM_RR")
    if rr not in ("record", "off"):
        sys.exit(f"sealed: DCNET_VM_RR must be record or off, not {rr!r}")
    return f"shift={shift},sleep=off" + (",rr=record,rrfile=/dev/null" if rr == "record" else "")


def qemu_argv(image, bzimage, cpus, memory, console, seed=SEED, shift=0, qemu=None):
    """QEMU for a sealed run: TCG, icount at the shift, one seeded PRNG, a
    virtual RTC from a fixed date, no device but the serial console
    (written to the file console), which also carries the results.  qemu
    is the binary (default: the system's)."""
    return [qemu or "qemu-system-x86_64", "-M", "pc", "-cpu", "max", "-smp", str(cpus), "-m", memory,
            "-display", "none", "-nodefaults", "-no-reboot",
            "-serial", f"file:{console}",
            "-kernel", bzimage, "-initrd", image,
            "-append", " ".join(["console=ttyS0 no5lvl panic=-1 rdinit=/init quiet"] +
                                config.get("DCNET_VM_APPEND")),
            "-icount", icount_opts(shift), "-seed", str(seed),
            "-rtc", f"base={RTC_BASE},clock=vm"]


def unpack(console, out):
    """Extract the results the guest printed on its console into out, and
    leave the console's other lines in the file.  Returns the number of
    files, or None when no (valid) archive arrived."""
    import base64
    import io
    import tarfile
    if not os.path.exists(console):
        return None
    with open(console, "rb") as f:
        data = f.read()
    b, e = data.find(BEGIN.encode()), data.find(END.encode())
    if b < 0 or e < b:
        return None
    payload = data[b + len(BEGIN):e]
    with open(console, "wb") as f:
        f.write(data[:b] + f"[{len(payload)} bytes of results]\n".encode() + data[e + len(END):])
    try:
        raw = base64.b64decode(b"".join(payload.split()))
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tf:
            members = tf.getmembers()
            tf.extractall(out, filter="data")
    except (ValueError, tarfile.TarError, OSError, EOFError) as err:
        print(f"sealed: the results on the console are damaged: {err}", file=sys.stderr)
        return None
    return len(members)
