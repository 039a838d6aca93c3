#!/usr/bin/env python3
"""Boot a built kernel, run one command in it, collect the result.

    scripts/vmrun.py --kernel build/obj-debug --out results/x -- CMD ARGS...

In real time the guest sees the host's root filesystem read-only
(virtme-ng), this repository at the same path, and OUT read-write.  In
virtual time it is sealed (dcnet/host/sealed.py, DCNET_VM_ROOT=9p for the
former): the same paths come from an initramfs, OUT is /dcnet/out in the
guest (the command's arguments are rewritten), and its contents come back
over the serial console when the command ends.  CMD runs as root in the
repository's directory with DCNET_OUT=OUT in its environment; its output
goes to OUT/guest.log, its exit status to OUT/status, the kernel log to
OUT/dmesg.txt.  The run fails (exit 1) when the command fails, when the
guest never reports a status (hang, panic, timeout), or when dmesg holds a
kernel splat (BUG, WARNING, KASAN, lockdep, Oops); the splat lines are
printed.

TCG is used unless DCNET_VM_ACCEL=kvm: nested KVM hangs on these machines.

The clock (--clock, or DCNET_CLOCK when the flag is not given):
  virtual  QEMU's instruction-counting clock (-icount shift=S,sleep=off):
           the guest's time advances 2^S ns per instruction and an idle
           guest jumps to its next timer, so the guest sees a fixed-speed
           machine (2^-S G instructions per virtual second) whatever
           the host is doing.  Measurements repeat.  The benches, the
           demonstration and the testbed use it by default.
  real     plain TCG: the guest's clock is the host's.  Fastest in wall
           time; what `make check` uses.
The shift (--shift, else DCNET_ICOUNT_SHIFT, else 0): the virtual CPU
runs one instruction per 2^shift ns.  A negative shift -N runs 2^N
instructions per ns: a faster CPU in the guest's own time, with every
kernel timer at its nominal value (time dilation: at shift -2 a link at
10 Gbit/s gets the instructions per packet that 2.5 Gbit/s gets at shift
0, and the wall time of a busy guest grows by 4).  Debian's QEMU takes 0..10 only; a
negative shift uses the QEMU that scripts/qemu.sh builds with
qemu-patches/ (built on first use, then cached), DCNET_QEMU names another.
vCPUs (--cpus, else DCNET_VM_CPUS): one in virtual time, two in real
time.  Under icount the vCPUs share one instruction-counted timeline: TCG
runs them in turn in one host thread and the clock advances with the
instructions of all of them (measured: two threads spinning on two vCPUs
made 2.34 M loop iterations in 200 ms together, one thread alone 2.41 M).
A second vCPU therefore adds no capacity in virtual time; it halves the
busy fraction /proc/stat reports (a mean over the vCPUs, so 50% can be a
saturated machine), and the order in which TCG interleaves the vCPUs
follows host events (a 50 ms clock_gettime loop varied 0.6-1.9% between
boots with two vCPUs, 0.02-0.17% with one: bench/determinism.py).

DCNET_VM_SEED=N passes QEMU's -seed N: the guest's RDRAND/RDSEED come
from a PRNG seeded with N (TCG only).  A sealed guest always has a seed
(1 unless DCNET_VM_SEED says otherwise): the same seed repeats a run
exactly, another gives another sample of the same experiment.

OUT/vm.json records the clock, the shift, vCPUs, memory, kernel release
and the repository's commit, for the reports' headers.

The guest's root (the host's, over 9p) is mounted with the page cache on
(cache=loose) unless DCNET_9P_CACHE=none: the host's files do not change
under a run, and without a cache every process start re-reads its binary
and libraries over 9p (1-5 s per start in the debug guest).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

from dcnet import config, progress
from dcnet import ROOT

# Real signatures of kernel splats; the debug kernel's normal boot log
# already contains the bare words "kasan" and "lockdep".
SPLAT_PATTERNS = [
    r"BUG: KASAN:",
    r"BUG: ",
    r"WARNING: CPU:",
    r"WARNING: .* at ",
    r"------------\[ cut here \]------------",
    r"Oops:",
    r"general protection fault",
    r"Kernel panic",
    r"possible circular locking dependency",
    r"possible recursive locking detected",
    r"inconsistent lock state",
    r"suspicious RCU usage",
    r"UBSAN:",
    r"INFO: task .* blocked for more than",
    r"unreferenced object 0x",
]
SPLAT_RE = re.compile("|".join(SPLAT_PATTERNS))


def find_splats(dmesg):
    return [line for line in dmesg.splitlines() if SPLAT_RE.search(line)]


CLOCKS = ("virtual", "real")
ICOUNT_SHIFT = 0
SHIFTS = range(-10, 11)


def icount_shift(value=None):
    """The icount shift: value (--shift) if given, else DCNET_ICOUNT_SHIFT,
    else ICOUNT_SHIFT; an integer in -10..10."""
    v = value if value is not None else (str(config.get("DCNET_ICOUNT_SHIFT")) if config.is_set("DCNET_ICOUNT_SHIFT") else "")
    if v in ("", None):
        return ICOUNT_SHIFT
    try:
        n = int(v)
    except ValueError:
        n = None
    if n not in SHIFTS:
        sys.exit(f"vmrun: the icount shift must be an integer in -10..10, not {v!r}")
    return n


def instructions_per_ns(shift):
    return 2.0 ** -shift


def qemu_binary(shift):
    """The QEMU for a shift: DCNET_QEMU if set, the patched build of
    scripts/qemu.sh for a negative shift, else the system's (None)."""
    q = config.get("DCNET_QEMU") or ""
    if q:
        if not os.access(q, os.X_OK):
            sys.exit(f"vmrun: DCNET_QEMU={q!r} is not an executable")
        return q
    if shift >= 0:
        return None
    r = subprocess.run([os.path.join(ROOT, "scripts", "qemu.sh"), "path"], stdout=subprocess.PIPE,
                       text=True)
    if r.returncode != 0 or not r.stdout.strip():
        sys.exit("vmrun: a negative icount shift needs scripts/qemu.sh's QEMU, whose build failed")
    return r.stdout.strip().splitlines()[-1]


