#!/usr/bin/env python3
"""Boot a built kernel with virtme-ng, run one command in it, collect the result.

    scripts/vmrun.py --kernel build/obj-debug --out results/x -- CMD ARGS...

The guest sees the host's root filesystem read-only (virtme-ng), this
repository at the same path, and OUT read-write.  CMD runs as root in the
repository's directory with DCNET_OUT=OUT in its environment; its output
goes to OUT/guest.log, its exit status to OUT/status, the kernel log to
OUT/dmesg.txt.  The run fails (exit 1) when the command fails, when the
guest never reports a status (hang, panic, timeout), or when dmesg holds a
kernel splat (BUG, WARNING, KASAN, lockdep, Oops); the splat lines are
printed.

TCG is used unless DCNET_VM_ACCEL=kvm: nested KVM hangs on these machines.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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


def vng_binary():
    for cand in (os.path.join(ROOT, ".venv", "bin", "vng"), shutil.which("vng")):
        if cand and os.path.exists(cand):
            return cand
    sys.exit("vmrun: vng not found (run 'make deps')")


GUEST_SCRIPT = """#!/bin/sh
# written by scripts/vmrun.py
export DCNET_OUT={out}
export PATH={venv}/bin:$PATH
export DCNET_TC={tc}
cd {root}
echo "dcnet guest: $(uname -r) $(nproc) cpus" > {out}/guest.log
{cmd} >> {out}/guest.log 2>&1
rc=$?
dmesg > {out}/dmesg.txt 2>&1
echo $rc > {out}/status
"""


def run(kernel, out, cmd, timeout, cpus, memory, verbose):
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
    for name in ("status", "dmesg.txt", "guest.log"):
        try:
            os.unlink(os.path.join(out, name))
        except FileNotFoundError:
            pass
    script = os.path.join(out, "guest.sh")
    with open(script, "w") as f:
        # tc with the project's iproute2 patches (scripts/iproute2.sh)
        build = os.environ.get("BUILD") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dcnet", "build")
        tc = os.path.join(build, "iproute2", "tc", "tc")
        f.write(GUEST_SCRIPT.format(out=shlex.quote(out), root=shlex.quote(ROOT),
                                    tc=shlex.quote(tc if os.path.exists(tc) else "tc"),
                                    venv=shlex.quote(os.path.join(ROOT, ".venv")),
                                    cmd=" ".join(shlex.quote(c) for c in cmd)))
    os.chmod(script, 0o755)

    argv = [vng_binary(), "--run", kdir, "--cpus", str(cpus), "--memory", memory,
            "--rwdir", out, "--cwd", ROOT, "--exec", f"sh {shlex.quote(script)}",
            # QEMU's TCG "max" CPU offers LA57.  With 5-level paging the
            # debug kernel now and then reports a KASAN wild-memory-access
            # in rcu_is_watching() from an interrupt taken during early
            # boot (identify_cpu), which taints the kernel and switches
            # lockdep off for the whole run.  4-level paging avoids it.
            "--append", "no5lvl"]
    if os.environ.get("DCNET_VM_ACCEL", "tcg") != "kvm":
        argv.insert(1, "--disable-kvm")
    if verbose:
        print("vmrun:", " ".join(shlex.quote(a) for a in argv), file=sys.stderr)
    t0 = time.time()
    console = os.path.join(out, "console.log")
    with open(console, "w") as con:
        try:
            # vng wants a terminal-ish stdin; give it /dev/null.
            env = dict(os.environ)
            env["PATH"] = os.path.dirname(argv[0]) + os.pathsep + env.get("PATH", "")
            proc = subprocess.run(argv, cwd=kdir, stdin=subprocess.DEVNULL, stdout=con,
                                  stderr=subprocess.STDOUT, timeout=timeout, env=env)
            vng_rc = proc.returncode
        except subprocess.TimeoutExpired:
            vng_rc = None
    elapsed = time.time() - t0

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

    ok = status == 0 and not splats
    print(f"vmrun: {' '.join(cmd)}: guest status {status}, vng {vng_rc}, "
          f"{len(splats)} splat lines, {elapsed:.0f} s", file=sys.stderr)
    if vng_rc is None:
        print(f"vmrun: timed out after {timeout} s (console: {console})", file=sys.stderr)
    if status is None:
        print(f"vmrun: the guest reported no status; last console lines:", file=sys.stderr)
        with open(console, errors="replace") as f:
            for line in f.read().splitlines()[-25:]:
                print("   ", line, file=sys.stderr)
    for line in splats[:40]:
        print(f"vmrun: SPLAT: {line}", file=sys.stderr)
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", required=True, help="build directory (make O=) or bzImage")
    ap.add_argument("--out", required=True, help="directory for the results (guest-writable)")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--memory", default="2G")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no command")
    sys.exit(run(a.kernel, a.out, cmd, a.timeout, a.cpus, a.memory, a.verbose))


if __name__ == "__main__":
    main()