def default_cpus(clock):
    """vCPUs when the caller names none: DCNET_VM_CPUS, else one in
    virtual time (see the module's docstring) and two in real time."""
    v = str(config.get("DCNET_VM_CPUS") or "")
    if v:
        if not v.isdigit() or int(v) < 1:
            sys.exit(f"vmrun: DCNET_VM_CPUS must be a positive number, not {v!r}")
        return int(v)
    return 1 if clock == "virtual" else 2


def root_mode(clock):
    """the guest's root: "sealed" (everything in an initramfs,
    dcnet/host/sealed.py) or "9p" (the host's, virtme-ng).  DCNET_VM_ROOT
    chooses; by default virtual time is sealed, real time 9p."""
    v = config.get("DCNET_VM_ROOT") or ""
    if v:
        if v not in ("sealed", "9p"):
            sys.exit(f"vmrun: DCNET_VM_ROOT must be sealed or 9p, not {v!r}")
        return v
    return "sealed" if clock == "virtual" else "9p"


def build_dir():
    return config.get("BUILD")


def kernel_release(kdir):
    try:
        with open(os.path.join(kdir, "include", "config", "kernel.release")) as f:
            return f.read().strip()
    except OSError:
        return None


def clock_opts(clock, shift=ICOUNT_SHIFT):
    """QEMU options for a clock (see the module's docstring)."""
    if clock == "virtual":
        return ["-icount", f"shift={shift},sleep=off"]
    if clock == "real":
        return []
    raise ValueError(f"unknown clock {clock!r} (want one of {', '.join(CLOCKS)})")


def default_clock(fallback):
    """DCNET_CLOCK if set (and valid), else the caller's default."""
    c = config.get("DCNET_CLOCK") or fallback
    if c not in CLOCKS:
        sys.exit(f"vmrun: DCNET_CLOCK={c!r}: want one of {', '.join(CLOCKS)}")
    return c


def guest_path(arg, out, gout):
    """arg with the results directory out seen at gout: out itself, a path
    under it, or an --opt=PATH of either.  Only whole path components
    match, so an experiment at OUT.json (a sibling of OUT) stays itself."""
    base = out.rstrip("/")
    if arg in (out, base):
        return gout
    if arg.startswith(base + "/"):
        return gout + arg[len(base):]
    if arg.startswith("-") and "=" in arg:
        opt, val = arg.split("=", 1)
        return opt + "=" + guest_path(val, out, gout)
    return arg


def root_flags(cache):
    """Kernel arguments that remount the guest's 9p root with a cache mode.

    virtme-ng mounts the root from rootflags=; a later rootflags= on the
    command line wins."""
    if cache in ("", "none"):
        return []
    return [f"rootflags=version=9p2000.L,trans=virtio,access=any,msize=524288,cache={cache}"]


def git_commit():
    try:
        r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty", "--abbrev=12"],
                           capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def kill_group(proc, grace=5.0):
    """End a process started with start_new_session=True and everything it
    started (vng -> qemu): SIGTERM to the group, then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
        # the leader is gone; make sure nothing of the group is left
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return


def vng_binary():
    for cand in (config.get("DCNET_VNG"), os.path.join(ROOT, ".venv", "bin", "vng"), shutil.which("vng")):
        if cand and os.path.exists(cand):
            return cand
    sys.exit("vmrun: vng not found (run 'make deps')")


# The caller's DCNET_* settings the guest's tests read (DCNET_KUNIT,
# DCNET_TEST_TIMEOUT, DCNET_TESTBED_QUICK, ...) reach the guest; those
# this runner sets itself do not pass through.
NOT_PASSED = ("DCNET_OUT", "DCNET_CONFIG", "DCNET_SEALED", "DCNET_TC", "DCNET_SS", "DCNET_TOOLBOX_DISK", "DCNET_CLOCK", "DCNET_VNG", "DCNET_9P_CACHE", "DCNET_VM_ACCEL", "DCNET_VM_SEED", "DCNET_VM_CPUS")


def passed_env(env):
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items())
                   if k.startswith("DCNET_") and k not in NOT_PASSED and k.replace("_", "").isalnum())


GUEST_SCRIPT = """#!/bin/sh
# written by scripts/vmrun.py
export DCNET_OUT={out}
export PATH={venv}/bin:$PATH
# the package dcnet, from this repository (over 9p, or the sealed image's copy)
export PYTHONPATH={root}
export DCNET_TC={tc}
export DCNET_SS={ss}
{toolbox}{passed}cd {root}
echo "dcnet guest: $(uname -r) $(nproc) cpus" > {out}/guest.log
{log}
dmesg > {out}/dmesg.txt 2>&1
echo $rc > {out}/status
"""


# Real time: the log streams to OUT (a hang still leaves it).  Virtual
# time: it goes to the guest's tmpfs and is copied at the end, since every
# write over 9p waits on the host and would move the guest's clock.
LOG_REAL = """{cmd} >> {out}/guest.log 2>&1
rc=$?"""
LOG_VIRTUAL = """{cmd} > /tmp/dcnet-guest.log 2>&1
rc=$?
cat /tmp/dcnet-guest.log >> {out}/guest.log"""
# Sealed: the same, and the output also goes to this script's stdout, the
# serial console, whose file scripts/vmrun.py follows while the guest runs
# (progress) and keeps when the run ends without results.  The console is
# the machine's one device; writing to it is part of the guest's
# deterministic instruction stream (docs/results/determinism).
LOG_SEALED = """{{ {cmd} 2>&1; echo $? > /tmp/dcnet-rc; }} | tee /tmp/dcnet-guest.log
rc=$(cat /tmp/dcnet-rc)
cat /tmp/dcnet-guest.log >> {out}/guest.log"""


def progress_on():
    """Whether a sealed guest's output is shown while it runs
    (DCNET_VM_PROGRESS, default on; 0 keeps it in the guest)."""
    return config.get("DCNET_VM_PROGRESS")


class Follow:
    """Print the lines a file gains (the sealed guest's console) to stderr
    with a prefix, from a thread, until stop(); the results archive that
    ends the run (sealed.BEGIN) is not printed.  A guest's progress line
    (dcnet/progress.py: a cell done) is printed as the cell, n/N done, its
    guest and wall time and an estimate of the time left; with
    only_progress (a 9p guest's log), nothing else is."""

    def __init__(self, path, prefix="guest: ", interval=2.0, only_progress=False, name=""):
        import threading
        from dcnet.host import sealed
        from dcnet import partial       # importable once sealed is
        self.begin, self.pbegin, self.pend = sealed.BEGIN, partial.BEGIN, partial.END
        self.in_block = False
        self.path, self.prefix, self.interval = path, prefix, interval
        self.only_progress = only_progress
        self.tracker = progress.Tracker(name)
        self.t0 = time.time()
        # a line at least every `beat` seconds while the guest runs
        self.beat, self.last_line = 60.0, self.t0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.pos, self.partial, self.ended = 0, b"", False

    def start(self):
        self.thread.start()
        return self

    def poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except OSError:
            return
        self.pos += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            if self.ended:
                return
            text = line.decode(errors="replace").rstrip("\r")
            if text.startswith(self.begin):
                self.ended = True
                return
            # a block of partial results (dcnet/partial.py): one line for it
            if text.startswith(self.pbegin):
                self.in_block = True
                text = "[partial result " + " ".join(text.split()[1:3]) + " bytes]"
            elif self.in_block:
                self.in_block = not text.startswith(self.pend)
                continue
            rec = progress.parse(text)
            if rec is not None:
                print(self.tracker.cell(rec, time.time() - self.t0), file=sys.stderr, flush=True)
                self.last_line = time.time()
            elif not self.only_progress:
                print(self.prefix + text, file=sys.stderr, flush=True)

    def heartbeat(self, now=None):
        """a progress line when a minute passed without one (a sealed
        guest; a 9p log once it has shown a cell)"""
        now = time.time() if now is None else now
        if now - self.last_line < self.beat or (self.only_progress and self.tracker.total is None):
            return None
        self.last_line = now
        line = self.tracker.beat(now - self.t0)
        print(line, file=sys.stderr, flush=True)
        return line

    def _run(self):
        while not self.done.wait(self.interval):
            self.poll()
            if not self.ended:
                self.heartbeat()

    def stop(self):
        self.done.set()
        self.thread.join()
        self.poll()


def run(kernel, out, cmd, timeout, cpus, memory, verbose, clock="real", shift=None):
    shift = icount_shift(shift)
    qemu = qemu_binary(shift if clock == "virtual" else 0)
    kernel = os.path.abspath(kernel)
    out = os.path.abspath(out)
    if os.path.isdir(kernel):
        kdir = kernel
        image = os.path.join(kernel, "arch/x86/boot/bzImage")
    else:
        kdir = os.path.dirname(kernel)
        image = kernel
    if not os.path.exists(image):
        sys.exit(f"vmrun: no kernel image at {image} (build it first)")
    os.makedirs(out, exist_ok=True)
    for name in ("status", "dmesg.txt", "guest.log", "vm.json"):
        try:
            os.unlink(os.path.join(out, name))
        except FileNotFoundError:
            pass
    sealed_root = root_mode(clock) == "sealed"
    # A sealed guest sees its results directory at one fixed path, so that
    # every boot of a run gets the same initramfs and the same command line
    # (a different path is a different instruction stream).
    gout = out
    if sealed_root:
        from dcnet.host import sealed
        gout = sealed.GUEST_OUT
        cmd = [guest_path(c, out, gout) for c in cmd]
    script = os.path.join(out, "guest.sh")
    # tc with the project's iproute2 patches (scripts/iproute2.sh)
    build = build_dir()
    tc = os.path.join(build, "iproute2", "tc", "tc")
    ss = os.path.join(build, "iproute2", "misc", "ss")
    tc = tc if os.path.exists(tc) else "tc"
    ss = ss if os.path.exists(ss) else "ss"
    venv = os.path.join(ROOT, ".venv")
    # the guest's toolbox (dcnet/warm.py), filled here, where an exec
    # costs nothing, for the guest to copy (a sealed guest has its own)
    toolbox = ""
    if not sealed_root:
        from dcnet import warm
        t_box = time.time()
        staged = warm.stage_for_guest(os.path.join(out, "toolbox"), tc, ss,
                                      os.path.join(venv, "bin") + ":" + os.environ.get("PATH", ""))
        if staged:
            # as a disk, which the guest reads much faster than 9p
            disk = warm.stage_disk(staged, os.path.join(out, "toolbox.tar"))
            toolbox = f"export DCNET_TOOLBOX_DISK={shlex.quote(disk)}\n"
            print(f"vmrun: toolbox staged in {time.time() - t_box:.1f} s", file=sys.stderr)
    with open(script, "w") as f:
        f.write(GUEST_SCRIPT.format(out=shlex.quote(gout), root=shlex.quote(ROOT),
                                    tc=shlex.quote(tc), ss=shlex.quote(ss), toolbox=toolbox,
                                    venv=shlex.quote(venv),
                                    # dcnet/partial.py: a sealed guest's results so far
                                    # go out over the console
                                    passed=("export DCNET_SEALED=1\n" if sealed_root else "")
                                    + passed_env(os.environ),
                                    log=(LOG_SEALED if sealed_root and progress_on() else
                                         LOG_VIRTUAL if clock == "virtual" else LOG_REAL).format(
                                        out=shlex.quote(gout), cmd=" ".join(shlex.quote(c) for c in cmd))))
    os.chmod(script, 0o755)

    argv = [vng_binary(), "--run", kdir, "--cpus", str(cpus), "--memory", memory,
            "--rwdir", out, "--cwd", ROOT, "--exec", f"sh {shlex.quote(script)}",
            *(["--disk", disk] if toolbox else []),
            # QEMU's TCG "max" CPU offers LA57.  With 5-level paging the
            # debug kernel now and then reports a KASAN wild-memory-access
            # in rcu_is_watching() from an interrupt taken during early
            # boot (identify_cpu), which taints the kernel and switches
            # lockdep off for the whole run.  4-level paging avoids it.
            "--append", " ".join(["no5lvl"] + root_flags(config.get("DCNET_9P_CACHE")))]
    qopts = clock_opts(clock, shift)
    if qemu:
        argv.append("--qemu=" + qemu)
    seed = config.get("DCNET_VM_SEED")
    seed = None if seed is None else str(seed)
    if seed:
        if not seed.isdigit():
            sys.exit(f"vmrun: DCNET_VM_SEED must be a number, not {seed!r}")
        # QEMU's own PRNG, which backs RDRAND/RDSEED under TCG
        qopts = qopts + ["-seed", seed]
    if qopts:
        argv.append("--qemu-opts=" + " ".join(qopts))
    if config.get("DCNET_VM_ACCEL") != "kvm":
        argv.insert(1, "--disable-kvm")
    console = os.path.join(out, "console.log")
    image = None
    if sealed_root:
        image = os.path.join(out, "sealed.cpio.gz")
        t_img = time.time()
        size = sealed.build(image, kdir, kernel_release(kdir), script, gout, build_dir(),
                            [c for c in cmd if os.path.isabs(c) and os.path.isfile(c)])
        print(f"vmrun: sealed initramfs, {size / 1e6:.0f} MB, built in {time.time() - t_img:.0f} s",
              file=sys.stderr)
        # another seed is another sample of the same experiment: the same
        # seed repeats it exactly
        seed = seed or str(sealed.SEED)
        argv = sealed.qemu_argv(image, os.path.join(kdir, "arch/x86/boot/bzImage"), cpus, memory,
                                console + ".serial", seed, shift=shift, qemu=qemu)
        qopts = argv[argv.index("-icount"):argv.index("-rtc") + 2]
    if verbose:
        print("vmrun:", " ".join(shlex.quote(a) for a in argv), file=sys.stderr)
    release = kernel_release(kdir)
    meta = {"clock": clock, "icount_shift": shift if clock == "virtual" else None,
            "instructions_per_ns": instructions_per_ns(shift) if clock == "virtual" else None,
            "qemu": qemu or shutil.which("qemu-system-x86_64"),
            "qemu_opts": qopts, "accel": config.get("DCNET_VM_ACCEL"),
            "cpus": cpus, "memory": memory, "kernel": release, "commit": git_commit(),
            "9p_cache": config.get("DCNET_9P_CACHE"),
            "qemu_seed": int(seed) if seed else None,
            "root": "sealed initramfs" if sealed_root else "host over 9p (virtme-ng)"}
    with open(os.path.join(out, "vm.json"), "w") as f:
        json.dump(meta, f, indent=1)
    t0 = time.time()
    # a run of several boots names each (run1, run2, ...) in its progress lines
    name = os.path.basename(out) if re.fullmatch(r"run\d+", os.path.basename(out)) else ""
    follow = (Follow(console + ".serial", name=name).start() if sealed_root and progress_on() else
              Follow(os.path.join(out, "guest.log"), only_progress=True, name=name).start()
              if clock == "real" and progress_on() else None)
    with open(console, "w") as con:
        # vng wants a terminal-ish stdin; give it /dev/null.  Its own
        # session, so that a timeout ends QEMU too, not only vng.
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(argv[0]) + os.pathsep + env.get("PATH", "")
        proc = subprocess.Popen(argv, cwd=kdir, stdin=subprocess.DEVNULL, stdout=con,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            vng_rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            vng_rc = None
        except BaseException:
            kill_group(proc)
            raise
        # Nothing of the run outlives it (QEMU after a timeout, a helper
        # vng left behind).
        kill_group(proc)
        if follow:
            follow.stop()
    elapsed = time.time() - t0
    if sealed_root:
        # QEMU wrote the guest's serial console beside its own output
        serial = console + ".serial"
        from dcnet import partial
        n = sealed.unpack(serial, out)
        print(f"vmrun: sealed guest returned {n if n is not None else 'no'} result files", file=sys.stderr)
        # results so far (dcnet/partial.py): kept only when the run ended
        # without its results, stripped from the console in any case
        kept = partial.keep(serial, out if n is None else None)
        if n is None and kept:
            print(f"vmrun: kept the partial results the guest published: {', '.join(kept)}", file=sys.stderr)
        if n is None and os.path.exists(serial) and not os.path.exists(os.path.join(out, "guest.log")):
            # no results (a timeout, a hang): what the guest printed is
            # the partial log
            shutil.copyfile(serial, os.path.join(out, "guest.log"))
            print(f"vmrun: no results; the guest's console is {os.path.join(out, 'guest.log')}",
                  file=sys.stderr)
        if os.path.exists(serial):
            with open(serial, "rb") as src, open(console, "ab") as dst:
                shutil.copyfileobj(src, dst)
            os.unlink(serial)
        if image and os.path.exists(image):
            os.unlink(image)

    status_file = os.path.join(out, "status")
    dmesg_file = os.path.join(out, "dmesg.txt")
    status = None
    if os.path.exists(status_file):
        with open(status_file) as f:
            status = int(f.read().strip() or "255")
    dmesg = ""
    if os.path.exists(dmesg_file):
        with open(dmesg_file, errors="replace") as f:
            dmesg = f.read()
    splats = find_splats(dmesg)
    # The console too: a splat just before a hang or panic never reaches
    # dmesg.txt (written by the guest at the end).
    try:
        with open(console, errors="replace") as f:
            for line in find_splats(f.read()):
                if line not in splats:
                    splats.append(line)
    except OSError:
        pass

    ok = status == 0 and not splats
    # the wall time of the boot, for the reports' regime statements
    meta["wall_s"] = round(elapsed, 1)
    with open(os.path.join(out, "vm.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"vmrun: {' '.join(cmd)}: guest status {status}, vng {vng_rc}, "
          f"{len(splats)} splat lines, {elapsed:.0f} s, {clock} clock", file=sys.stderr)
    if vng_rc is None:
        print(f"vmrun: timed out after {timeout} s (console: {console})", file=sys.stderr)
    if status is None:
        print("vmrun: the guest reported no status; last console lines:", file=sys.stderr)
        with open(console, errors="replace") as f:
            for line in f.read().splitlines()[-25:]:
                print("   ", line, file=sys.stderr)
    for line in splats[:40]:
        print(f"vmrun: SPLAT: {line}", file=sys.stderr)
    return 0 if ok else 1


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", required=True, help="build directory (make O=) or bzImage")
    ap.add_argument("--out", required=True, help="directory for the results (guest-writable)")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--cpus", type=int, default=None,
                    help="vCPUs; default: DCNET_VM_CPUS, else 1 in virtual time and 2 in real time")
    ap.add_argument("--memory", default="2G")
    ap.add_argument("--clock", choices=CLOCKS, default=None,
                    help="virtual (QEMU icount) or real; default: DCNET_CLOCK, else real")
    ap.add_argument("--shift", default=None,
                    help="icount shift in virtual time, -10..10 (2^shift ns per instruction); "
                         "default: DCNET_ICOUNT_SHIFT, else 0")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no command")
    clock = a.clock or default_clock("real")
    cpus = a.cpus or default_cpus(clock)

    def on_term(signum, _frame):
        # a stopped driver stops its VM: SystemExit reaches run()'s
        # handler, which ends vng's whole process group (QEMU included)
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    sys.exit(run_booted(lambda: run(a.kernel, a.out, cmd, a.timeout, cpus, a.memory, a.verbose,
                                    clock, a.shift), a.out))


# A boot that ends this fast without the guest's log was never a run of the
# command (seen once in make check: vng exited with 255 after 17 s, QEMU's
# console empty, while the other VM booted the same kernel).
BOOT_RETRY_S = 120


def never_started(out):
    """the guest wrote nothing: no guest.log, no status"""
    return not any(os.path.exists(os.path.join(out, f)) for f in ("guest.log", "status"))


def run_booted(boot, out, limit=BOOT_RETRY_S):
    """boot() once more when the first boot failed within limit seconds
    and the guest never started; its exit code"""
    t0 = time.monotonic()
    rc = boot()
    took = time.monotonic() - t0
    if rc != 0 and took < limit and never_started(out):
        print(f"vmrun: the guest never started (the VM ended after {took:.0f} s without its log): "
              "booting it once more", file=sys.stderr)
        rc = boot()
    return rc


if __name__ == "__main__":
    main()
